// A CPU simulation of CUDA's execution model, so that the .cu sources nvcc compiles for the GPU
// also build with the host compiler and run in the tests of a machine without a GPU. It is the
// swerl_cudasim addon's CUDA: kernel sources include it through kernels/cuda/cuda_compat.h and
// never directly.
//
// What it gives CUDA's meaning to:
// - a launch (SWERL_LAUNCH) runs its blocks one after another and checks the launch limits (block
//   and grid dimensions, 1024 threads per block, dynamic shared memory against the 48 KiB default
//   or the kernel's cudaFuncAttributeMaxDynamicSharedMemorySize);
// - a block's threads run as cooperative fibers on the launching OS thread: __syncthreads()
//   suspends a thread until every live thread of the block reaches it, and __syncwarp and the warp
//   collectives (__shfl_*_sync, __ballot_sync, __any_sync, __all_sync) until every lane of their
//   mask does (a mask naming a lane that exited, or a barrier no thread can pass, fails the launch
//   instead of hanging);
// - __shared__ variables are one copy per block (static storage; blocks never overlap), dynamic
//   shared memory is a per-block buffer filled with 0xff bytes (NaN floats) so that reading
//   what no thread wrote shows;
// - device memory is host memory that cudaMalloc registers, and cudaMemcpy checks each side of a
//   copy against the registry, so a host pointer passed as a device one (or the reverse) fails;
// - a failed launch is reported through cudaGetLastError() with the kernel's name and the reason.
//
// Fast-math intrinsics (__expf, __logf, __fdividef) run as their exact libm counterparts here, so
// a kernel's results in the simulation may differ from the GPU's in the last bits; tests compare
// both against references with a tolerance, never bitwise across the two.
#pragma once

#include <math.h>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>

#include "common/half.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __shared__ static thread_local
#define __align__(n) alignas(n)
#ifndef __restrict__
#define __restrict__ __restrict
#endif

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct uint3 {
  unsigned x, y, z;
};

// ---- runtime types ------------------------------------------------------------------------

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorLaunchFailure = 719,
};
using cudaError = cudaError_t;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };

struct CUstream_st;
using cudaStream_t = CUstream_st*;
struct CUevent_st;
using cudaEvent_t = CUevent_st*;

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  size_t sharedMemPerBlockOptin;
  int maxThreadsPerBlock;
  int multiProcessorCount;
  int warpSize;
  int major, minor;
  int l2CacheSize;
};

cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaRuntimeGetVersion(int* version);
cudaError_t cudaDriverGetVersion(int* version);
cudaError_t cudaMalloc(void** ptr, size_t bytes);
template <typename T>
cudaError_t cudaMalloc(T** ptr, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(ptr), bytes);
}
cudaError_t cudaFree(void* ptr);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* ptr, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t stream = nullptr);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char* cudaGetErrorString(cudaError_t err);
cudaError_t cudaMemGetInfo(size_t* freeBytes, size_t* totalBytes);
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaFuncSetAttributeImpl(const void* func, cudaFuncAttribute attr, int value);
template <typename F>
cudaError_t cudaFuncSetAttribute(F* func, cudaFuncAttribute attr, int value) {
  return cudaFuncSetAttributeImpl(reinterpret_cast<const void*>(func), attr, value);
}

// ---- 16-bit floats ------------------------------------------------------------------------

struct __half {
  uint16_t bits;
};
struct __nv_bfloat16 {
  uint16_t bits;
};
inline __half __float2half_rn(float x) { return __half{swerl::f32ToF16(x)}; }
inline float __half2float(__half h) { return swerl::f16ToF32(h.bits); }
inline __nv_bfloat16 __float2bfloat16_rn(float x) { return __nv_bfloat16{swerl::f32ToBf16(x)}; }
inline float __bfloat162float(__nv_bfloat16 h) { return swerl::bf16ToF32(h.bits); }

// ---- the simulated threads ----------------------------------------------------------------

namespace swerl::sim {

/** The indices of the simulated thread that is running. */
struct ThreadIndices {
  uint3 threadIdx, blockIdx;
  dim3 blockDim, gridDim;
};

/** The running simulated thread's indices (only valid inside a kernel). */
const ThreadIndices& current();
/** Suspends the calling thread until every live thread of its block has called it. */
void syncThreads();
/** Waits for the lanes of `mask`, then returns each lane's 8-byte value (only `mask`'s lanes are meaningful). */
void warpGather(unsigned mask, uint64_t value, uint64_t (&lanes)[32]);
/** The calling thread's lane in its warp. */
unsigned laneId();
/** This block's dynamic shared memory (SWERL_DYNAMIC_SHARED). */
void* dynamicShared();
/** Fails the running launch with `why` (the simulation's __trap). */
[[noreturn]] void fail(const char* why);
/**
 * Runs `body` as a kernel of `grid` blocks of `block` threads with `sharedBytes` of dynamic
 * shared memory; `kernel` names it in errors and `func` keys its attributes. Never throws: a
 * failure is cudaGetLastError()'s.
 */
void launch(const char* kernel, const void* func, dim3 grid, dim3 block, size_t sharedBytes,
            const std::function<void()>& body);

template <typename T>
uint64_t toLane(T v) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "warp collectives move values of up to 8 bytes");
  uint64_t u = 0;
  std::memcpy(&u, &v, sizeof(T));
  return u;
}
template <typename T>
T fromLane(uint64_t u) {
  T v;
  std::memcpy(&v, &u, sizeof(T));
  return v;
}
/**
 * A shuffle: every lane of `mask` offers v and takes the value of lane src(lane) (its own when
 * src is out of the width's range, all-ones bits when src is a lane outside the mask).
 */
template <typename T, typename Src>
T shuffle(unsigned mask, T v, Src src) {
  uint64_t lanes[32];
  warpGather(mask, toLane(v), lanes);
  const int s = src(static_cast<int>(laneId()));
  if (s < 0) return v;
  // CUDA leaves a read of a lane outside the mask undefined: all-ones bits (a NaN float) show it.
  if (!(mask >> s & 1u)) return fromLane<T>(~uint64_t{0});
  return fromLane<T>(lanes[s]);
}

}  // namespace swerl::sim

#define threadIdx (::swerl::sim::current().threadIdx)
#define blockIdx (::swerl::sim::current().blockIdx)
#define blockDim (::swerl::sim::current().blockDim)
#define gridDim (::swerl::sim::current().gridDim)
constexpr int warpSize = 32;

inline void __syncthreads() { swerl::sim::syncThreads(); }
inline int __syncthreads_or(int p) {
  // Like __syncthreads, plus a vote: the values pass through shared storage between two barriers.
  __shared__ int any;
  swerl::sim::syncThreads();
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) any = 0;
  swerl::sim::syncThreads();
  if (p) any = 1;
  swerl::sim::syncThreads();
  return any;
}
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  uint64_t lanes[32];
  swerl::sim::warpGather(mask, 0, lanes);
}
inline void __trap() { swerl::sim::fail("__trap()"); }

template <typename T>
T __shfl_sync(unsigned mask, T v, int srcLane, int width = warpSize) {
  return swerl::sim::shuffle(mask, v, [&](int lane) { return (lane / width) * width + (srcLane % width); });
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T v, int laneMask, int width = warpSize) {
  return swerl::sim::shuffle(mask, v, [&](int lane) {
    const int s = lane ^ laneMask;
    return s / width == lane / width ? s : -1;
  });
}
template <typename T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = warpSize) {
  return swerl::sim::shuffle(mask, v, [&](int lane) {
    return (lane % width) + static_cast<int>(delta) < width ? lane + static_cast<int>(delta) : -1;
  });
}
template <typename T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = warpSize) {
  return swerl::sim::shuffle(mask, v, [&](int lane) {
    return (lane % width) >= static_cast<int>(delta) ? lane - static_cast<int>(delta) : -1;
  });
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  uint64_t lanes[32];
  swerl::sim::warpGather(mask, predicate != 0, lanes);
  unsigned bits = 0;
  for (int l = 0; l < 32; ++l)
    if ((mask >> l & 1u) && lanes[l]) bits |= 1u << l;
  return bits;
}
inline int __any_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
inline int __all_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) == mask; }

// ---- atomics (the fibers of a launch share one OS thread and switch only at barriers) --------

template <typename T>
T atomicAdd(T* p, T v) {
  const T old = *p;
  *p = old + v;
  return old;
}
template <typename T>
T atomicMax(T* p, T v) {
  const T old = *p;
  if (v > old) *p = v;
  return old;
}
template <typename T>
T atomicMin(T* p, T v) {
  const T old = *p;
  if (v < old) *p = v;
  return old;
}
template <typename T>
T atomicExch(T* p, T v) {
  const T old = *p;
  *p = v;
  return old;
}
template <typename T>
T atomicCAS(T* p, T compare, T v) {
  const T old = *p;
  if (old == compare) *p = v;
  return old;
}

// ---- device math (exact here; see the header) ----------------------------------------------

inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
// The rounded IEEE operations (nvcc never contracts them into FMAs); the host compiler of the
// simulation does not contract plain float arithmetic on x86-64 without -mfma either.
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float x) { return std::sqrt(x); }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __int_as_float(int x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
inline int __float_as_int(float x) {
  int i;
  std::memcpy(&i, &x, 4);
  return i;
}
inline float __uint_as_float(unsigned x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
inline unsigned __float_as_uint(float x) {
  unsigned u;
  std::memcpy(&u, &x, 4);
  return u;
}
inline double __longlong_as_double(long long x) {
  double d;
  std::memcpy(&d, &x, 8);
  return d;
}
inline long long __double_as_longlong(double x) {
  long long l;
  std::memcpy(&l, &x, 8);
  return l;
}
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
template <typename T>
T __ldg(const T* p) {
  return *p;
}
// CUDA's global min/max overloads of device code.
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }

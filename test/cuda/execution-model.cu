// The CUDA execution model, checked: the same source runs on a GPU (built by nvcc as
// swerl_cuda_selftest) and in the CPU simulation (built by the host compiler as
// swerl_cudasim_selftest), and both must give CUDA's answers. test/cuda/execution-model.test.ts
// runs the simulation's build; scripts/device-check.sh runs the GPU's.
//
// Prints one line per check, "ok NAME" or "not ok NAME: WHY", and exits 1 if any failed. Checks
// of what only the simulation can report (a deadlocked barrier, a host pointer given to a device
// copy) run only there: on a GPU those hang or corrupt memory.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_compat.h"

namespace {

int failures = 0;

void check(const char* name, bool ok, const std::string& why = "") {
  if (ok) {
    std::printf("ok %s\n", name);
  } else {
    std::printf("not ok %s: %s\n", name, why.c_str());
    ++failures;
  }
}

template <typename T>
T* deviceArray(size_t n) {
  T* p = nullptr;
  if (cudaMalloc(&p, n * sizeof(T)) != cudaSuccess) return nullptr;
  cudaMemset(p, 0, n * sizeof(T));
  return p;
}

template <typename T>
std::vector<T> toHost(const T* d, size_t n) {
  std::vector<T> h(n);
  cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost);
  return h;
}

// Block-wide sum of x[blockIdx.x * n + i]: per-thread partials, a warp shuffle tree, one partial
// per warp in shared memory, a final warp tree.
__global__ void blockSum(const float* x, float* out, int n) {
  __shared__ float warpSums[32];
  // A partial last warp names only its present lanes in its masks, as CUDA requires.
  const unsigned lane = threadIdx.x % 32, lanes = min(32u, blockDim.x - (threadIdx.x - lane));
  const unsigned mask = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
  float s = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[blockIdx.x * n + i];
  for (unsigned o = 16; o > 0; o >>= 1) {
    const float other = __shfl_down_sync(mask, s, o);
    if (lane + o < lanes) s += other;
  }
  if (lane == 0) warpSums[threadIdx.x / 32] = s;
  __syncthreads();
  const unsigned warps = (blockDim.x + 31) / 32;
  if (threadIdx.x < warps) {
    const unsigned mask2 = warps == 32 ? 0xffffffffu : (1u << warps) - 1;
    float t = warpSums[threadIdx.x];
    for (unsigned o = 16; o > 0; o >>= 1) {
      const float other = __shfl_down_sync(mask2, t, o);
      if (threadIdx.x + o < warps) t += other;
    }
    if (threadIdx.x == 0) out[blockIdx.x] = t;
  }
}

// Thread i writes i into shared memory; after the barrier it reads its neighbour's.
__global__ void neighbour(int* out) {
  SWERL_DYNAMIC_SHARED(int, slots);
  slots[threadIdx.x] = static_cast<int>(threadIdx.x) * 10;
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = slots[(threadIdx.x + 1) % blockDim.x] + static_cast<int>(blockIdx.x);
}

// Each lane records what every shuffle variant returns to it (one warp).
__global__ void shuffles(int* out) {
  const int lane = static_cast<int>(threadIdx.x);
  const unsigned all = 0xffffffffu;
  out[0 * 32 + lane] = __shfl_sync(all, lane * 3, 5);
  out[1 * 32 + lane] = __shfl_sync(all, lane * 3, 3, 8);
  out[2 * 32 + lane] = __shfl_xor_sync(all, lane, 1);
  out[3 * 32 + lane] = __shfl_down_sync(all, lane, 4, 16);
  out[4 * 32 + lane] = __shfl_up_sync(all, lane, 2);
  out[5 * 32 + lane] = static_cast<int>(__ballot_sync(all, lane % 3 == 0));
  out[6 * 32 + lane] = __any_sync(all, lane == 17) + 2 * __all_sync(all, lane < 40);
}

// A shuffle over the lower half-warp only (the upper half does other work).
__global__ void halfWarp(int* out) {
  const int lane = static_cast<int>(threadIdx.x);
  int v = lane;
  if (lane < 16) v = __shfl_xor_sync(0x0000ffffu, v, 8);
  out[lane] = v;
}

__global__ void countAtomic(int* counter) { atomicAdd(counter, 1); }

__global__ void indices(int* out) {
  const int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const int b = blockIdx.x + gridDim.x * blockIdx.y;
  out[b * blockDim.x * blockDim.y * blockDim.z + t] = b * 1000 + t;
}

__global__ void bigShared(float* out) {
  SWERL_DYNAMIC_SHARED(float, buf);
  const int n = 64 * 1024 / 4;
  for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = static_cast<float>(i);
  __syncthreads();
  if (threadIdx.x == 0) out[0] = buf[n - 1];
}

#if SWERL_CUDA_SIMULATED
// Half the block waits at __syncthreads while the other half waits at a warp collective that
// needs the first half's lanes: a deadlock the simulation reports.
__global__ void deadlock(int* out) {
  if (threadIdx.x < 16)
    __syncthreads();
  else
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, static_cast<int>(threadIdx.x), 1);
}
#endif

void checkSums() {
  for (int threads : {1, 31, 32, 33, 256, 1024}) {
    const int n = 1000, blocks = 3;
    std::vector<float> h(static_cast<size_t>(n) * blocks);
    for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>(i % 7);
    float* x = deviceArray<float>(h.size());
    float* out = deviceArray<float>(blocks);
    cudaMemcpy(x, h.data(), h.size() * 4, cudaMemcpyHostToDevice);
    SWERL_LAUNCH(blockSum, blocks, threads, 0, x, out, n);
    const cudaError_t err = cudaGetLastError();
    auto got = toHost(out, blocks);
    bool ok = err == cudaSuccess;
    std::string why = cudaGetErrorString(err);
    for (int b = 0; b < blocks; ++b) {
      double want = 0;
      for (int i = 0; i < n; ++i) want += h[static_cast<size_t>(b) * n + i];
      if (got[b] != static_cast<float>(want)) {
        ok = false;
        why = "block " + std::to_string(b) + ": " + std::to_string(got[b]) + " != " + std::to_string(want);
      }
    }
    const std::string name = "block sum over shuffles and shared memory, " + std::to_string(threads) + " threads";
    check(name.c_str(), ok, why);
    cudaFree(x);
    cudaFree(out);
  }
}

void checkBarrier() {
  const int threads = 96, blocks = 2;
  int* out = deviceArray<int>(threads * blocks);
  SWERL_LAUNCH(neighbour, blocks, threads, threads * sizeof(int), out);
  const cudaError_t err = cudaGetLastError();
  auto got = toHost(out, threads * blocks);
  bool ok = err == cudaSuccess;
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < threads; ++t) ok = ok && got[b * threads + t] == ((t + 1) % threads) * 10 + b;
  check("__syncthreads orders shared-memory writes before reads", ok, cudaGetErrorString(err));
  cudaFree(out);
}

void checkShuffles() {
  int* out = deviceArray<int>(7 * 32);
  SWERL_LAUNCH(shuffles, 1, 32, 0, out);
  const cudaError_t err = cudaGetLastError();
  auto got = toHost(out, 7 * 32);
  unsigned ballot = 0;
  for (int l = 0; l < 32; l += 3) ballot |= 1u << l;
  bool ok = err == cudaSuccess;
  std::string why = cudaGetErrorString(err);
  for (int l = 0; l < 32 && ok; ++l) {
    const int want[7] = {
        15,   ((l / 8) * 8 + 3) * 3, l ^ 1, (l % 16) + 4 < 16 ? l + 4 : l, l >= 2 ? l - 2 : l, static_cast<int>(ballot),
        1 + 2};
    for (int k = 0; k < 7; ++k)
      if (got[k * 32 + l] != want[k]) {
        ok = false;
        why = "variant " + std::to_string(k) + " lane " + std::to_string(l) + ": " + std::to_string(got[k * 32 + l]) +
              " != " + std::to_string(want[k]);
      }
  }
  check("shfl, shfl width 8, shfl_xor, shfl_down width 16, shfl_up, ballot, any/all", ok, why);

  SWERL_LAUNCH(halfWarp, 1, 32, 0, out);
  const cudaError_t err2 = cudaGetLastError();
  got = toHost(out, 32);
  ok = err2 == cudaSuccess;
  for (int l = 0; l < 32; ++l) ok = ok && got[l] == (l < 16 ? l ^ 8 : l);
  check("a shuffle over a half-warp mask", ok, cudaGetErrorString(err2));
  cudaFree(out);
}

void checkIndicesAndAtomics() {
  int* out = deviceArray<int>(6 * 24);
  SWERL_LAUNCH(indices, dim3(3, 2), dim3(4, 3, 2), 0, out);
  const cudaError_t err = cudaGetLastError();
  auto got = toHost(out, 6 * 24);
  bool ok = err == cudaSuccess;
  for (int b = 0; b < 6; ++b)
    for (int t = 0; t < 24; ++t) ok = ok && got[b * 24 + t] == b * 1000 + t;
  check("threadIdx/blockIdx/blockDim/gridDim in 3-D", ok, cudaGetErrorString(err));

  int* counter = deviceArray<int>(1);
  SWERL_LAUNCH(countAtomic, 5, 200, 0, counter);
  const cudaError_t err2 = cudaGetLastError();
  check("atomicAdd counts every thread", err2 == cudaSuccess && toHost(counter, 1)[0] == 1000,
        std::to_string(toHost(counter, 1)[0]));
  cudaFree(out);
  cudaFree(counter);
}

void checkLimits() {
  int* out = deviceArray<int>(2048);
  // A refused launch sets cudaErrorInvalidValue (a real launch's code for every refusal).
  auto refused = [](const char* name) {
    const cudaError_t err = cudaGetLastError();
    check(name, err == cudaErrorInvalidValue, std::to_string(static_cast<int>(err)) + " " + cudaGetErrorString(err));
  };
  SWERL_LAUNCH(countAtomic, 1, 1025, 0, out);
  refused("a block of 1025 threads is refused");
  SWERL_LAUNCH(countAtomic, 1, dim3(1, 1, 65), 0, out);
  refused("a block's z above 64 is refused");
  SWERL_LAUNCH(countAtomic, dim3(0), 32, 0, out);
  refused("an empty grid is refused");
  SWERL_LAUNCH(countAtomic, dim3(1, 65536), 1, 0, out);
  refused("a grid's y above 65535 is refused");

  float* f = deviceArray<float>(1);
  SWERL_LAUNCH(bigShared, 1, 128, 64 * 1024, f);
  check("64 KiB of dynamic shared memory without opting in is refused", cudaGetLastError() != cudaSuccess);
  const cudaError_t set = cudaFuncSetAttribute(bigShared, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024);
  SWERL_LAUNCH(bigShared, 1, 128, 64 * 1024, f);
  const cudaError_t err = cudaGetLastError();
  check("64 KiB of dynamic shared memory after cudaFuncSetAttribute",
        set == cudaSuccess && err == cudaSuccess && toHost(f, 1)[0] == 16383.0f, cudaGetErrorString(err));
  cudaFree(out);
  cudaFree(f);
}

#if SWERL_CUDA_SIMULATED
void checkSimulationOnly() {
  int* out = deviceArray<int>(32);
  SWERL_LAUNCH(deadlock, 1, 32, 0, out);
  const cudaError_t err = cudaGetLastError();
  const std::string text = cudaGetErrorString(err);
  check("the simulation reports a deadlocked barrier",
        err == cudaErrorLaunchFailure && text.find("deadlock") != std::string::npos, text);
  int host[4] = {};
  check("the simulation refuses a host pointer as a copy's device side",
        cudaMemcpy(host, host + 2, 8, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
  cudaGetLastError();
  check("the simulation refuses a copy past an allocation's end",
        cudaMemcpy(out + 30, host, 16, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
  cudaGetLastError();
  cudaFree(out);
}
#endif

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("skip: no CUDA device\n");
    return 0;
  }
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  std::printf("# device: %s\n", prop.name);
  checkSums();
  checkBarrier();
  checkShuffles();
  checkIndicesAndAtomics();
  checkLimits();
#if SWERL_CUDA_SIMULATED
  checkSimulationOnly();
#endif
  std::printf("# %d failed\n", failures);
  return failures == 0 ? 0 : 1;
}

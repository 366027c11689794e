// The CUDA simulation's runtime (cuda_sim.h): launches run block after block, a block's threads
// as ucontext fibers on the launching OS thread, with barriers and warp collectives resolved by a
// small scheduler; device memory is registered host memory. All launch state is thread-local,
// so launches from different OS threads (AsyncWorkers) never meet.
#include "kernels/cuda/sim/cuda_sim.h"

#include <ucontext.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace swerl::sim {
namespace {

constexpr size_t kStackBytes = 128 * 1024;  // per simulated thread; kernels keep small locals
constexpr size_t kDefaultSharedBytes = 48 * 1024;
constexpr size_t kMaxSharedBytes = 227 * 1024;  // sm_90's opt-in limit per block

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class Wait { None, Block, Warp, Done };

struct Fiber {
  ucontext_t ctx;
  ThreadIndices idx;
  unsigned lane = 0, warp = 0;
  Wait wait = Wait::None;
  unsigned mask = 0;   // of the warp collective it waits at
  uint64_t offer = 0;  // its value in that collective
};

struct Block {
  std::vector<Fiber> fibers;
  std::vector<std::array<uint64_t, 32>> warpValues;  // per warp: the last released collective's values
  ucontext_t scheduler;
  const std::function<void()>* body = nullptr;
  std::vector<unsigned char> shared;
  std::string error;
};

thread_local Block* tlBlock = nullptr;
thread_local Fiber* tlFiber = nullptr;
thread_local std::vector<std::unique_ptr<char[]>> tlStacks;  // reused across launches
thread_local cudaError_t tlLastError = cudaSuccess;
thread_local std::string tlFailureText;

std::mutex allocMutex;
std::map<uintptr_t, size_t> allocations;  // device allocations: base -> bytes
std::map<const void*, int> maxDynamicShared;

void yieldToScheduler() { swapcontext(&tlFiber->ctx, &tlBlock->scheduler); }

void fiberEntry() {
  try {
    (*tlBlock->body)();
  } catch (const std::exception& e) {
    if (tlBlock->error.empty()) tlBlock->error = e.what();
  } catch (...) {
    if (tlBlock->error.empty()) tlBlock->error = "an unknown exception";
  }
  tlFiber->wait = Wait::Done;
  // Returning resumes uc_link, the scheduler.
}

// Kept out of line: getcontext returns twice, and the launch loop's variables must not be its locals.
__attribute__((noinline)) void startFiber(Fiber& f, char* stack, ucontext_t* scheduler) {
  getcontext(&f.ctx);
  f.ctx.uc_stack.ss_sp = stack;
  f.ctx.uc_stack.ss_size = kStackBytes;
  f.ctx.uc_link = scheduler;
  makecontext(&f.ctx, fiberEntry, 0);
}

cudaError_t setError(cudaError_t err, std::string text) {
  tlLastError = err;
  tlFailureText = std::move(text);
  return err;
}

std::string dims(dim3 d) { return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z); }

// The check of a launch's configuration, as the driver makes it; empty when it is valid. A
// refused launch sets cudaErrorInvalidValue, as a real one does for every refused configuration
// (test/cuda/execution-model.cu, run on an H200 with CUDA 13.0).
std::string configurationError(const void* func, dim3 grid, dim3 block, size_t sharedBytes) {
  const uint64_t threads = static_cast<uint64_t>(block.x) * block.y * block.z;
  if (block.x == 0 || block.y == 0 || block.z == 0 || grid.x == 0 || grid.y == 0 || grid.z == 0)
    return "a zero grid or block dimension (grid " + dims(grid) + ", block " + dims(block) + ")";
  if (block.x > 1024 || block.y > 1024 || block.z > 64 || threads > 1024)
    return "block " + dims(block) + " exceeds 1024 threads per block (or 1024 x 1024 x 64)";
  if (grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535) return "grid " + dims(grid) + " exceeds the limits";
  size_t limit = kDefaultSharedBytes;
  {
    std::lock_guard<std::mutex> lock(allocMutex);
    auto it = maxDynamicShared.find(func);
    if (it != maxDynamicShared.end()) limit = static_cast<size_t>(it->second);
  }
  if (sharedBytes > limit)
    return std::to_string(sharedBytes) + " bytes of dynamic shared memory exceed the kernel's " +
           std::to_string(limit) +
           " (raise it with cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize), at most " +
           std::to_string(kMaxSharedBytes) + ")";
  return "";
}

// Releases the warp collectives whose every lane has arrived; returns whether any was released.
bool releaseWarps(Block& b, size_t numWarps) {
  bool released = false;
  for (size_t w = 0; w < numWarps; ++w) {
    Fiber* lanes[32] = {};
    const size_t first = w * 32;
    for (size_t l = 0; l < 32 && first + l < b.fibers.size(); ++l) lanes[l] = &b.fibers[first + l];
    for (size_t l = 0; l < 32; ++l) {
      if (!lanes[l] || lanes[l]->wait != Wait::Warp) continue;
      const unsigned mask = lanes[l]->mask;
      bool ready = true;
      for (unsigned k = 0; k < 32 && ready; ++k) {
        if (!(mask >> k & 1u)) continue;
        const Fiber* f = lanes[k];
        if (!f || f->wait == Wait::Done)
          throw Failure("a warp collective's mask names lane " + std::to_string(k) + ", which has exited");
        ready = f->wait == Wait::Warp && f->mask == mask;
      }
      if (!ready) continue;
      for (unsigned k = 0; k < 32; ++k) {
        if (!(mask >> k & 1u)) continue;
        b.warpValues[w][k] = lanes[k]->offer;
        lanes[k]->wait = Wait::None;
      }
      released = true;
    }
  }
  return released;
}

// Runs one block to completion; an error is left in b.error.
void runBlock(Block& b, size_t numWarps) {
  for (;;) {
    for (Fiber& f : b.fibers) {
      if (f.wait != Wait::None) continue;
      tlFiber = &f;
      swapcontext(&b.scheduler, &f.ctx);
      tlFiber = nullptr;
      if (!b.error.empty()) return;
    }
    try {
      if (releaseWarps(b, numWarps)) continue;
    } catch (const Failure& e) {
      b.error = e.what();
      return;
    }
    size_t live = 0, atBlock = 0, atWarp = 0;
    for (const Fiber& f : b.fibers) {
      if (f.wait == Wait::Done) continue;
      ++live;
      atBlock += f.wait == Wait::Block;
      atWarp += f.wait == Wait::Warp;
    }
    if (live == 0) return;
    if (atBlock == live) {
      for (Fiber& f : b.fibers)
        if (f.wait == Wait::Block) f.wait = Wait::None;
      continue;
    }
    b.error = "deadlock: " + std::to_string(atBlock) + " threads wait at __syncthreads and " + std::to_string(atWarp) +
              " at a warp collective whose lanes never all arrive (a barrier in divergent code?)";
    return;
  }
}

}  // namespace

const ThreadIndices& current() {
  if (!tlFiber) throw Failure("threadIdx/blockIdx read outside a kernel");
  return tlFiber->idx;
}

void syncThreads() {
  if (!tlFiber) throw Failure("__syncthreads() outside a kernel");
  tlFiber->wait = Wait::Block;
  yieldToScheduler();
}

void warpGather(unsigned mask, uint64_t value, uint64_t (&lanes)[32]) {
  if (!tlFiber) throw Failure("a warp collective outside a kernel");
  Fiber& f = *tlFiber;
  if (!(mask >> f.lane & 1u)) throw Failure("a warp collective whose mask leaves out the calling lane");
  const size_t present = std::min<size_t>(32, tlBlock->fibers.size() - f.warp * 32);
  if (present < 32 && (mask >> present) != 0)
    throw Failure("a warp collective's mask names lanes beyond the block's last thread");
  f.wait = Wait::Warp;
  f.mask = mask;
  f.offer = value;
  yieldToScheduler();
  const auto& got = tlBlock->warpValues[f.warp];
  for (unsigned k = 0; k < 32; ++k) lanes[k] = (mask >> k & 1u) ? got[k] : 0;
}

unsigned laneId() {
  if (!tlFiber) throw Failure("a lane id outside a kernel");
  return tlFiber->lane;
}

void* dynamicShared() {
  if (!tlBlock) throw Failure("dynamic shared memory outside a kernel");
  return tlBlock->shared.data();
}

void fail(const char* why) { throw Failure(why); }

void launch(const char* kernel, const void* func, dim3 grid, dim3 block, size_t sharedBytes,
            const std::function<void()>& body) {
  if (tlBlock) {
    setError(cudaErrorLaunchFailure, std::string(kernel) + ": launched from inside another kernel");
    return;
  }
  const std::string bad = configurationError(func, grid, block, sharedBytes);
  if (!bad.empty()) {
    setError(cudaErrorInvalidValue, std::string(kernel) + ": " + bad);
    return;
  }
  const size_t threads = static_cast<size_t>(block.x) * block.y * block.z;
  const size_t numWarps = (threads + 31) / 32;
  while (tlStacks.size() < threads) tlStacks.emplace_back(new char[kStackBytes]);

  Block b;
  b.fibers.resize(threads);
  b.warpValues.resize(numWarps);
  b.body = &body;
  b.shared.assign(sharedBytes > 0 ? sharedBytes : 1, 0xff);
  tlBlock = &b;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        std::fill(b.shared.begin(), b.shared.end(), 0xff);
        size_t t = 0;
        for (unsigned tz = 0; tz < block.z; ++tz)
          for (unsigned ty = 0; ty < block.y; ++ty)
            for (unsigned tx = 0; tx < block.x; ++tx, ++t) {
              Fiber& f = b.fibers[t];
              f.idx = ThreadIndices{uint3{tx, ty, tz}, uint3{bx, by, bz}, block, grid};
              f.lane = static_cast<unsigned>(t % 32);
              f.warp = static_cast<unsigned>(t / 32);
              f.wait = Wait::None;
              startFiber(f, tlStacks[t].get(), &b.scheduler);
            }
        runBlock(b, numWarps);
        if (!b.error.empty()) {
          tlBlock = nullptr;
          setError(cudaErrorLaunchFailure, std::string(kernel) + " (block " + std::to_string(bx) + "," +
                                               std::to_string(by) + "," + std::to_string(bz) + "): " + b.error);
          return;
        }
      }
  tlBlock = nullptr;
}

}  // namespace swerl::sim

// ---- the runtime API ------------------------------------------------------------------------

using swerl::sim::allocations;
using swerl::sim::allocMutex;
using swerl::sim::setError;

namespace {

// Whether [p, p + bytes) lies inside one device allocation.
bool onDevice(const void* p, size_t bytes) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(allocMutex);
  auto it = allocations.upper_bound(a);
  if (it == allocations.begin()) return false;
  --it;
  return a >= it->first && a + bytes <= it->first + it->second;
}

// Whether p points into any device allocation at all.
bool touchesDevice(const void* p) { return onDevice(p, 1); }

struct SimEvent {
  std::chrono::steady_clock::time_point at;
};

}  // namespace

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device != 0) return setError(cudaErrorInvalidDevice, "the simulation has one device, 0");
  std::memset(prop, 0, sizeof(*prop));
  std::strncpy(prop->name, "swerl CUDA simulation (CPU)", sizeof(prop->name) - 1);
  prop->totalGlobalMem = size_t{16} << 30;
  prop->sharedMemPerBlock = 48 * 1024;
  prop->sharedMemPerBlockOptin = 227 * 1024;
  prop->maxThreadsPerBlock = 1024;
  prop->multiProcessorCount = 132;
  prop->warpSize = 32;
  prop->major = 9;
  prop->minor = 0;
  prop->l2CacheSize = 50 << 20;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  return device == 0 ? cudaSuccess : setError(cudaErrorInvalidDevice, "the simulation has one device, 0");
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  *version = 0;  // no CUDA runtime: nativeInfo() reports the simulation instead
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
  *version = 0;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  const size_t rounded = ((bytes > 0 ? bytes : 1) + 255) / 256 * 256;
  void* p = std::aligned_alloc(256, rounded);
  if (!p) return setError(cudaErrorMemoryAllocation, "out of memory");
  std::lock_guard<std::mutex> lock(allocMutex);
  allocations[reinterpret_cast<uintptr_t>(p)] = bytes;
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  if (!ptr) return cudaSuccess;
  {
    std::lock_guard<std::mutex> lock(allocMutex);
    auto it = allocations.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == allocations.end())
      return setError(cudaErrorInvalidDevicePointer, "cudaFree of a pointer cudaMalloc did not return");
    allocations.erase(it);
  }
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (bytes == 0) return cudaSuccess;
  const bool dstDev = onDevice(dst, bytes), srcDev = onDevice(src, bytes);
  bool ok = true;
  switch (kind) {
    case cudaMemcpyHostToDevice:
      ok = dstDev && !touchesDevice(src);
      break;
    case cudaMemcpyDeviceToHost:
      ok = srcDev && !touchesDevice(dst);
      break;
    case cudaMemcpyDeviceToDevice:
      ok = dstDev && srcDev;
      break;
    case cudaMemcpyHostToHost:
      ok = !touchesDevice(dst) && !touchesDevice(src);
      break;
    case cudaMemcpyDefault:
      ok = (dstDev || !touchesDevice(dst)) && (srcDev || !touchesDevice(src));
      break;
  }
  if (!ok)
    return setError(cudaErrorInvalidValue, "cudaMemcpy of " + std::to_string(bytes) +
                                               " bytes whose pointers do not match the copy's direction " +
                                               std::to_string(static_cast<int>(kind)) +
                                               " (a host pointer passed as a device one, or out of an allocation)");
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t) {
  return cudaMemcpy(dst, src, bytes, kind);
}

cudaError_t cudaMemset(void* ptr, int value, size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  if (!onDevice(ptr, bytes)) return setError(cudaErrorInvalidValue, "cudaMemset outside a device allocation");
  std::memset(ptr, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t) { return cudaMemset(ptr, value, bytes); }
cudaError_t cudaDeviceSynchronize() { return swerl::sim::tlLastError; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return swerl::sim::tlLastError; }

cudaError_t cudaGetLastError() {
  const cudaError_t e = swerl::sim::tlLastError;
  swerl::sim::tlLastError = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError() { return swerl::sim::tlLastError; }

const char* cudaGetErrorString(cudaError_t err) {
  // The simulation's text of the last failure says what failed and where; it stays readable after
  // cudaGetLastError() clears the code, as CUDA_CHECK reads it then.
  thread_local std::string text;
  const char* name = "unknown error";
  switch (err) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      name = "invalid argument";
      break;
    case cudaErrorMemoryAllocation:
      name = "out of memory";
      break;
    case cudaErrorInvalidConfiguration:
      name = "invalid configuration argument";
      break;
    case cudaErrorInvalidDevicePointer:
      name = "invalid device pointer";
      break;
    case cudaErrorInvalidMemcpyDirection:
      name = "invalid copy direction for memcpy";
      break;
    case cudaErrorNoDevice:
      name = "no CUDA-capable device is detected";
      break;
    case cudaErrorInvalidDevice:
      name = "invalid device ordinal";
      break;
    case cudaErrorLaunchOutOfResources:
      name = "too many resources requested for launch";
      break;
    case cudaErrorLaunchFailure:
      name = "unspecified launch failure";
      break;
  }
  text = std::string(name) + " [simulation: " + swerl::sim::tlFailureText + "]";
  return text.c_str();
}

cudaError_t cudaMemGetInfo(size_t* freeBytes, size_t* totalBytes) {
  *totalBytes = size_t{16} << 30;
  size_t used = 0;
  {
    std::lock_guard<std::mutex> lock(allocMutex);
    for (const auto& a : allocations) used += a.second;
  }
  *freeBytes = used < *totalBytes ? *totalBytes - used : 0;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  *event = reinterpret_cast<cudaEvent_t>(new SimEvent());
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete reinterpret_cast<SimEvent*>(event);
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t) {
  reinterpret_cast<SimEvent*>(event)->at = std::chrono::steady_clock::now();
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  *ms = std::chrono::duration<float, std::milli>(reinterpret_cast<SimEvent*>(end)->at -
                                                 reinterpret_cast<SimEvent*>(start)->at)
            .count();
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttributeImpl(const void* func, cudaFuncAttribute attr, int value) {
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 ||
      static_cast<size_t>(value) > swerl::sim::kMaxSharedBytes)
    return setError(cudaErrorInvalidValue, "cudaFuncSetAttribute: at most " +
                                               std::to_string(swerl::sim::kMaxSharedBytes) +
                                               " bytes of dynamic shared memory per block");
  std::lock_guard<std::mutex> lock(allocMutex);
  swerl::sim::maxDynamicShared[func] = value;
  return cudaSuccess;
}

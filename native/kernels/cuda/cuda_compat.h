// The one include of every .cu source: the CUDA toolkit's headers when nvcc compiles it, the CPU
// simulation of CUDA's execution model (sim/cuda_sim.h) when the host compiler does (the
// swerl_cudasim test addon). A kernel source is written once, in plain CUDA, and uses only what
// both sides define; the two differences CUDA syntax forces are spelled through macros here:
//
//   SWERL_LAUNCH(kernel, grid, block, sharedBytes, args...)   kernel<<<grid, block, sharedBytes>>>(args...)
//   SWERL_DYNAMIC_SHARED(T, name)                             extern __shared__ T name[]
//
// A kernel named in SWERL_LAUNCH must be one token (a template kernel with one argument is fine;
// alias a multi-argument one). Errors of a launch are read with cudaGetLastError() as usual.
#pragma once

#if defined(__CUDACC__)

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define SWERL_CUDA_SIMULATED 0
#define SWERL_LAUNCH(kernel, grid, block, sharedBytes, ...) kernel<<<(grid), (block), (sharedBytes)>>>(__VA_ARGS__)
#define SWERL_DYNAMIC_SHARED(T, name) extern __shared__ T name[]

#else

#include "kernels/cuda/sim/cuda_sim.h"

#define SWERL_CUDA_SIMULATED 1
#define SWERL_LAUNCH(kernel, grid, block, sharedBytes, ...)                                             \
  ::swerl::sim::launch(#kernel, reinterpret_cast<const void*>(&kernel), (grid), (block), (sharedBytes), \
                       [&] { kernel(__VA_ARGS__); })
#define SWERL_DYNAMIC_SHARED(T, name) T* name = static_cast<T*>(::swerl::sim::dynamicShared())

#endif

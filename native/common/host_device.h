// SWERL_HOST_DEVICE marks a small function that the CPU kernels and the CUDA kernels both call,
// so that its math exists once (the race's hash and score, for instance): nvcc compiles it for
// both sides; the host compiler, and the CUDA simulation, see a plain inline function.
#pragma once

#if defined(__CUDACC__)
#define SWERL_HOST_DEVICE __host__ __device__
#else
#define SWERL_HOST_DEVICE
#endif

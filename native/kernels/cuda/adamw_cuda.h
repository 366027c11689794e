// AdamW and global-norm clipping over device parameters: the CUDA twins of train/adamw.h, and
// the two gradient-buffer kernels of the optimizer's CUDA device (train/optimizer.h).
// Every pointer is device memory (a DeviceBuffer's data()); every call is synchronous with the
// host (it returns once the kernels are done). Implemented by adamw.cu (nvcc, or the CPU
// simulation of the swerl_cudasim addon); cuda_absent.cc throws CUDA_UNAVAILABLE.
//
// Agreement with the CPU (measured in test/cuda/adamw.test.ts):
// - adamwUpdateCuda and scaleInPlaceCuda are bitwise equal to adamwUpdate and scaleInPlace: each
//   element goes through the same f32 operations in the same order, written with CUDA's rounded
//   intrinsics (__fmul_rn, __fadd_rn, ...) so that nvcc cannot fuse them into FMAs, and the
//   host-side scalars (bias corrections, step size) are computed as the CPU computes them.
// - globalNormCuda reduces in f64 in a fixed order that depends on n only (block partials over
//   fixed chunks, then one block sums the partials in order), so it is bitwise reproducible from
//   call to call and the same on a GPU as in the simulation; its order differs from the CPU's, so
//   it agrees with globalNorm to about 1e-15 relative, not bitwise.
#pragma once

#include <cstddef>
#include <cstdint>

#include "train/adamw.h"

namespace swerl {

/** The L2 norm of g[0, n) (0 for n = 0), accumulated in f64 in an order fixed by n alone. */
double globalNormCuda(const float* g, size_t n);

/** g[0, n) *= s. */
void scaleInPlaceCuda(float* g, size_t n, float s);

/** One AdamW step on w[0, n) with gradient g and moments m, v: adamwUpdate's arithmetic (train/adamw.h). */
void adamwUpdateCuda(float* w, const float* g, float* m, float* v, size_t n, const AdamWConfig& cfg, int64_t step,
                     bool decay);

/** a[0, n) = 0. */
void zeroCuda(float* a, size_t n);

/** into[i] += from[i], then from[i] = 0, for i in [0, n): a gradient slot folded in (train/optimizer.h). */
void accumulateCuda(float* into, float* from, size_t n);

}  // namespace swerl

// AdamW and global-norm clipping over device parameters: the CUDA twins of train/adamw.h, with
// the same arithmetic and a fixed reduction order. Every pointer is device memory.
// Implemented by adamw.cu; adamw_absent.cc throws CUDA_UNAVAILABLE.
#pragma once

#include <cstddef>
#include <cstdint>

#include "train/adamw.h"

namespace swerl {

double globalNormCuda(const float* g, size_t n);
void scaleInPlaceCuda(float* g, size_t n, float s);
void adamwUpdateCuda(float* w, const float* g, float* m, float* v, size_t n, const AdamWConfig& cfg, int64_t step,
                     bool decay);

}  // namespace swerl

// Row passes of the sampler's filters (kernels/cpu/sampler.cc), portable and AVX2. Each pair
// gives identical results: bins use the same float operations in the same order.
#pragma once

#include <cstddef>
#include <cstdint>

namespace swerl {

/** The smallest value above −Inf (+Inf if none). */
float rowFiniteMin(const float* x, size_t n);
/** bins[j] = the histogram bin of x[j]: see samplerBin(). */
void rowBins(const float* x, size_t n, float max, float scale, int32_t* bins);
/** Indices j with bins[j] == b, in order, into out; returns how many. */
size_t rowCollectBin(const int32_t* bins, size_t n, int32_t b, int32_t* out);

constexpr int kSamplerBins = 2048;

/** The bin of v: 0 for the largest values, non-decreasing as v falls; the last for −Inf. */
static inline int32_t samplerBin(float v, float max, float scale) {
  if (!(v > -__builtin_inff())) return kSamplerBins - 1;
  if (scale == 0) return 0;
  const float b = (max - v) * scale;
  if (!(b < kSamplerBins - 1)) return kSamplerBins - 1;
  return b > 0 ? static_cast<int32_t>(b) : 0;
}

float rowFiniteMinAvx2(const float* x, size_t n);
void rowBinsAvx2(const float* x, size_t n, float max, float scale, int32_t* bins);
size_t rowCollectBinAvx2(const int32_t* bins, size_t n, int32_t b, int32_t* out);

}  // namespace swerl

// Portable sampler row passes and their run-time dispatch (see sampler_kernels.h).
#include "kernels/cpu/sampler_kernels.h"

#include <limits>

#include "common/cpu_features.h"

namespace swerl {

namespace {
bool avx2() { return hasAvx2(); }
}  // namespace

float rowFiniteMin(const float* x, size_t n) {
  if (avx2()) return rowFiniteMinAvx2(x, n);
  float m = std::numeric_limits<float>::infinity();
  for (size_t j = 0; j < n; ++j)
    if (x[j] < m && x[j] > -std::numeric_limits<float>::infinity()) m = x[j];
  return m;
}

void rowBins(const float* x, size_t n, float max, float scale, int32_t* bins) {
  if (avx2()) return rowBinsAvx2(x, n, max, scale, bins);
  for (size_t j = 0; j < n; ++j) bins[j] = samplerBin(x[j], max, scale);
}

size_t rowCollectBin(const int32_t* bins, size_t n, int32_t b, int32_t* out) {
  if (avx2()) return rowCollectBinAvx2(bins, n, b, out);
  size_t k = 0;
  for (size_t j = 0; j < n; ++j)
    if (bins[j] == b) out[k++] = static_cast<int32_t>(j);
  return k;
}

}  // namespace swerl

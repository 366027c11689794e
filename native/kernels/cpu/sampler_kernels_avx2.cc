// AVX2 sampler row passes (see sampler_kernels.h). Compiled with -mavx2 -mfma; called only after
// the run-time check. rowBinsAvx2 uses samplerBin's exact float operations (no FMA).
#include "kernels/cpu/sampler_kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <limits>

namespace swerl {

float rowFiniteMinAvx2(const float* x, size_t n) {
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const __m256 pinf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  __m256 m = pinf;
  size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 v = _mm256_loadu_ps(x + j);
    m = _mm256_min_ps(m, _mm256_blendv_ps(v, pinf, _mm256_cmp_ps(v, ninf, _CMP_EQ_OQ)));
  }
  alignas(32) float l[8];
  _mm256_store_ps(l, m);
  float out = l[0];
  for (int i = 1; i < 8; ++i) out = l[i] < out ? l[i] : out;
  for (; j < n; ++j)
    if (x[j] < out && x[j] > -std::numeric_limits<float>::infinity()) out = x[j];
  return out;
}

void rowBinsAvx2(const float* x, size_t n, float max, float scale, int32_t* bins) {
  if (scale == 0) {
    for (size_t j = 0; j < n; ++j) bins[j] = samplerBin(x[j], max, scale);
    return;
  }
  const __m256 vmax = _mm256_set1_ps(max), vscale = _mm256_set1_ps(scale);
  const __m256 last = _mm256_set1_ps(static_cast<float>(kSamplerBins - 1)), zero = _mm256_setzero_ps();
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const __m256i lastBin = _mm256_set1_epi32(kSamplerBins - 1);
  size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 v = _mm256_loadu_ps(x + j);
    const __m256 b = _mm256_mul_ps(_mm256_sub_ps(vmax, v), vscale);
    // Lanes that are −Inf, NaN or >= the last bin take the last bin; others truncate, floored at 0.
    const __m256 toLast = _mm256_or_ps(_mm256_cmp_ps(v, ninf, _CMP_EQ_OQ), _mm256_cmp_ps(b, last, _CMP_NLT_UQ));
    const __m256i t = _mm256_cvttps_epi32(_mm256_max_ps(b, zero));
    const __m256i out = _mm256_blendv_epi8(t, lastBin, _mm256_castps_si256(toLast));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(bins + j), out);
  }
  for (; j < n; ++j) bins[j] = samplerBin(x[j], max, scale);
}

size_t rowCollectBinAvx2(const int32_t* bins, size_t n, int32_t b, int32_t* out) {
  const __m256i vb = _mm256_set1_epi32(b);
  size_t k = 0, j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bins + j));
    unsigned mask = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(v, vb))));
    while (mask != 0) {
      out[k++] = static_cast<int32_t>(j + static_cast<size_t>(__builtin_ctz(mask)));
      mask &= mask - 1;
    }
  }
  for (; j < n; ++j)
    if (bins[j] == b) out[k++] = static_cast<int32_t>(j);
  return k;
}

}  // namespace swerl

#else  // not x86: never selected at run time

namespace swerl {
float rowFiniteMinAvx2(const float*, size_t) { return 0; }
void rowBinsAvx2(const float*, size_t, float, float, int32_t*) {}
size_t rowCollectBinAvx2(const int32_t*, size_t, int32_t, int32_t*) { return 0; }
}  // namespace swerl

#endif

// AVX2/FMA primitives of the attention kernels (see attention_simd.h). Compiled with -mavx2
// -mfma; called only after the run-time check.
#include "kernels/cpu/attention_simd.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

namespace swerl {

float attnDotAvx2(const float* a, const float* b, size_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
  }
  alignas(32) float l[8];
  _mm256_store_ps(l, _mm256_add_ps(s0, s1));
  float t = 0;
  for (; i < n; ++i) t += a[i] * b[i];
  return (((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))) + t;
}

void attnAxpyAvx2(float* y, float a, const float* x, size_t n) {
  const __m256 va = _mm256_set1_ps(a);
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += a * x[i];
}

void attnScaleAvx2(float* y, float a, size_t n) {
  const __m256 va = _mm256_set1_ps(a);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(va, _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] *= a;
}

void attnTileDotsAvx2(const float* q, const float* const* rows, size_t n, size_t hd, float* s) {
  for (size_t i = 0; i < n; ++i) s[i] = attnDotAvx2(q, rows[i], hd);
}

void attnTileAxpyAvx2(float* acc, const float* e, const float* const* rows, size_t n, size_t hd) {
  size_t d = 0;
  for (; d + 32 <= hd; d += 32) {  // 32 columns of the accumulator in registers across the tile
    __m256 a0 = _mm256_loadu_ps(acc + d), a1 = _mm256_loadu_ps(acc + d + 8);
    __m256 a2 = _mm256_loadu_ps(acc + d + 16), a3 = _mm256_loadu_ps(acc + d + 24);
    for (size_t i = 0; i < n; ++i) {
      const __m256 ve = _mm256_set1_ps(e[i]);
      const float* r = rows[i] + d;
      a0 = _mm256_fmadd_ps(ve, _mm256_loadu_ps(r), a0);
      a1 = _mm256_fmadd_ps(ve, _mm256_loadu_ps(r + 8), a1);
      a2 = _mm256_fmadd_ps(ve, _mm256_loadu_ps(r + 16), a2);
      a3 = _mm256_fmadd_ps(ve, _mm256_loadu_ps(r + 24), a3);
    }
    _mm256_storeu_ps(acc + d, a0);
    _mm256_storeu_ps(acc + d + 8, a1);
    _mm256_storeu_ps(acc + d + 16, a2);
    _mm256_storeu_ps(acc + d + 24, a3);
  }
  for (size_t i = 0; i < n; ++i) attnAxpyAvx2(acc + d, e[i], rows[i] + d, hd - d);
}

}  // namespace swerl

#else  // not x86: never selected at run time

namespace swerl {
float attnDotAvx2(const float*, const float*, size_t) { return 0; }
void attnAxpyAvx2(float*, float, const float*, size_t) {}
void attnScaleAvx2(float*, float, size_t) {}
void attnTileDotsAvx2(const float*, const float* const*, size_t, size_t, float*) {}
void attnTileAxpyAvx2(float*, const float*, const float* const*, size_t, size_t) {}
}  // namespace swerl

#endif

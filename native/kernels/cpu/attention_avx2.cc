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

namespace {
// Row sums v = s0 + s1 of four rows' dot products with q, each accumulated in attnDotAvx2's
// order: chunks 16j into s0 and 16j + 8 into s1, by FMA. hd is a multiple of 16.
inline void lanes4(const float* q, const float* const* r, size_t hd, __m256* v) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, b0 = a0, b1 = a0, c0 = a0, c1 = a0, d0 = a0, d1 = a0;
  for (size_t i = 0; i < hd; i += 16) {
    const __m256 q0 = _mm256_loadu_ps(q + i), q1 = _mm256_loadu_ps(q + i + 8);
    a0 = _mm256_fmadd_ps(q0, _mm256_loadu_ps(r[0] + i), a0);
    a1 = _mm256_fmadd_ps(q1, _mm256_loadu_ps(r[0] + i + 8), a1);
    b0 = _mm256_fmadd_ps(q0, _mm256_loadu_ps(r[1] + i), b0);
    b1 = _mm256_fmadd_ps(q1, _mm256_loadu_ps(r[1] + i + 8), b1);
    c0 = _mm256_fmadd_ps(q0, _mm256_loadu_ps(r[2] + i), c0);
    c1 = _mm256_fmadd_ps(q1, _mm256_loadu_ps(r[2] + i + 8), c1);
    d0 = _mm256_fmadd_ps(q0, _mm256_loadu_ps(r[3] + i), d0);
    d1 = _mm256_fmadd_ps(q1, _mm256_loadu_ps(r[3] + i + 8), d1);
  }
  v[0] = _mm256_add_ps(a0, a1);
  v[1] = _mm256_add_ps(b0, b1);
  v[2] = _mm256_add_ps(c0, c1);
  v[3] = _mm256_add_ps(d0, d1);
}

// The lane tree of attnDotAvx2, ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)), for four rows at once.
// hadd(x, y) per 128-bit half is [x0+x1, x2+x3, y0+y1, y2+y3 | x4+x5, x6+x7, y4+y5, y6+y7], so
// hadd(hadd(v0, v1), hadd(v2, v3)) holds each row's (l0+l1)+(l2+l3) low and (l4+l5)+(l6+l7) high.
inline __m256 tree4(const __m256* v) { return _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3])); }
}  // namespace

void attnTileDotsAvx2(const float* q, const float* const* rows, size_t n, size_t hd, float* s) {
  size_t i = 0;
  // Several rows per reduction, each row's sum in attnDotAvx2's order; + 0 is its empty scalar
  // tail (it turns −0 into +0, as the row routine does).
  if (hd % 16 == 0) {
    __m256 v[8];
    for (; i + 8 <= n; i += 8) {
      lanes4(q, rows + i, hd, v);
      lanes4(q, rows + i + 4, hd, v + 4);
      const __m256 lo = tree4(v), hi = tree4(v + 4);
      const __m256 sum = _mm256_add_ps(_mm256_permute2f128_ps(lo, hi, 0x20), _mm256_permute2f128_ps(lo, hi, 0x31));
      _mm256_storeu_ps(s + i, _mm256_add_ps(sum, _mm256_setzero_ps()));
    }
    for (; i + 4 <= n; i += 4) {
      lanes4(q, rows + i, hd, v);
      const __m256 t = tree4(v);
      const __m128 sum = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
      _mm_storeu_ps(s + i, _mm_add_ps(sum, _mm_setzero_ps()));
    }
  }
  for (; i < n; ++i) s[i] = attnDotAvx2(q, rows[i], hd);
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
  if (d == hd) return;  // hd a multiple of 32 (the embedded model's 32, Qwen's 64 and 128)
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

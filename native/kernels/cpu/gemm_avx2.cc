// The 6×16 AVX2/FMA GEMM micro-kernel: 12 accumulators (6 rows × 2 vectors of 8), one
// broadcast of A and two loads of B per k. Compiled with -mavx2 -mfma; called only after the
// run-time check (see gemm.h).
#include "kernels/cpu/gemm.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

namespace swerl {

void gemmMicroAvx2(size_t kc, const float* a, const float* b, float* c, size_t ldc, size_t mr, size_t nr) {
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps(), c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
  __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps(), c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
  __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps(), c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
  for (size_t k = 0; k < kc; ++k, a += 6, b += 16) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
    __m256 ai = _mm256_broadcast_ss(a);
    c00 = _mm256_fmadd_ps(ai, b0, c00);
    c01 = _mm256_fmadd_ps(ai, b1, c01);
    ai = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(ai, b0, c10);
    c11 = _mm256_fmadd_ps(ai, b1, c11);
    ai = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(ai, b0, c20);
    c21 = _mm256_fmadd_ps(ai, b1, c21);
    ai = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(ai, b0, c30);
    c31 = _mm256_fmadd_ps(ai, b1, c31);
    ai = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(ai, b0, c40);
    c41 = _mm256_fmadd_ps(ai, b1, c41);
    ai = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(ai, b0, c50);
    c51 = _mm256_fmadd_ps(ai, b1, c51);
  }
  const __m256 acc[6][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  if (mr == 6 && nr == 16) {
    for (size_t i = 0; i < 6; ++i) {
      float* row = c + i * ldc;
      _mm256_storeu_ps(row, _mm256_add_ps(_mm256_loadu_ps(row), acc[i][0]));
      _mm256_storeu_ps(row + 8, _mm256_add_ps(_mm256_loadu_ps(row + 8), acc[i][1]));
    }
    return;
  }
  alignas(32) float tmp[16];
  for (size_t i = 0; i < mr; ++i) {
    _mm256_store_ps(tmp, acc[i][0]);
    _mm256_store_ps(tmp + 8, acc[i][1]);
    for (size_t j = 0; j < nr; ++j) c[i * ldc + j] += tmp[j];
  }
}

void gemmRowAvx2(size_t kc, const float* a, const float* panels, size_t count, size_t nc, float* c) {
  const size_t stride = kc * 16;
  auto store = [&](size_t p, __m256 lo, __m256 hi) {
    const size_t left = nc - p * 16;
    float* row = c + p * 16;
    if (left >= 16) {
      _mm256_storeu_ps(row, _mm256_add_ps(_mm256_loadu_ps(row), lo));
      _mm256_storeu_ps(row + 8, _mm256_add_ps(_mm256_loadu_ps(row + 8), hi));
      return;
    }
    alignas(32) float t[16];
    _mm256_store_ps(t, lo);
    _mm256_store_ps(t + 8, hi);
    for (size_t j = 0; j < left; ++j) row[j] = row[j] + t[j];
  };
  size_t p = 0;
  for (; p + 2 <= count; p += 2) {  // four independent FMA chains
    const float* b = panels + p * stride;
    __m256 x0 = _mm256_setzero_ps(), x1 = _mm256_setzero_ps(), y0 = _mm256_setzero_ps(), y1 = _mm256_setzero_ps();
    for (size_t k = 0; k < kc; ++k) {
      const __m256 av = _mm256_broadcast_ss(a + k);
      x0 = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + k * 16), x0);
      x1 = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + k * 16 + 8), x1);
      y0 = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + stride + k * 16), y0);
      y1 = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + stride + k * 16 + 8), y1);
    }
    store(p, x0, x1);
    store(p + 1, y0, y1);
  }
  for (; p < count; ++p) {
    const float* b = panels + p * stride;
    __m256 x0 = _mm256_setzero_ps(), x1 = _mm256_setzero_ps();
    for (size_t k = 0; k < kc; ++k) {
      const __m256 av = _mm256_broadcast_ss(a + k);
      x0 = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + k * 16), x0);
      x1 = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + k * 16 + 8), x1);
    }
    store(p, x0, x1);
  }
}

}  // namespace swerl

#else  // not x86: never selected at run time

namespace swerl {
void gemmMicroAvx2(size_t kc, const float* a, const float* b, float* c, size_t ldc, size_t mr, size_t nr) {
  gemmMicroScalar(kc, a, b, c, ldc, mr, nr);
}
void gemmRowAvx2(size_t kc, const float* a, const float* panels, size_t count, size_t nc, float* c) {
  gemmRowScalar(kc, a, panels, count, nc, c);
}
}  // namespace swerl

#endif

// The 12×16 AVX-512 GEMM micro-kernel: 12 accumulators (12 rows × one 16-lane vector), one load
// of B and twelve broadcasts of A per k. Each C element is the same FMA chain over k as in the
// AVX2 kernel. Compiled with -mavx512f; called only at SimdLevel::Avx512 (see gemm.h).
#include "kernels/cpu/gemm.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace swerl {

void gemmMicroAvx512(size_t kc, const float* a, const float* b, float* c, size_t ldc, size_t mr, size_t nr) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_setzero_ps();
  for (size_t k = 0; k < kc; ++k, a += 12, b += 16) {
    const __m512 bv = _mm512_loadu_ps(b);
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(a[i]), bv, acc[i]);
  }
  const __mmask16 cols = nr >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << nr) - 1);
  for (size_t i = 0; i < mr; ++i) {
    float* row = c + i * ldc;
    _mm512_mask_storeu_ps(row, cols, _mm512_add_ps(_mm512_maskz_loadu_ps(cols, row), acc[i]));
  }
}

void gemmMicro2Avx512(size_t kc, const float* a, const float* b0, const float* b1, float* c, size_t ldc, size_t mr,
                      size_t nr) {
  // Two adjacent 16-column panels at once: 24 accumulators, 2 loads and 12 broadcasts per 24 FMAs.
  __m512 x[12], y[12];
  for (int i = 0; i < 12; ++i) x[i] = y[i] = _mm512_setzero_ps();
  for (size_t k = 0; k < kc; ++k, a += 12, b0 += 16, b1 += 16) {
    const __m512 u = _mm512_loadu_ps(b0), v = _mm512_loadu_ps(b1);
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
      x[i] = _mm512_fmadd_ps(ai, u, x[i]);
      y[i] = _mm512_fmadd_ps(ai, v, y[i]);
    }
  }
  const size_t nr1 = nr > 16 ? nr - 16 : 0;
  const __mmask16 m1 = nr1 >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << nr1) - 1);
  for (size_t i = 0; i < mr; ++i) {
    float* row = c + i * ldc;
    _mm512_storeu_ps(row, _mm512_add_ps(_mm512_loadu_ps(row), x[i]));
    _mm512_mask_storeu_ps(row + 16, m1, _mm512_add_ps(_mm512_maskz_loadu_ps(m1, row + 16), y[i]));
  }
}

void gemmRowAvx512(size_t kc, const float* a, const float* panels, size_t count, size_t nc, float* c) {
  const size_t stride = kc * 16;
  auto store = [&](size_t p, __m512 acc) {
    const size_t left = nc - p * 16;
    const __mmask16 cols = left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1);
    float* row = c + p * 16;
    _mm512_mask_storeu_ps(row, cols, _mm512_add_ps(_mm512_maskz_loadu_ps(cols, row), acc));
  };
  size_t p = 0;
  for (; p + 8 <= count; p += 8) {  // eight independent FMA chains and load streams
    const float* b = panels + p * stride;
    __m512 acc[8];
    for (int q = 0; q < 8; ++q) acc[q] = _mm512_setzero_ps();
    for (size_t k = 0; k < kc; ++k) {
      const __m512 av = _mm512_set1_ps(a[k]);
#pragma GCC unroll 8
      for (int q = 0; q < 8; ++q) acc[q] = _mm512_fmadd_ps(av, _mm512_loadu_ps(b + q * stride + k * 16), acc[q]);
    }
    for (int q = 0; q < 8; ++q) store(p + q, acc[q]);
  }
  for (; p < count; ++p) {
    const float* b = panels + p * stride;
    __m512 acc = _mm512_setzero_ps();
    for (size_t k = 0; k < kc; ++k) acc = _mm512_fmadd_ps(_mm512_set1_ps(a[k]), _mm512_loadu_ps(b + k * 16), acc);
    store(p, acc);
  }
}

}  // namespace swerl

#else  // not x86-64: never selected at run time

namespace swerl {
void gemmMicroAvx512(size_t kc, const float* a, const float* b, float* c, size_t ldc, size_t mr, size_t nr) {
  gemmMicroScalar(kc, a, b, c, ldc, mr, nr);  // unreachable; 12-row panels are AVX-512 only
}
void gemmRowAvx512(size_t kc, const float* a, const float* panels, size_t count, size_t nc, float* c) {
  gemmRowScalar(kc, a, panels, count, nc, c);
}
void gemmMicro2Avx512(size_t kc, const float* a, const float* b0, const float* b1, float* c, size_t ldc, size_t mr,
                      size_t nr) {
  gemmMicroScalar(kc, a, b0, c, ldc, mr, 16);
  gemmMicroScalar(kc, a, b1, c + 16, ldc, mr, nr - 16);
}
}  // namespace swerl

#endif

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

void gemmRowAvx512(size_t kc, const float* a, const float* panels, size_t count, size_t nc, float* c) {
  const size_t stride = kc * 16;
  auto store = [&](size_t p, __m512 acc) {
    const size_t left = nc - p * 16;
    const __mmask16 cols = left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1);
    float* row = c + p * 16;
    _mm512_mask_storeu_ps(row, cols, _mm512_add_ps(_mm512_maskz_loadu_ps(cols, row), acc));
  };
  size_t p = 0;
  for (; p + 4 <= count; p += 4) {  // four independent FMA chains
    const float* b = panels + p * stride;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
    for (size_t k = 0; k < kc; ++k) {
      const __m512 av = _mm512_set1_ps(a[k]);
      a0 = _mm512_fmadd_ps(av, _mm512_loadu_ps(b + k * 16), a0);
      a1 = _mm512_fmadd_ps(av, _mm512_loadu_ps(b + stride + k * 16), a1);
      a2 = _mm512_fmadd_ps(av, _mm512_loadu_ps(b + 2 * stride + k * 16), a2);
      a3 = _mm512_fmadd_ps(av, _mm512_loadu_ps(b + 3 * stride + k * 16), a3);
    }
    store(p, a0);
    store(p + 1, a1);
    store(p + 2, a2);
    store(p + 3, a3);
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
}  // namespace swerl

#endif

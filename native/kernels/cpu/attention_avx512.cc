// AVX-512 primitives of the attention kernels (see attention_simd.h). Compiled with -mavx512f;
// called only at SimdLevel::Avx512.
#include "kernels/cpu/attention_simd.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace swerl {

namespace {
inline __mmask16 tailMask(size_t left) { return static_cast<__mmask16>((1u << left) - 1); }
}  // namespace

float attnDotAvx512(const float* a, const float* b, size_t n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xffff) : tailMask(n - i);
    s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s0);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

void attnAxpyAvx512(float* y, float a, const float* x, size_t n) {
  const __m512 va = _mm512_set1_ps(a);
  for (size_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xffff) : tailMask(n - i);
    _mm512_mask_storeu_ps(y + i, m,
                          _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
  }
}

void attnScaleAvx512(float* y, float a, size_t n) {
  const __m512 va = _mm512_set1_ps(a);
  for (size_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xffff) : tailMask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(va, _mm512_maskz_loadu_ps(m, y + i)));
  }
}

void attnTileDotsAvx512(const float* q, const float* const* rows, size_t n, size_t hd, float* s) {
  for (size_t i = 0; i < n; ++i) s[i] = attnDotAvx512(q, rows[i], hd);
}

void attnTileAxpyAvx512(float* acc, const float* e, const float* const* rows, size_t n, size_t hd) {
  // The accumulator stays in registers across the tile, 64 columns at a time.
  for (size_t d = 0; d < hd; d += 64) {
    const size_t w = hd - d < 64 ? hd - d : 64;
    __mmask16 m[4];
    __m512 a[4];
    for (int c = 0; c < 4; ++c) {
      const size_t lo = static_cast<size_t>(c) * 16;
      m[c] = lo >= w ? 0 : (w - lo >= 16 ? static_cast<__mmask16>(0xffff) : tailMask(w - lo));
      a[c] = _mm512_maskz_loadu_ps(m[c], acc + d + lo);
    }
    for (size_t i = 0; i < n; ++i) {
      const __m512 ve = _mm512_set1_ps(e[i]);
      const float* r = rows[i] + d;
      for (int c = 0; c < 4; ++c) a[c] = _mm512_fmadd_ps(ve, _mm512_maskz_loadu_ps(m[c], r + c * 16), a[c]);
    }
    for (int c = 0; c < 4; ++c) _mm512_mask_storeu_ps(acc + d + c * 16, m[c], a[c]);
  }
}

}  // namespace swerl

#else  // not x86-64: never selected at run time

namespace swerl {
float attnDotAvx512(const float*, const float*, size_t) { return 0; }
void attnAxpyAvx512(float*, float, const float*, size_t) {}
void attnScaleAvx512(float*, float, size_t) {}
void attnTileDotsAvx512(const float*, const float* const*, size_t, size_t, float*) {}
void attnTileAxpyAvx512(float*, const float*, const float* const*, size_t, size_t) {}
}  // namespace swerl

#endif

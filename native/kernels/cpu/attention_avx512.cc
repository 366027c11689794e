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

namespace {
// r[j] = the sum of v[j]'s 16 lanes, for j < 16. Every row goes through the same tree (128-bit
// halves, then quarters, then within a quarter), and IEEE addition commutes, so a row's sum does
// not depend on its position in the tile or on the other rows.
inline __m512 sum16(const __m512* v) {
  __m512 t[8], u[4];
  for (int i = 0; i < 8; ++i)
    t[i] = _mm512_add_ps(_mm512_shuffle_f32x4(v[i], v[i + 8], 0x44), _mm512_shuffle_f32x4(v[i], v[i + 8], 0xEE));
  for (int i = 0; i < 4; ++i)
    u[i] = _mm512_add_ps(_mm512_shuffle_f32x4(t[i], t[i + 4], 0x88), _mm512_shuffle_f32x4(t[i], t[i + 4], 0xDD));
  const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(u[0], u[1]), _mm512_unpackhi_ps(u[0], u[1]));
  const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(u[2], u[3]), _mm512_unpackhi_ps(u[2], u[3]));
  const __m512 r = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, 0x44), _mm512_shuffle_ps(ab, cd, 0xEE));
  // Quarters hold rows 0-3, 8-11, 4-7, 12-15: put them in order.
  return _mm512_shuffle_f32x4(r, r, 0xD8);
}
}  // namespace

namespace {
// A full tile (16 rows, hd a multiple of 16): the same arithmetic as the general path below, with
// the row count a constant so that the 16 accumulators stay in registers (the general loop's
// variable trip count spilled them to the stack: a load and a store around every FMA).
void tileDotsFull(const float* q, const float* const* rows, size_t hd, float* s) {
  __m512 acc[16];
  const float* r[16];
  for (int i = 0; i < 16; ++i) {
    acc[i] = _mm512_setzero_ps();
    r[i] = rows[i];
  }
  for (size_t d = 0; d < hd; d += 16) {
    const __m512 qv = _mm512_loadu_ps(q + d);
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_fmadd_ps(qv, _mm512_loadu_ps(r[i] + d), acc[i]);
  }
  _mm512_storeu_ps(s, sum16(acc));
}

// acc[d .. d+16C) += Σ_i e[i]·rows[i][d .. d+16C): the general path's arithmetic, unmasked, with
// the chunk count a constant. Head dimension 32 ran the general path with two of its four
// accumulators on all-zero masks: half its FMAs and loads did nothing.
template <int C>
void tileAxpyChunks(float* acc, const float* e, const float* const* rows, size_t n, size_t d) {
  __m512 a[C];
  for (int c = 0; c < C; ++c) a[c] = _mm512_loadu_ps(acc + d + c * 16);
  for (size_t i = 0; i < n; ++i) {
    const __m512 ve = _mm512_set1_ps(e[i]);
    const float* r = rows[i] + d;
    for (int c = 0; c < C; ++c) a[c] = _mm512_fmadd_ps(ve, _mm512_loadu_ps(r + c * 16), a[c]);
  }
  for (int c = 0; c < C; ++c) _mm512_storeu_ps(acc + d + c * 16, a[c]);
}
}  // namespace

void attnTileDotsAvx512(const float* q, const float* const* rows, size_t n, size_t hd, float* s) {
  if (n == 16 && hd % 16 == 0) return tileDotsFull(q, rows, hd, s);
  // One 16-lane accumulator per row over the head dimension in order, then one transposed
  // reduction for the whole tile instead of a horizontal sum per row.
  __m512 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_ps();
  for (size_t d = 0; d < hd; d += 16) {
    const __mmask16 m = hd - d >= 16 ? static_cast<__mmask16>(0xffff) : tailMask(hd - d);
    const __m512 qv = _mm512_maskz_loadu_ps(m, q + d);
    for (size_t i = 0; i < n; ++i) acc[i] = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(m, rows[i] + d), acc[i]);
  }
  _mm512_mask_storeu_ps(s, n >= 16 ? static_cast<__mmask16>(0xffff) : tailMask(n), sum16(acc));
}

void attnTileAxpyAvx512(float* acc, const float* e, const float* const* rows, size_t n, size_t hd) {
  if (hd % 16 == 0) {
    size_t d = 0;
    for (; d + 64 <= hd; d += 64) tileAxpyChunks<4>(acc, e, rows, n, d);
    switch ((hd - d) / 16) {
      case 3:
        return tileAxpyChunks<3>(acc, e, rows, n, d);
      case 2:
        return tileAxpyChunks<2>(acc, e, rows, n, d);
      case 1:
        return tileAxpyChunks<1>(acc, e, rows, n, d);
      default:
        return;
    }
  }
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

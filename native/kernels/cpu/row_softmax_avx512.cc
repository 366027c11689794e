// AVX-512 row kernels for row_softmax.h: the AVX2 ones 16 lanes wide, with the same exp
// polynomial (expNonPositive's). Compiled with -mavx512f; called only at SimdLevel::Avx512.
// Lane sums are reduced in a fixed tree order, so results depend only on the row.
#include "kernels/cpu/row_softmax.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <limits>

namespace swerl {

namespace {

// exp(x) for x <= 0; 0 below -87 and for −Inf.
inline __m512 exp16(__m512 x) {
  const __mmask16 under = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_NGE_UQ);
  x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
  const __m512i e = _mm512_slli_epi32(_mm512_cvtps_epi32(n), 23);
  return _mm512_maskz_mov_ps(static_cast<__mmask16>(~under),
                             _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(y), e)));
}

// Fixed-order sum of 16 lanes plus a scalar tail added to lane 0.
inline float hsum16(__m512 v, float tail) {
  alignas(64) float l[16];
  _mm512_store_ps(l, v);
  l[0] += tail;
  float a[8];
  for (int i = 0; i < 8; ++i) a[i] = l[2 * i] + l[2 * i + 1];
  return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

}  // namespace

float rowMaxAvx512(const float* x, size_t n, bool& finite, bool& noNanOrPosInf) {
  const __m512 inf = _mm512_set1_ps(std::numeric_limits<float>::infinity());
  __m512 m = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __mmask16 bad = 0, insane = 0;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    m = _mm512_max_ps(m, v);
    bad |= _mm512_cmp_ps_mask(_mm512_abs_ps(v), inf, _CMP_NLT_UQ);
    insane |= _mm512_cmp_ps_mask(v, inf, _CMP_NLT_UQ);
  }
  float out = _mm512_reduce_max_ps(m);
  bool ok = bad == 0, sane = insane == 0;
  for (; i < n; ++i) {
    ok &= (x[i] - x[i] == 0.0f);
    sane &= x[i] < std::numeric_limits<float>::infinity() || x[i] == -std::numeric_limits<float>::infinity();
    out = x[i] > out ? x[i] : out;
  }
  finite = ok;
  noNanOrPosInf = sane;
  return out;
}

void rowChunkStatsAvx512(const float* x, size_t n, float max, float& sumExp, float& sumExpX, float* expOut) {
  const __m512 m = _mm512_set1_ps(max), lo = _mm512_set1_ps(-87.0f);
  __m512 s = _mm512_setzero_ps(), q = _mm512_setzero_ps(), s2 = _mm512_setzero_ps(), q2 = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 d = _mm512_sub_ps(_mm512_loadu_ps(x + i), m);
    const __m512 d2 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 16), m);
    const __m512 e = exp16(d), e2 = exp16(d2);
    if (expOut) {
      _mm512_storeu_ps(expOut + i, e);
      _mm512_storeu_ps(expOut + i + 16, e2);
    }
    s = _mm512_add_ps(s, e);
    s2 = _mm512_add_ps(s2, e2);
    q = _mm512_fmadd_ps(e, _mm512_max_ps(d, lo), q);
    q2 = _mm512_fmadd_ps(e2, _mm512_max_ps(d2, lo), q2);
  }
  s = _mm512_add_ps(s, s2);
  q = _mm512_add_ps(q, q2);
  float ts = 0, tq = 0;
  for (; i < n; ++i) {
    const float d = x[i] - max;
    const float e = expNonPositive(d);
    if (expOut) expOut[i] = e;
    ts += e;
    tq += e * (d > -87.0f ? d : -87.0f);
  }
  sumExp = hsum16(s, ts);
  sumExpX = hsum16(q, tq);
}

float rowExpScaledChunkAvx512(const float* x, size_t n, float max, float scale, float* out) {
  const __m512 m = _mm512_set1_ps(max), sc = _mm512_set1_ps(scale);
  __m512 s = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 e = exp16(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), m), sc));
    _mm512_storeu_ps(out + i, e);
    s = _mm512_add_ps(s, e);
  }
  float t = 0;
  for (; i < n; ++i) {
    out[i] = expNonPositive((x[i] - max) * scale);
    t += out[i];
  }
  return hsum16(s, t);
}

void rowScaleGradAvx512(const float* e, const float* x, size_t n, float invSum, float a, float b, float lse,
                        float* out) {
  size_t i = 0;
  if (x == nullptr) {
    const __m512 k = _mm512_set1_ps(invSum * a);
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_loadu_ps(e + i), k));
    for (; i < n; ++i) out[i] = e[i] * (invSum * a);
    return;
  }
  const __m512 vi = _mm512_set1_ps(invSum), va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b), vl = _mm512_set1_ps(lse);
  for (; i + 16 <= n; i += 16) {
    const __m512 d = _mm512_sub_ps(_mm512_loadu_ps(x + i), vl);
    _mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_mul_ps(_mm512_loadu_ps(e + i), vi), _mm512_fmadd_ps(vb, d, va)));
  }
  for (; i < n; ++i) out[i] = e[i] * invSum * (a + b * (x[i] - lse));
}

void rowSoftmaxGradAvx512(const float* x, size_t n, float lse, float a, float b, float* out) {
  const __m512 l = _mm512_set1_ps(lse), va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b);
  const __m512 zero = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 d = _mm512_min_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), l), zero);
    _mm512_storeu_ps(out + i, _mm512_mul_ps(exp16(d), _mm512_fmadd_ps(vb, d, va)));
  }
  for (; i < n; ++i) {
    float d = x[i] - lse;
    d = d > 0 ? 0 : d;
    out[i] = expNonPositive(d) * (a + b * d);
  }
}

}  // namespace swerl

#else  // not x86-64: never selected at run time

namespace swerl {
float rowMaxAvx512(const float*, size_t, bool& finite, bool& sane) { return finite = sane = false, 0.0f; }
void rowChunkStatsAvx512(const float*, size_t, float, float&, float&, float*) {}
float rowExpScaledChunkAvx512(const float*, size_t, float, float, float*) { return 0; }
void rowScaleGradAvx512(const float*, const float*, size_t, float, float, float, float, float*) {}
void rowSoftmaxGradAvx512(const float*, size_t, float, float, float, float*) {}
}  // namespace swerl

#endif

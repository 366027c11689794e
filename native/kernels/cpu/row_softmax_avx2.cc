// AVX2/FMA row kernels for row_softmax.h. Compiled with -mavx2 -mfma; called only after the
// run-time check. The exp polynomial is the scalar one (expNonPositive), evaluated 8 wide.
#include "kernels/cpu/row_softmax.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <limits>

namespace swerl {

namespace {

// exp(x) for x <= 0; 0 below -87 and for −Inf, like expNonPositive.
inline __m256 exp8(__m256 x) {
  const __m256 under = _mm256_cmp_ps(x, _mm256_set1_ps(-87.0f), _CMP_NGE_UQ);
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(p, r), r, r), _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
  return _mm256_andnot_ps(under, _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(y), e)));
}

inline float hsum(__m256 v) {
  // ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)), the scalar path's order
  alignas(32) float l[8];
  _mm256_store_ps(l, v);
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

}  // namespace

float rowMaxAvx2(const float* x, size_t n, bool& finite, bool& noNanOrPosInf) {
  const __m256 inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  __m256 m = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 bad = _mm256_setzero_ps(), insane = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    m = _mm256_max_ps(m, v);
    // |v| < inf is false for ±inf and NaN; v < inf is false for +inf and NaN
    const __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
    bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, inf, _CMP_NLT_UQ));
    insane = _mm256_or_ps(insane, _mm256_cmp_ps(v, inf, _CMP_NLT_UQ));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  float out = lanes[0];
  for (int l = 1; l < 8; ++l) out = lanes[l] > out ? lanes[l] : out;
  bool ok = _mm256_movemask_ps(bad) == 0, sane = _mm256_movemask_ps(insane) == 0;
  for (; i < n; ++i) {
    ok &= (x[i] - x[i] == 0.0f);  // false for ±inf and NaN
    sane &= x[i] < std::numeric_limits<float>::infinity() || x[i] == -std::numeric_limits<float>::infinity();
    out = x[i] > out ? x[i] : out;
  }
  finite = ok;
  noNanOrPosInf = sane;
  return out;
}

size_t rowFindFirstAvx2(const float* x, size_t n, float v) {
  const __m256 vv = _mm256_set1_ps(v);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const int mask = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), vv, _CMP_EQ_OQ));
    if (mask != 0) return i + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
  }
  for (; i < n; ++i)
    if (x[i] == v) return i;
  return n;
}

void rowChunkStatsAvx2(const float* x, size_t n, float max, float& sumExp, float& sumExpX, float* expOut) {
  const __m256 m = _mm256_set1_ps(max), lo = _mm256_set1_ps(-87.0f);
  __m256 s = _mm256_setzero_ps(), q = _mm256_setzero_ps();
  __m256 s2 = _mm256_setzero_ps(), q2 = _mm256_setzero_ps();  // a second chain hides add latency
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), m);
    const __m256 d2 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 8), m);
    const __m256 e = exp8(d), e2 = exp8(d2);
    if (expOut) {
      _mm256_storeu_ps(expOut + i, e);
      _mm256_storeu_ps(expOut + i + 8, e2);
    }
    s = _mm256_add_ps(s, e);
    s2 = _mm256_add_ps(s2, e2);
    q = _mm256_fmadd_ps(e, _mm256_max_ps(d, lo), q);
    q2 = _mm256_fmadd_ps(e2, _mm256_max_ps(d2, lo), q2);
  }
  s = _mm256_add_ps(s, s2);
  q = _mm256_add_ps(q, q2);
  for (; i + 8 <= n; i += 8) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), m);
    const __m256 e = exp8(d);
    if (expOut) _mm256_storeu_ps(expOut + i, e);
    s = _mm256_add_ps(s, e);
    q = _mm256_fmadd_ps(e, _mm256_max_ps(d, _mm256_set1_ps(-87.0f)), q);  // e is 0 below; no −Inf
  }
  float ts = 0, tq = 0;
  for (; i < n; ++i) {
    const float d = x[i] - max;
    const float e = expNonPositive(d);
    if (expOut) expOut[i] = e;
    ts += e;
    tq += e * (d > -87.0f ? d : -87.0f);
  }
  alignas(32) float ls[8];
  _mm256_store_ps(ls, s);
  ls[0] += ts;
  s = _mm256_load_ps(ls);
  alignas(32) float lq[8];
  _mm256_store_ps(lq, q);
  lq[0] += tq;
  q = _mm256_load_ps(lq);
  sumExp = hsum(s);
  sumExpX = hsum(q);
}

float rowExpScaledChunkAvx2(const float* x, size_t n, float max, float scale, float* out) {
  const __m256 m = _mm256_set1_ps(max), sc = _mm256_set1_ps(scale);
  __m256 s = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp8(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), m), sc));
    _mm256_storeu_ps(out + i, e);
    s = _mm256_add_ps(s, e);
  }
  alignas(32) float l[8];
  _mm256_store_ps(l, s);
  for (size_t k = 0; i < n; ++i, ++k) {
    const float e = expNonPositive((x[i] - max) * scale);
    out[i] = e;
    l[k % 8] += e;
  }
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

void rowScaleGradAvx2(const float* e, const float* x, size_t n, float invSum, float a, float b, float lse, float* out) {
  size_t i = 0;
  if (x == nullptr) {
    const __m256 k = _mm256_set1_ps(invSum * a);
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(e + i), k));
    for (; i < n; ++i) out[i] = e[i] * (invSum * a);
    return;
  }
  const __m256 vi = _mm256_set1_ps(invSum), va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b), vl = _mm256_set1_ps(lse);
  for (; i + 8 <= n; i += 8) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), vl);
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(e + i), vi), _mm256_fmadd_ps(vb, d, va)));
  }
  for (; i < n; ++i) out[i] = e[i] * invSum * (a + b * (x[i] - lse));
}

void rowSoftmaxGradAvx2(const float* x, size_t n, float lse, float a, float b, float* out) {
  const __m256 l = _mm256_set1_ps(lse), va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
  const __m256 zero = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 d = _mm256_min_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), l), zero);
    _mm256_storeu_ps(out + i, _mm256_mul_ps(exp8(d), _mm256_fmadd_ps(vb, d, va)));
  }
  for (; i < n; ++i) {
    float d = x[i] - lse;
    d = d > 0 ? 0 : d;
    out[i] = expNonPositive(d) * (a + b * d);
  }
}

}  // namespace swerl

#else  // not x86: never selected at run time

namespace swerl {
float rowMaxAvx2(const float*, size_t, bool& finite, bool& sane) { return finite = sane = false, 0.0f; }
float rowExpScaledChunkAvx2(const float*, size_t, float, float, float*) { return 0; }
size_t rowFindFirstAvx2(const float*, size_t n, float) { return n; }
void rowChunkStatsAvx2(const float*, size_t, float, float&, float&, float*) {}
void rowScaleGradAvx2(const float*, const float*, size_t, float, float, float, float, float*) {}
void rowSoftmaxGradAvx2(const float*, size_t, float, float, float, float*) {}
}  // namespace swerl

#endif

// AVX-512 candidate scan of the exponential race (see race.h): the AVX2 scan sixteen lanes wide.
// Compiled with -mavx512f; called only at SimdLevel::Avx512.
#include "kernels/cpu/race.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace swerl {

namespace {

inline __m512i mix16(__m512i x) {
  x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 16));
  x = _mm512_mullo_epi32(x, _mm512_set1_epi32(static_cast<int>(0x7feb352dU)));
  x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 15));
  x = _mm512_mullo_epi32(x, _mm512_set1_epi32(static_cast<int>(0x846ca68bU)));
  return _mm512_xor_si512(x, _mm512_srli_epi32(x, 16));
}

}  // namespace

size_t raceNextCandidateAvx512(const float* y, const float* e, float thr, size_t begin, size_t n, float c, RaceKey key,
                               uint32_t base) {
  const __m512 vc = _mm512_set1_ps(c), vthr = _mm512_set1_ps(thr), tiny = _mm512_set1_ps(0x1p-24f);
  const __m512i ka = _mm512_set1_epi32(static_cast<int>(key.a)), kb = _mm512_set1_epi32(static_cast<int>(key.b));
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i one = _mm512_set1_epi32(1);
  size_t j = begin;
  for (; j + 16 <= n; j += 16) {
    const __m512 w = _mm512_mul_ps(_mm512_loadu_ps(e + j), vc);
    __mmask16 live = _mm512_cmp_ps_mask(w, tiny, _CMP_GE_OQ);
    if (y) live &= _mm512_cmp_ps_mask(_mm512_loadu_ps(y + j), vthr, _CMP_GE_OQ);
    if (live == 0) continue;
    const __m512i idx = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(base + static_cast<uint32_t>(j))), lanes);
    const __m512i bits = mix16(_mm512_xor_si512(mix16(_mm512_add_epi32(idx, ka)), kb));
    const __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_srli_epi32(bits, 8), one)), tiny);
    const __mmask16 m = live & _mm512_cmp_ps_mask(v, w, _CMP_LE_OQ);
    if (m) return j + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(m)));
  }
  for (; j < n; ++j) {
    const float w = e[j] * c;
    if (!(w >= 0x1p-24f) || (y && !(y[j] >= thr))) continue;
    if (raceV(key, base + static_cast<uint32_t>(j)) <= w) return j;
  }
  return n;
}

}  // namespace swerl

#else  // not x86-64: never selected at run time

namespace swerl {
size_t raceNextCandidateAvx512(const float*, const float*, float, size_t, size_t n, float, RaceKey, uint32_t) {
  return n;
}
}  // namespace swerl

#endif

// AVX2 candidate scan of the exponential race (see race.h): raceV's hash eight lanes at a time,
// only for lanes whose bound e_j · c reaches 2^-24. Compiled with -mavx2; called only after the
// run-time check. Returns exactly what the portable scan returns.
#include "kernels/cpu/race.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

namespace swerl {

namespace {

inline __m256i mix8(__m256i x) {
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32(static_cast<int>(0x7feb352dU)));
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 15));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32(static_cast<int>(0x846ca68bU)));
  return _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
}

}  // namespace

size_t raceNextCandidateAvx2(const float* y, const float* e, float thr, size_t begin, size_t n, float c, RaceKey key,
                             uint32_t base) {
  const __m256 vc = _mm256_set1_ps(c), vthr = _mm256_set1_ps(thr), tiny = _mm256_set1_ps(0x1p-24f);
  const __m256i ka = _mm256_set1_epi32(static_cast<int>(key.a)), kb = _mm256_set1_epi32(static_cast<int>(key.b));
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), one = _mm256_set1_epi32(1);
  size_t j = begin;
  for (; j + 8 <= n; j += 8) {
    const __m256 w = _mm256_mul_ps(_mm256_loadu_ps(e + j), vc);
    __m256 live = _mm256_cmp_ps(w, tiny, _CMP_GE_OQ);
    if (y) live = _mm256_and_ps(live, _mm256_cmp_ps(_mm256_loadu_ps(y + j), vthr, _CMP_GE_OQ));
    if (_mm256_movemask_ps(live) == 0) continue;
    const __m256i idx = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(base + static_cast<uint32_t>(j))), lanes);
    const __m256i bits = mix8(_mm256_xor_si256(mix8(_mm256_add_epi32(idx, ka)), kb));
    const __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_srli_epi32(bits, 8), one)), tiny);
    const int m = _mm256_movemask_ps(_mm256_and_ps(live, _mm256_cmp_ps(v, w, _CMP_LE_OQ)));
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

#else  // not x86: never selected at run time

namespace swerl {
size_t raceNextCandidateAvx2(const float*, const float*, float, size_t, size_t n, float, RaceKey, uint32_t) {
  return n;
}
}  // namespace swerl

#endif

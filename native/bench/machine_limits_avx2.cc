// The AVX2/FMA peak-throughput loop: 12 independent accumulator chains hide the FMA latency
// (4-5 cycles at 2 FMAs per cycle needs at least 10 in flight). Compiled with -mavx2 -mfma.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "bench/machine_limits.h"

namespace swerl {

#if defined(__x86_64__) || defined(__i386__)

float fmaLoopAvx2(long iters, float seed) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(seed + static_cast<float>(i) * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, acc[i]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

#else  // not x86: never selected at run time, forward to the portable code

float fmaLoopAvx2(long iters, float seed) { return fmaLoopScalar(iters, seed); }

#endif

}  // namespace swerl

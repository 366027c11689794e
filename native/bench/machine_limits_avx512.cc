// The AVX-512 peak-throughput loop, so that machine.peak_fma_gflops is the machine's limit even
// where swerl's kernels are only AVX2: 12 independent 16-wide chains. Compiled with -mavx512f;
// called only when the CPU reports AVX-512F.
#include "bench/machine_limits.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace swerl {

float fmaLoopAvx512(long iters, float seed) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(seed + static_cast<float>(i) * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  __m512 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, acc[i]);
  return _mm512_reduce_add_ps(s);
}

}  // namespace swerl

#else  // not x86-64: never selected at run time

namespace swerl {
float fmaLoopAvx512(long iters, float seed) { return fmaLoopScalar(iters, seed); }
}  // namespace swerl

#endif

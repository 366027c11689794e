// Measures the machine's limits that benchmarks are reported against (DESIGN.md section 8):
// memory bandwidth (a STREAM-style copy on all threads) and peak fp32 FMA throughput (independent
// FMA chains on all threads, AVX2 when present).
#pragma once

#include <cstddef>

namespace swerl {

/** Best-of-reps copy bandwidth in GB/s, counting bytes read plus bytes written (STREAM's convention). */
double measureStreamCopyGbps(size_t bytes, int reps, int threads);
/** Peak fp32 GFLOP/s (an FMA counts 2) over about `seconds`, on `threads` threads. */
double measurePeakFmaGflops(double seconds, int threads);

/** One thread's FMA loop: `iters` rounds over 12 independent 8-wide chains; returns a checksum. */
float fmaLoopScalar(long iters, float seed);
float fmaLoopAvx2(long iters, float seed);
/** 12 chains of 16 lanes: twice the work of the others per iteration (kFlopsPerFmaLoopIter × 2). */
float fmaLoopAvx512(long iters, float seed);
constexpr double kFlopsPerFmaLoopIter = 12 * 8 * 2;

/** The instruction set measurePeakFmaGflops uses: "avx512f", "avx2-fma" or "scalar". */
const char* peakFmaIsa();

}  // namespace swerl

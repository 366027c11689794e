// Run-time CPU feature selection.
//
// The addon is compiled for baseline x86-64 (or whatever the target is); files named *_avx2.cc
// are compiled with -mavx2 -mfma -mf16c and may only be called when simdLevel() says so. That is
// what keeps the addon from dying with SIGILL on an older CPU. SWERL_SIMD=scalar in the
// environment forces the portable paths (tests use it to compare both).
#pragma once

namespace swerl {

enum class SimdLevel { Scalar, Avx2Fma };

/** The widest instruction set this process will use; fixed at first call. */
SimdLevel simdLevel();

/** "avx2-fma" or "scalar". */
const char* simdLevelName(SimdLevel level);

}  // namespace swerl

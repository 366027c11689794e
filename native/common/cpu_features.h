// Run-time CPU feature selection.
//
// The addon is compiled for baseline x86-64 (or whatever the target is); files named *_avx2.cc
// are compiled with -mavx2 -mfma -mf16c and *_avx512.cc with -mavx512f, and may only be called
// when simdLevel() says so. That is what keeps the addon from dying with SIGILL on an older CPU.
// SWERL_SIMD=scalar or SWERL_SIMD=avx2 in the environment caps the level (tests use it to
// compare paths).
#pragma once

namespace swerl {

enum class SimdLevel { Scalar, Avx2Fma, Avx512 };  // ordered: each includes the ones before

/** The widest instruction set this process will use; fixed at first call. */
SimdLevel simdLevel();

/** "avx512", "avx2-fma" or "scalar". */
const char* simdLevelName(SimdLevel level);

/** AVX2 + FMA + F16C available (also true at the AVX-512 level). */
inline bool hasAvx2() { return simdLevel() >= SimdLevel::Avx2Fma; }
/** AVX-512F available. */
inline bool hasAvx512() { return simdLevel() >= SimdLevel::Avx512; }

}  // namespace swerl

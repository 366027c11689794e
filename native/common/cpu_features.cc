// Detects AVX2+FMA+F16C once per process (see cpu_features.h).
#include "common/cpu_features.h"

#include <cstdlib>
#include <cstring>

namespace swerl {

static SimdLevel detect() {
  const char* forced = std::getenv("SWERL_SIMD");
  if (forced != nullptr && std::strcmp(forced, "scalar") == 0) return SimdLevel::Scalar;
  const bool capAvx2 = forced != nullptr && std::strcmp(forced, "avx2") == 0;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")))
    return SimdLevel::Scalar;
#if defined(__x86_64__)
  if (!capAvx2 && __builtin_cpu_supports("avx512f")) return SimdLevel::Avx512;
#endif
  return SimdLevel::Avx2Fma;
#else
  (void)capAvx2;
  return SimdLevel::Scalar;
#endif
}

SimdLevel simdLevel() {
  static const SimdLevel level = detect();  // thread-safe one-time init
  return level;
}

const char* simdLevelName(SimdLevel level) {
  switch (level) {
    case SimdLevel::Avx512:
      return "avx512";
    case SimdLevel::Avx2Fma:
      return "avx2-fma";
    case SimdLevel::Scalar:
      break;
  }
  return "scalar";
}

}  // namespace swerl

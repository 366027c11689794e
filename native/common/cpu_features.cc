// Detects AVX2+FMA+F16C once per process (see cpu_features.h).
#include "common/cpu_features.h"

#include <cstdlib>
#include <cstring>

namespace swerl {

static SimdLevel detect() {
  const char* forced = std::getenv("SWERL_SIMD");
  if (forced != nullptr && std::strcmp(forced, "scalar") == 0) return SimdLevel::Scalar;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c"))
    return SimdLevel::Avx2Fma;
#endif
  return SimdLevel::Scalar;
}

SimdLevel simdLevel() {
  static const SimdLevel level = detect();  // thread-safe one-time init
  return level;
}

const char* simdLevelName(SimdLevel level) { return level == SimdLevel::Avx2Fma ? "avx2-fma" : "scalar"; }

}  // namespace swerl

// Portable scalar conversions between f32 and the 16-bit float formats (IEEE binary16 "f16" and
// bfloat16 "bf16"), both rounding to nearest even. The AVX2 paths in kernels/cpu/*_avx2.cc must
// give bit-identical results (F16C's vcvtps2ph with _MM_FROUND_TO_NEAREST_INT does).
//
// Everything here has internal linkage (static): *_avx2.cc files include this header, and an
// out-of-line copy they compiled with -mavx2 must never be what the linker picks for the
// portable path (that would be SIGILL on a CPU without AVX2).
#pragma once

#include <cstdint>
#include <cstring>

namespace swerl {

static inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

static inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

static inline uint16_t f32ToBf16(float f) {
  uint32_t u = floatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

static inline float bf16ToF32(uint16_t h) { return bitsFloat(static_cast<uint32_t>(h) << 16); }

static inline uint16_t f32ToF16(float f) {
  uint32_t u = floatBits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));  // quiet NaN
  if (abs == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {                                               // f16 subnormal or zero
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);           // < 2^-25: rounds to 0
    uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    int shift = 126 - static_cast<int>(abs >> 23);  // 14..24 for exponents 112..102
    uint32_t half = mant >> shift;
    uint32_t rest = mant & ((1u << shift) - 1u);
    uint32_t mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);  // round mantissa to 10 bits, nearest even
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

static inline float f16ToF32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bitsFloat(sign | 0x7f800000u | (mant ? 0x400000u | (mant << 13) : 0u));
  if (exp == 0) {
    if (mant == 0) return bitsFloat(sign);
    float f = static_cast<float>(mant) * (1.0f / 16777216.0f);  // mant * 2^-24
    return sign ? -f : f;
  }
  return bitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

}  // namespace swerl

// AVX2/F16C row converters for the KV kernels. Compiled with -mavx2 -mfma -mf16c and only
// called after the run-time check in kv_kernels.cc. Bit-identical to the scalar converters.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "common/half.h"
#include "kernels/cpu/kv_kernels.h"

namespace swerl {

#if defined(__x86_64__) || defined(__i386__)

// bf16 round-to-nearest-even of 8 floats, NaNs quieted, as f32ToBf16.
static inline __m128i bf16x8(__m256 x) {
  __m256i u = _mm256_castps_si256(x);
  __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i rounded = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
  __m256i abs = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  __m256i isNan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));
  __m256i nan = _mm256_or_si256(u, _mm256_set1_epi32(0x400000));
  __m256i r = _mm256_srli_epi32(_mm256_blendv_epi8(rounded, nan, isNan), 16);
  __m128i lo = _mm256_castsi256_si128(r), hi = _mm256_extracti128_si256(r, 1);
  return _mm_packus_epi32(lo, hi);
}

void convertRowF32ToAvx2(void* dst, const float* src, size_t n, KvDtype dtype) {
  auto* d = static_cast<uint16_t*>(dst);
  size_t i = 0;
  if (dtype == KvDtype::F16) {
    for (; i + 8 <= n; i += 8) {
      __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), h);
    }
    for (; i < n; ++i) d[i] = f32ToF16(src[i]);
  } else if (dtype == KvDtype::Bf16) {
    for (; i + 8 <= n; i += 8) _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), bf16x8(_mm256_loadu_ps(src + i)));
    for (; i < n; ++i) d[i] = f32ToBf16(src[i]);
  } else {
    convertRowF32To(dst, src, n, dtype);
  }
}

void convertRowToF32Avx2(float* dst, const void* src, size_t n, KvDtype dtype) {
  const auto* s = static_cast<const uint16_t*>(src);
  size_t i = 0;
  if (dtype == KvDtype::F16) {
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
    for (; i < n; ++i) dst[i] = f16ToF32(s[i]);
  } else if (dtype == KvDtype::Bf16) {
    for (; i + 8 <= n; i += 8) {
      __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
      _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
    }
    for (; i < n; ++i) dst[i] = bf16ToF32(s[i]);
  } else {
    convertRowToF32(dst, src, n, dtype);
  }
}

#else  // not x86: never selected at run time, forward to the portable code

void convertRowF32ToAvx2(void* dst, const float* src, size_t n, KvDtype dtype) { convertRowF32To(dst, src, n, dtype); }
void convertRowToF32Avx2(float* dst, const void* src, size_t n, KvDtype dtype) { convertRowToF32(dst, src, n, dtype); }

#endif

}  // namespace swerl

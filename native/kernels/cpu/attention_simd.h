// The vector primitives of the attention kernels (attention.cc), one set per SIMD level, chosen
// at run time. Dense and paged attention run the same set, so they agree bitwise at any level.
#pragma once

#include <cstddef>

namespace swerl {

struct AttentionOps {
  float (*dot)(const float* a, const float* b, size_t n);     // Σ a·b, fixed order
  void (*axpy)(float* y, float a, const float* x, size_t n);  // y += a·x
  void (*scale)(float* y, float a, size_t n);                 // y *= a
  // One key tile: s[i] = q·rows[i] for i < n (n ≤ 16), rows of length hd.
  void (*tileDots)(const float* q, const float* const* rows, size_t n, size_t hd, float* s);
  // acc += Σ_i e[i]·rows[i] for i < n, in order of i.
  void (*tileAxpy)(float* acc, const float* e, const float* const* rows, size_t n, size_t hd);
  // e[i] = exp(s[i] − max) for i < n (all ≤ 0 after the shift); returns Σ e in a fixed order.
  float (*tileExp)(const float* s, size_t n, float max, float* e);
};

/** The set for the CPU's SIMD level (AVX-512, AVX2 or portable). */
const AttentionOps& attentionOps();

void attnTileDotsAvx2(const float* q, const float* const* rows, size_t n, size_t hd, float* s);
void attnTileAxpyAvx2(float* acc, const float* e, const float* const* rows, size_t n, size_t hd);
void attnTileDotsAvx512(const float* q, const float* const* rows, size_t n, size_t hd, float* s);
void attnTileAxpyAvx512(float* acc, const float* e, const float* const* rows, size_t n, size_t hd);
float attnDotAvx2(const float* a, const float* b, size_t n);
void attnAxpyAvx2(float* y, float a, const float* x, size_t n);
void attnScaleAvx2(float* y, float a, size_t n);
float attnDotAvx512(const float* a, const float* b, size_t n);
void attnAxpyAvx512(float* y, float a, const float* x, size_t n);
void attnScaleAvx512(float* y, float a, size_t n);

}  // namespace swerl

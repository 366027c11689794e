// The decoder's elementwise and row kernels (CPU): RMSNorm, rotary embeddings, SiLU·mul, bias.
// Every row is computed on its own in a fixed order, so a token's result does not depend on the
// other tokens in the call (batch invariance). Multi-threaded over rows.
#pragma once

#include <cstddef>
#include <cstdint>

namespace swerl {

/**
 * out[t] = x[t] / sqrt(mean(x[t]²) + eps) · w for rows t in [0, rows), row length n (HF's
 * Qwen2RMSNorm/LlamaRMSNorm; the mean in f64). out may alias x. invRms, when given, receives
 * each row's 1 / sqrt(mean + eps) (for the backward pass).
 */
void rmsNorm(const float* x, size_t rows, size_t n, const float* w, float eps, float* out, float* invRms = nullptr);

/**
 * cos and sin tables [count, half] for positions pos[0..count): angle = pos · invFreq[i] in f64,
 * times attentionFactor (YaRN's scaling of cos and sin; 1 otherwise).
 */
void ropeTables(const int64_t* pos, size_t count, const double* invFreq, size_t half, double attentionFactor,
                float* cosOut, float* sinOut);

/**
 * Rotates heads in place, HF's rotate-half convention: for each of `heads` heads of width 2·half
 * in row t (rows of rowStride floats), x1 = x[i], x2 = x[i + half]:
 * x[i] = x1·cos − x2·sin, x[i + half] = x2·cos + x1·sin, with row t's tables.
 */
void applyRope(float* x, size_t rows, size_t rowStride, size_t heads, size_t half, const float* cosT,
               const float* sinT);

/** out[t, j] = silu(gu[t, j]) · gu[t, n + j] for rows of gu [rows, 2n]; silu(g) = g / (1 + e^−g). */
void siluMul(const float* gu, size_t rows, size_t n, float* out);

/** x[t, j] += bias[j] for rows of x [rows, n]. */
void addBias(float* x, size_t rows, size_t n, const float* bias);

}  // namespace swerl

// Backward passes of the decoder's row kernels (decoder_kernels.h). Parameter gradients are
// accumulated (+=) in a fixed order (over rows in order, per column), so they are reproducible
// whatever the thread count.
#pragma once

#include <cstddef>
#include <cstdint>

namespace swerl {

/**
 * For y = rmsNorm(x)·w with row scales invRms (from the forward): dx (+)= ∂/∂x, dw += Σ_t dy·x̂.
 * dx is overwritten when accumulate is false.
 */
void rmsNormBackward(const float* x, const float* invRms, const float* w, const float* dy, size_t rows, size_t n,
                     float* dx, bool accumulate, float* dw);

/** For out = silu(g)·u over gu [rows, 2n]: dgu [rows, 2n] from dOut [rows, n]. */
void siluMulBackward(const float* gu, const float* dOut, size_t rows, size_t n, float* dgu);

/** sums[j] += Σ_t x[t, j] (bias gradients). */
void addColumnSums(const float* x, size_t rows, size_t n, float* sums);

/** dE[tokens[t]] += dx[t] for rows t in order (the embedding's gradient). */
void embeddingBackward(const int32_t* tokens, const float* dx, size_t rows, size_t n, float* dE);

}  // namespace swerl

// The token losses fused with the LM head on the GPU: the CUDA twin of fusedLmHeadLoss
// (train/fused_lm_head_loss.h), same contract, chunking and errors, with the hidden states, the
// LM-head weight and both gradients in device memory. Per chunk of tokens [t0, t0 + n):
//
//   logits_c [n, V] f32 = bf16(X_c) · bf16(W)ᵀ     cuBLAS, f32 accumulation (kernels/cuda/blas.h)
//   G_c      [n, V] f32 = d loss / d logits_c       in place of logits_c (losses.cu's processRowsCuda)
//   dX_c     [n, H] f32 = bf16(G_c) · bf16(W)       written
//   dW       [V, H] f32 += bf16(G_c)ᵀ · bf16(X_c)   accumulated (beta = 1), as the CPU's dW +=
//
// W is rounded to bf16 once per call, X_c and G_c per chunk; the device memory a call allocates
// (and frees before returning) is bf16(W) [V, H], bf16(X_c) [chunk, H], the one f32 logits buffer
// [chunk, V] and its bf16 copy [chunk, V]: never a [T, V] tensor. The loss's logit scale s (its
// invTemperature) applies to these logits as on the CPU: the loss is of softmax(s · X·Wᵀ) and G
// carries the factor s, so dX and dW do too.
//
// Accuracy (test/cuda/fused-loss.test.ts). The products see X, W and G rounded to bf16 (8
// significant bits: relative error ≤ 2^-8 each); everything else is f32 with f64 row statistics, as
// policyLossCuda. Against a float64 evaluation on the bf16-rounded X and W (whose logits the GEMM
// computes up to f32 accumulation), so that G's rounding is the only bf16 error left, with
// s = invTemperature and `top` the largest scale of the tensor:
//   loss, entropy   |Δ| ≤ 1e-5 · max(1, |loss|, Σ_t |w_t·ℓ_t|)           (measured 7.9e-7)
//   logprobs        |Δ| ≤ 1e-5 · max(1, s) · max(1, |logp|)              (measured 4.3e-7)
//   dX[t, h]        |Δ| ≤ 5e-3 · Σ_v |G_tv · bf16(W)_vh| + 1e-6 · top     (measured 2.9e-3)
//   dW[v, h]        |Δ| ≤ 5e-3 · Σ_t |G_tv · bf16(X)_th| + 1e-6 · top     (measured 3.8e-3)
// 5e-3 is G's rounding, 2^-8 = 3.9e-3, plus f32; the floor covers rows made nearly one-hot by a low
// temperature, where the logits' f32 rounding moves the small 1 − p relatively much (the CPU's
// f32 path differs from float64 there alike). Against the CPU's f32 path on unrounded inputs the
// logits also differ by the inputs' rounding, |Δ logits[t, v]| ≤ (2^-7 + 2^-16) · Σ_h |X_th · W_vh|,
// and so the logprobs by up to twice s times that. Results for different chunk sizes agree within
// the bounds above (in the simulation the logits, logprobs and dX are bitwise the same).
//
// Errors (nothing written in the first two cases): INVALID_ARGUMENT (bad sizes, chunkTokens 0, or
// what TokenLoss refuses), NON_FINITE_LOGITS when X or W holds NaN or ±Inf (checked before the
// first product) or when finite inputs still give a non-finite logit (then the chunks before the
// one refused have written their dX rows and added to dW, as on the CPU), CUDA_ERROR,
// CUDA_UNAVAILABLE (cuda_absent.cc, or without cuBLAS).
//
// Implemented by fused_loss.cu (nvcc, or the CPU simulation, where cuBLAS is the CPU GEMM).
#pragma once

#include <cstdint>

#include "train/fused_lm_head_loss.h"
#include "train/losses.h"

namespace swerl {

/**
 * Runs `loss` (constructed for these T tokens) over the LM head on the device. h.hidden [T, H]
 * and h.weight [V, H] are device pointers (f32, row-major; read only); dHidden [T, H] (written) and
 * dWeight [V, H] (added to) are device pointers, distinct from each other and from the inputs;
 * logprobs [T] is a host array. targets [T] (host) and invTemperature are those `loss` was
 * constructed with (TokenLoss keeps them private): the targets scored by each row and the logit
 * scale s. Synchronous: returns with every result written.
 */
void fusedLmHeadLossCuda(const LmHead& h, TokenLoss& loss, const int32_t* targets, float invTemperature, float* dHidden,
                         float* dWeight, float* logprobs);

}  // namespace swerl

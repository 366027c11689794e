// The token losses on device logits: the CUDA twins of policyLoss and sftLoss (train/losses.h),
// with the same contract, options and errors. Logits and their gradient [T, V] f32 row-major live
// in device memory (the gradient may be the logits themselves: written in place); the per-token
// inputs [T] and the logprobs out [T] are host arrays.
//
// Split between host and device (losses.cu): the host checks the inputs and works out the
// aggregation weights, then each row's loss term and gradient coefficients, in token order, with
// train/losses.cc's TokenLoss (the one copy of that math); the device does the per-row work, one
// block per row in two kernels:
//   rowStatsKernel  reads the row once (online max / Σexp / Σexp·x) and x[target]; writes 32 bytes
//                   of statistics (max, log Σexp, entropy, logp, finite);
//   rowGradKernel   reads the row once more and writes each gradient element once.
// A row's results depend only on the row and V (the block size is a function of V, the reduction
// order fixed), never on the batch. NaN or ±Inf logits (−Inf too, as on the CPU) throw
// NON_FINITE_LOGITS after the first kernel, before any gradient is written: a refused call leaves
// the gradient buffer (and logits updated in place) untouched.
//
// Implemented by losses.cu (nvcc, or the CPU simulation); cuda_absent.cc throws CUDA_UNAVAILABLE.
#pragma once

#include <cstddef>
#include <cstdint>

#include "train/losses.h"

namespace swerl {

/**
 * policyLoss on device logits: in.logits is a device pointer [T, V], the other arrays of `in` are
 * host arrays [T]; writes deviceGradLogits [T, V] (may equal in.logits) and the host logprobs [T].
 * Errors: INVALID_ARGUMENT, NON_FINITE_LOGITS (nothing written), CUDA_ERROR, CUDA_UNAVAILABLE.
 */
PolicyLossResult policyLossCuda(const PolicyLossInputs& in, const PolicyLossConfig& cfg, float* deviceGradLogits,
                                float* logprobs);

/**
 * sftLoss on device logits [T, V] (masked mean cross-entropy of softmax(invTemperature · logits));
 * writes deviceGradLogits [T, V] (may equal deviceLogits) and the host logprobs [T]; returns the loss.
 */
double sftLossCuda(const float* deviceLogits, size_t tokens, size_t vocab, const int32_t* targets, const float* mask,
                   float* deviceGradLogits, float* logprobs, float invTemperature = 1);

/**
 * The device half of TokenLoss::processRows (policyLossCuda and sftLossCuda call it for all T rows,
 * the fused LM-head loss, fused_loss_cuda.h, per chunk): rows [t0, t0 + n) of the tokens `loss`
 * was constructed for, whose logits chunkLogits [n, V] (device) were computed on the fly. Writes
 * their gradient to chunkGrad [n, V] (device; may equal chunkLogits: written in place) and the host
 * logprobs[t0 .. t0 + n), and adds their loss terms to `loss` (call in token order). targets is the
 * host array of all T targets (row i of the chunk scores targets[t0 + i]); s is the loss's logit
 * scale (its invTemperature). NON_FINITE_LOGITS (nothing written: the gradient, the logprobs and the
 * loss are untouched) when a row of the chunk holds NaN or ±Inf; synchronous (returns after the
 * gradient is written).
 */
void processRowsCuda(TokenLoss& loss, const float* chunkLogits, size_t t0, size_t n, size_t V, const int32_t* targets,
                     float s, float* chunkGrad, float* logprobs);

}  // namespace swerl

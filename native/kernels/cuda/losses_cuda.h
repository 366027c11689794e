// The token losses on device logits: the CUDA twins of policyLoss and sftLoss (train/losses.h),
// with the same contract. Logits and their gradient [T, V] f32 live in device memory (the
// gradient may alias the logits); the per-token inputs and the logprobs out are host arrays [T].
// Implemented by losses.cu; losses_absent.cc throws CUDA_UNAVAILABLE.
#pragma once

#include <cstddef>
#include <cstdint>

#include "train/losses.h"

namespace swerl {

/** in.logits is a device pointer; the other arrays of `in` are host arrays. */
PolicyLossResult policyLossCuda(const PolicyLossInputs& in, const PolicyLossConfig& cfg, float* deviceGradLogits,
                                float* logprobs);

double sftLossCuda(const float* deviceLogits, size_t tokens, size_t vocab, const int32_t* targets, const float* mask,
                   float* deviceGradLogits, float* logprobs, float invTemperature = 1);

}  // namespace swerl

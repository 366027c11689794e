// Batched sampling on device logits: the CUDA twin of sampleRows (kernels/cpu/sampler.h), with the
// same contract. logits [rows, vocab] f32 in device memory; params, positions and out on the host.
// Implemented by sampler.cu (plain rows split over blocks, other rows one block each, sort-free
// radix-select filters, the CPU's exponential race); cuda_absent.cc throws CUDA_UNAVAILABLE.
//
// Agreement with the CPU sampler on the same logits (test/cuda/sampler.test.ts):
// - tokens: equal. The race is the CPU's (race.h), keyed by (seed, position, token), scored
//   exactly (f64) so the winner among the kept tokens is the same, and the filters keep the same
//   prefix of the order. They are decided on f32 exps from the CPU's vector polynomial (the CPU's
//   scalar tail, the last vocab % 8 tokens, and its temperature-1 reuse of the raw exps can differ
//   by an ulp), so a decision can differ only when a token's exp is within an ulp of minP or a
//   kept mass within rounding of its top-p target;
// - logprobs and rawLogprobs: |CUDA − CPU| ≤ 2e-6 + 4 f32 ulps of the CPU's value. Measured in
//   the simulation over ~1000 values (vocab 1 to 151936, every option): at most 1.1e-6, and 5
//   ulps where |logprob| ≥ 1; three quarters bit-equal. The difference is mostly the CPU's
//   rounding: it adds exps in f32 lanes, this sampler in f64, and so the CUDA values stay within
//   4.5e-7 of a float64 reference there;
// - batch: a row's results are the same bits alone or anywhere in any batch (fixed reduction order).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/sampler.h"

namespace swerl {

/** The most top logprobs a call reports per row (the OpenAI API's limit). */
constexpr size_t kMaxTopLogprobs = 20;

/**
 * Samples every row on the device; throws INVALID_ARGUMENT (bad params, as the CPU) or
 * NON_FINITE_LOGITS (a raw or penalised row with NaN or +Inf, or nothing above −Inf) before
 * writing `out`. vocab and rows must be below 2^31. With topN > 0 (at most kMaxTopLogprobs) it also
 * writes each row's topN most likely tokens under log_softmax of the raw logits, best first (ties:
 * lower index; −1 past the vocabulary), and their logprobs, into the host arrays topTokens and
 * topLogprobs [rows, topN].
 */
void sampleRowsCuda(const float* deviceLogits, size_t rows, size_t vocab, const SamplingParams* params,
                    const int32_t* positions, SampleResult* out, size_t topN = 0, int32_t* topTokens = nullptr,
                    float* topLogprobs = nullptr);

}  // namespace swerl

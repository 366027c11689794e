// Batched token sampling over logits rows, in vLLM's order: penalties, temperature, min-p,
// top-k, top-p (over the top-k-renormalised distribution, keeping the smallest set whose mass
// reaches p). Sort-free: top-k and top-p find their cut with a 2048-bin radix histogram of the
// logits and sort only the boundary bin. The draw is an exponential race over the kept tokens,
// keyed by (seed, position, vocabulary index) (race.h): a row's token depends only on its own
// logits, params, seed and position, never on the batch.
//
// Reported per row: the token, its log-probability under the processed distribution actually
// sampled from, and under log_softmax of the raw logits (the same row statistics the losses
// use, so the two agree bitwise with sftLoss on the same row).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace swerl {

struct SamplingParams {
  float temperature = 1;  // below 1e-5 (vLLM's epsilon): greedy
  int32_t topK = 0;       // 0 = off
  float topP = 1, minP = 0;
  uint64_t seed = 0;
  float repetitionPenalty = 1, presencePenalty = 0, frequencyPenalty = 0;
  // Token history for the penalties: prompt tokens (repetition penalty only) and output tokens
  // (all three penalties). Borrowed for the call.
  const int32_t* promptTokens = nullptr;
  size_t numPromptTokens = 0;
  const int32_t* outputTokens = nullptr;
  size_t numOutputTokens = 0;
};

struct SampleResult {
  int32_t token;
  float logprob;     // under the processed distribution
  float rawLogprob;  // under log_softmax(raw logits)
};

/** Checks row r's params against the vocabulary; INVALID_ARGUMENT naming the row (both samplers use it). */
void checkSamplingParams(const SamplingParams& p, size_t vocab, size_t r);

/** Samples every row (in parallel); throws INVALID_ARGUMENT or NON_FINITE_LOGITS before writing. */
void sampleRows(const float* logits, size_t rows, size_t vocab, const SamplingParams* params, const int32_t* positions,
                SampleResult* out);

}  // namespace swerl

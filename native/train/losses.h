// The token losses of RL and SFT over logits rows: verl's PPO-clip policy loss with DAPO's
// asymmetric clip, dual clip, aggregation modes, k3 KL, entropy bonus and TIS; and masked
// cross-entropy. Each row is read twice (statistics, then the gradient written directly); no
// softmax tensor is stored. Rows run in parallel and every reduction has a fixed order, so
// results do not depend on the thread count.
//
// Shapes: logits [T, V] f32 row-major; per-token arrays [T]; gradLogits [T, V].
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace swerl {

enum class LossAgg { TokenMean, SeqMeanTokenMean, SeqMeanTokenSum, SeqMeanTokenSumNorm };

/** Parses "token-mean" etc.; throws INVALID_ARGUMENT. */
LossAgg parseLossAgg(const std::string& name);

struct PolicyLossConfig {
  float clipLow = 0.2f, clipHigh = 0.28f, dualClip = 0.0f;
  LossAgg agg = LossAgg::TokenMean;
  double normLength = 0;
  float klCoef = 0, entropyCoef = 0, tisCap = 0;
};

struct PolicyLossInputs {
  const float* logits;
  size_t tokens, vocab;
  const int32_t* targets;
  const float* oldLogprobs;
  const float* advantages;
  const float* mask;
  const int32_t* seqIds;         // nullable: one sequence
  const float* refLogprobs;      // nullable
  const float* rolloutLogprobs;  // nullable
};

struct PolicyLossResult {
  double loss, entropy, clipFracLow, clipFracHigh;
};

/** Writes gradLogits [T, V] and logprobs [T]; throws INVALID_ARGUMENT / NON_FINITE_LOGITS first. */
PolicyLossResult policyLoss(const PolicyLossInputs& in, const PolicyLossConfig& cfg, float* gradLogits,
                            float* logprobs);

/** Masked mean cross-entropy −Σ m·logp / Σ m; writes gradLogits and logprobs; returns the loss. */
double sftLoss(const float* logits, size_t tokens, size_t vocab, const int32_t* targets, const float* mask,
               float* gradLogits, float* logprobs);

}  // namespace swerl

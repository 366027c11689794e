// The token losses fused with the LM head: from final hidden states X [T, H] and the LM-head
// weight W [V, H] (Hugging Face's lm_head.weight layout), compute the loss, dX [T, H] and
// dW [V, H] (accumulated: dW += ...) without ever holding more than one chunk of logits
// [chunk, V]. Per chunk of tokens: logits = X_c·Wᵀ, the loss rows turn them into their gradient
// in place, dX_c = G·W, dW += Gᵀ·X_c. The loss, logprobs and gradients equal those of the
// unfused path on the same logits. The loss's logit scale s (PolicyLossConfig::invTemperature, or
// the SFT constructor's) applies to these logits: the loss is of softmax(s · X·Wᵀ) and G already
// carries the chain-rule factor s, so dX and dW do too.
#pragma once

#include <cstddef>

#include "train/losses.h"

namespace swerl {

struct LmHead {
  const float* hidden;  // [T, H]
  const float* weight;  // [V, H]
  size_t tokens, hiddenSize, vocab;
  size_t chunkTokens;  // tokens per chunk (peak extra memory: chunkTokens × V floats)
};

/** Runs `loss` (constructed for these tokens) over the LM head; writes dHidden [T, H], adds to dWeight [V, H]. */
void fusedLmHeadLoss(const LmHead& head, TokenLoss& loss, float* dHidden, float* dWeight, float* logprobs);

}  // namespace swerl

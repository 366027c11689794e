// One training sequence's forward, fused LM-head loss and backward on a model: the body of the
// binding's lossAndBackward job (napi/model_binding.cc), which only copies its inputs here. The
// loss is SFT's masked cross-entropy or the policy loss (train/losses.h); the gradient is added
// into a gradient buffer of the arena's layout (a slot of train/optimizer.h's Optimizer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/model.h"
#include "train/losses.h"

namespace swerl {

/** A backward job's own copies of its per-token inputs (T each; the optional ones empty when absent). */
struct BackwardJob {
  std::vector<int32_t> tokens, targets, seqIds;
  std::vector<float> mask, oldLogprobs, advantages, refLogprobs, rolloutLogprobs;
  bool policy = false;      // the policy loss with cfg; else SFT
  bool recompute = false;   // keep only each layer's input in the forward, recompute the rest
  bool inlineRuns = false;  // the kernels on this job's thread (InlineRuns; alone and long, with the pool's help)
  PolicyLossConfig cfg;
  double lossScale = 1;      // multiplies the gradients, not the reported loss
  size_t chunkTokens = 256;  // tokens per chunk of the fused LM head
};

/**
 * Runs the job on `model`: adds every parameter's gradient into grad (arena layout) and writes
 * the T logprobs of the targets. The loss checks its inputs before any work is done.
 */
PolicyLossResult runBackwardJob(const Model& model, const BackwardJob& job, float* grad, float* logprobs);

}  // namespace swerl

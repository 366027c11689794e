// runBackwardJob (backward_job.h): the training forward, the LM head fused with the loss in
// chunks, then the backward through the decoder.
#include "train/backward_job.h"

#include "common/thread_pool.h"
#include "train/fused_lm_head_loss.h"

namespace swerl {

namespace {
constexpr size_t kHelpMinTokens = 256;
}  // namespace

PolicyLossResult runBackwardJob(const Model& m, const BackwardJob& job, float* grad, float* logprobs) {
  const ModelConfig& c = m.config();
  const size_t T = job.tokens.size(), H = c.hidden, V = c.vocab;
  const auto opt = [](const std::vector<float>& v) { return v.empty() ? nullptr : v.data(); };
  PolicyLossInputs in{nullptr,
                      T,
                      V,
                      job.targets.data(),
                      job.oldLogprobs.data(),
                      job.advantages.data(),
                      job.mask.data(),
                      job.seqIds.empty() ? nullptr : job.seqIds.data(),
                      opt(job.refLogprobs),
                      opt(job.rolloutLogprobs)};
  TokenLoss loss = job.policy ? TokenLoss(in, job.cfg) : TokenLoss(T, V, job.targets.data(), job.mask.data());
  loss.scaleGradients(job.lossScale);
  // A lane left alone takes the pool's help only for a long sequence: a short one's neighbour lane
  // is usually between two samples, not done (kHelpMinTokens, measured on the embedded default).
  InlineRuns inlineRuns(job.inlineRuns, T >= kHelpMinTokens);
  TrainState st;
  m.forwardTrain(job.tokens.data(), T, job.recompute, st);
  std::vector<float> dHidden(T * H);
  fusedLmHeadLoss(LmHead{st.hidden.data(), m.arena() + m.layout().lmHead, T, H, V, job.chunkTokens}, loss,
                  dHidden.data(), grad + m.layout().lmHead, logprobs);
  m.backward(st, dHidden.data(), grad);
  return loss.result();
}

}  // namespace swerl

// The token losses of RL and SFT over logits rows: verl's PPO-clip policy loss with DAPO's
// asymmetric clip, dual clip, aggregation modes, k3 KL, entropy bonus and TIS; and masked
// cross-entropy. Each row is read twice (statistics, then the gradient written directly); no
// softmax tensor is stored. Rows run in parallel and every reduction has a fixed order, so
// results do not depend on the thread count.
//
// Temperature: with a logit scale s = invTemperature ≠ 1 the loss is that of softmax(s · x), as
// verl divides the actor's logits by the rollout temperature; logprobs, entropy and KL are of that
// distribution and the gradient written is d loss / d x (the chain-rule factor s included). Its
// row statistics use the sampler's arithmetic at temperature 1/s (kernels/cpu/sampler.cc), so the
// logprobs are bitwise the engine's. With s == 1 nothing is scaled: the arithmetic is unchanged.
//
// Shapes: logits [T, V] f32 row-major; per-token arrays [T]; gradLogits [T, V].
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace swerl {

enum class LossAgg { TokenMean, SeqMeanTokenMean, SeqMeanTokenSum, SeqMeanTokenSumNorm };

/** Parses "token-mean" etc.; throws INVALID_ARGUMENT. */
LossAgg parseLossAgg(const std::string& name);

struct PolicyLossConfig {
  float clipLow = 0.2f, clipHigh = 0.28f, dualClip = 0.0f;
  LossAgg agg = LossAgg::TokenMean;
  double normLength = 0;
  float klCoef = 0, entropyCoef = 0, tisCap = 0;
  float invTemperature = 1;  // logit scale s (1 / the rollout temperature, as the sampler's 1.0f / T); > 0
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

/**
 * One loss evaluation, fed rows in order (all at once, or in chunks by the fused LM-head path).
 * The constructor checks the per-token inputs and works out the aggregation weights; each
 * processRows() call handles rows [t0, t0 + n), whose logits may be a chunk computed on the fly,
 * and writes their gradient (grad may alias logits: it is written in place).
 */
class TokenLoss {
 public:
  TokenLoss(const PolicyLossInputs& in, const PolicyLossConfig& cfg);  // policy loss (in.logits unused)
  TokenLoss(size_t tokens, size_t vocab, const int32_t* targets, const float* mask,
            float invTemperature = 1);  // SFT
  void processRows(const float* logits, size_t t0, size_t n, float* grad, float* logprobs);
  PolicyLossResult result() const;
  /**
   * Multiplies every gradient by s (> 0), e.g. 1 / micro-batches for gradient accumulation; the
   * reported loss stays unscaled. Call before processRows.
   */
  void scaleGradients(double s);
  /**
   * Declares the logits given to processRows scratch that may be overwritten even when a row turns
   * out non-finite (the fused LM-head path's own chunk buffer). Without it, an in-place call never
   * writes the logits before every row of the call is checked, so a refused call leaves them intact.
   */
  void logitsAreScratch() { logitsAreScratch_ = true; }

  /** One row's softmax statistics, as processRows works them out (or a device kernel does). */
  struct RowInfo {
    double lse, entropy, logp, sumExp;  // of softmax(s·x); sumExp: Σ exp((x − max)·s)
    float max;                          // max_j x_j
  };
  /**
   * The host half of processRows, for a caller that computes the row statistics itself (the CUDA
   * losses, kernels/cuda/losses.cu): checks rows [t0, t0 + n) are finite (NON_FINITE_LOGITS,
   * before anything is written), writes their logprobs and, in token order, adds their loss terms
   * and works out each row's gradient coefficients c = dL/dlogp and e = −dL/dH; the gradient of
   * softmax(s·x) is then s·(c·(δ_j,target − p_j) + e·p_j·(log p_j + H)).
   */
  void rowTerms(size_t t0, size_t n, const std::vector<RowInfo>& info, const std::vector<char>& finite, float* logprobs,
                std::vector<double>& c, std::vector<double>& e);

 private:
  void tokenTerm(size_t t, const RowInfo& info, double& c, double& e);
  // Whether pass 1 may keep its exps in the gradient rows (see processRows).
  bool keepsExps(const float* logits, const float* grad) const;
  void processScaledRows(const float* logits, size_t t0, size_t n, float* grad, float* logprobs);

  PolicyLossInputs in_{};
  PolicyLossConfig cfg_{};
  bool sft_;
  std::vector<double> weights_;
  double loss_ = 0, maskSum_ = 0, entropySum_ = 0, clipLow_ = 0, clipHigh_ = 0, gradScale_ = 1;
  float invT_ = 1;  // the logit scale s
  bool logitsAreScratch_ = false;
};

/** Writes gradLogits [T, V] and logprobs [T]; throws INVALID_ARGUMENT / NON_FINITE_LOGITS first. */
PolicyLossResult policyLoss(const PolicyLossInputs& in, const PolicyLossConfig& cfg, float* gradLogits,
                            float* logprobs);

/**
 * Masked mean cross-entropy −Σ m·logp / Σ m of softmax(invTemperature · logits); writes gradLogits
 * and logprobs; returns the loss.
 */
double sftLoss(const float* logits, size_t tokens, size_t vocab, const int32_t* targets, const float* mask,
               float* gradLogits, float* logprobs, float invTemperature = 1);

}  // namespace swerl

// Policy and SFT losses over logits rows (see losses.h).
//
// Three steps: (1) per row, in parallel: softmax statistics, logp of the target, entropy;
// (2) sequentially, in token order: the aggregation weights, each token's loss term and its
// coefficients d loss / d logp and d loss / d H; (3) per row, in parallel: the gradient
//   d loss / d x_j = c·(δ_j,target − p_j) + e·p_j·(log p_j + H)     (c = dL/dlogp, e = −dL/dH)
// written directly into gradLogits.
#include "train/losses.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "common/thread_pool.h"
#include "kernels/cpu/row_softmax.h"

namespace swerl {

LossAgg parseLossAgg(const std::string& name) {
  if (name == "token-mean") return LossAgg::TokenMean;
  if (name == "seq-mean-token-mean") return LossAgg::SeqMeanTokenMean;
  if (name == "seq-mean-token-sum") return LossAgg::SeqMeanTokenSum;
  if (name == "seq-mean-token-sum-norm") return LossAgg::SeqMeanTokenSumNorm;
  throw Error(ErrorCode::InvalidArgument,
              "agg must be 'token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum' or "
              "'seq-mean-token-sum-norm', got '" +
                  name + "'");
}

namespace {

struct RowInfo {
  double lse, entropy, logp;
};

// Runs fn(row) for rows [0, T) on the pool, in contiguous ranges.
template <typename Fn>
void forEachRow(size_t T, size_t V, Fn fn) {
  ThreadPool& pool = ThreadPool::global();
  const size_t tasks = std::min<size_t>(pool.size(), std::max<size_t>(1, T * V / 32768));
  if (tasks <= 1) {
    for (size_t t = 0; t < T; ++t) fn(t);
    return;
  }
  pool.run(static_cast<int>(tasks), [&](int k) {
    const size_t begin = T * k / tasks, end = T * (k + 1) / tasks;
    for (size_t t = begin; t < end; ++t) fn(t);
  });
}

void checkInputs(const float* logits, size_t T, size_t V, const int32_t* targets, const float* mask) {
  SWERL_CHECK(V >= 1, InvalidArgument, "vocab must be >= 1");
  for (size_t t = 0; t < T; ++t) {
    SWERL_CHECK(targets[t] >= 0 && static_cast<size_t>(targets[t]) < V, InvalidArgument,
                "targets[" + std::to_string(t) + "] = " + std::to_string(targets[t]) +
                    " is outside [0, vocab = " + std::to_string(V) + ")");
    SWERL_CHECK(std::isfinite(mask[t]), InvalidArgument, "mask[" + std::to_string(t) + "] is not finite");
  }
  (void)logits;
}

// Pass 1: statistics of every row; NON_FINITE_LOGITS if any row has NaN or ±Inf.
std::vector<RowInfo> rowInfos(const float* logits, size_t T, size_t V, const int32_t* targets, float* logprobs) {
  std::vector<RowInfo> info(T);
  std::vector<char> finite(T, 1);
  forEachRow(T, V, [&](size_t t) {
    const float* row = logits + t * V;
    const RowSoftmaxStats st = rowSoftmaxStats(row, V);
    if (!st.finite) {
      finite[t] = 0;
      return;
    }
    const double lse = st.lse();
    info[t] = RowInfo{lse, st.entropy(), static_cast<double>(row[targets[t]]) - lse};
  });
  for (size_t t = 0; t < T; ++t)
    SWERL_CHECK(finite[t], NonFiniteLogits,
                "logits row " + std::to_string(t) +
                    " contains NaN or ±Inf; check the model's numerics (nothing was "
                    "computed)");
  for (size_t t = 0; t < T; ++t) logprobs[t] = static_cast<float>(info[t].logp);
  return info;
}

// Pass 3: gradient rows from per-token coefficients c (on logp) and e (on -H, see the header).
void writeGrads(const float* logits, size_t T, size_t V, const int32_t* targets, const std::vector<RowInfo>& info,
                const std::vector<double>& c, const std::vector<double>& e, float* grad) {
  forEachRow(T, V, [&](size_t t) {
    float* g = grad + t * V;
    if (c[t] == 0 && e[t] == 0) {
      std::fill(g, g + V, 0.0f);
      return;
    }
    // g_j = p_j·(−c + e·H) + e·p_j·(x_j − lse), plus c at the target.
    rowSoftmaxGrad(logits + t * V, V, info[t].lse, static_cast<float>(-c[t] + e[t] * info[t].entropy),
                   static_cast<float>(e[t]), g);
    g[targets[t]] += static_cast<float>(c[t]);
  });
}

// agg(x) = Σ_t w_t x_t for the aggregation mode.
std::vector<double> aggWeights(const float* mask, const int32_t* seqIds, size_t T, LossAgg agg, double normLength) {
  std::vector<double> w(T, 0.0);
  if (agg == LossAgg::TokenMean) {
    double sum = 0;
    for (size_t t = 0; t < T; ++t) sum += mask[t];
    if (sum == 0) return w;
    for (size_t t = 0; t < T; ++t) w[t] = mask[t] / sum;
    return w;
  }
  std::unordered_map<int32_t, double> seqMask;
  for (size_t t = 0; t < T; ++t) seqMask[seqIds ? seqIds[t] : 0] += mask[t];
  double S = 0;
  for (const auto& kv : seqMask) S += kv.second != 0 ? 1 : 0;
  if (S == 0) return w;
  for (size_t t = 0; t < T; ++t) {
    const double ms = seqMask[seqIds ? seqIds[t] : 0];
    switch (agg) {
      case LossAgg::SeqMeanTokenMean:
        w[t] = ms != 0 ? mask[t] / (S * ms) : 0;
        break;
      case LossAgg::SeqMeanTokenSum:
        w[t] = mask[t] / S;
        break;
      case LossAgg::SeqMeanTokenSumNorm:
        w[t] = mask[t] / (S * normLength);
        break;
      case LossAgg::TokenMean:
        break;
    }
  }
  return w;
}

double clampd(double x, double lo, double hi) { return x < lo ? lo : (x > hi ? hi : x); }

}  // namespace

PolicyLossResult policyLoss(const PolicyLossInputs& in, const PolicyLossConfig& cfg, float* gradLogits,
                            float* logprobs) {
  const size_t T = in.tokens, V = in.vocab;
  checkInputs(in.logits, T, V, in.targets, in.mask);
  SWERL_CHECK(cfg.agg != LossAgg::SeqMeanTokenSumNorm || cfg.normLength > 0, InvalidArgument,
              "agg 'seq-mean-token-sum-norm' needs normLength > 0 (Dr.GRPO's constant, e.g. the max response length)");
  for (size_t t = 0; t < T; ++t)
    SWERL_CHECK(std::isfinite(in.advantages[t]) && std::isfinite(in.oldLogprobs[t]), InvalidArgument,
                "advantages[" + std::to_string(t) + "] and oldLogprobs[" + std::to_string(t) + "] must be finite");
  const std::vector<RowInfo> info = rowInfos(in.logits, T, V, in.targets, logprobs);
  const std::vector<double> w = aggWeights(in.mask, in.seqIds, T, cfg.agg, cfg.normLength);

  std::vector<double> c(T, 0.0), e(T, 0.0);
  double loss = 0, maskSum = 0, entropySum = 0, clipLow = 0, clipHigh = 0;
  const bool kl = cfg.klCoef > 0 && in.refLogprobs != nullptr;
  const bool tis = cfg.tisCap > 0 && in.rolloutLogprobs != nullptr;
  for (size_t t = 0; t < T; ++t) {
    const double m = in.mask[t], A = in.advantages[t], logp = info[t].logp;
    maskSum += m;
    entropySum += m * info[t].entropy;
    const double diff = logp - in.oldLogprobs[t];
    const double r = std::exp(clampd(diff, -20, 20));
    const double drdlogp = (diff > -20 && diff < 20) ? r : 0;
    if (A > 0 && r > 1 + cfg.clipHigh) clipHigh += m;
    if (A < 0 && r < 1 - cfg.clipLow) clipLow += m;
    if (w[t] == 0) continue;
    const double l1 = -A * r, l2 = -A * clampd(r, 1 - cfg.clipLow, 1 + cfg.clipHigh);
    double l = l1 >= l2 ? l1 : l2;
    double dldr = l1 >= l2 ? -A : 0;  // the clipped branch is constant in r
    if (cfg.dualClip > 1 && A < 0 && l > -A * cfg.dualClip) {
      l = -A * cfg.dualClip;
      dldr = 0;
    }
    if (tis) {
      const double weight = std::min(std::exp(static_cast<double>(in.oldLogprobs[t]) - in.rolloutLogprobs[t]),
                                     static_cast<double>(cfg.tisCap));
      l *= weight;
      dldr *= weight;
    }
    double term = l, dlogp = dldr * drdlogp;
    if (kl) {
      const double a = in.refLogprobs[t] - logp, ac = clampd(a, -20, 20);
      double k3 = std::exp(ac) - ac - 1, dk3 = (a > -20 && a < 20) ? 1 - std::exp(ac) : 0;
      if (k3 > 10) {
        k3 = 10;
        dk3 = 0;
      }
      term += cfg.klCoef * k3;
      dlogp += cfg.klCoef * dk3;
    }
    term -= cfg.entropyCoef * info[t].entropy;
    loss += w[t] * term;
    c[t] = w[t] * dlogp;
    e[t] = w[t] * cfg.entropyCoef;
  }
  writeGrads(in.logits, T, V, in.targets, info, c, e, gradLogits);
  if (maskSum == 0) return PolicyLossResult{0, 0, 0, 0};
  return PolicyLossResult{loss, entropySum / maskSum, clipLow / maskSum, clipHigh / maskSum};
}

double sftLoss(const float* logits, size_t T, size_t V, const int32_t* targets, const float* mask, float* gradLogits,
               float* logprobs) {
  checkInputs(logits, T, V, targets, mask);
  const std::vector<RowInfo> info = rowInfos(logits, T, V, targets, logprobs);
  double maskSum = 0;
  for (size_t t = 0; t < T; ++t) maskSum += mask[t];
  std::vector<double> c(T, 0.0), e(T, 0.0);
  double loss = 0;
  if (maskSum != 0) {
    for (size_t t = 0; t < T; ++t) {
      loss -= mask[t] * info[t].logp / maskSum;
      c[t] = -mask[t] / maskSum;
    }
  }
  writeGrads(logits, T, V, targets, info, c, e, gradLogits);
  return loss;
}

}  // namespace swerl

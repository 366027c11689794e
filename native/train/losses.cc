// Policy and SFT losses over logits rows (see losses.h).
//
// Three steps: (1) per row, in parallel: softmax statistics, logp of the target, entropy;
// (2) sequentially, in token order: the aggregation weights, each token's loss term and its
// coefficients d loss / d logp and d loss / d H; (3) per row, in parallel: the gradient
//   d loss / d x_j = c·(δ_j,target − p_j) + e·p_j·(log p_j + H)     (c = dL/dlogp, e = −dL/dH)
// written directly into gradLogits. With a logit scale s ≠ 1 (processScaledRows) the rows are
// those of s·x: step (1) uses the sampler's statistics at temperature 1/s (scaledRowStats), and
// step (3) writes s times the gradient above, with p and log p those of softmax(s·x).
#include "train/losses.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
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

constexpr size_t kMinLogitsPerTask = 32768;  // rows go to the pool above this much work

void checkInputs(size_t T, size_t V, const int32_t* targets, const float* mask) {
  SWERL_CHECK(V >= 1, InvalidArgument, "vocab must be >= 1");
  for (size_t t = 0; t < T; ++t) {
    SWERL_CHECK(targets[t] >= 0 && static_cast<size_t>(targets[t]) < V, InvalidArgument,
                "targets[" + std::to_string(t) + "] = " + std::to_string(targets[t]) +
                    " is outside [0, vocab = " + std::to_string(V) + ")");
    SWERL_CHECK(std::isfinite(mask[t]), InvalidArgument, "mask[" + std::to_string(t) + "] is not finite");
  }
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

void checkInvTemperature(float s) {
  SWERL_CHECK(std::isfinite(s) && s > 0, InvalidArgument,
              "invTemperature (the logit scale, 1 / temperature) must be a finite number > 0");
}

// Softmax statistics of s·x (s ≠ 1) for one row.
struct ScaledRowStats {
  float max;       // M = max_j x_j
  double sumExp;   // Z = Σ_j exp((x_j − M)·s)
  double sumExpX;  // Σ_j exp((x_j − M)·s)·(x_j − M)·s
  bool finite;     // every x_j is finite
};

// The sampler's arithmetic at temperature 1/s (sampleTemperatureOnly in kernels/cpu/sampler.cc),
// so that (x_tok − M)·s − log Z is bitwise its logprob: per kRowChunk chunk c with max m_c (from
// rowChunkStats), e_j = exp((x_j − m_c)·s) and S_c = Σ e_j from rowExpScaled; then, in chunk order,
// Z = Σ_c S_c·exp((m_c − M)·s). For the entropy, q_c = Σ e_j·(x_j − m_c)·s (f64, element order) and
// sumExpX = Σ_c exp((m_c − M)·s)·(q_c + S_c·(m_c − M)·s). With expOut, writes e_j there and m_c to
// chunkMax[c]; expOut may be x (each chunk is written after it is read).
ScaledRowStats scaledRowStats(const float* x, size_t n, float s, float* expOut, float* chunkMax) {
  const size_t chunks = (n + kRowChunk - 1) / kRowChunk;
  thread_local std::vector<RowChunkStats> st;
  thread_local std::vector<double> sums, qs;
  thread_local std::vector<float> e;
  st.assign(chunks, RowChunkStats{});
  sums.assign(chunks, 0.0);
  qs.assign(chunks, 0.0);
  e.resize(kRowChunk);
  ScaledRowStats r{-std::numeric_limits<float>::infinity(), 0, 0, true};
  for (size_t c = 0; c < chunks; ++c) {
    const size_t off = c * kRowChunk, len = std::min(kRowChunk, n - off);
    st[c] = rowChunkStats(x + off, len, nullptr);
    r.finite = r.finite && st[c].finite;
    if (!r.finite) return r;  // refused: NON_FINITE_LOGITS
    sums[c] = rowExpScaled(x + off, len, st[c].max, s, e.data());
    double q = 0;
    for (size_t j = 0; j < len; ++j) q += static_cast<double>(e[j]) * ((x[off + j] - st[c].max) * s);
    qs[c] = q;
    if (expOut) std::copy(e.begin(), e.begin() + static_cast<std::ptrdiff_t>(len), expOut + off);
    if (chunkMax) chunkMax[c] = st[c].max;
    r.max = st[c].max > r.max ? st[c].max : r.max;
  }
  for (size_t c = 0; c < chunks; ++c) {
    const double shift = (static_cast<double>(st[c].max) - r.max) * s, f = std::exp(shift);
    r.sumExp += sums[c] * f;
    r.sumExpX += f * (qs[c] + sums[c] * shift);
  }
  return r;
}

}  // namespace

TokenLoss::TokenLoss(const PolicyLossInputs& in, const PolicyLossConfig& cfg) : in_(in), cfg_(cfg), sft_(false) {
  const size_t T = in.tokens;
  checkInputs(T, in.vocab, in.targets, in.mask);
  SWERL_CHECK(cfg.agg != LossAgg::SeqMeanTokenSumNorm || cfg.normLength > 0, InvalidArgument,
              "agg 'seq-mean-token-sum-norm' needs normLength > 0 (Dr.GRPO's constant, e.g. the max response length)");
  for (size_t t = 0; t < T; ++t)
    SWERL_CHECK(std::isfinite(in.advantages[t]) && std::isfinite(in.oldLogprobs[t]), InvalidArgument,
                "advantages[" + std::to_string(t) + "] and oldLogprobs[" + std::to_string(t) + "] must be finite");
  checkInvTemperature(cfg.invTemperature);
  invT_ = cfg.invTemperature;
  weights_ = aggWeights(in.mask, in.seqIds, T, cfg.agg, cfg.normLength);
}

TokenLoss::TokenLoss(size_t tokens, size_t vocab, const int32_t* targets, const float* mask, float invTemperature)
    : sft_(true), invT_(invTemperature) {
  checkInputs(tokens, vocab, targets, mask);
  checkInvTemperature(invTemperature);
  in_ = PolicyLossInputs{};
  in_.tokens = tokens;
  in_.vocab = vocab;
  in_.targets = targets;
  in_.mask = mask;
  weights_ = aggWeights(mask, nullptr, tokens, LossAgg::TokenMean, 0);
}

bool TokenLoss::keepsExps(const float* logits, const float* grad) const {
  if (grad != logits) return true;
  return logitsAreScratch_ && (sft_ || cfg_.entropyCoef == 0);
}

void TokenLoss::processRows(const float* logits, size_t t0, size_t n, float* grad, float* logprobs) {
  if (invT_ != 1.0f) return processScaledRows(logits, t0, n, grad, logprobs);
  const size_t V = in_.vocab;
  // Pass 1 keeps exp(x − max) in the gradient rows, so pass 2 needs no exp. Pass 2 also needs x
  // for the entropy term, so an in-place call with an entropy bonus recomputes instead; so does an
  // in-place call on the caller's logits, which pass 1 must not overwrite before every row is
  // known to be finite (a refused call leaves them as they were).
  const bool keepExp = keepsExps(logits, grad);
  // Pass 1 (parallel): row statistics. Kept exps are relative to their chunk's max (chunkMax).
  const size_t chunks = (V + kRowChunk - 1) / kRowChunk;
  std::vector<float> chunkMax(keepExp ? n * chunks : 0);
  std::vector<RowInfo> info(n);
  std::vector<char> finite(n, 1);
  parallelFor(n, V, kMinLogitsPerTask, [&](size_t i) {
    const float* row = logits + i * V;
    const float target = row[in_.targets[t0 + i]];  // before the row may be overwritten
    const RowSoftmaxStats st =
        rowSoftmaxStats(row, V, keepExp ? grad + i * V : nullptr, keepExp ? &chunkMax[i * chunks] : nullptr);
    if (!st.finite) {
      finite[i] = 0;
      return;
    }
    const double lse = st.lse();
    info[i] = RowInfo{lse, st.entropy(), static_cast<double>(target) - lse, st.sumExp, st.max};
  });
  std::vector<double> c, e;
  rowTerms(t0, n, info, finite, logprobs, c, e);
  // Pass 2 (parallel): gradient rows, possibly in place of the logits.
  parallelFor(n, V, kMinLogitsPerTask, [&](size_t i) {
    float* g = grad + i * V;
    if (c[i] == 0 && e[i] == 0) {
      std::fill(g, g + V, 0.0f);
      return;
    }
    // g_j = p_j·(−c + e·H) + e·p_j·(x_j − lse), plus c at the target.
    const float a = static_cast<float>(-c[i] + e[i] * info[i].entropy), b = static_cast<float>(e[i]);
    if (keepExp) {
      // p_j = e_j · exp(m_c − lse) for the exps of chunk c
      for (size_t c = 0; c < chunks; ++c) {
        const size_t off = c * kRowChunk, len = std::min(kRowChunk, V - off);
        const float scale = static_cast<float>(std::exp(static_cast<double>(chunkMax[i * chunks + c]) - info[i].lse));
        rowScaleGrad(g + off, b != 0 ? logits + i * V + off : nullptr, len, scale, a, b,
                     static_cast<float>(info[i].lse), g + off);
      }
    } else
      rowSoftmaxGrad(logits + i * V, V, info[i].lse, a, b, g);
    g[in_.targets[t0 + i]] += static_cast<float>(c[i]);
  });
}

void TokenLoss::rowTerms(size_t t0, size_t n, const std::vector<RowInfo>& info, const std::vector<char>& finite,
                         float* logprobs, std::vector<double>& c, std::vector<double>& e) {
  for (size_t i = 0; i < n; ++i)
    SWERL_CHECK(finite[i], NonFiniteLogits,
                "logits row " + std::to_string(t0 + i) + " contains NaN or ±Inf; check the model's numerics");
  // Sequential, in token order: loss terms and gradient coefficients.
  c.assign(n, 0.0);
  e.assign(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    logprobs[t0 + i] = static_cast<float>(info[i].logp);
    tokenTerm(t0 + i, info[i], c[i], e[i]);
  }
}

void TokenLoss::processScaledRows(const float* logits, size_t t0, size_t n, float* grad, float* logprobs) {
  const size_t V = in_.vocab;
  const float s = invT_;
  // As processRows: keep the exps (here of s·x, relative to their chunk's max) unless pass 2 needs
  // x in place for the entropy term or the logits in place are the caller's.
  const bool keepExp = keepsExps(logits, grad);
  const size_t chunks = (V + kRowChunk - 1) / kRowChunk;
  std::vector<float> chunkMax(keepExp ? n * chunks : 0);
  std::vector<RowInfo> info(n);
  std::vector<char> finite(n, 1);
  parallelFor(n, V, kMinLogitsPerTask, [&](size_t i) {
    const float* row = logits + i * V;
    const float target = row[in_.targets[t0 + i]];  // before the row may be overwritten
    const ScaledRowStats st =
        scaledRowStats(row, V, s, keepExp ? grad + i * V : nullptr, keepExp ? &chunkMax[i * chunks] : nullptr);
    if (!st.finite) {
      finite[i] = 0;
      return;
    }
    const double logZ = std::log(st.sumExp);
    // logp in the sampler's order: (x_target − M)·s − log Z.
    info[i] = RowInfo{static_cast<double>(st.max) * s + logZ, logZ - st.sumExpX / st.sumExp,
                      (static_cast<double>(target) - st.max) * s - logZ, st.sumExp, st.max};
  });
  std::vector<double> c, e;
  rowTerms(t0, n, info, finite, logprobs, c, e);
  // Pass 2 (parallel): g_j = s·(p_j·(−c + e·H) + e·p_j·log p_j), plus s·c at the target, with
  // log p_j = s·x_j − lse = s·(x_j − L), L = lse / s.
  parallelFor(n, V, kMinLogitsPerTask, [&](size_t i) {
    float* g = grad + i * V;
    if (c[i] == 0 && e[i] == 0) {
      std::fill(g, g + V, 0.0f);
      return;
    }
    const RowInfo& r = info[i];
    const float a = static_cast<float>(s * (-c[i] + e[i] * r.entropy)), b = static_cast<float>(s * e[i]);
    if (keepExp) {
      // p_j = e_j · exp((m_c − M)·s − log Z) for the exps of chunk c
      const double logZ = std::log(r.sumExp);
      const float L = static_cast<float>(r.max + logZ / s);
      for (size_t c = 0; c < chunks; ++c) {
        const size_t off = c * kRowChunk, len = std::min(kRowChunk, V - off);
        const float scale =
            static_cast<float>(std::exp((static_cast<double>(chunkMax[i * chunks + c]) - r.max) * s - logZ));
        rowScaleGrad(g + off, b != 0 ? logits + i * V + off : nullptr, len, scale, a, b * s, L, g + off);
      }
    } else {
      // In place (g is the row) with an entropy bonus: the kernel of processRows on s·x.
      for (size_t j = 0; j < V; ++j) g[j] *= s;
      rowSoftmaxGrad(g, V, r.lse, a, b, g);
    }
    g[in_.targets[t0 + i]] += static_cast<float>(s * c[i]);
  });
}

void TokenLoss::tokenTerm(size_t t, const RowInfo& info, double& c, double& e) {
  const double m = in_.mask[t], w = weights_[t], logp = info.logp;
  maskSum_ += m;
  if (sft_) {
    loss_ -= w * logp;
    c = -w;
    return;
  }
  entropySum_ += m * info.entropy;
  const double A = in_.advantages[t];
  const double diff = logp - in_.oldLogprobs[t];
  const double r = std::exp(clampd(diff, -20, 20));
  const double drdlogp = (diff > -20 && diff < 20) ? r : 0;
  if (A > 0 && r > 1 + cfg_.clipHigh) clipHigh_ += m;
  if (A < 0 && r < 1 - cfg_.clipLow) clipLow_ += m;
  if (w == 0) return;
  const double l1 = -A * r, l2 = -A * clampd(r, 1 - cfg_.clipLow, 1 + cfg_.clipHigh);
  double l = l1 >= l2 ? l1 : l2;
  double dldr = l1 >= l2 ? -A : 0;  // the clipped branch is constant in r
  if (cfg_.dualClip > 1 && A < 0 && l > -A * cfg_.dualClip) {
    l = -A * cfg_.dualClip;
    dldr = 0;
  }
  if (cfg_.tisCap > 0 && in_.rolloutLogprobs != nullptr) {
    const double weight = std::min(std::exp(static_cast<double>(in_.oldLogprobs[t]) - in_.rolloutLogprobs[t]),
                                   static_cast<double>(cfg_.tisCap));
    l *= weight;
    dldr *= weight;
  }
  double term = l, dlogp = dldr * drdlogp;
  if (cfg_.klCoef > 0 && in_.refLogprobs != nullptr) {
    const double a = in_.refLogprobs[t] - logp, ac = clampd(a, -20, 20);
    double k3 = std::exp(ac) - ac - 1, dk3 = (a > -20 && a < 20) ? 1 - std::exp(ac) : 0;
    if (k3 > 10) {
      k3 = 10;
      dk3 = 0;
    }
    term += cfg_.klCoef * k3;
    dlogp += cfg_.klCoef * dk3;
  }
  term -= cfg_.entropyCoef * info.entropy;
  loss_ += w * term;
  c = w * dlogp;
  e = w * cfg_.entropyCoef;
}

PolicyLossResult TokenLoss::result() const {
  if (maskSum_ == 0) return PolicyLossResult{0, 0, 0, 0};
  return PolicyLossResult{loss_ / gradScale_, entropySum_ / maskSum_, clipLow_ / maskSum_, clipHigh_ / maskSum_};
}

void TokenLoss::scaleGradients(double s) {
  SWERL_CHECK(std::isfinite(s) && s > 0, InvalidArgument, "the loss scale must be a finite number > 0");
  for (double& w : weights_) w *= s;
  gradScale_ *= s;
}

PolicyLossResult policyLoss(const PolicyLossInputs& in, const PolicyLossConfig& cfg, float* gradLogits,
                            float* logprobs) {
  TokenLoss loss(in, cfg);
  loss.processRows(in.logits, 0, in.tokens, gradLogits, logprobs);
  return loss.result();
}

double sftLoss(const float* logits, size_t T, size_t V, const int32_t* targets, const float* mask, float* gradLogits,
               float* logprobs, float invTemperature) {
  TokenLoss loss(T, V, targets, mask, invTemperature);
  loss.processRows(logits, 0, T, gradLogits, logprobs);
  return loss.result().loss;
}

}  // namespace swerl

// Batched sampling (see sampler.h).
//
// Per row, with y = the penalised logits and e_j = exp((y_j − max y) / T):
// - every filter keeps a prefix of the order (y descending, index ascending): min-p keeps
//   e_j ≥ minP, top-k the first k, top-p the shortest prefix whose mass reaches p of the mass
//   kept so far. A prefix is a Cut: y_j > thr, plus the first `ties` indices with y_j == thr;
// - prefixes are found with a 2048-bin histogram of y over [min, max] (counts and masses) and a
//   sort of the one boundary bin;
// - the token is drawn by inverse CDF over the kept set in index order, with u from
//   samplingUniform(seed, position); its logprob is (y_tok − max)/T − log(kept mass).
#include "kernels/cpu/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common/error.h"
#include "common/thread_pool.h"
#include "kernels/cpu/row_softmax.h"
#include "kernels/cpu/sampler_kernels.h"

namespace swerl {

namespace {

constexpr int kBins = kSamplerBins;
constexpr size_t kDrawBlock = 256;  // the draw skips whole blocks by their kept mass
// Rows at least this long are split over the pool when the batch has fewer rows than threads.
// Waking the pool costs tens of microseconds: on the 2-core development machine one 151936-entry
// row sampled on one thread was faster than split (greedy 46-56 vs 69-77 us, T 0.7 87-89 vs
// 98-107 us, with the gate lowered to 1 for the measurement).
constexpr size_t kSplitRowVocab = size_t(1) << 20;

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct Cut {
  float thr = -std::numeric_limits<float>::infinity();
  size_t ties = std::numeric_limits<size_t>::max();  // all of them
};

// Per-thread scratch, reused across calls.
struct Scratch {
  std::vector<float> y, e;
  std::vector<double> chunkSums;
  std::vector<float> chunkMax;
  std::vector<double> chunkScale;
  std::vector<int32_t> bin;
  std::vector<uint32_t> count;
  std::vector<double> mass;
  std::vector<int32_t> members;
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

class RowSampler {
 public:
  RowSampler(const float* y, const float* e, size_t n, float ymax, float ymin, Scratch& s)
      : y_(y), e_(e), n_(n), s_(s) {
    // 0 (everything in bin 0) when the span is 0, overflows, or is too small to divide by.
    const float span = ymax - ymin;
    const float scale = span > 0 ? kBins / span : 0;
    scale_ = std::isfinite(span) && std::isfinite(scale) ? scale : 0;
    ymax_ = ymax;
    s_.bin.resize(n);
    rowBins(y, n, ymax, scale_, s_.bin.data());
    // Four interleaved histograms, summed after: consecutive elements often share a bin, and
    // one histogram would chain every update on the previous one's store.
    s_.count.assign(4 * kBins, 0);
    s_.mass.assign(4 * kBins, 0.0);
    size_t j = 0;
    for (; j + 4 <= n; j += 4)
      for (size_t l = 0; l < 4; ++l) {
        const int32_t b = s_.bin[j + l] + static_cast<int32_t>(l) * kBins;
        ++s_.count[b];
        s_.mass[b] += e[j + l];
      }
    for (; j < n; ++j) {
      ++s_.count[s_.bin[j]];
      s_.mass[s_.bin[j]] += e[j];
    }
    for (int b = 0; b < kBins; ++b) {
      s_.count[b] += s_.count[kBins + b] + s_.count[2 * kBins + b] + s_.count[3 * kBins + b];
      s_.mass[b] += (s_.mass[kBins + b] + s_.mass[2 * kBins + b]) + s_.mass[3 * kBins + b];
    }
  }

  // The first `len` elements of the order.
  Cut prefixByCount(size_t len, double& mass) {
    size_t before = 0;
    double m = 0;
    int b = 0;
    for (; b < kBins; ++b) {
      if (before + s_.count[b] >= len) break;
      before += s_.count[b];
      m += s_.mass[b];
    }
    sortBin(b);
    const size_t r = len - before;  // 1..count[b]
    for (size_t i = 0; i < r; ++i) m += e_[s_.members[i]];
    mass = m;
    return cutAt(r);
  }

  // The shortest prefix within `within` whose mass reaches target.
  Cut prefixByMass(const Cut& within, double target, double& mass) {
    double m = 0;
    for (int b = 0; b < kBins; ++b) {
      if (!inside(b, within)) break;  // rounding: the whole of `within` is needed
      if (wholeBinInside(b, within) && m + s_.mass[b] < target) {
        m += s_.mass[b];
        continue;
      }
      sortBin(b);
      size_t taken = 0, tiesSeen = 0;
      for (int32_t j : s_.members) {
        const bool kept = y_[j] > within.thr || (y_[j] == within.thr && tiesSeen++ < within.ties);
        if (!kept) break;  // members are sorted: nothing after this one is kept either
        m += e_[j];
        ++taken;
        if (m >= target) break;
      }
      SWERL_ASSERT(taken > 0);
      mass = m;
      return cutAt(taken);
    }
    mass = m;
    return within;
  }

  // Inverse-CDF draw over the kept set, in index order. Blocks without a tie of the threshold
  // are skipped by their kept mass (vectorised); the block where the CDF crosses, and blocks
  // holding ties (kept only up to cut.ties, in index order), go one element at a time.
  int32_t draw(const Cut& cut, double total, double u) {
    const double target = u * total;
    double acc = 0;
    size_t tiesSeen = 0;
    int32_t last = -1;  // the last kept token with mass, for when rounding runs past the end
    for (size_t b0 = 0; b0 < n_; b0 += kDrawBlock) {
      const size_t len = std::min(kDrawBlock, n_ - b0);
      const bool ties = cut.thr > -std::numeric_limits<float>::infinity() && rowContains(y_ + b0, len, cut.thr);
      if (!ties) {
        const double blockMass = rowMaskedSumAbove(y_ + b0, e_ + b0, len, cut.thr);
        if (blockMass == 0) continue;
        if (acc + blockMass <= target) {
          acc += blockMass;
          for (size_t j = b0 + len; j-- > b0;)
            if (y_[j] > cut.thr && e_[j] > 0) {
              last = static_cast<int32_t>(j);
              break;
            }
          continue;
        }
      }
      for (size_t j = b0; j < b0 + len; ++j) {
        if (!(y_[j] > cut.thr || (y_[j] == cut.thr && tiesSeen++ < cut.ties))) continue;
        if (e_[j] == 0) continue;  // never return a token of probability 0
        acc += e_[j];
        last = static_cast<int32_t>(j);
        if (acc > target) return last;
      }
    }
    return last;
  }

 private:
  int binOf(float v) const { return samplerBin(v, ymax_, scale_); }

  // Members of bin b, ordered by (y desc, index asc).
  void sortBin(int b) {
    s_.members.resize(s_.count[b]);
    const size_t k = rowCollectBin(s_.bin.data(), n_, b, s_.members.data());
    SWERL_ASSERT(k == s_.count[b]);
    std::sort(s_.members.begin(), s_.members.end(),
              [&](int32_t a, int32_t c) { return y_[a] > y_[c] || (y_[a] == y_[c] && a < c); });
  }

  // The cut keeping exactly the first r members of the sorted bin (and everything above it).
  Cut cutAt(size_t r) const {
    Cut c;
    c.thr = y_[s_.members[r - 1]];
    c.ties = 0;
    for (size_t i = 0; i < r; ++i)
      if (y_[s_.members[i]] == c.thr) ++c.ties;
    // Tied elements of higher bins cannot exist: equal values share a bin.
    return c;
  }

  bool inside(int b, const Cut& c) const {
    return c.thr == -std::numeric_limits<float>::infinity() || b <= binOf(c.thr);
  }
  bool wholeBinInside(int b, const Cut& c) const {
    return c.thr == -std::numeric_limits<float>::infinity() || b < binOf(c.thr);
  }

  const float* y_;
  const float* e_;
  size_t n_;
  Scratch& s_;
  float ymax_ = 0, scale_ = 0;
};

std::string rowName(size_t r) { return "row " + std::to_string(r); }

void checkParams(const SamplingParams& p, size_t vocab, size_t r) {
  SWERL_CHECK(std::isfinite(p.temperature) && p.temperature >= 0, InvalidArgument,
              rowName(r) + ": temperature must be a finite number >= 0");
  SWERL_CHECK(p.topK >= 0, InvalidArgument, rowName(r) + ": topK must be >= 0 (0 = off)");
  SWERL_CHECK(p.topP > 0 && p.topP <= 1, InvalidArgument, rowName(r) + ": topP must be in (0, 1]");
  SWERL_CHECK(p.minP >= 0 && p.minP <= 1, InvalidArgument, rowName(r) + ": minP must be in [0, 1]");
  SWERL_CHECK(std::isfinite(p.repetitionPenalty) && p.repetitionPenalty > 0, InvalidArgument,
              rowName(r) + ": repetitionPenalty must be > 0");
  SWERL_CHECK(std::isfinite(p.presencePenalty) && std::isfinite(p.frequencyPenalty), InvalidArgument,
              rowName(r) + ": presencePenalty and frequencyPenalty must be finite");
  for (size_t i = 0; i < p.numPromptTokens; ++i)
    SWERL_CHECK(
        p.promptTokens[i] >= 0 && static_cast<size_t>(p.promptTokens[i]) < vocab, InvalidArgument,
        rowName(r) + ": promptTokens contains " + std::to_string(p.promptTokens[i]) + ", outside the vocabulary");
  for (size_t i = 0; i < p.numOutputTokens; ++i)
    SWERL_CHECK(
        p.outputTokens[i] >= 0 && static_cast<size_t>(p.outputTokens[i]) < vocab, InvalidArgument,
        rowName(r) + ": outputTokens contains " + std::to_string(p.outputTokens[i]) + ", outside the vocabulary");
}

// vLLM's penalties: repetition over prompt and output tokens (divide positive logits, multiply
// negative ones), then frequency (× count) and presence (once) over output tokens.
const float* applyPenalties(const float* x, size_t n, const SamplingParams& p, Scratch& s) {
  if (p.repetitionPenalty == 1 && p.presencePenalty == 0 && p.frequencyPenalty == 0) return x;
  s.y.assign(x, x + n);
  float* y = s.y.data();
  if (p.repetitionPenalty != 1) {
    s.bin.assign(n, 0);  // seen marks
    auto mark = [&](const int32_t* t, size_t m) {
      for (size_t i = 0; i < m; ++i) s.bin[t[i]] = 1;
    };
    mark(p.promptTokens, p.numPromptTokens);
    mark(p.outputTokens, p.numOutputTokens);
    for (size_t j = 0; j < n; ++j)
      if (s.bin[j]) y[j] = y[j] > 0 ? y[j] / p.repetitionPenalty : y[j] * p.repetitionPenalty;
  }
  if (p.presencePenalty != 0 || p.frequencyPenalty != 0) {
    s.count.assign(n, 0);
    for (size_t i = 0; i < p.numOutputTokens; ++i) ++s.count[p.outputTokens[i]];
    for (size_t i = 0; i < p.numOutputTokens; ++i) {
      const int32_t t = p.outputTokens[i];
      if (s.count[t] == 0) continue;
      y[t] -= p.frequencyPenalty * s.count[t] + p.presencePenalty;
      s.count[t] = 0;  // once per token
    }
  }
  return y;
}

// Inverse-CDF draw over every token, token j having mass e[j] · scale[c] (scale null: 1), where
// c is j's chunk and chunkMass[c] the chunk's total: find the chunk where the CDF crosses
// u · total, then the token inside it (the only chunk read again).
int32_t drawByChunks(const float* e, size_t n, const std::vector<double>& chunkMass, const double* scale, double u,
                     double total) {
  const double target = u * total;
  double before = 0;
  size_t c = 0;
  while (c + 1 < chunkMass.size() && before + chunkMass[c] <= target) before += chunkMass[c++];
  double inChunk = target - before;  // rounding may leave it a hair past the chunk's mass
  if (chunkMass[c] == 0) {           // only when rounding walked past the last token with mass
    while (c > 0 && chunkMass[c] == 0) --c;
    inChunk = std::numeric_limits<double>::infinity();  // its last token with mass
  }
  if (scale) inChunk /= scale[c];
  const size_t begin = c * kRowChunk, end = std::min(n, begin + kRowChunk);
  double acc = 0;
  int32_t token = -1;
  for (size_t j = begin; j < end; ++j) {
    if (e[j] == 0) continue;
    acc += e[j];
    token = static_cast<int32_t>(j);
    if (acc > inChunk) break;
  }
  SWERL_ASSERT(token >= 0);
  return token;
}

// Temperature only (no penalties, no filters): statistics, processed exps and the draw from one
// read of the row. Exps are relative to each chunk's max; chunk masses are rescaled to the row's.
void sampleTemperatureOnly(const float* x, size_t n, const SamplingParams& p, int64_t position, bool splitRow,
                           Scratch& s, RowSoftmaxStats& raw, int32_t& token, double& logprob) {
  const size_t chunks = (n + kRowChunk - 1) / kRowChunk;
  const float invT = 1.0f / p.temperature;
  s.e.resize(n);
  s.chunkSums.resize(chunks);
  s.chunkMax.resize(chunks);
  raw = rowSoftmaxStatsAndScaledExps(x, n, invT, s.e.data(), s.chunkSums.data(), s.chunkMax.data(), splitRow);
  if (!raw.valid) return;
  s.chunkScale.resize(chunks);
  double total = 0;
  for (size_t c = 0; c < chunks; ++c) {
    const bool any = s.chunkMax[c] > -std::numeric_limits<float>::infinity();
    s.chunkScale[c] = any ? std::exp((static_cast<double>(s.chunkMax[c]) - raw.max) * invT) : 0.0;
    s.chunkSums[c] *= s.chunkScale[c];
    total += s.chunkSums[c];
  }
  token = drawByChunks(s.e.data(), n, s.chunkSums, s.chunkScale.data(), samplingUniform(p.seed, position), total);
  logprob = (static_cast<double>(x[token]) - raw.max) * invT - std::log(total);
}

// Samples one row; returns false for logits with NaN/+Inf (or nothing finite).
// splitRow: the row's exp passes run on the whole pool (batches with fewer rows than threads);
// the results are the same bits either way.
bool sampleRow(const float* x, size_t n, const SamplingParams& p, int64_t position, SampleResult& out, bool splitRow) {
  auto stats = [&](const float* v, float* expOut, float* chunkMax) {
    return splitRow ? rowSoftmaxStatsParallel(v, n, expOut, chunkMax) : rowSoftmaxStats(v, n, expOut, chunkMax);
  };
  Scratch& s = scratch();
  constexpr float kGreedyBelow = 1e-5f;  // vLLM's sampling epsilon: 1/T would overflow below it
  const bool penalized = p.repetitionPenalty != 1 || p.presencePenalty != 0 || p.frequencyPenalty != 0;
  const bool filteredRow = (p.topK > 0 && static_cast<size_t>(p.topK) < n) || p.topP < 1 || p.minP > 0;
  if (!penalized && !filteredRow && p.temperature >= kGreedyBelow) {
    RowSoftmaxStats raw;
    int32_t token = 0;
    double logprob = 0;
    sampleTemperatureOnly(x, n, p, position, splitRow, s, raw, token, logprob);
    if (!raw.valid) return false;
    out =
        SampleResult{token, static_cast<float>(logprob), static_cast<float>(static_cast<double>(x[token]) - raw.lse())};
    return true;
  }
  // At temperature 1 without penalties the processed exps are the raw ones: keep them from the
  // statistics pass. (The unfiltered draw wants chunk sums, which rowExpScaled gives.)
  const bool filtered = (p.topK > 0 && static_cast<size_t>(p.topK) < n) || p.topP < 1 || p.minP > 0;
  const bool reuseExp =
      filtered && p.temperature == 1 && p.repetitionPenalty == 1 && p.presencePenalty == 0 && p.frequencyPenalty == 0;
  const size_t chunks = (n + kRowChunk - 1) / kRowChunk;
  if (reuseExp) {
    s.e.resize(n);
    s.chunkMax.resize(chunks);
  }
  const RowSoftmaxStats raw = stats(x, reuseExp ? s.e.data() : nullptr, reuseExp ? s.chunkMax.data() : nullptr);
  if (!raw.valid) return false;
  if (reuseExp)  // rescale each chunk's exps from its own max to the row's
    for (size_t c = 0; c < chunks; ++c) {
      const size_t off = c * kRowChunk;
      const float f = static_cast<float>(std::exp(static_cast<double>(s.chunkMax[c]) - raw.max));
      rowScaleGrad(s.e.data() + off, nullptr, std::min(kRowChunk, n - off), f, 1.0f, 0.0f, 0.0f, s.e.data() + off);
    }
  const float* y = applyPenalties(x, n, p, s);
  const RowSoftmaxStats proc = y == x ? raw : stats(y, nullptr, nullptr);
  if (!proc.valid) return false;

  int32_t token;
  double logprob;
  if (p.temperature < kGreedyBelow) {  // greedy: the first maximum; logprob under softmax of y
    token = static_cast<int32_t>(proc.argmax);
    logprob = static_cast<double>(y[token]) - proc.lse();
  } else {
    const float invT = 1.0f / p.temperature;
    s.e.resize(n);
    s.chunkSums.resize((n + kRowChunk - 1) / kRowChunk);
    const double total = reuseExp   ? raw.sumExp
                         : splitRow ? rowExpScaledParallel(y, n, proc.max, invT, s.e.data(), s.chunkSums.data())
                                    : rowExpScaled(y, n, proc.max, invT, s.e.data(), s.chunkSums.data());
    const double u = samplingUniform(p.seed, position);
    const size_t k = p.topK > 0 && static_cast<size_t>(p.topK) < n ? static_cast<size_t>(p.topK) : n;
    size_t keep = k;
    if (p.minP > 0) {
      size_t minpCount = 0;
      for (size_t j = 0; j < n; ++j) minpCount += s.e[j] >= p.minP ? 1 : 0;
      keep = std::min(keep, std::max<size_t>(minpCount, 1));
    }
    Cut cut;
    double mass = total;
    if (keep < n || p.topP < 1) {
      const float ymin = rowFiniteMin(y, n);
      RowSampler rs(y, s.e.data(), n, proc.max, ymin, s);
      if (keep < n) cut = rs.prefixByCount(keep, mass);
      if (p.topP < 1) cut = rs.prefixByMass(cut, p.topP * mass, mass);
      token = rs.draw(cut, mass, u);
    } else {
      // No filter: find the chunk where the CDF crosses u·total, then the token inside it.
      token = drawByChunks(s.e.data(), n, s.chunkSums, nullptr, u, total);
    }
    logprob = (static_cast<double>(y[token]) - proc.max) * invT - std::log(mass);
  }
  out.token = token;
  out.logprob = static_cast<float>(logprob);
  out.rawLogprob = static_cast<float>(static_cast<double>(x[token]) - raw.lse());
  return true;
}

}  // namespace

double samplingUniform(uint64_t seed, int64_t position) {
  const uint64_t h = splitmix64(splitmix64(seed) ^ (static_cast<uint64_t>(position) * 0xd6e8feb86659fd93ull));
  return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);
}

void sampleRows(const float* logits, size_t rows, size_t vocab, const SamplingParams* params, const int32_t* positions,
                SampleResult* out) {
  SWERL_CHECK(vocab >= 1, InvalidArgument, "vocab must be >= 1");
  for (size_t r = 0; r < rows; ++r) checkParams(params[r], vocab, r);
  std::vector<char> ok(rows, 1);
  ThreadPool& pool = ThreadPool::global();
  const size_t tasks = std::min<size_t>(pool.size(), rows);
  auto run = [&](size_t begin, size_t end, bool splitRow) {
    for (size_t r = begin; r < end; ++r)
      ok[r] = sampleRow(logits + r * vocab, vocab, params[r], positions ? positions[r] : 0, out[r], splitRow);
  };
  if (rows * vocab < 32768) {
    run(0, rows, false);
  } else if (rows < static_cast<size_t>(pool.size()) && vocab >= kSplitRowVocab) {
    run(0, rows, true);  // few, long rows: parallel over each row's vocabulary
  } else {
    pool.run(static_cast<int>(tasks), [&](int t) { run(rows * t / tasks, rows * (t + 1) / tasks, false); });
  }
  for (size_t r = 0; r < rows; ++r)
    SWERL_CHECK(ok[r], NonFiniteLogits,
                "logits row " + std::to_string(r) + " contains NaN or +Inf, or no finite value; no token was sampled");
}

}  // namespace swerl

// Batched sampling (see sampler.h).
//
// Per row, with y = the penalised logits and e_j = exp((y_j − max y) / T):
// - every filter keeps a prefix of the order (y descending, index ascending): min-p keeps
//   e_j ≥ minP, top-k the first k, top-p the shortest prefix whose mass reaches p of the mass
//   kept so far. A prefix is a Cut: y_j > thr, plus the tokens with y_j == thr up to index lastTie;
// - prefixes are found with a 2048-bin histogram of y over [min, max] (counts and masses) and a
//   sort of the one boundary bin;
// - the token wins the exponential race (race.h) among the kept tokens; its logprob is
//   (y_tok − max)/T − log(kept mass).
#include "kernels/cpu/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common/error.h"
#include "common/thread_pool.h"
#include "kernels/cpu/race.h"
#include "kernels/cpu/row_softmax.h"
#include "kernels/cpu/sampler_kernels.h"

namespace swerl {

namespace {

constexpr int kBins = kSamplerBins;
// Rows at least this long are split over the pool when the batch has fewer rows than threads.
// Waking the pool costs tens of microseconds: on the 2-core development machine one 151936-entry
// row sampled on one thread was faster than split (greedy 46-56 vs 69-77 us, T 0.7 87-89 vs
// 98-107 us, with the gate lowered to 1 for the measurement).
constexpr size_t kSplitRowVocab = size_t(1) << 20;

struct Cut {
  float thr = -std::numeric_limits<float>::infinity();
  int64_t lastTie = INT64_MAX;  // tokens with y == thr are kept up to this index
  RaceFilter filter() const { return RaceFilter{thr, lastTie}; }
};

// Per-thread scratch, reused across calls.
struct Scratch {
  std::vector<float> y, e;
  std::vector<float> chunkMax;
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
      size_t taken = 0;
      for (int32_t j : s_.members) {
        const bool kept = y_[j] > within.thr || (y_[j] == within.thr && j <= within.lastTie);
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
  // Members equal to the threshold are in index order, and equal values share a bin.
  Cut cutAt(size_t r) const {
    const int32_t last = s_.members[r - 1];
    return Cut{y_[last], last};
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

// The race over a whole row with e_j = exp((y_j − ref)/T): serial, or split into kRowChunk
// spans over the pool (the same winner: race.h).
int32_t raceRow(const float* y, const float* e, size_t n, float ref, float invT, const RaceFilter& filter, RaceKey key,
                bool splitRow) {
  RaceBound bound;
  RaceWinner winner;
  if (!splitRow) {
    raceSpan(y, e, n, 0, ref, invT, filter, key, bound, winner);
  } else {
    std::vector<RaceWinner> spans((n + kRowChunk - 1) / kRowChunk);
    parallelFor(spans.size(), 1, 1, [&](size_t c) {
      const size_t off = c * kRowChunk;
      raceSpan(y + off, e + off, std::min(kRowChunk, n - off), static_cast<uint32_t>(off), ref, invT, filter, key,
               bound, spans[c]);
    });
    for (const RaceWinner& w : spans) winner.merge(w);
  }
  SWERL_ASSERT(winner.index >= 0);
  return static_cast<int32_t>(winner.index);
}

// Temperature only (no penalties, no filters), from one read of the row: per kRowChunk chunk,
// the raw statistics, the processed exps relative to the chunk's max (in a chunk-sized buffer
// still in L1/L2) and the chunk's part of the race.
void sampleTemperatureOnly(const float* x, size_t n, const SamplingParams& p, RaceKey key, bool splitRow,
                           RowSoftmaxStats& raw, int32_t& token, double& logprob) {
  const size_t chunks = (n + kRowChunk - 1) / kRowChunk;
  const float invT = 1.0f / p.temperature;
  thread_local std::vector<RowChunkStats> stats;
  thread_local std::vector<double> scaledSums;
  thread_local std::vector<RaceWinner> winners;
  stats.assign(chunks, RowChunkStats{});
  scaledSums.assign(chunks, 0.0);
  winners.assign(chunks, RaceWinner{});
  RowChunkStats* st = stats.data();
  double* sums = scaledSums.data();
  RaceWinner* win = winners.data();
  RaceBound bound;
  auto one = [&](size_t c) {
    thread_local std::vector<float> exps(kRowChunk);  // per pool thread
    const size_t off = c * kRowChunk, len = std::min(kRowChunk, n - off);
    st[c] = rowChunkStats(x + off, len, invT == 1 ? exps.data() : nullptr);
    if (!st[c].sane || !(st[c].max > -std::numeric_limits<float>::infinity())) return;
    sums[c] = invT == 1 ? st[c].s : rowExpScaled(x + off, len, st[c].max, invT, exps.data());
    raceSpan(x + off, exps.data(), len, static_cast<uint32_t>(off), st[c].max, invT, RaceFilter{}, key, bound, win[c]);
  };
  if (splitRow)
    parallelFor(chunks, 1, 1, one);
  else
    for (size_t c = 0; c < chunks; ++c) one(c);
  raw = rowCombineChunks(x, n, st);
  if (!raw.valid) return;
  RaceWinner winner;
  double total = 0;
  for (size_t c = 0; c < chunks; ++c) {
    winner.merge(win[c]);
    if (st[c].max > -std::numeric_limits<float>::infinity())
      total += sums[c] * std::exp((static_cast<double>(st[c].max) - raw.max) * invT);
  }
  SWERL_ASSERT(winner.index >= 0);
  token = static_cast<int32_t>(winner.index);
  // At temperature 1 the processed distribution is the raw one: report the same bits.
  logprob = invT == 1 ? static_cast<double>(x[token]) - raw.lse()
                      : (static_cast<double>(x[token]) - raw.max) * invT - std::log(total);
}

// Samples one row; returns false for logits with NaN/+Inf (or nothing finite).
// splitRow: the row's exp passes run on the whole pool (batches with fewer rows than threads);
// the results are the same bits either way.
bool sampleRow(const float* x, size_t n, const SamplingParams& p, int64_t position, SampleResult& out, bool splitRow) {
  const RaceKey key = raceKey(p.seed, position);
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
    sampleTemperatureOnly(x, n, p, key, splitRow, raw, token, logprob);
    if (!raw.valid) return false;
    out =
        SampleResult{token, static_cast<float>(logprob), static_cast<float>(static_cast<double>(x[token]) - raw.lse())};
    return true;
  }
  // Filtered or penalised from here. At temperature 1 without penalties the processed exps are the
  // raw ones: keep them from the statistics pass.
  const bool reuseExp = !penalized && p.temperature == 1;
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
    const double total = reuseExp   ? raw.sumExp
                         : splitRow ? rowExpScaledParallel(y, n, proc.max, invT, s.e.data(), nullptr)
                                    : rowExpScaled(y, n, proc.max, invT, s.e.data());
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
    }
    token = raceRow(y, s.e.data(), n, proc.max, invT, cut.filter(), key, splitRow);
    logprob = (static_cast<double>(y[token]) - proc.max) * invT - std::log(mass);
  }
  out.token = token;
  out.logprob = static_cast<float>(logprob);
  out.rawLogprob = static_cast<float>(static_cast<double>(x[token]) - raw.lse());
  return true;
}

}  // namespace

void checkSamplingParams(const SamplingParams& p, size_t vocab, size_t r) {
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

void sampleRows(const float* logits, size_t rows, size_t vocab, const SamplingParams* params, const int32_t* positions,
                SampleResult* out) {
  SWERL_CHECK(vocab >= 1, InvalidArgument, "vocab must be >= 1");
  for (size_t r = 0; r < rows; ++r) checkSamplingParams(params[r], vocab, r);
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

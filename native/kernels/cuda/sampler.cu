// The CUDA sampler (sampler_cuda.h): sampleRows (kernels/cpu/sampler.h) on device logits, with the
// CPU's order, semantics and draw.
//
// A plain row (no penalty entries, no filter, no top logprobs) is split into chunks of
// kChunkTokens tokens, one block each (chunkStatsKernel, chunkSumsKernel, rowFinishKernel); any
// other row takes one block of kThreads threads (sampleRowsKernel). Each thread keeps kRowLoads
// loads in flight in a pass over its tokens (forEachToken). A row reads only its own logits and
// plan, every block-wide reduction combines the threads' partials in one fixed order
// (blockReduce), and a split row's chunks are combined in chunk order, so a row's results are
// the same bits alone or anywhere in a batch of any size.
//
// Per row, with y the penalised logits (x itself when there are no penalties) and
// e_j = exp((y_j − max y) / T) by the CPU's exp polynomial (expPoly):
// 1. statistics of x and of y: max, first argmax, NaN/+Inf, and Σ exp(· − max) in f64;
// 2. greedy rows (T < 1e-5): the first maximum of y;
// 3. otherwise the filters, each a prefix of the order (y descending, index ascending) kept as a
//    Cut (y > thr, plus the ties y == thr up to index lastTie): min-p and top-k by count, then
//    top-p by mass over what top-k kept. Sort-free: a radix select over the order key of y (16
//    buckets, 4 bits of the key a round; at most 8 rounds), counting tokens or summing e_j in
//    each bucket, narrows the boundary to one value; one more pass ranks the ties at that value
//    in index order;
// 4. the exponential race (kernels/cpu/race.h) among the kept tokens: each thread scores its
//    candidates exactly (f64) and the block keeps the best (score, lowest index): the CPU's winner.
// Logprobs: (y_tok − max)/T − log(kept mass) and x_tok − logsumexp(x), with the sums in f64 over
// the same f32 e_j the CPU's vector path computes.
//
// Penalised rows are first copied to a scratch row and patched there: the host resolves each
// row's token lists into one entry per token, with the CPU's float operations.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/race.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_compat.h"
#include "kernels/cuda/sampler_cuda.h"

namespace swerl {

namespace {

constexpr int kThreads = 256;                  // per row (block)
constexpr int kSegments = 16;                  // blockReduce's first stage: kSegments runs of
constexpr int kSegLen = kThreads / kSegments;  // kSegLen threads each
constexpr int kBucketBits = 4;                 // radix select: bits of the key per round
constexpr int kBuckets = 1 << kBucketBits;
constexpr int kMaxReduce = kBuckets;           // doubles per thread in one reduction
constexpr float kGreedyBelow = 1e-5f;          // vLLM's sampling epsilon, as the CPU
constexpr double kBoundSlack = 1.0 + 0x1p-10;  // the race's candidate bound widening (race.cc)
constexpr int64_t kAllTies = INT64_MAX;        // a Cut keeping every tie at its threshold

// RowPlan::flags
constexpr uint32_t kGreedy = 1, kPenalized = 2, kFiltered = 4;

// What the kernel needs of one row's SamplingParams (host-resolved).
struct RowPlan {
  float invT;  // 1 / temperature (unused for greedy rows)
  float topP, minP, repetitionPenalty;
  uint32_t keyA, keyB;  // the race's RaceKey for (seed, position)
  uint32_t topK;        // 0: off
  uint32_t flags;       // kGreedy | kPenalized | kFiltered
  int64_t scratch;      // offset (floats) of the row's penalised copy; −1: no penalty entries
  uint32_t firstEntry, numEntries;
};

// One penalised token: y = repeat ? (y > 0 ? y / r : y · r) : y, then y −= delta.
struct PenaltyEntry {
  int32_t token;
  uint32_t repeat;
  float delta;  // frequencyPenalty · count + presencePenalty (0 for prompt-only tokens)
};

struct RowResult {
  int32_t token;
  float logprob, rawLogprob;
  int32_t ok;  // 0: NaN/+Inf or nothing finite (raw or penalised)
};

// Block-shared scratch of the reductions: kThreads × kMaxReduce partials, then the result.
__shared__ double sRed[kThreads * kMaxReduce];
__shared__ double sOut[kMaxReduce];
__shared__ int64_t sTie;

// ---- block-wide building blocks ------------------------------------------------------------

/**
 * Combines every thread's v[0, W) with `combine(acc, other)` in a fixed order (threads in runs of
 * kSegLen, then the runs), so the result never depends on timing; every thread gets it in v.
 */
template <int W, typename Combine>
__device__ void blockReduce(double (&v)[W], Combine combine) {
  static_assert(W <= kMaxReduce, "blockReduce: too many values per thread");
  const int t = threadIdx.x;
  for (int w = 0; w < W; ++w) sRed[t * W + w] = v[w];
  __syncthreads();
  if (t < kSegments) {
    double* acc = sRed + t * kSegLen * W;
    for (int i = 1; i < kSegLen; ++i) combine(acc, acc + i * W);
  }
  __syncthreads();
  if (t == 0) {
    for (int s = 1; s < kSegments; ++s) combine(sRed, sRed + s * kSegLen * W);
    for (int w = 0; w < W; ++w) sOut[w] = sRed[w];
  }
  __syncthreads();
  for (int w = 0; w < W; ++w) v[w] = sOut[w];
}

template <int W>
struct SumOp {
  __device__ void operator()(double* a, const double* b) const {
    for (int w = 0; w < W; ++w) a[w] += b[w];
  }
};

template <int W>
__device__ void blockSum(double (&v)[W]) {
  blockReduce(v, SumOp<W>{});
}

/**
 * Calls f(y[j], j) for this thread's tokens j = threadIdx.x + i · kThreads, i = 0, 1, ..., in that
 * order, reading kRowLoads of them before using any, so that a pass is not bound by one load's
 * latency at a time. The order of f's calls, and so every per-thread sum, is that of the plain
 * loop.
 */
constexpr uint32_t kRowLoads = 4;
template <typename F>
__device__ __forceinline__ void forEachToken(const float* y, uint32_t n, F&& f) {
  uint32_t j = threadIdx.x;
  for (; j + (kRowLoads - 1) * kThreads < n; j += kRowLoads * kThreads) {
    float v[kRowLoads];
    for (uint32_t u = 0; u < kRowLoads; ++u) v[u] = y[j + u * kThreads];
    for (uint32_t u = 0; u < kRowLoads; ++u) f(v[u], j + u * kThreads);
  }
  for (; j < n; j += kThreads) f(y[j], j);
}

/** Thread t's exclusive prefix of c over threads 0..t−1 (in thread order); total gets the sum. */
__device__ double blockExclusiveScan(double c, double& total) {
  const int t = threadIdx.x;
  double* runs = sRed + kThreads;                  // [kSegments] run sums
  double* runStart = sRed + kThreads + kSegments;  // [kSegments] exclusive prefixes of the runs
  sRed[t] = c;
  __syncthreads();
  if (t < kSegments) {
    double acc = 0;
    for (int i = 0; i < kSegLen; ++i) acc += sRed[t * kSegLen + i];
    runs[t] = acc;
  }
  __syncthreads();
  if (t == 0) {
    double acc = 0;
    for (int s = 0; s < kSegments; ++s) {
      runStart[s] = acc;
      acc += runs[s];
    }
    sOut[0] = acc;
  }
  __syncthreads();
  const int run = t / kSegLen;
  double prefix = runStart[run];
  for (int i = run * kSegLen; i < t; ++i) prefix += sRed[i];
  total = sOut[0];
  __syncthreads();  // before anyone reuses sRed
  return prefix;
}

// ---- per-element math, as the CPU ------------------------------------------------------------

/**
 * exp(x) for x ≤ 0, 0 below −87 and for −Inf: the CPU's polynomial (expNonPositive) with its
 * vector paths' fused multiply-adds (row_softmax_avx2.cc), so the values are the CPU's bits.
 */
__device__ __forceinline__ float expPoly(float x) {
  if (!(x >= -87.0f)) return 0.0f;
  const float n = rintf(x * 1.44269504088896341f);
  float r = fmaf(-n, 0.693359375f, x);
  r = fmaf(-n, -2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = fmaf(p, r, 1.3981999507e-3f);
  p = fmaf(p, r, 8.3334519073e-3f);
  p = fmaf(p, r, 4.1665795894e-2f);
  p = fmaf(p, r, 1.6666665459e-1f);
  p = fmaf(p, r, 5.0000001201e-1f);
  const float pr = p * r;
  const float y = fmaf(pr, r, r) + 1.0f;
  return __uint_as_float(__float_as_uint(y) + (static_cast<uint32_t>(static_cast<int32_t>(n)) << 23));
}

/** e_j = exp((v − max) · invT). */
__device__ __forceinline__ float scaledExp(float v, float max, float invT) { return expPoly((v - max) * invT); }

/** A key that orders floats as numbers (−0 as +0): larger value, larger key. */
__device__ __forceinline__ uint32_t orderKey(float v) {
  const uint32_t u = v == 0.0f ? 0u : __float_as_uint(v);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/** The value of an orderKey. */
__device__ __forceinline__ float keyValue(uint32_t k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

// ---- row passes --------------------------------------------------------------------------------

/** Tokens kept: y > thr, or y == thr and index ≤ lastTie. The default keeps everything. */
struct Cut {
  float thr;
  int64_t lastTie;
  __device__ bool keeps(float v, uint32_t j) const {
    return v > thr || (v == thr && static_cast<int64_t>(j) <= lastTie);
  }
};

__device__ Cut keepAll() { return Cut{-INFINITY, kAllTies}; }

struct RowStats {
  float max;
  uint32_t argmax;  // the first index of max
  uint32_t minKey, maxKey;
  bool valid;  // no NaN or +Inf, and something above −Inf
};

// (max, first argmax, sane, min key): the larger max, or the same at a lower index.
struct StatsOp {
  __device__ void operator()(double* a, const double* b) const {
    if (b[0] > a[0] || (b[0] == a[0] && b[1] < a[1])) {
      a[0] = b[0];
      a[1] = b[1];
    }
    a[2] = a[2] < b[2] ? a[2] : b[2];
    a[3] = a[3] < b[3] ? a[3] : b[3];
  }
};

/**
 * The block's (max, first argmax, sane, min key) over y[0, n), as StatsOp combines them: indices
 * are base + j, and none is `none`; the min key only with kMinKey (else 0).
 */
template <bool kMinKey>
__device__ void blockStats(const float* y, uint32_t n, uint32_t base, uint32_t none, double (&s)[4]) {
  float m = -INFINITY;
  uint32_t arg = none, minKey = kMinKey ? 0xffffffffu : 0u;
  bool sane = true;
  forEachToken(y, n, [&](float v, uint32_t j) {
    if (v != v || v == INFINITY) {
      sane = false;
      return;
    }
    if (v > m) {
      m = v;
      arg = base + j;
    }
    if (kMinKey) {
      const uint32_t k = orderKey(v);
      minKey = k < minKey ? k : minKey;
    }
  });
  s[0] = m;
  s[1] = arg;
  s[2] = sane ? 1.0 : 0.0;
  s[3] = minKey;
  blockReduce(s, StatsOp{});
}

__device__ RowStats rowStats(const float* y, uint32_t n) {
  double s[4];
  blockStats<true>(y, n, 0, n, s);
  RowStats st;
  st.max = static_cast<float>(s[0]);
  st.argmax = static_cast<uint32_t>(s[1]);
  st.minKey = static_cast<uint32_t>(s[3]);
  st.valid = s[2] == 1.0 && st.max > -INFINITY;
  st.maxKey = st.valid ? orderKey(st.max) : 0;
  return st;
}

/** Σ_j exp((y_j − max) · invT) over the kept tokens, in f64. */
__device__ double keptMass(const float* y, uint32_t n, const Cut& cut, float max, float invT) {
  double s[1] = {0};
  forEachToken(y, n, [&](float v, uint32_t j) {
    if (cut.keeps(v, j)) s[0] += scaledExp(v, max, invT);
  });
  blockSum(s);
  return s[0];
}

/** The whole row's mass and the count of e_j ≥ minP (min-p's kept count). */
__device__ void massAndMinPCount(const float* y, uint32_t n, float max, float invT, float minP, double& mass,
                                 double& count) {
  double s[2] = {0, 0};
  forEachToken(y, n, [&](float v, uint32_t) {
    const float e = scaledExp(v, max, invT);
    s[0] += e;
    s[1] += e >= minP ? 1.0 : 0.0;
  });
  blockSum(s);
  mass = s[0];
  count = s[1];
}

/** Where a prefix of the order ends: every kept token with key > `key`, plus some with key == key. */
struct Boundary {
  bool found;
  uint32_t key;
  double above;  // weight of the kept tokens with key > `key`
  double at;     // weight of the kept tokens with key == `key`
};

/**
 * The radix select: the largest key K in [lo, hi] such that the kept tokens with key ≥ K weigh at
 * least target (weight 1 per token, or e_j with kMass), given that those with key > hi weigh 0 and
 * all of [lo, hi] weighs `total`. Not found when the buckets' sums never reach target (rounding).
 */
template <bool kMass>
__device__ Boundary radixSelect(const float* y, uint32_t n, const Cut& within, uint32_t lo, uint32_t hi, double target,
                                double total, float max, float invT) {
  double above = 0, at = total;
  while (lo < hi) {
    const uint32_t span = hi - lo;  // offsets 0..span
    const int bits = 32 - __clz(static_cast<int>(span));
    const int shift = bits > kBucketBits ? bits - kBucketBits : 0;
    double w[kBuckets];
    for (int b = 0; b < kBuckets; ++b) w[b] = 0;
    forEachToken(y, n, [&](float v, uint32_t j) {
      if (!within.keeps(v, j)) return;
      const uint32_t k = orderKey(v);
      if (k < lo || k > hi) return;
      w[(k - lo) >> shift] += kMass ? static_cast<double>(scaledExp(v, max, invT)) : 1.0;
    });
    blockSum(w);
    int b = kBuckets - 1;
    for (; b >= 0; --b) {  // from the largest keys down
      if (above + w[b] >= target) break;
      above += w[b];
    }
    if (b < 0) return Boundary{false, 0, 0, 0};
    const uint64_t bucketLo = static_cast<uint64_t>(lo) + (static_cast<uint64_t>(b) << shift);
    const uint64_t bucketHi = bucketLo + (uint64_t(1) << shift) - 1;
    lo = static_cast<uint32_t>(bucketLo);
    hi = bucketHi < hi ? static_cast<uint32_t>(bucketHi) : hi;
    at = w[b];
  }
  return Boundary{true, lo, above, at};
}

/**
 * The index of the r-th token (r ≥ 1, in index order) with y == thr and index ≤ limit, where
 * r = rank(number of such tokens). Threads take contiguous spans here, so that a scan of their
 * counts ranks the ties.
 */
template <typename Rank>
__device__ int64_t nthTie(const float* y, uint32_t n, float thr, int64_t limit, Rank rank) {
  const uint32_t span = (n + kThreads - 1) / kThreads;
  const uint64_t begin64 = static_cast<uint64_t>(threadIdx.x) * span;
  const uint32_t begin = begin64 < n ? static_cast<uint32_t>(begin64) : n;
  const uint32_t end = n - begin < span ? n : begin + span;
  double count = 0;
  for (uint32_t j = begin; j < end; ++j) count += (y[j] == thr && static_cast<int64_t>(j) <= limit) ? 1.0 : 0.0;
  double total = 0;
  const double before = blockExclusiveScan(count, total);
  const double r = rank(total);
  if (threadIdx.x == 0) sTie = limit;  // not reached: keep every tie
  __syncthreads();
  if (before < r && r <= before + count) {
    double seen = before;
    for (uint32_t j = begin; j < end; ++j) {
      if (!(y[j] == thr && static_cast<int64_t>(j) <= limit)) continue;
      if (++seen == r) {
        sTie = j;
        break;
      }
    }
  }
  __syncthreads();
  const int64_t last = sTie;
  __syncthreads();
  return last;
}

/** The first `keep` tokens of the order (keep < n). */
__device__ Cut cutByCount(const float* y, uint32_t n, uint32_t keep, const RowStats& st) {
  const Boundary b = radixSelect<false>(y, n, keepAll(), st.minKey, st.maxKey, keep, n, 0.0f, 1.0f);
  const float thr = keyValue(b.key);
  const double r = keep - b.above;  // 1..b.at ties at thr are kept
  if (r == b.at) return Cut{thr, kAllTies};
  return Cut{thr, nthTie(y, n, thr, kAllTies, [r](double) { return r; })};
}

/**
 * top-p within `within` (of mass massWithin): the shortest prefix of the order whose mass reaches
 * target = topP · massWithin (or all of `within` when rounding leaves it short).
 */
__device__ Cut cutByMass(const float* y, uint32_t n, const Cut& within, double massWithin, double target,
                         const RowStats& st, float invT) {
  const uint32_t lo = within.thr > -INFINITY ? orderKey(within.thr) : st.minKey;
  const Boundary b = radixSelect<true>(y, n, within, lo, st.maxKey, target, massWithin, st.max, invT);
  if (!b.found) return within;
  const float thr = keyValue(b.key);
  const double e = scaledExp(thr, st.max, invT), above = b.above;
  // The fewest ties (in index order) that bring the mass to target: every tie weighs e.
  auto rank = [e, above, target](double ties) {
    double r = e > 0 ? ceil((target - above) / e) : ties;
    r = r < 1 ? 1 : (r > ties ? ties : r);
    while (r > 1 && above + (r - 1) * e >= target) r -= 1;
    while (r < ties && above + r * e < target) r += 1;
    return r;
  };
  const int64_t limit = thr == within.thr ? within.lastTie : kAllTies;
  return Cut{thr, nthTie(y, n, thr, limit, rank)};
}

// (score, index) of the race: the larger score, or the same score at a lower index; index −1: none.
struct WinnerOp {
  __device__ void operator()(double* a, const double* b) const {
    if (b[1] >= 0 && (a[1] < 0 || b[0] > a[0] || (b[0] == a[0] && b[1] < a[1]))) {
      a[0] = b[0];
      a[1] = b[1];
    }
  }
};

/** c = exp(ref/T − best) widened: a token can beat `best` only if v_j ≤ e_j · c (race.h). */
__device__ float boundFactor(double refScaled, double best) {
  const double c = exp(refScaled - best) * kBoundSlack;
  return c < 3.4028234663852886e38 ? static_cast<float>(c) : INFINITY;
}

/**
 * The block's race among the kept tokens of y[0, n), whose indices are base + j: w gets the
 * largest exact score and its index, the lowest index on a tie (index −1: none).
 */
__device__ void blockRace(const float* y, uint32_t n, uint32_t base, const Cut& cut, float max, float invT, RaceKey key,
                          double (&w)[2]) {
  const double refScaled = static_cast<double>(max) * invT;
  w[0] = -INFINITY;
  w[1] = -1;
  float c = INFINITY;
  forEachToken(y, n, [&](float v, uint32_t j) {
    const uint32_t index = base + j;
    if (!cut.keeps(v, index)) return;
    const float bound = scaledExp(v, max, invT) * c;
    if (!(bound >= 0x1p-24f)) return;  // also e_j = 0 (−Inf, underflow)
    const float u = raceV(key, index);
    if (u > bound) return;
    // y·invT is exact in f64 (two 24-bit significands), as the CPU's.
    const double s = raceScoreOf(static_cast<double>(v) * invT, u);
    if (w[1] < 0 || s > w[0]) {  // j rises: an equal score keeps the lower index
      w[0] = s;
      w[1] = index;
      c = boundFactor(refScaled, s);
    }
  });
  blockReduce(w, WinnerOp{});
}

/** The race's winner among the kept tokens: the largest exact score, the lowest index on a tie. */
__device__ uint32_t raceWinner(const float* y, uint32_t n, const Cut& cut, float max, float invT, uint32_t keyA,
                               uint32_t keyB) {
  double w[2];
  blockRace(y, n, 0, cut, max, invT, RaceKey{keyA, keyB}, w);
  return static_cast<uint32_t>(w[1]);
}

/** Copies row x to y and applies its penalty entries there. */
__device__ void penalize(const float* x, float* y, uint32_t n, const PenaltyEntry* entries, uint32_t count,
                         float repetitionPenalty) {
  for (uint32_t j = threadIdx.x; j < n; j += kThreads) y[j] = x[j];
  __syncthreads();
  for (uint32_t i = threadIdx.x; i < count; i += kThreads) {  // distinct tokens: no two threads meet
    const PenaltyEntry en = entries[i];
    float v = y[en.token];
    if (en.repeat) v = v > 0 ? v / repetitionPenalty : v * repetitionPenalty;
    y[en.token] = v - en.delta;
  }
  __syncthreads();
}

/**
 * The row's topN most likely tokens under log_softmax(x), best first (ties: lower index), into
 * tokens/logprobs [topN]: topN rounds, each a block-wide (value, index) winner among the tokens
 * after the previous winner in that order (−1 and −Inf past the vocabulary's end).
 */
__device__ void topLogprobsOfRow(const float* x, uint32_t n, double rawLse, uint32_t topN, int32_t* tokens,
                                 float* logprobs) {
  float lastV = INFINITY;
  int64_t lastJ = -1;
  for (uint32_t r = 0; r < topN; ++r) {
    double w[2] = {-INFINITY, -1};
    forEachToken(x, n, [&](float v, uint32_t j) {
      if (!(v < lastV || (v == lastV && static_cast<int64_t>(j) > lastJ))) return;  // taken already
      if (w[1] < 0 || v > w[0]) {  // j rises: an equal value keeps the lower index
        w[0] = v;
        w[1] = j;
      }
    });
    blockReduce(w, WinnerOp{});
    const int64_t j = static_cast<int64_t>(w[1]);
    if (threadIdx.x == 0) {
      tokens[r] = static_cast<int32_t>(j);
      logprobs[r] = j < 0 ? -INFINITY : static_cast<float>(static_cast<double>(x[j]) - rawLse);
    }
    if (j < 0)
      lastV = -INFINITY;  // nothing left: later rounds find nothing either
    else {
      lastV = x[j];
      lastJ = j;
    }
  }
}

/**
 * A sampled row's result: rawLogprob from x_tok and the raw log-normaliser; logprob the processed
 * one, except at temperature 1 with no penalty and no filter, where the processed distribution is
 * the raw one (same bits).
 */
__device__ RowResult rowResult(const RowPlan& plan, int32_t token, double logprob, float xTok, double rawLse) {
  RowResult res;
  res.token = token;
  res.rawLogprob = static_cast<float>(static_cast<double>(xTok) - rawLse);
  const bool rawDistribution = !(plan.flags & (kGreedy | kPenalized | kFiltered)) && plan.invT == 1.0f;
  res.logprob = rawDistribution ? res.rawLogprob : static_cast<float>(logprob);
  res.ok = 1;
  return res;
}

// grid.x = the rows it samples, block = kThreads; block b samples row rowsOf[b]. logits [rows,
// vocab]; scratch holds the penalised rows; topTokens/topLogprobs [rows, topN] (unused when topN
// is 0).
__global__ void __launch_bounds__(kThreads)
    sampleRowsKernel(const float* logits, uint32_t vocab, const uint32_t* rowsOf, const RowPlan* plans,
                     const PenaltyEntry* entries, float* scratch, RowResult* results, uint32_t topN, int32_t* topTokens,
                     float* topLogprobs) {
  const uint32_t row = rowsOf[blockIdx.x], n = vocab;
  const RowPlan plan = plans[row];
  const float* x = logits + static_cast<size_t>(row) * n;
  const float* y = x;
  if (plan.scratch >= 0) {
    float* py = scratch + plan.scratch;
    penalize(x, py, n, entries + plan.firstEntry, plan.numEntries, plan.repetitionPenalty);
    y = py;
  }
  const RowStats raw = rowStats(x, n);
  const RowStats proc = y == x ? raw : rowStats(y, n);
  if (!raw.valid || !proc.valid) {
    if (threadIdx.x == 0) results[row] = RowResult{0, 0, 0, 0};
    return;
  }
  const double rawSum = keptMass(x, n, keepAll(), raw.max, 1.0f);
  const double rawLse = static_cast<double>(raw.max) + log(rawSum);
  if (topN > 0)
    topLogprobsOfRow(x, n, rawLse, topN, topTokens + static_cast<size_t>(row) * topN,
                     topLogprobs + static_cast<size_t>(row) * topN);
  int32_t token;
  double logprob;
  if (plan.flags & kGreedy) {
    token = static_cast<int32_t>(proc.argmax);
    const double sum = y == x ? rawSum : keptMass(y, n, keepAll(), proc.max, 1.0f);
    logprob = static_cast<double>(y[token]) - (static_cast<double>(proc.max) + log(sum));
  } else {
    const float invT = plan.invT;
    double mass = 0, minPCount = 0;
    massAndMinPCount(y, n, proc.max, invT, plan.minP, mass, minPCount);
    uint32_t keep = plan.topK > 0 && plan.topK < n ? plan.topK : n;
    if (plan.minP > 0) {
      const uint32_t c = minPCount < 1 ? 1u : static_cast<uint32_t>(minPCount);
      keep = c < keep ? c : keep;
    }
    Cut cut = keepAll();
    if (keep < n) {
      cut = cutByCount(y, n, keep, proc);
      mass = keptMass(y, n, cut, proc.max, invT);
    }
    if (plan.topP < 1) {
      cut = cutByMass(y, n, cut, mass, static_cast<double>(plan.topP) * mass, proc, invT);
      mass = keptMass(y, n, cut, proc.max, invT);
    }
    token = static_cast<int32_t>(raceWinner(y, n, cut, proc.max, invT, plan.keyA, plan.keyB));
    logprob = (static_cast<double>(y[token]) - proc.max) * invT - log(mass);
  }
  if (threadIdx.x == 0) results[row] = rowResult(plan, token, logprob, x[token], rawLse);
}

// ---- plain rows, split over blocks ----------------------------------------------------------
//
// A plain row (no penalty entries, no filter, in a call without top logprobs) needs only its
// statistics, its two normalisers and the race: sums and winners over the row, which split into
// chunks of kChunkTokens tokens, one block each, so that a batch of a few rows fills the GPU
// rather than one multiprocessor per row. Three launches: each chunk's maximum, first argmax and
// sanity (chunkStatsKernel); each chunk's raw and processed sums and race winner, given the row's
// maximum from the first (chunkSumsKernel); then one thread per row combines its chunks in chunk
// order (rowFinishKernel). The chunks depend only on the vocabulary and the combination order
// only on the chunk index, so a plain row has the same bits in any batch; which path a row takes
// depends only on its own parameters and the call's topN.

constexpr uint32_t kChunkTokens = 4096;

struct ChunkStats {
  float max;
  uint32_t argmax;  // the first index of max in the chunk (vocab: none)
  uint32_t sane;    // no NaN or +Inf in the chunk
};

struct ChunkSums {
  double rawSum;  // Σ exp(x − max) over the chunk, max the row's
  double mass;    // Σ exp((x − max) / T) (0 for greedy rows)
  double score;   // the chunk's race winner (index −1: none)
  int64_t index;
};

// A row's statistics from its chunks, in chunk order (so the first maximum wins).
struct PlainStats {
  float max;
  uint32_t argmax;
  bool valid;  // no NaN or +Inf, and something above −Inf
};

__device__ PlainStats combineChunks(const ChunkStats* c, uint32_t chunks) {
  PlainStats st{-INFINITY, 0, true};
  bool any = false;
  for (uint32_t i = 0; i < chunks; ++i) {
    st.valid = st.valid && c[i].sane;
    if (!any || c[i].max > st.max) {
      st.max = c[i].max;
      st.argmax = c[i].argmax;
      any = true;
    }
  }
  st.valid = st.valid && st.max > -INFINITY;
  return st;
}

// grid.x = plain rows × chunks, block = kThreads. Block b: row rowsOf[b / chunks], chunk b % chunks.
__global__ void __launch_bounds__(kThreads)
    chunkStatsKernel(const float* logits, uint32_t vocab, uint32_t chunks, const uint32_t* rowsOf, ChunkStats* out) {
  const uint32_t row = rowsOf[blockIdx.x / chunks], begin = (blockIdx.x % chunks) * kChunkTokens;
  const uint32_t len = vocab - begin < kChunkTokens ? vocab - begin : kChunkTokens;
  double s[4];
  blockStats<false>(logits + static_cast<size_t>(row) * vocab + begin, len, begin, vocab, s);
  if (threadIdx.x == 0)
    out[blockIdx.x] = ChunkStats{static_cast<float>(s[0]), static_cast<uint32_t>(s[1]), s[2] == 1.0};
}

// grid.x = plain rows × chunks, block = kThreads; stats [plain rows × chunks] from chunkStatsKernel.
__global__ void __launch_bounds__(kThreads)
    chunkSumsKernel(const float* logits, uint32_t vocab, uint32_t chunks, const uint32_t* rowsOf, const RowPlan* plans,
                    const ChunkStats* stats, ChunkSums* out) {
  const uint32_t slot = blockIdx.x / chunks, row = rowsOf[slot], begin = (blockIdx.x % chunks) * kChunkTokens;
  const uint32_t len = vocab - begin < kChunkTokens ? vocab - begin : kChunkTokens;
  const PlainStats st = combineChunks(stats + static_cast<size_t>(slot) * chunks, chunks);  // the same in every thread
  if (!st.valid) {
    if (threadIdx.x == 0) out[blockIdx.x] = ChunkSums{0, 0, -INFINITY, -1};
    return;
  }
  const RowPlan plan = plans[row];
  const bool greedy = plan.flags & kGreedy;
  const float invT = plan.invT;
  const float* x = logits + static_cast<size_t>(row) * vocab + begin;
  double s[2] = {0, 0};
  forEachToken(x, len, [&](float v, uint32_t) {
    s[0] += scaledExp(v, st.max, 1.0f);
    if (!greedy) s[1] += scaledExp(v, st.max, invT);
  });
  blockSum(s);
  double w[2] = {-INFINITY, -1};
  if (!greedy) blockRace(x, len, begin, keepAll(), st.max, invT, RaceKey{plan.keyA, plan.keyB}, w);
  if (threadIdx.x == 0) out[blockIdx.x] = ChunkSums{s[0], s[1], w[0], static_cast<int64_t>(w[1])};
}

// One thread per plain row: grid.x × block.x ≥ count. Combines the row's chunks in chunk order
// and writes its result as sampleRowsKernel would.
__global__ void rowFinishKernel(const float* logits, uint32_t vocab, uint32_t chunks, uint32_t count,
                                const uint32_t* rowsOf, const RowPlan* plans, const ChunkStats* stats,
                                const ChunkSums* sums, RowResult* results) {
  const uint32_t slot = blockIdx.x * blockDim.x + threadIdx.x;
  if (slot >= count) return;
  const uint32_t row = rowsOf[slot];
  const RowPlan plan = plans[row];
  const PlainStats st = combineChunks(stats + static_cast<size_t>(slot) * chunks, chunks);
  if (!st.valid) {
    results[row] = RowResult{0, 0, 0, 0};
    return;
  }
  double rawSum = 0, mass = 0, w[2] = {-INFINITY, -1};
  for (uint32_t i = 0; i < chunks; ++i) {
    const ChunkSums& c = sums[static_cast<size_t>(slot) * chunks + i];
    rawSum += c.rawSum;
    mass += c.mass;
    const double other[2] = {c.score, static_cast<double>(c.index)};
    WinnerOp{}(w, other);
  }
  const float* x = logits + static_cast<size_t>(row) * vocab;
  const double rawLse = static_cast<double>(st.max) + log(rawSum);
  // Greedy: the processed distribution is the raw one at temperature 1 (no penalty on a plain row).
  const int32_t token = static_cast<int32_t>(plan.flags & kGreedy ? st.argmax : w[1]);
  const double logprob = plan.flags & kGreedy ? static_cast<double>(x[token]) - rawLse
                                              : (static_cast<double>(x[token]) - st.max) * plan.invT - log(mass);
  results[row] = rowResult(plan, token, logprob, x[token], rawLse);
}

// ---- host side ---------------------------------------------------------------------------------

// The rows' plans and penalty entries, built on the host.
struct HostPlans {
  std::vector<RowPlan> plans;
  std::vector<PenaltyEntry> entries;
  size_t penalizedRows = 0;  // rows with a scratch copy
};

// Appends row p's penalty entries: one per distinct token of its lists, with the CPU's float
// operations (the repetition flag over prompt and output tokens, frequency · count + presence
// over output tokens). slot and counts are vocab-sized, all −1 / 0 on entry and on return.
void addPenaltyEntries(const SamplingParams& p, std::vector<int32_t>& slot, std::vector<uint32_t>& counts,
                       std::vector<PenaltyEntry>& entries) {
  const size_t first = entries.size();
  auto entryOf = [&](int32_t t) -> size_t {
    if (slot[t] < 0) {
      slot[t] = static_cast<int32_t>(entries.size() - first);
      entries.push_back(PenaltyEntry{t, 0, 0.0f});
    }
    return first + static_cast<size_t>(slot[t]);
  };
  if (p.repetitionPenalty != 1) {
    for (size_t i = 0; i < p.numPromptTokens; ++i) entries[entryOf(p.promptTokens[i])].repeat = 1;
    for (size_t i = 0; i < p.numOutputTokens; ++i) entries[entryOf(p.outputTokens[i])].repeat = 1;
  }
  if (p.presencePenalty != 0 || p.frequencyPenalty != 0) {
    for (size_t i = 0; i < p.numOutputTokens; ++i) ++counts[p.outputTokens[i]];
    for (size_t i = 0; i < p.numOutputTokens; ++i) {
      const int32_t t = p.outputTokens[i];
      if (counts[t] == 0) continue;
      entries[entryOf(t)].delta = p.frequencyPenalty * counts[t] + p.presencePenalty;
      counts[t] = 0;  // once per token
    }
  }
  for (size_t i = first; i < entries.size(); ++i) slot[entries[i].token] = -1;
}

HostPlans planRows(size_t rows, size_t vocab, const SamplingParams* params, const int32_t* positions) {
  HostPlans h;
  h.plans.resize(rows);
  std::vector<int32_t> slot;
  std::vector<uint32_t> counts;
  for (size_t r = 0; r < rows; ++r) {
    const SamplingParams& p = params[r];
    RowPlan& plan = h.plans[r];
    const bool greedy = p.temperature < kGreedyBelow;
    const bool penalized = p.repetitionPenalty != 1 || p.presencePenalty != 0 || p.frequencyPenalty != 0;
    const bool filtered = (p.topK > 0 && static_cast<size_t>(p.topK) < vocab) || p.topP < 1 || p.minP > 0;
    plan.invT = greedy ? 0.0f : 1.0f / p.temperature;
    plan.topP = p.topP;
    plan.minP = p.minP;
    plan.repetitionPenalty = p.repetitionPenalty;
    const RaceKey key = raceKey(p.seed, positions ? positions[r] : 0);
    plan.keyA = key.a;
    plan.keyB = key.b;
    plan.topK = static_cast<uint32_t>(p.topK);
    plan.flags = (greedy ? kGreedy : 0u) | (penalized ? kPenalized : 0u) | (filtered ? kFiltered : 0u);
    plan.scratch = -1;
    plan.firstEntry = static_cast<uint32_t>(h.entries.size());
    if (penalized && (p.numPromptTokens > 0 || p.numOutputTokens > 0)) {
      if (slot.empty()) {
        slot.assign(vocab, -1);
        counts.assign(vocab, 0);
      }
      addPenaltyEntries(p, slot, counts, h.entries);
    }
    plan.numEntries = static_cast<uint32_t>(h.entries.size() - plan.firstEntry);
    if (plan.numEntries > 0) plan.scratch = static_cast<int64_t>(h.penalizedRows++ * vocab);
  }
  return h;
}

// One device allocation for the call's duration.
class DeviceScratch {
 public:
  explicit DeviceScratch(size_t bytes) {
    if (bytes > 0) CUDA_CHECK(cudaMalloc(&ptr_, bytes));
  }
  ~DeviceScratch() {
    if (ptr_) cudaFree(ptr_);
  }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
};

}  // namespace

void sampleRowsCuda(const float* deviceLogits, size_t rows, size_t vocab, const SamplingParams* params,
                    const int32_t* positions, SampleResult* out, size_t topN, int32_t* topTokens, float* topLogprobs) {
  SWERL_CHECK(vocab >= 1, InvalidArgument, "vocab must be >= 1");
  SWERL_CHECK(topN <= kMaxTopLogprobs, InvalidArgument,
              "topLogprobs must be at most " + std::to_string(kMaxTopLogprobs) + ", got " + std::to_string(topN));
  SWERL_CHECK(vocab <= 0x7fffffff, InvalidArgument, "vocab must be < 2^31 on CUDA");
  SWERL_CHECK(rows <= 0x7fffffff, InvalidArgument, "at most 2^31 - 1 rows on CUDA");
  for (size_t r = 0; r < rows; ++r) checkSamplingParams(params[r], vocab, r);
  if (rows == 0) return;
  const HostPlans h = planRows(rows, vocab, params, positions);
  // The plain rows go to the split kernels, the others to sampleRowsKernel: rowsOf lists the
  // plain rows, then the others.
  auto plain = [&](size_t r) { return topN == 0 && h.plans[r].scratch < 0 && !(h.plans[r].flags & kFiltered); };
  std::vector<uint32_t> rowsOf;
  rowsOf.reserve(rows);
  for (size_t r = 0; r < rows; ++r)
    if (plain(r)) rowsOf.push_back(static_cast<uint32_t>(r));
  const size_t plainRows = rowsOf.size();
  for (size_t r = 0; r < rows; ++r)
    if (!plain(r)) rowsOf.push_back(static_cast<uint32_t>(r));
  const size_t chunks = (vocab + kChunkTokens - 1) / kChunkTokens;
  SWERL_CHECK(plainRows * chunks <= 0x7fffffff, InvalidArgument,
              "at most 2^31 - 1 blocks: " + std::to_string(plainRows) + " rows of " + std::to_string(chunks) +
                  " chunks of " + std::to_string(kChunkTokens) + " tokens on CUDA");
  // One allocation for the plans, the row lists, the penalty entries, the results, the top
  // logprobs and the chunks' partials (an allocation and its free cost more than the kernels on
  // small batches); the penalised rows' scratch is a second one, only when a row has penalties.
  auto aligned = [](size_t bytes) { return (bytes + 255) / 256 * 256; };
  const size_t plansAt = 0, rowsOfAt = plansAt + aligned(h.plans.size() * sizeof(RowPlan)),
               entriesAt = rowsOfAt + aligned(rows * sizeof(uint32_t)),
               resultsAt = entriesAt + aligned(h.entries.size() * sizeof(PenaltyEntry)),
               statsAt = resultsAt + aligned(rows * sizeof(RowResult)),
               sumsAt = statsAt + aligned(plainRows * chunks * sizeof(ChunkStats)),
               topAt = sumsAt + aligned(plainRows * chunks * sizeof(ChunkSums)),
               total = topAt + rows * topN * (sizeof(int32_t) + sizeof(float));
  DeviceScratch buffer(total), scratch(h.penalizedRows * vocab * sizeof(float));
  char* base = buffer.as<char>();
  std::vector<char> host(resultsAt);  // the plans, row lists and entries, uploaded in one copy
  std::memcpy(host.data() + plansAt, h.plans.data(), h.plans.size() * sizeof(RowPlan));
  std::memcpy(host.data() + rowsOfAt, rowsOf.data(), rows * sizeof(uint32_t));
  if (!h.entries.empty())
    std::memcpy(host.data() + entriesAt, h.entries.data(), h.entries.size() * sizeof(PenaltyEntry));
  CUDA_CHECK(cudaMemcpy(base, host.data(), host.size(), cudaMemcpyHostToDevice));
  auto* plansDev = reinterpret_cast<RowPlan*>(base + plansAt);
  auto* rowsOfDev = reinterpret_cast<uint32_t*>(base + rowsOfAt);
  auto* entriesDev = reinterpret_cast<PenaltyEntry*>(base + entriesAt);
  auto* resultsDev = reinterpret_cast<RowResult*>(base + resultsAt);
  auto* statsDev = reinterpret_cast<ChunkStats*>(base + statsAt);
  auto* sumsDev = reinterpret_cast<ChunkSums*>(base + sumsAt);
  int32_t* topTokensDev = topN > 0 ? reinterpret_cast<int32_t*>(base + topAt) : nullptr;
  float* topLogprobsDev = topN > 0 ? reinterpret_cast<float*>(topTokensDev + rows * topN) : nullptr;
  const uint32_t v32 = static_cast<uint32_t>(vocab), c32 = static_cast<uint32_t>(chunks);
  if (plainRows > 0) {
    const unsigned blocks = static_cast<unsigned>(plainRows * chunks);
    SWERL_LAUNCH(chunkStatsKernel, blocks, kThreads, 0, deviceLogits, v32, c32, rowsOfDev, statsDev);
    CUDA_CHECK(cudaGetLastError());
    SWERL_LAUNCH(chunkSumsKernel, blocks, kThreads, 0, deviceLogits, v32, c32, rowsOfDev, plansDev, statsDev, sumsDev);
    CUDA_CHECK(cudaGetLastError());
    const unsigned finishThreads = 128;
    SWERL_LAUNCH(rowFinishKernel, static_cast<unsigned>((plainRows + finishThreads - 1) / finishThreads), finishThreads,
                 0, deviceLogits, v32, c32, static_cast<uint32_t>(plainRows), rowsOfDev, plansDev, statsDev, sumsDev,
                 resultsDev);
    CUDA_CHECK(cudaGetLastError());
  }
  if (plainRows < rows)
    SWERL_LAUNCH(sampleRowsKernel, static_cast<unsigned>(rows - plainRows), kThreads, 0, deviceLogits, v32,
                 rowsOfDev + plainRows, plansDev, entriesDev, scratch.as<float>(), resultsDev,
                 static_cast<uint32_t>(topN), topTokensDev, topLogprobsDev);
  CUDA_CHECK(cudaGetLastError());
  std::vector<RowResult> res(rows);
  CUDA_CHECK(cudaMemcpy(res.data(), resultsDev, rows * sizeof(RowResult), cudaMemcpyDeviceToHost));
  for (size_t r = 0; r < rows; ++r)
    SWERL_CHECK(res[r].ok, NonFiniteLogits,
                "logits row " + std::to_string(r) + " contains NaN or +Inf, or no finite value; no token was sampled");
  if (topN > 0) {
    CUDA_CHECK(cudaMemcpy(topTokens, topTokensDev, rows * topN * sizeof(int32_t), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(topLogprobs, topLogprobsDev, rows * topN * sizeof(float), cudaMemcpyDeviceToHost));
  }
  for (size_t r = 0; r < rows; ++r) out[r] = SampleResult{res[r].token, res[r].logprob, res[r].rawLogprob};
}

}  // namespace swerl

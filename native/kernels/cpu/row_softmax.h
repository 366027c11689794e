// Softmax statistics and gradients of one logits row, shared by the sampler and the losses.
//
// A row's statistics are reduced in a fixed order: chunks of kRowChunk elements, each taken
// relative to its own maximum and summed in f32 lanes, the chunk partials rescaled to the row's
// maximum and added in f64 in chunk order. Each chunk is read from memory once (its max, then its
// exps while it is still in cache), so the statistics cost one pass over the row. The result depends only on the row
// (not on threads, batch size or the row's place in a batch), so the logsumexp the sampler
// reports and the one the losses compute for the same row are bitwise equal.
#pragma once

#include <cstddef>

namespace swerl {

constexpr size_t kRowChunk = 4096;

struct RowSoftmaxStats {
  float max;       // max_j x_j
  double sumExp;   // Σ_j exp(x_j - max)
  double sumExpX;  // Σ_j exp(x_j - max) · (x_j - max)
  bool finite;     // every x_j is finite
  bool valid;      // no NaN or +Inf and not all −Inf: a distribution (−Inf entries have probability 0)
  size_t argmax;   // the first index of max (when valid)
  /** logsumexp(x) */
  double lse() const;
  /** Entropy of softmax(x): log(sumExp) - sumExpX / sumExp. */
  double entropy() const;
};

/**
 * The row's statistics. With expOut, also writes exp(x_j − m_c) there, m_c being the maximum of
 * x_j's chunk, which then goes to chunkMax[c] (ceil(n / kRowChunk) entries); expOut may be x.
 */
RowSoftmaxStats rowSoftmaxStats(const float* x, size_t n, float* expOut = nullptr, float* chunkMax = nullptr);

/** One kRowChunk chunk's statistics, relative to the chunk's own maximum. */
struct RowChunkStats {
  float max, s, q;  // max; Σ exp(x − max); Σ exp(x − max)·(x − max)
  bool finite;      // every x is finite
  bool sane;        // no NaN or +Inf
};

/**
 * The statistics of chunk x[0, len) (len ≤ kRowChunk), reading it from memory once: its max,
 * then its exps while it is still in L1/L2. With expOut, also writes exp(x_j − max) there.
 */
RowChunkStats rowChunkStats(const float* x, size_t len, float* expOut = nullptr);

/**
 * The row's statistics from its chunks' (chunk k = x[k·kRowChunk, ...)), combined in chunk
 * order: the same bits as rowSoftmaxStats. chunkMax, when given, receives each chunk's max.
 */
RowSoftmaxStats rowCombineChunks(const float* x, size_t n, const RowChunkStats* chunks, float* chunkMax = nullptr);

/**
 * rowSoftmaxStats and rowExpScaled with the row split over the thread pool, for batches with fewer rows
 * than threads. Bitwise equal to the serial ones (the same chunk partials, combined in the same
 * order). Not to be called from inside a pool task.
 */
RowSoftmaxStats rowSoftmaxStatsParallel(const float* x, size_t n, float* expOut = nullptr, float* chunkMax = nullptr);
double rowExpScaledParallel(const float* x, size_t n, float max, float scale, float* out, double* chunkSums);

/**
 * out[j] = e_j · invSum · (a + b · (x_j − lse)) from stored e_j = exp(x_j − max): the gradient
 * of rowSoftmaxGrad without recomputing exp. x may be null when b == 0 (then out may alias e).
 */
void rowScaleGrad(const float* e, const float* x, size_t n, float invSum, float a, float b, float lse, float* out);
void rowScaleGradAvx2(const float* e, const float* x, size_t n, float invSum, float a, float b, float lse, float* out);

/**
 * out[j] = exp((x_j − max) · scale) (0 for −Inf x_j); returns Σ out in the fixed chunk order.
 * chunkSums, when given, receives each kRowChunk chunk's sum (ceil(n / kRowChunk) entries).
 */
double rowExpScaled(const float* x, size_t n, float max, float scale, float* out, double* chunkSums = nullptr);

/**
 * out[j] = p_j · (a + b · (x_j − lse)), p_j = exp(x_j − lse): the gradient of a loss whose
 * per-row coefficients are a (on p) and b (on p·log p) — see train/losses.cc.
 */
void rowSoftmaxGrad(const float* x, size_t n, double lse, float a, float b, float* out);

// Single-threaded kernels; *Avx2 and *Avx512 ones only after the run-time check
// (kernels/cpu/row_softmax_avx2.cc, row_softmax_avx512.cc).
void rowChunkStatsAvx2(const float* x, size_t n, float max, float& sumExp, float& sumExpX, float* expOut);
float rowMaxAvx2(const float* x, size_t n, bool& finite, bool& noNanOrPosInf);
float rowExpScaledChunkAvx2(const float* x, size_t n, float max, float scale, float* out);
void rowSoftmaxGradAvx2(const float* x, size_t n, float lse, float a, float b, float* out);

/** The first j with x[j] == v, or n. */
size_t rowFindFirst(const float* x, size_t n, float v);
size_t rowFindFirstAvx2(const float* x, size_t n, float v);

float rowMaxAvx512(const float* x, size_t n, bool& finite, bool& noNanOrPosInf);
void rowChunkStatsAvx512(const float* x, size_t n, float max, float& sumExp, float& sumExpX, float* expOut);
float rowExpScaledChunkAvx512(const float* x, size_t n, float max, float scale, float* out);
void rowScaleGradAvx512(const float* e, const float* x, size_t n, float invSum, float a, float b, float lse,
                        float* out);
void rowSoftmaxGradAvx512(const float* x, size_t n, float lse, float a, float b, float* out);

/** exp(x) for x <= 0, 0 below -87: the polynomial both paths use (relative error < 2e-7). */
float expNonPositive(float x);

}  // namespace swerl

// The sampler's draw: an exponential race (the Gumbel-max trick) keyed by (seed, position,
// vocabulary index), as vLLM draws q ~ Exp(1) per token and takes argmax p / q.
//
// Token j's key is a counter-based hash of (row key, j), where the row key comes from (seed,
// position). The hash gives v_j = 1 − u_j in (0, 1] (24 bits), E_j = −log(u_j) = −log1p(−v_j)
// ~ Exp(1), and the score s_j = y_j / T − log(E_j) (the logit plus Gumbel noise).
// The winner is the kept token with the largest score (the lowest index on an exact tie). So a
// row's token depends only on its own logits, params, seed and position, and filtering a token
// that would not have won never changes the winner.
//
// Scores are exact (f64, scalar), but only for candidates. s_j ≥ best needs
// v_j ≤ E_j ≤ exp(y_j/T − best) = e_j · exp(ref/T − best), with e_j = exp((y_j − ref)/T) from the
// row passes, so the vector scan tests v_j ≤ e_j · c with c that bound widened by 2^-10 (it covers
// the f32 exp's error many times over) and skips the hash when e_j · c < 2^-24 ≤ v_j. The test is
// conservative: the winner is always scored, so the result does not depend on the SIMD level, on
// how a row is split over threads, or on the order candidates are met.
#pragma once

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "common/host_device.h"

namespace swerl {

struct RaceKey {
  uint32_t a, b;
};

/** The key of the draw at (seed, position). */
RaceKey raceKey(uint64_t seed, int64_t position);

// raceMix, raceV and raceScoreOf are the CUDA sampler's too (kernels/cuda/sampler.cu): one copy.

/** A bijective 32-bit mixer (Wellons' lowbias32). */
SWERL_HOST_DEVICE static inline uint32_t raceMix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

/** 1 − u_j for token j: a multiple of 2^-24 in (0, 1]. */
SWERL_HOST_DEVICE static inline float raceV(RaceKey k, uint32_t j) {
  const uint32_t bits = raceMix(raceMix(j + k.a) ^ k.b);
  return static_cast<float>((bits >> 8) + 1) * 0x1p-24f;
}

/** The score y_j / T − log(E_j) from v = raceV(...) (v = 1: E = +Inf, score −Inf: never wins). */
SWERL_HOST_DEVICE static inline double raceScoreOf(double yScaled, double v) { return yScaled - ::log(-::log1p(-v)); }

/** The exact score of token j with scaled logit yScaled = y_j / T. */
double raceScore(double yScaled, RaceKey k, uint32_t j);

/** The leader of a span: its best score and index (−1: none yet). */
struct RaceWinner {
  double score = -__builtin_inf();
  int64_t index = -1;
  /** Whether (score, index) beats this: a larger score, or the same score at a lower index. */
  bool beatenBy(double s, int64_t j) const { return s > score || (s == score && index >= 0 && j < index); }
  void merge(const RaceWinner& o) {
    if (o.index >= 0 && beatenBy(o.score, o.index)) *this = o;
  }
};

/**
 * The best score known for the whole row, shared by the threads racing its spans: a lower
 * bound on the winner's score, so each span skips what cannot beat it.
 */
struct RaceBound {
  std::atomic<double> best{-__builtin_inf()};
  void raise(double s);
};

/** Which tokens are kept: y_j > thr, or y_j == thr and j ≤ lastTie. */
struct RaceFilter {
  float thr = -__builtin_inff();
  int64_t lastTie = INT64_MAX;
};

/**
 * Races the tokens j in [0, n) of a span that starts at vocabulary index base: y the logits,
 * e_j ≈ exp((y_j − ref) · invT) (0 for tokens that cannot win), ref ≥ every kept y_j. The span's
 * leader goes to `winner` (merged with what it held); bound is raised as leaders are found.
 */
void raceSpan(const float* y, const float* e, size_t n, uint32_t base, float ref, float invT, const RaceFilter& filter,
              RaceKey key, RaceBound& bound, RaceWinner& winner);

/**
 * The first j in [begin, n) with y_j ≥ thr (y may be null: no filter) and v_{base+j} ≤ e_j · c,
 * or n: the candidates of raceSpan. Portable, AVX2 and AVX-512 versions agree exactly.
 */
size_t raceNextCandidate(const float* y, const float* e, float thr, size_t begin, size_t n, float c, RaceKey key,
                         uint32_t base);
size_t raceNextCandidateAvx2(const float* y, const float* e, float thr, size_t begin, size_t n, float c, RaceKey key,
                             uint32_t base);
size_t raceNextCandidateAvx512(const float* y, const float* e, float thr, size_t begin, size_t n, float c, RaceKey key,
                               uint32_t base);

}  // namespace swerl

// The exponential race (see race.h): keys, exact scores, the span driver and the portable scan.
#include "kernels/cpu/race.h"

#include <cmath>
#include <limits>

#include "common/cpu_features.h"

namespace swerl {

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The widening of the candidate bound (race.h): far above the f32 exp's relative error (~2e-5
// at the bottom of its range), far below anything that would make most tokens candidates.
constexpr double kBoundSlack = 1.0 + 0x1p-10;

}  // namespace

RaceKey raceKey(uint64_t seed, int64_t position) {
  const uint64_t h = splitmix64(splitmix64(seed) ^ (static_cast<uint64_t>(position) * 0xd6e8feb86659fd93ull));
  return RaceKey{static_cast<uint32_t>(h), static_cast<uint32_t>(h >> 32)};
}

double raceScore(double yScaled, RaceKey k, uint32_t j) { return raceScoreOf(yScaled, raceV(k, j)); }

void RaceBound::raise(double s) {
  double cur = best.load(std::memory_order_relaxed);
  while (s > cur && !best.compare_exchange_weak(cur, s, std::memory_order_relaxed)) {
  }
}

size_t raceNextCandidate(const float* y, const float* e, float thr, size_t begin, size_t n, float c, RaceKey key,
                         uint32_t base) {
  if (hasAvx512()) return raceNextCandidateAvx512(y, e, thr, begin, n, c, key, base);
  if (hasAvx2()) return raceNextCandidateAvx2(y, e, thr, begin, n, c, key, base);
  for (size_t j = begin; j < n; ++j) {
    const float w = e[j] * c;
    if (!(w >= 0x1p-24f) || (y && !(y[j] >= thr))) continue;
    if (raceV(key, base + static_cast<uint32_t>(j)) <= w) return j;
  }
  return n;
}

void raceSpan(const float* y, const float* e, size_t n, uint32_t base, float ref, float invT, const RaceFilter& filter,
              RaceKey key, RaceBound& bound, RaceWinner& winner) {
  const double refScaled = static_cast<double>(ref) * invT;
  const bool filtered = filter.thr > -std::numeric_limits<float>::infinity();
  // c = exp(ref/T − best) widened; +Inf (everything with e > 0 a candidate) until a leader exists.
  auto boundFactor = [&] {
    const double best = std::max(bound.best.load(std::memory_order_relaxed), winner.score);
    const double c = std::exp(refScaled - best) * kBoundSlack;
    return c < std::numeric_limits<float>::max() ? static_cast<float>(c) : std::numeric_limits<float>::infinity();
  };
  float c = boundFactor();
  for (size_t j = 0; (j = raceNextCandidate(filtered ? y : nullptr, e, filter.thr, j, n, c, key, base)) < n; ++j) {
    const int64_t index = static_cast<int64_t>(base) + static_cast<int64_t>(j);
    if (filtered && y[j] == filter.thr && index > filter.lastTie) continue;
    const double s = raceScore(static_cast<double>(y[j]) * invT, key, static_cast<uint32_t>(index));
    if (winner.index < 0 || winner.beatenBy(s, index)) {
      winner.score = s;
      winner.index = index;
      bound.raise(s);
    }
    c = boundFactor();  // another thread may have raised the bound too
  }
}

}  // namespace swerl

// AdamW and gradient-norm clipping (see adamw.h). Multi-threaded over blocks of the arena;
// every element's update is independent, and the norm's block partials are summed in order.
#include "train/adamw.h"

#include <cmath>
#include <vector>

#include "common/thread_pool.h"

namespace swerl {

namespace {
constexpr size_t kBlock = 1 << 16;
}

double globalNorm(const float* g, size_t n) {
  const size_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> part(blocks);
  parallelFor(blocks, kBlock, kBlock * 4, [&](size_t b) {
    double s = 0;
    for (size_t i = b * kBlock, e = std::min(n, i + kBlock); i < e; ++i) s += static_cast<double>(g[i]) * g[i];
    part[b] = s;
  });
  double total = 0;
  for (double p : part) total += p;
  return std::sqrt(total);
}

void scaleInPlace(float* g, size_t n, float s) {
  parallelFor((n + kBlock - 1) / kBlock, kBlock, kBlock * 4, [&](size_t b) {
    for (size_t i = b * kBlock, e = std::min(n, i + kBlock); i < e; ++i) g[i] *= s;
  });
}

void adamwUpdate(float* w, const float* g, float* m, float* v, size_t n, const AdamWConfig& c, int64_t step,
                 bool decay) {
  const double bc1 = 1 - std::pow(c.beta1, static_cast<double>(step));
  const double bc2 = 1 - std::pow(c.beta2, static_cast<double>(step));
  const float stepSize = static_cast<float>(c.lr / bc1), invSqrtBc2 = static_cast<float>(1 / std::sqrt(bc2));
  const float keep = decay ? static_cast<float>(1 - c.lr * c.weightDecay) : 1.0f;
  const float b1 = static_cast<float>(c.beta1), b2 = static_cast<float>(c.beta2), eps = static_cast<float>(c.eps);
  parallelFor((n + kBlock - 1) / kBlock, kBlock, kBlock * 4, [&](size_t b) {
    for (size_t i = b * kBlock, e = std::min(n, i + kBlock); i < e; ++i) {
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      w[i] = w[i] * keep - stepSize * m[i] / (std::sqrt(v[i]) * invSqrtBc2 + eps);
    }
  });
}

}  // namespace swerl

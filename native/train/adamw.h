// AdamW (Loshchilov & Hutter; torch.optim.AdamW's arithmetic) over the model's parameter arena,
// with global-norm gradient clipping (torch.nn.utils.clip_grad_norm_'s rule).
#pragma once

#include <cstddef>
#include <cstdint>

namespace swerl {

struct AdamWConfig {
  double lr = 1e-5, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0.0;
};

/** The L2 norm of g[0, n), reduced in a fixed order (f64 partials per block, summed in order). */
double globalNorm(const float* g, size_t n);

/** g *= s. */
void scaleInPlace(float* g, size_t n, float s);

/**
 * One AdamW step (step ≥ 1 counts this one) on w[0, n) with gradient g and moments m, v:
 * w ← w·(1 − lr·wd) when decay; m ← β1·m + (1 − β1)·g; v ← β2·v + (1 − β2)·g²;
 * w ← w − lr/(1 − β1^step) · m / (sqrt(v)/sqrt(1 − β2^step) + eps).
 */
void adamwUpdate(float* w, const float* g, float* m, float* v, size_t n, const AdamWConfig& cfg, int64_t step,
                 bool decay);

}  // namespace swerl

// The decoder's row kernels (see decoder_kernels.h). Portable C++: these are a few percent of a
// forward pass next to the GEMMs and attention.
#include "kernels/cpu/decoder_kernels.h"

#include <cmath>

#include "common/thread_pool.h"

namespace swerl {

void rmsNorm(const float* x, size_t rows, size_t n, const float* w, float eps, float* out, float* invRms) {
  parallelFor(rows, n, 16384, [&](size_t t) {
    const float* xr = x + t * n;
    double ss = 0;
    for (size_t j = 0; j < n; ++j) ss += static_cast<double>(xr[j]) * xr[j];
    const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
    if (invRms) invRms[t] = inv;
    float* o = out + t * n;
    for (size_t j = 0; j < n; ++j) o[j] = (xr[j] * inv) * w[j];
  });
}

void ropeTables(const int64_t* pos, size_t count, const double* invFreq, size_t half, double attentionFactor,
                float* cosOut, float* sinOut) {
  parallelFor(count, half, 4096, [&](size_t t) {
    for (size_t i = 0; i < half; ++i) {
      const double a = static_cast<double>(pos[t]) * invFreq[i];
      cosOut[t * half + i] = static_cast<float>(std::cos(a) * attentionFactor);
      sinOut[t * half + i] = static_cast<float>(std::sin(a) * attentionFactor);
    }
  });
}

void applyRope(float* x, size_t rows, size_t rowStride, size_t heads, size_t half, const float* cosT,
               const float* sinT) {
  parallelFor(rows, heads * half, 16384, [&](size_t t) {
    const float* c = cosT + t * half;
    const float* s = sinT + t * half;
    for (size_t h = 0; h < heads; ++h) {
      float* v = x + t * rowStride + h * 2 * half;
      for (size_t i = 0; i < half; ++i) {
        const float x1 = v[i], x2 = v[i + half];
        v[i] = x1 * c[i] - x2 * s[i];
        v[i + half] = x2 * c[i] + x1 * s[i];
      }
    }
  });
}

void siluMul(const float* gu, size_t rows, size_t n, float* out) {
  parallelFor(rows, n, 16384, [&](size_t t) {
    const float* g = gu + t * 2 * n;
    const float* u = g + n;
    float* o = out + t * n;
    for (size_t j = 0; j < n; ++j) o[j] = g[j] / (1.0f + std::exp(-g[j])) * u[j];
  });
}

void addBias(float* x, size_t rows, size_t n, const float* bias) {
  for (size_t t = 0; t < rows; ++t)
    for (size_t j = 0; j < n; ++j) x[t * n + j] += bias[j];
}

}  // namespace swerl

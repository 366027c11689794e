// Backward passes of the decoder's row kernels (see decoder_backward.h).
#include "kernels/cpu/decoder_backward.h"

#include <cmath>

#include "common/thread_pool.h"

namespace swerl {

namespace {

// Runs fn(j0, j1) over column ranges of n columns, one range per task.
template <typename Fn>
void forColumns(size_t n, size_t rows, Fn fn) {
  const size_t blocks = (n + 63) / 64;
  parallelFor(blocks, rows * 64, 1 << 15, [&](size_t b) { fn(b * 64, std::min(n, b * 64 + 64)); });
}

}  // namespace

void rmsNormBackward(const float* x, const float* invRms, const float* w, const float* dy, size_t rows, size_t n,
                     float* dx, bool accumulate, float* dw) {
  parallelFor(rows, n, 16384, [&](size_t t) {
    const float* xr = x + t * n;
    const float* g = dy + t * n;
    const double r = invRms[t];
    double dotGx = 0;
    for (size_t j = 0; j < n; ++j) dotGx += static_cast<double>(g[j]) * w[j] * xr[j];
    const double c = r * r * r * dotGx / static_cast<double>(n);
    float* o = dx + t * n;
    for (size_t j = 0; j < n; ++j) {
      const float v = static_cast<float>(r * g[j] * w[j] - c * xr[j]);
      o[j] = accumulate ? o[j] + v : v;
    }
  });
  forColumns(n, rows, [&](size_t j0, size_t j1) {
    for (size_t j = j0; j < j1; ++j) {
      double s = 0;
      for (size_t t = 0; t < rows; ++t) s += static_cast<double>(dy[t * n + j]) * x[t * n + j] * invRms[t];
      dw[j] += static_cast<float>(s);
    }
  });
}

void siluMulBackward(const float* gu, const float* dOut, size_t rows, size_t n, float* dgu) {
  parallelFor(rows, n, 16384, [&](size_t t) {
    const float* g = gu + t * 2 * n;
    const float* u = g + n;
    const float* d = dOut + t * n;
    float* dg = dgu + t * 2 * n;
    float* du = dg + n;
    for (size_t j = 0; j < n; ++j) {
      const float s = 1.0f / (1.0f + std::exp(-g[j]));
      dg[j] = d[j] * u[j] * s * (1.0f + g[j] * (1.0f - s));
      du[j] = d[j] * g[j] * s;
    }
  });
}

void addColumnSums(const float* x, size_t rows, size_t n, float* sums) {
  forColumns(n, rows, [&](size_t j0, size_t j1) {
    for (size_t j = j0; j < j1; ++j) {
      double s = 0;
      for (size_t t = 0; t < rows; ++t) s += x[t * n + j];
      sums[j] += static_cast<float>(s);
    }
  });
}

void embeddingBackward(const int32_t* tokens, const float* dx, size_t rows, size_t n, float* dE) {
  forColumns(n, rows, [&](size_t j0, size_t j1) {
    for (size_t t = 0; t < rows; ++t) {
      float* e = dE + static_cast<size_t>(tokens[t]) * n;
      const float* d = dx + t * n;
      for (size_t j = j0; j < j1; ++j) e[j] += d[j];
    }
  });
}

}  // namespace swerl

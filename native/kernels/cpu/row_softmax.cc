// Row softmax statistics and gradients: portable code and run-time AVX2 dispatch.
#include "kernels/cpu/row_softmax.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "common/cpu_features.h"
#include "common/thread_pool.h"

namespace swerl {

double RowSoftmaxStats::lse() const { return static_cast<double>(max) + std::log(sumExp); }

double RowSoftmaxStats::entropy() const { return std::log(sumExp) - sumExpX / sumExp; }

float expNonPositive(float x) {
  // exp(x) = 2^n · exp(r), x = n·ln2 + r, |r| <= ln2/2; Cephes' expf polynomial for exp(r).
  if (!(x >= -87.0f)) return 0.0f;  // also for −Inf
  const float n = std::nearbyint(x * 1.44269504088896341f);
  const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.0f;
  uint32_t bits;
  std::memcpy(&bits, &y, 4);
  bits += static_cast<uint32_t>(static_cast<int32_t>(n)) << 23;
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

namespace {

float rowMaxScalar(const float* x, size_t n, bool& finite, bool& noNanOrPosInf) {
  float m = -std::numeric_limits<float>::infinity();
  bool ok = true, sane = true;
  for (size_t i = 0; i < n; ++i) {
    ok &= std::isfinite(x[i]);
    sane &= !(x[i] != x[i]) && x[i] != std::numeric_limits<float>::infinity();
    m = x[i] > m ? x[i] : m;
  }
  finite = ok;
  noNanOrPosInf = sane;
  return m;
}

void rowChunkStatsScalar(const float* x, size_t n, float max, float& sumExp, float& sumExpX, float* expOut) {
  float s[8] = {0}, q[8] = {0};  // 8 lanes, like the AVX2 path's accumulators
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) {
      const float d = x[i + l] - max;
      const float e = expNonPositive(d);
      if (expOut) expOut[i + l] = e;
      s[l] += e;
      q[l] += e * (d > -87.0f ? d : -87.0f);  // e is 0 there; keeps −Inf out of the sum
    }
  for (; i < n; ++i) {
    const float d = x[i] - max;
    const float e = expNonPositive(d);
    if (expOut) expOut[i] = e;
    s[0] += e;
    q[0] += e * (d > -87.0f ? d : -87.0f);
  }
  sumExp = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  sumExpX = ((q[0] + q[1]) + (q[2] + q[3])) + ((q[4] + q[5]) + (q[6] + q[7]));
}

void rowSoftmaxGradScalar(const float* x, size_t n, float lse, float a, float b, float* out) {
  for (size_t i = 0; i < n; ++i) {
    const float d = x[i] - lse;
    out[i] = expNonPositive(d > 0 ? 0 : d) * (a + b * d);
  }
}

}  // namespace

namespace {

float rowMax(const float* x, size_t n, bool& finite, bool& sane) {
  if (hasAvx512()) return rowMaxAvx512(x, n, finite, sane);
  return hasAvx2() ? rowMaxAvx2(x, n, finite, sane) : rowMaxScalar(x, n, finite, sane);
}

void chunkStats(const float* x, size_t len, float max, float& s, float& q, float* expOut) {
  if (hasAvx512())
    rowChunkStatsAvx512(x, len, max, s, q, expOut);
  else if (hasAvx2())
    rowChunkStatsAvx2(x, len, max, s, q, expOut);
  else
    rowChunkStatsScalar(x, len, max, s, q, expOut);
}

// Runs fn(chunk) for every kRowChunk chunk of an n-element row, one range of chunks per thread.
template <typename Fn>
void forChunksParallel(size_t n, Fn fn) {
  parallelFor((n + kRowChunk - 1) / kRowChunk, 1, 1, fn);
}

}  // namespace

RowChunkStats rowChunkStats(const float* x, size_t len, float* expOut) {
  RowChunkStats c{};
  bool f = false, sa = false;
  c.max = rowMax(x, len, f, sa);
  c.finite = f;
  c.sane = sa;
  if (sa && c.max > -std::numeric_limits<float>::infinity())
    chunkStats(x, len, c.max, c.s, c.q, expOut);
  else if (expOut)
    std::fill(expOut, expOut + len, 0.0f);
  return c;
}

RowSoftmaxStats rowCombineChunks(const float* x, size_t n, const RowChunkStats* chunks, float* chunkMax) {
  const size_t numChunks = (n + kRowChunk - 1) / kRowChunk;
  RowSoftmaxStats st{};
  st.max = -std::numeric_limits<float>::infinity();
  bool finite = true, sane = true;
  for (size_t k = 0; k < numChunks; ++k) {
    st.max = chunks[k].max > st.max ? chunks[k].max : st.max;
    finite &= chunks[k].finite;
    sane &= chunks[k].sane;
  }
  st.finite = finite;
  st.valid = n > 0 && sane && st.max > -std::numeric_limits<float>::infinity();
  for (size_t k = 0; k < numChunks; ++k) {
    const RowChunkStats& c = chunks[k];
    if (chunkMax) chunkMax[k] = c.max;
    if (!st.valid || !(c.max > -std::numeric_limits<float>::infinity())) continue;
    // Σ e^(x−M)(x−M) = f·(q_c + s_c·(m_c − M)) with f = e^(m_c − M).
    const double shift = static_cast<double>(c.max) - st.max, f = std::exp(shift);
    st.sumExp += f * c.s;
    st.sumExpX += f * (c.q + c.s * shift);
  }
  if (st.valid) {
    size_t k = 0;
    while (chunks[k].max != st.max) ++k;
    const size_t off = k * kRowChunk;
    st.argmax = off + rowFindFirst(x + off, std::min(kRowChunk, n - off), st.max);
  }
  return st;
}

RowSoftmaxStats rowSoftmaxStatsParallel(const float* x, size_t n, float* expOut, float* chunkMax) {
  std::vector<RowChunkStats> chunks((n + kRowChunk - 1) / kRowChunk);
  forChunksParallel(n, [&](size_t c) {
    const size_t off = c * kRowChunk;
    chunks[c] = rowChunkStats(x + off, std::min(kRowChunk, n - off), expOut ? expOut + off : nullptr);
  });
  return rowCombineChunks(x, n, chunks.data(), chunkMax);
}

double rowExpScaledParallel(const float* x, size_t n, float max, float scale, float* out, double* chunkSums) {
  const size_t chunks = (n + kRowChunk - 1) / kRowChunk;
  std::vector<double> parts(chunks);
  forChunksParallel(n, [&](size_t c) {
    const size_t off = c * kRowChunk;
    parts[c] = rowExpScaled(x + off, std::min(kRowChunk, n - off), max, scale, out + off);
  });
  double sum = 0;
  for (size_t c = 0; c < chunks; ++c) {
    sum += parts[c];
    if (chunkSums) chunkSums[c] = parts[c];
  }
  return sum;
}

RowSoftmaxStats rowSoftmaxStats(const float* x, size_t n, float* expOut, float* chunkMax) {
  thread_local std::vector<RowChunkStats> chunks;
  chunks.resize((n + kRowChunk - 1) / kRowChunk);
  for (size_t c = 0; c < chunks.size(); ++c) {
    const size_t off = c * kRowChunk;
    chunks[c] = rowChunkStats(x + off, std::min(kRowChunk, n - off), expOut ? expOut + off : nullptr);
  }
  return rowCombineChunks(x, n, chunks.data(), chunkMax);
}

size_t rowFindFirst(const float* x, size_t n, float v) {
  if (hasAvx2()) return rowFindFirstAvx2(x, n, v);
  for (size_t i = 0; i < n; ++i)
    if (x[i] == v) return i;
  return n;
}

double rowExpScaled(const float* x, size_t n, float max, float scale, float* out, double* chunkSums) {
  const bool avx2 = hasAvx2(), avx512 = hasAvx512();
  double sum = 0;
  for (size_t c = 0; c < n; c += kRowChunk) {
    const size_t len = n - c < kRowChunk ? n - c : kRowChunk;
    if (avx2) {
      const double part = avx512 ? rowExpScaledChunkAvx512(x + c, len, max, scale, out + c)
                                 : rowExpScaledChunkAvx2(x + c, len, max, scale, out + c);
      sum += part;
      if (chunkSums) chunkSums[c / kRowChunk] = part;
    } else {
      float s[8] = {0};
      for (size_t i = 0; i < len; ++i) {
        const float e = expNonPositive((x[c + i] - max) * scale);
        out[c + i] = e;
        s[i % 8] += e;
      }
      const double part = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
      sum += part;
      if (chunkSums) chunkSums[c / kRowChunk] = part;
    }
  }
  return sum;
}

void rowScaleGrad(const float* e, const float* x, size_t n, float invSum, float a, float b, float lse, float* out) {
  if (hasAvx512()) return rowScaleGradAvx512(e, x, n, invSum, a, b, lse, out);
  if (hasAvx2()) return rowScaleGradAvx2(e, x, n, invSum, a, b, lse, out);
  if (x == nullptr) {
    const float k = invSum * a;
    for (size_t i = 0; i < n; ++i) out[i] = e[i] * k;
    return;
  }
  for (size_t i = 0; i < n; ++i) out[i] = e[i] * invSum * (a + b * (x[i] - lse));
}

void rowSoftmaxGrad(const float* x, size_t n, double lse, float a, float b, float* out) {
  if (hasAvx512())
    rowSoftmaxGradAvx512(x, n, static_cast<float>(lse), a, b, out);
  else if (hasAvx2())
    rowSoftmaxGradAvx2(x, n, static_cast<float>(lse), a, b, out);
  else
    rowSoftmaxGradScalar(x, n, static_cast<float>(lse), a, b, out);
}

}  // namespace swerl

// Causal attention with an online softmax over key tiles (see attention.h).
//
// Per (query, head): for each tile of kAttnTile positions (tiles start at multiples of the tile,
// so a position's tile never depends on how many queries the call has), scores s_p = scale·q·k_p
// (8-lane dot products, fixed reduction), then m' = max(m, max s), acc = acc·e^(m − m') +
// Σ e^(s_p − m')·v_p, l likewise; out = acc / l.
#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "common/thread_pool.h"

namespace swerl {

namespace {

float dot(const float* a, const float* b, size_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (size_t l = 0; l < 8; ++l) acc[l] += a[i + l] * b[i + l];
  for (; i < n; ++i) acc[0] += a[i] * b[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

void attendOne(const float* q, size_t last, const KvRows& k, const KvRows& v, size_t kvOffset, size_t hd, float scale,
               float* acc, float* out) {
  float m = -std::numeric_limits<float>::infinity();
  float l = 0;
  std::fill(acc, acc + hd, 0.0f);
  float s[kAttnTile];
  for (size_t p0 = 0; p0 <= last; p0 += kAttnTile) {
    const size_t n = std::min(kAttnTile, last + 1 - p0);
    float tileMax = -std::numeric_limits<float>::infinity();
    for (size_t i = 0; i < n; ++i) {
      s[i] = dot(q, k.row(p0 + i) + kvOffset, hd) * scale;
      tileMax = std::max(tileMax, s[i]);
    }
    const float m2 = std::max(m, tileMax);
    const float r = std::exp(m - m2);  // 0 on the first tile (m = −Inf)
    l *= r;
    for (size_t d = 0; d < hd; ++d) acc[d] *= r;
    for (size_t i = 0; i < n; ++i) {
      const float e = std::exp(s[i] - m2);
      l += e;
      const float* vr = v.row(p0 + i) + kvOffset;
      for (size_t d = 0; d < hd; ++d) acc[d] += e * vr[d];
    }
    m = m2;
  }
  const float inv = 1.0f / l;
  for (size_t d = 0; d < hd; ++d) out[d] = acc[d] * inv;
}

}  // namespace

void causalAttention(const float* q, size_t qStride, const int64_t* pos, size_t T, const KvRows* k, const KvRows* v,
                     const int32_t* seq, const AttentionShape& shape, float* out) {
  const size_t hd = shape.headDim, group = shape.heads / shape.kvHeads;
  const size_t items = T * shape.heads;
  // Work per item grows with the query's position; the mean is enough to size the tasks.
  const size_t meanKeys = T ? static_cast<size_t>(pos[T / 2]) + 1 : 1;
  parallelFor(items, meanKeys * hd * 2, 1 << 15, [&](size_t item) {
    thread_local std::vector<float> acc;
    acc.resize(hd);
    const size_t t = item / shape.heads, h = item % shape.heads;
    const size_t s = seq ? static_cast<size_t>(seq[t]) : 0;
    attendOne(q + t * qStride + h * hd, static_cast<size_t>(pos[t]), k[s], v[s], (h / group) * hd, hd, shape.scale,
              acc.data(), out + (t * shape.heads + h) * hd);
  });
}

}  // namespace swerl

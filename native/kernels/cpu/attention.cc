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

float attendOne(const float* q, size_t last, const KvRows& k, const KvRows& v, size_t kvOffset, size_t hd, float scale,
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
  return m + std::log(l);
}

}  // namespace

void causalAttention(const float* q, size_t qStride, const int64_t* pos, size_t T, const KvRows* k, const KvRows* v,
                     const int32_t* seq, const AttentionShape& shape, float* out, float* lse) {
  const size_t hd = shape.headDim, group = shape.heads / shape.kvHeads;
  const size_t items = T * shape.heads;
  // Work per item grows with the query's position; the mean is enough to size the tasks.
  const size_t meanKeys = T ? static_cast<size_t>(pos[T / 2]) + 1 : 1;
  parallelFor(items, meanKeys * hd * 2, 1 << 15, [&](size_t item) {
    thread_local std::vector<float> acc;
    acc.resize(hd);
    const size_t t = item / shape.heads, h = item % shape.heads;
    const size_t s = seq ? static_cast<size_t>(seq[t]) : 0;
    const float l = attendOne(q + t * qStride + h * hd, static_cast<size_t>(pos[t]), k[s], v[s], (h / group) * hd, hd,
                              shape.scale, acc.data(), out + (t * shape.heads + h) * hd);
    if (lse) lse[t * shape.heads + h] = l;
  });
}

void causalAttentionBackward(const float* qkv, size_t qkvStride, size_t kOffset, size_t vOffset, size_t T,
                             const float* o, const float* lse, const float* dO, const AttentionShape& shape,
                             float* dqkv) {
  const size_t hd = shape.headDim, H = shape.heads, G = shape.kvHeads, group = H / G;
  const float scale = shape.scale;
  // D[t, h] = dO · o, the softmax backward's row term.
  std::vector<float> D(T * H);
  parallelFor(T * H, hd, 1 << 14, [&](size_t i) { D[i] = dot(dO + i * hd, o + i * hd, hd); });
  auto q = [&](size_t t, size_t h) { return qkv + t * qkvStride + h * hd; };
  auto k = [&](size_t p, size_t g) { return qkv + p * qkvStride + kOffset + g * hd; };
  auto v = [&](size_t p, size_t g) { return qkv + p * qkvStride + vOffset + g * hd; };
  // dq[t, h] = scale Σ_{p ≤ t} dS_tp k_p, with dS_tp = P_tp (dO_t·v_p − D_t).
  parallelFor(T * H, (T / 2 + 1) * hd * 3, 1 << 15, [&](size_t item) {
    const size_t t = item / H, h = item % H, g = h / group;
    const float* dOt = dO + item * hd;
    float* dq = dqkv + t * qkvStride + h * hd;
    std::fill(dq, dq + hd, 0.0f);
    for (size_t p = 0; p <= t; ++p) {
      const float P = std::exp(dot(q(t, h), k(p, g), hd) * scale - lse[item]);
      const float dS = P * (dot(dOt, v(p, g), hd) - D[item]) * scale;
      const float* kp = k(p, g);
      for (size_t d = 0; d < hd; ++d) dq[d] += dS * kp[d];
    }
  });
  // dk[p, g] = scale Σ_{t ≥ p, h ∈ g} dS_tp q_t;  dv[p, g] = Σ_{t ≥ p, h ∈ g} P_tp dO_t.
  parallelFor(T * G, (T / 2 + 1) * hd * 4 * group, 1 << 15, [&](size_t item) {
    const size_t p = item / G, g = item % G;
    float* dk = dqkv + p * qkvStride + kOffset + g * hd;
    float* dv = dqkv + p * qkvStride + vOffset + g * hd;
    std::fill(dk, dk + hd, 0.0f);
    std::fill(dv, dv + hd, 0.0f);
    for (size_t t = p; t < T; ++t)
      for (size_t h = g * group; h < (g + 1) * group; ++h) {
        const size_t i = t * H + h;
        const float* dOt = dO + i * hd;
        const float P = std::exp(dot(q(t, h), k(p, g), hd) * scale - lse[i]);
        const float dS = P * (dot(dOt, v(p, g), hd) - D[i]) * scale;
        const float* qt = q(t, h);
        for (size_t d = 0; d < hd; ++d) {
          dk[d] += dS * qt[d];
          dv[d] += P * dOt[d];
        }
      }
  });
}

}  // namespace swerl

// Causal attention with an online softmax over key tiles (see attention.h).
//
// Per (query, head): for each tile of kAttnTile positions (tiles start at multiples of the tile,
// so a position's tile never depends on how many queries the call has), scores s_p = scale·q·k_p
// (the SIMD level's dot product, fixed reduction), then m' = max(m, max s), acc = acc·e^(m − m') +
// Σ e^(s_p − m')·v_p, l likewise; out = acc / l.
#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "common/cpu_features.h"
#include "common/error.h"
#include "common/thread_pool.h"
#include "kernels/cpu/attention_simd.h"
#include "kernels/cpu/row_softmax.h"

namespace swerl {

namespace {

float dotPortable(const float* a, const float* b, size_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (size_t l = 0; l < 8; ++l) acc[l] += a[i + l] * b[i + l];
  for (; i < n; ++i) acc[0] += a[i] * b[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

void axpyPortable(float* y, float a, const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void scalePortable(float* y, float a, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] *= a;
}

void tileDotsPortable(const float* q, const float* const* rows, size_t n, size_t hd, float* s) {
  for (size_t i = 0; i < n; ++i) s[i] = dotPortable(q, rows[i], hd);
}

void tileAxpyPortable(float* acc, const float* e, const float* const* rows, size_t n, size_t hd) {
  for (size_t i = 0; i < n; ++i) axpyPortable(acc, e[i], rows[i], hd);
}

// The row-softmax exp kernels of each level (row_softmax.h) on one tile.
float tileExpPortable(const float* s, size_t n, float max, float* e) {
  float sum = 0;
  for (size_t i = 0; i < n; ++i) sum += (e[i] = expNonPositive(s[i] - max));
  return sum;
}
float tileExpAvx2(const float* s, size_t n, float max, float* e) { return rowExpScaledChunkAvx2(s, n, max, 1.0f, e); }
float tileExpAvx512(const float* s, size_t n, float max, float* e) {
  return rowExpScaledChunkAvx512(s, n, max, 1.0f, e);
}

// The rows of positions p0 .. p0+n−1: one block lookup per block, not per position.
void tileRows(const KvRows& r, size_t p0, size_t n, size_t offset, const float** out) {
  if (!r.blockTable) {
    for (size_t i = 0; i < n; ++i) out[i] = r.base + (p0 + i) * r.rowStride + offset;
    return;
  }
  size_t block = p0 / r.blockSize, at = p0 % r.blockSize;
  const float* row = r.base + static_cast<size_t>(r.blockTable[block]) * r.blockStride + at * r.rowStride + offset;
  for (size_t i = 0; i < n; ++i) {
    out[i] = row;
    if (++at == r.blockSize) {
      at = 0;
      ++block;
      if (i + 1 < n) row = r.base + static_cast<size_t>(r.blockTable[block]) * r.blockStride + offset;
    } else {
      row += r.rowStride;
    }
  }
}

// One query's heads of one KV group (the heads sharing a K/V row), reading each tile of K and V
// once for all of them. Per head the arithmetic is that of a head alone: tiles in order, the
// online softmax state (m, l, acc) its own.
// Queries attended together: they read each K/V tile once (from cache after the first), where
// one query per task re-read every tile from memory for every query.
constexpr size_t kQueryBlock = 8;

// Queries t0 .. t0+nq−1 (one sequence) × the `heads` heads of one KV group. Per (query, head) the
// tiles, the scores and the softmax update are exactly those of attending it alone: blocking
// changes only the loop order, so results do not depend on which queries share a block.
void attendBlock(const AttentionOps& ops, const float* q, size_t qStride, const int64_t* pos, size_t t0, size_t nq,
                 size_t h0, size_t heads, size_t allHeads, const KvRows& k, const KvRows& v, size_t kvOffset, size_t hd,
                 float scale, float* acc, float* out, float* lse) {
  constexpr size_t kMax = 64 * kQueryBlock;
  float m[kMax], l[kMax];
  const size_t pairs = nq * heads;
  size_t lastMax = 0;
  for (size_t i = 0; i < nq; ++i) lastMax = std::max(lastMax, static_cast<size_t>(pos[t0 + i]));
  for (size_t j = 0; j < pairs; ++j) {
    m[j] = -std::numeric_limits<float>::infinity();
    l[j] = 0;
  }
  std::fill(acc, acc + pairs * hd, 0.0f);
  float s[kAttnTile], e[kAttnTile];
  const float* kr[kAttnTile];
  const float* vr[kAttnTile];
  for (size_t p0 = 0; p0 <= lastMax; p0 += kAttnTile) {
    const size_t nAll = std::min(kAttnTile, lastMax + 1 - p0);
    tileRows(k, p0, nAll, kvOffset, kr);
    tileRows(v, p0, nAll, kvOffset, vr);
    for (size_t i = 0; i < nq; ++i) {
      const size_t last = static_cast<size_t>(pos[t0 + i]);
      if (p0 > last) continue;
      const size_t n = std::min(kAttnTile, last + 1 - p0);
      const float* qi = q + (t0 + i) * qStride + h0 * hd;
      for (size_t h = 0; h < heads; ++h) {
        const size_t j = i * heads + h;
        ops.tileDots(qi + h * hd, kr, n, hd, s);
        float tileMax = -std::numeric_limits<float>::infinity();
        for (size_t x = 0; x < n; ++x) {
          s[x] *= scale;
          tileMax = std::max(tileMax, s[x]);
        }
        const float m2 = std::max(m[j], tileMax);
        const float r = std::exp(m[j] - m2);  // 0 on the first tile (m = −Inf)
        l[j] *= r;
        ops.scale(acc + j * hd, r, hd);
        l[j] += ops.tileExp(s, n, m2, e);
        ops.tileAxpy(acc + j * hd, e, vr, n, hd);
        m[j] = m2;
      }
    }
  }
  for (size_t i = 0; i < nq; ++i)
    for (size_t h = 0; h < heads; ++h) {
      const size_t j = i * heads + h;
      const float inv = 1.0f / l[j];
      float* o = out + ((t0 + i) * allHeads + h0 + h) * hd;
      for (size_t d = 0; d < hd; ++d) o[d] = acc[j * hd + d] * inv;
      if (lse) lse[(t0 + i) * allHeads + h0 + h] = m[j] + std::log(l[j]);
    }
}

}  // namespace

const AttentionOps& attentionOps() {
  static const AttentionOps avx512{attnDotAvx512,      attnAxpyAvx512,     attnScaleAvx512,
                                   attnTileDotsAvx512, attnTileAxpyAvx512, tileExpAvx512};
  static const AttentionOps avx2{attnDotAvx2,      attnAxpyAvx2,     attnScaleAvx2,
                                 attnTileDotsAvx2, attnTileAxpyAvx2, tileExpAvx2};
  static const AttentionOps portable{dotPortable,      axpyPortable,     scalePortable,
                                     tileDotsPortable, tileAxpyPortable, tileExpPortable};
  return hasAvx512() ? avx512 : hasAvx2() ? avx2 : portable;
}

void causalAttention(const float* q, size_t qStride, const int64_t* pos, size_t T, const KvRows* k, const KvRows* v,
                     const int32_t* seq, const AttentionShape& shape, float* out, float* lse) {
  const size_t hd = shape.headDim, group = shape.heads / shape.kvHeads;
  SWERL_ASSERT(group <= 64);
  // Blocks of up to kQueryBlock consecutive queries of one sequence.
  std::vector<size_t> starts;
  for (size_t t = 0; t < T; ++t)
    if (starts.empty() || t - starts.back() == kQueryBlock || (seq && seq[t] != seq[starts.back()]))
      starts.push_back(t);
  starts.push_back(T);
  const size_t blocks = starts.size() - 1;
  const size_t items = blocks * shape.kvHeads;  // (query block, KV group)
  const AttentionOps& ops = attentionOps();
  // Work per item grows with the queries' positions; the mean is enough to size the tasks.
  const size_t meanKeys = T ? static_cast<size_t>(pos[T / 2]) + 1 : 1;
  parallelFor(items, meanKeys * hd * 2 * group * std::min(T, kQueryBlock), 1 << 15, [&](size_t item) {
    thread_local std::vector<float> acc;
    acc.resize(kQueryBlock * group * hd);
    const size_t b = item / shape.kvHeads, g = item % shape.kvHeads;
    const size_t t0 = starts[b], nq = starts[b + 1] - t0;
    const size_t s = seq ? static_cast<size_t>(seq[t0]) : 0;
    attendBlock(ops, q, qStride, pos, t0, nq, g * group, group, shape.heads, k[s], v[s], g * hd, hd, shape.scale,
                acc.data(), out, lse);
  });
}

void causalAttentionBackward(const float* qkv, size_t qkvStride, size_t kOffset, size_t vOffset, size_t T,
                             const float* o, const float* lse, const float* dO, const AttentionShape& shape,
                             float* dqkv) {
  const size_t hd = shape.headDim, H = shape.heads, G = shape.kvHeads, group = H / G;
  const float scale = shape.scale;
  // D[t, h] = dO · o, the softmax backward's row term.
  const AttentionOps& ops = attentionOps();
  std::vector<float> D(T * H);
  parallelFor(T * H, hd, 1 << 14, [&](size_t i) { D[i] = ops.dot(dO + i * hd, o + i * hd, hd); });
  auto q = [&](size_t t, size_t h) { return qkv + t * qkvStride + h * hd; };
  auto k = [&](size_t p, size_t g) { return qkv + p * qkvStride + kOffset + g * hd; };
  auto v = [&](size_t p, size_t g) { return qkv + p * qkvStride + vOffset + g * hd; };
  // Both passes go in tiles of kAttnTile rows: the tile's dot products, one exp pass over the
  // tile (arguments ≤ 0: s·scale − lse never exceeds 0 up to rounding, clamped), one tiled axpy.
  auto expTile = [&](float* x, size_t n, float* out) {
    for (size_t i = 0; i < n; ++i) x[i] = std::min(x[i], 0.0f);
    ops.tileExp(x, n, 0.0f, out);
  };
  // dq[t, h] = scale Σ_{p ≤ t} dS_tp k_p, with dS_tp = P_tp (dO_t·v_p − D_t).
  parallelFor(T * H, (T / 2 + 1) * hd * 3, 1 << 15, [&](size_t item) {
    const size_t t = item / H, h = item % H, g = h / group;
    const float* dOt = dO + item * hd;
    float* dq = dqkv + t * qkvStride + h * hd;
    std::fill(dq, dq + hd, 0.0f);
    float x[kAttnTile], P[kAttnTile], dP[kAttnTile];
    const float* kr[kAttnTile];
    const float* vr[kAttnTile];
    for (size_t p0 = 0; p0 <= t; p0 += kAttnTile) {
      const size_t n = std::min(kAttnTile, t + 1 - p0);
      for (size_t i = 0; i < n; ++i) {
        kr[i] = k(p0 + i, g);
        vr[i] = v(p0 + i, g);
      }
      ops.tileDots(q(t, h), kr, n, hd, x);
      ops.tileDots(dOt, vr, n, hd, dP);
      for (size_t i = 0; i < n; ++i) x[i] = x[i] * scale - lse[item];
      expTile(x, n, P);
      for (size_t i = 0; i < n; ++i) P[i] = P[i] * (dP[i] - D[item]) * scale;  // dS
      ops.tileAxpy(dq, P, kr, n, hd);
    }
  });
  // dk[p, g] = scale Σ_{t ≥ p, h ∈ g} dS_tp q_t;  dv[p, g] = Σ_{t ≥ p, h ∈ g} P_tp dO_t.
  parallelFor(T * G, (T / 2 + 1) * hd * 4 * group, 1 << 15, [&](size_t item) {
    const size_t p = item / G, g = item % G;
    float* dk = dqkv + p * qkvStride + kOffset + g * hd;
    float* dv = dqkv + p * qkvStride + vOffset + g * hd;
    std::fill(dk, dk + hd, 0.0f);
    std::fill(dv, dv + hd, 0.0f);
    float x[kAttnTile], P[kAttnTile], dS[kAttnTile];
    const float* qr[kAttnTile];
    const float* dr[kAttnTile];
    for (size_t h = g * group; h < (g + 1) * group; ++h)
      for (size_t t0 = p; t0 < T; t0 += kAttnTile) {
        const size_t n = std::min(kAttnTile, T - t0);
        for (size_t i = 0; i < n; ++i) {
          qr[i] = q(t0 + i, h);
          dr[i] = dO + ((t0 + i) * H + h) * hd;
        }
        ops.tileDots(k(p, g), qr, n, hd, x);
        ops.tileDots(v(p, g), dr, n, hd, dS);
        for (size_t i = 0; i < n; ++i) x[i] = x[i] * scale - lse[(t0 + i) * H + h];
        expTile(x, n, P);
        for (size_t i = 0; i < n; ++i) dS[i] = P[i] * (dS[i] - D[(t0 + i) * H + h]) * scale;
        ops.tileAxpy(dk, dS, qr, n, hd);
        ops.tileAxpy(dv, P, dr, n, hd);
      }
  });
}

void attentionScores(const float* q, const float* keys, size_t n, size_t headDim, bool perRow, float* out) {
  const AttentionOps& ops = attentionOps();
  const float* rows[kAttnTile];
  for (size_t p0 = 0; p0 < n; p0 += kAttnTile) {
    const size_t m = std::min(kAttnTile, n - p0);
    for (size_t i = 0; i < m; ++i) rows[i] = keys + (p0 + i) * headDim;
    if (perRow)
      for (size_t i = 0; i < m; ++i) out[p0 + i] = ops.dot(q, rows[i], headDim);
    else
      ops.tileDots(q, rows, m, headDim, out + p0);
  }
}

}  // namespace swerl

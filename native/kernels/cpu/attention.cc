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
  for (size_t t = 0; t < T; ++t) {
    std::fill(dqkv + t * qkvStride, dqkv + t * qkvStride + H * hd, 0.0f);
    std::fill(dqkv + t * qkvStride + kOffset, dqkv + t * qkvStride + kOffset + G * hd, 0.0f);
    std::fill(dqkv + t * qkvStride + vOffset, dqkv + t * qkvStride + vOffset + G * hd, 0.0f);
  }
  // Tiles of kAttnTile: the tile's dot products, one exp pass over the tile (arguments ≤ 0:
  // s·scale − lse never exceeds 0 up to rounding, clamped), one tiled axpy.
  auto expTile = [&](float* x, size_t n, float* out) {
    for (size_t i = 0; i < n; ++i) x[i] = std::min(x[i], 0.0f);
    ops.tileExp(x, n, 0.0f, out);
  };
  // Per KV group, key block by key block (a block is one tile of keys): pass A takes each (query
  // row, head of the group)'s scores over the block once, P_tp and dS_tp = P_tp (dO_t·v_p −
  // D_t)·scale, adds its dq terms and stores P and dS key-major; pass B adds the block's dk and dv
  // terms from them, several keys per sweep over the query rows so that each row is read once for
  // all of them, the group's heads one after the other. Every sum has a fixed order, whatever the
  // threads: dq[t, h] over p ascending, dk and dv[p, g] over the group's heads in order, then over
  // t ascending.
  constexpr size_t kKeysPerSweep = 4;
  // [head in group][key in block][t − block start]
  std::vector<float> probT(group * kAttnTile * T), gradT(group * kAttnTile * T);
  auto at = [&](size_t hh, size_t j) { return (hh * kAttnTile + j) * T; };
  for (size_t g = 0; g < G; ++g) {
    const size_t h0 = g * group;
    for (size_t p0 = 0; p0 < T; p0 += kAttnTile) {
      const size_t nb = std::min(kAttnTile, T - p0), rows = T - p0;
      const float* kr[kAttnTile];
      const float* vr[kAttnTile];
      for (size_t j = 0; j < nb; ++j) {
        kr[j] = k(p0 + j, g);
        vr[j] = v(p0 + j, g);
      }
      // Pass A: dq[t, h] += Σ_{p in block, p ≤ t} dS_tp k_p.
      parallelFor(rows * group, nb * hd * 3, 1 << 15, [&, p0, nb](size_t it) {
        const size_t r = it / group, hh = it % group, h = h0 + hh;
        const size_t t = p0 + r, item = t * H + h, n = std::min(nb, r + 1);
        float x[kAttnTile], dP[kAttnTile], P[kAttnTile];
        ops.tileDots(q(t, h), kr, n, hd, x);
        ops.tileDots(dO + item * hd, vr, n, hd, dP);
        const float l = lse[item], d = D[item], sc = scale;
        for (size_t j = 0; j < n; ++j) x[j] = x[j] * sc - l;
        expTile(x, n, P);
        for (size_t j = 0; j < n; ++j) {
          dP[j] = P[j] * (dP[j] - d) * sc;  // dS
          probT[at(hh, j) + r] = P[j];
          gradT[at(hh, j) + r] = dP[j];
        }
        ops.tileAxpy(dqkv + t * qkvStride + h * hd, dP, kr, n, hd);
      });
      // Pass B: dk[p, g] += Σ_{h in g} Σ_{t ≥ p} dS_tp q_t;  dv[p, g] += Σ_{h in g} Σ_{t ≥ p} P_tp dO_t.
      const size_t sweeps = (nb + kKeysPerSweep - 1) / kKeysPerSweep;
      parallelFor(sweeps, rows * hd * 2 * kKeysPerSweep * group, 1 << 15, [&, p0, nb, rows](size_t w) {
        const size_t j0 = w * kKeysPerSweep, j1 = std::min(nb, j0 + kKeysPerSweep);
        const float* qr[kAttnTile];
        const float* dr[kAttnTile];
        for (size_t hh = 0; hh < group; ++hh) {  // the group's heads in order
          const size_t h = h0 + hh;
          for (size_t c = 0; c < rows; c += kAttnTile) {  // query rows p0 + c .. p0 + c + n − 1
            const size_t n = std::min(kAttnTile, rows - c);
            for (size_t i = 0; i < n; ++i) {
              qr[i] = q(p0 + c + i, h);
              dr[i] = dO + ((p0 + c + i) * H + h) * hd;
            }
            for (size_t j = j0; j < j1; ++j) {
              const size_t from = j > c ? j - c : 0;  // rows before key p0 + j do not see it
              if (from >= n) continue;
              const size_t p = p0 + j;
              ops.tileAxpy(dqkv + p * qkvStride + kOffset + g * hd, gradT.data() + at(hh, j) + c + from, qr + from,
                           n - from, hd);
              ops.tileAxpy(dqkv + p * qkvStride + vOffset + g * hd, probT.data() + at(hh, j) + c + from, dr + from,
                           n - from, hd);
            }
          }
        }
      });
    }
  }
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

void attentionGradients(const float* qkv, size_t T, const AttentionShape& shape, const float* dO, float* o, float* lse,
                        float* dqkv) {
  const size_t hd = shape.headDim, stride = (shape.heads + 2 * shape.kvHeads) * hd;
  const size_t kOffset = shape.heads * hd, vOffset = (shape.heads + shape.kvHeads) * hd;
  std::vector<int64_t> pos(T);
  for (size_t t = 0; t < T; ++t) pos[t] = static_cast<int64_t>(t);
  const KvRows k{qkv + kOffset, stride}, v{qkv + vOffset, stride};
  causalAttention(qkv, stride, pos.data(), T, &k, &v, nullptr, shape, o, lse);
  causalAttentionBackward(qkv, stride, kOffset, vOffset, T, o, lse, dO, shape, dqkv);
}

}  // namespace swerl

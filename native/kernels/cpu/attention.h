// Causal attention on the CPU, one routine for the dense (training, scoring) and the paged
// (engine) forward: K and V are read through KvRows, a position → row accessor over either a
// contiguous [T, rowStride] array or the paged cache's blocks. A query's output is computed in
// the same order from the same values either way, so dense and paged logits agree bitwise
// (f32 KV). Memory is O(chunk) per query: keys go by in tiles of kAttnTile with an online
// softmax (running max and sum), never a [T, T] score matrix.
#pragma once

#include <cstddef>
#include <cstdint>

namespace swerl {

constexpr size_t kAttnTile = 16;

/** Where position p's K (or V) row for one layer lives: f32 rows of numKvHeads · headDim. */
struct KvRows {
  const float* base;
  size_t rowStride;                       // floats between consecutive positions (within a block)
  const int32_t* blockTable = nullptr;    // paged: position p is in block blockTable[p / blockSize]
  size_t blockSize = 0, blockStride = 0;  // paged: positions per block, floats per block
  const float* row(size_t p) const {
    if (!blockTable) return base + p * rowStride;
    return base + static_cast<size_t>(blockTable[p / blockSize]) * blockStride + (p % blockSize) * rowStride;
  }
};

struct AttentionShape {
  size_t heads, kvHeads, headDim;
  float scale;  // usually 1 / sqrt(headDim)
};

/**
 * For queries t in [0, T) at positions pos[t] (query t attends to positions 0..pos[t]):
 * out[t, h] = Σ_p softmax_p(scale · q[t, h] · k[p, g]) · v[p, g], with g = h / (heads / kvHeads)
 * (GQA). Query t reads K and V through k[seq[t]] and v[seq[t]] (seq null: k[0], v[0] for all).
 * q rows are qStride floats apart, heads headDim apart; out is [T, heads · headDim]. lse, when
 * given, receives each (query, head)'s log Σ exp(scores) at [t · heads + h], for the backward.
 * Multi-threaded over (query, head).
 */
void causalAttention(const float* q, size_t qStride, const int64_t* pos, size_t T, const KvRows* k, const KvRows* v,
                     const int32_t* seq, const AttentionShape& shape, float* out, float* lse = nullptr);

/**
 * The backward of causalAttention for one dense sequence (query t at position t attends to keys
 * 0..t; q, k, v rows qkvStride apart, as the forward's qkv buffer: q at column 0, k at kOffset,
 * v at vOffset). From the forward's output o [T, heads·headDim], its lse and dO, writes dq, dk,
 * dv into the same layout of dqkv (overwritten). Each score and its softmax gradient is computed
 * once from lse and read by dq and by dk, dv: memory O(group·kAttnTile·T) for one key tile's P
 * and dS (group = heads / kvHeads). Multi-threaded over (query row, head of the KV group) for dq
 * and over keys for dk, dv, within a key tile; every sum has a fixed order, so the result does
 * not depend on the thread count.
 */
void causalAttentionBackward(const float* qkv, size_t qkvStride, size_t kOffset, size_t vOffset, size_t T,
                             const float* o, const float* lse, const float* dO, const AttentionShape& shape,
                             float* dqkv);

/**
 * out[i] = q · keys[i] for n rows of headDim floats, as the attention kernels compute a score
 * before scaling: in tiles of kAttnTile rows through the SIMD level's tile routine, or, with
 * perRow, one dot product per row. At the AVX2 level the two agree bitwise (the tile routine
 * keeps the row routine's reduction order); tests compare them, and both against float64.
 */
void attentionScores(const float* q, const float* keys, size_t n, size_t headDim, bool perRow, float* out);

/**
 * causalAttention and causalAttentionBackward on one dense sequence as a decoder layer runs them
 * (qkv rows of (heads + 2·kvHeads)·headDim floats: q, k, v; query t at position t): o
 * [T, heads·headDim], lse [T, heads] and dqkv [T, (heads + 2·kvHeads)·headDim]. For tests.
 */
void attentionGradients(const float* qkv, size_t T, const AttentionShape& shape, const float* dO, float* o, float* lse,
                        float* dqkv);

}  // namespace swerl

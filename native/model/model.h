// A Qwen2 / Llama decoder on the CPU: weights in one f32 arena (param_table.h), a dense forward
// for training and scoring, and a paged forward (chunked prefill and batched decode over the KV
// cache's block tables) for the engine. Both run the same kernels in the same order per token,
// so a token's logits are bitwise equal either way (f32 KV).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kv/kv_storage.h"
#include "model/model_config.h"
#include "model/param_table.h"

namespace swerl {

/** One sequence's part of a paged batch: `count` new tokens at positions start .. start+count−1. */
struct PagedSequence {
  const int32_t* blockTable;  // the sequence's blocks, covering positions 0 .. start+count−1
  size_t numBlocks;
  int64_t start;
  size_t count;
};

/** A paged forward step: the new tokens of several sequences, back to back in sequence order. */
struct PagedBatch {
  const int32_t* tokens;  // [numTokens]
  const int32_t* slots;   // [numTokens]: the cache slot each token's K/V goes to
  size_t numTokens;
  std::vector<PagedSequence> seqs;
  const int32_t* logitRows;  // which token rows get logits (e.g. each sequence's last)
  size_t numLogitRows;
};

class Model {
 public:
  /** A model of this config with all weights 0. Throws INVALID_ARGUMENT on a bad config. */
  explicit Model(ModelConfig config);

  const ModelConfig& config() const { return cfg_; }
  const std::vector<ParamSpec>& params() const { return table_; }
  float* arena() { return weights_.data(); }
  const float* arena() const { return weights_.data(); }
  size_t arenaSize() const { return weights_.size(); }

  /**
   * Hugging Face's initialisation: linear and embedding weights ~ N(0, std²), norms 1, biases 0;
   * element e of parameter i draws from a counter-based hash of (seed, i, e).
   */
  void initRandom(uint64_t seed, float std);

  /** Dense forward of one sequence at positions 0..T−1: logits [T, vocab]. */
  void forward(const int32_t* tokens, size_t T, float* logits) const;

  /**
   * Paged forward: writes each new token's K/V into kv (f32 pages, this model's geometry) at its
   * slot, attends over the sequence's blocks, and writes logits [numLogitRows, vocab].
   */
  void forwardPaged(const PagedBatch& batch, KvStorage& kv, float* logits) const;

 private:
  struct Attn;  // how a layer's attention reads K/V (dense buffers or paged storage)
  void run(const int32_t* tokens, const int64_t* pos, size_t T, const Attn& attn, const int32_t* logitRows,
           size_t numLogitRows, float* logits) const;

  ModelConfig cfg_;
  std::vector<ParamSpec> table_;
  ArenaLayout layout_;
  std::vector<float> weights_;
};

}  // namespace swerl

// A Qwen2 / Llama decoder on the CPU: weights in one f32 arena (param_table.h), a dense forward
// for training and scoring, and a paged forward (chunked prefill and batched decode over the KV
// cache's block tables) for the engine. Both run the same kernels in the same order per token,
// so a token's logits are bitwise equal either way (f32 KV).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/decoder_backend.h"

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

/** What a layer's forward writes, [T, ...] row-major; the training forward keeps them per layer. */
struct LayerActivations {
  std::vector<float> xIn, h1, invRms1, qkv, att, lse, xMid, h2, invRms2, gu, act;
  void resize(const ModelConfig& c, size_t T);
  /** Grows (never shrinks) every buffer resize() sizes to hold at least T tokens. */
  void growTo(const ModelConfig& c, size_t T);
};

/** A training forward's saved state, for backward(). */
struct TrainState {
  std::vector<int32_t> tokens;
  std::vector<int64_t> pos;
  std::vector<float> cosT, sinT;
  bool recompute = false;  // layers keep only xIn; the rest is recomputed in backward
  std::vector<LayerActivations> layers;
  std::vector<float> xFinal, invRmsFinal;
  std::vector<float> hidden;  // [T, hidden]: the final norm's output, the LM head's input
};

class Model {
 public:
  /** A model of this config with all weights 0. Throws INVALID_ARGUMENT on a bad config. */
  explicit Model(ModelConfig config);

  const ModelConfig& config() const { return cfg_; }
  const std::vector<ParamSpec>& params() const { return table_; }
  /** The weights, for writing: counts as a change (the packed copies are rebuilt before the next forward). */
  float* arena() {
    ++version_;
    return weights_.data();
  }
  const float* arena() const { return weights_.data(); }
  /** Marks the weights changed (after a write through arena() that ran for a while, e.g. a load). */
  void weightsChanged() { ++version_; }
  /** A counter that changes whenever the weights may have (for the engine's KV weight version). */
  uint64_t weightVersion() const { return version_.load(); }
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

  /**
   * The training forward of one sequence (positions 0..T−1): the same arithmetic as forward(),
   * keeping what backward() needs (with recompute, only each layer's input). st.hidden is the
   * LM head's input: hidden·Wᵀ are forward()'s logits, bitwise.
   */
  void forwardTrain(const int32_t* tokens, size_t T, bool recompute, TrainState& st) const;

  /**
   * Backpropagates dHidden [T, hidden] (the loss's gradient with respect to st.hidden) through
   * the final norm, every layer and the embedding, adding each parameter's gradient into grad
   * (arena layout). The LM head's own gradient is the loss's to add.
   */
  void backward(TrainState& st, const float* dHidden, float* grad) const;

  /** Arena offsets (for the LM head, which the fused loss handles). */
  const ArenaLayout& layout() const { return layout_; }

 private:
  // The forward's linear weights packed for the GEMM (packed once per weight version): per layer
  // qkv, o, gate/up, down, then the LM head. Built under packMutex_ by the first forward after a
  // change; forwards never run while the weights change (the binding keeps them apart).
  struct PackedWeights {
    std::vector<PackedMatrix> mats;
    uint64_t version = UINT64_MAX;
  };
  const PackedWeights& packed() const;
  mutable PackedWeights packed_;
  mutable std::mutex packMutex_;
  std::atomic<uint64_t> version_{0};

  // How a layer's attention reads K/V: kv null, from the call's own rows (dense); else the paged
  // storage, through each sequence's block table.
  struct Attn {
    KvStorage* kv = nullptr;
    const PagedBatch* batch = nullptr;
    std::vector<int32_t> seqOfToken;
  };
  void run(const int32_t* tokens, const int64_t* pos, size_t T, const Attn& attn, const int32_t* logitRows,
           size_t numLogitRows, float* logits) const;
  void embed(const int32_t* tokens, size_t T, float* x) const;
  // One layer on x [T, hidden] in place, writing its intermediates into a (xIn and xMid only
  // when non-empty: the training forward keeps them).
  void layerForward(int64_t l, float* x, size_t T, const int64_t* pos, const float* cosT, const float* sinT,
                    const Attn& attn, LayerActivations& a) const;

  const DecoderBackend& k_ = cpuDecoderBackend();  // every kernel the model runs goes through here
  ModelConfig cfg_;
  std::vector<ParamSpec> table_;
  ArenaLayout layout_;
  std::vector<float> weights_;
};

}  // namespace swerl

// The decoder's shape and constants (Qwen2 / Llama family). src/model/config.ts reads a Hugging
// Face config.json, fills its defaults and passes these; the RoPE frequencies arrive computed
// (YaRN included), so this core knows no config file format.
#pragma once

#include <cstdint>
#include <vector>

namespace swerl {

struct ModelConfig {
  int64_t vocab = 0, hidden = 0, intermediate = 0, layers = 0, heads = 0, kvHeads = 0, headDim = 0;
  float rmsEps = 1e-6f;
  bool qkvBias = false;            // Qwen2: q/k/v projections have biases
  bool tiedEmbeddings = false;     // the LM head is the embedding matrix
  std::vector<double> invFreq;     // headDim / 2 rotary frequencies
  double ropeAttentionFactor = 1;  // YaRN's factor on cos and sin

  int64_t qDim() const { return heads * headDim; }
  int64_t kvDim() const { return kvHeads * headDim; }
  int64_t qkvDim() const { return qDim() + 2 * kvDim(); }
  /** Throws INVALID_ARGUMENT when a field is out of range or inconsistent. */
  void validate() const;
};

}  // namespace swerl

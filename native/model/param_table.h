// The model's parameters: Hugging Face names, shapes, and where each lives in the one f32 arena
// that holds all weights (and, with the same layout, gradients and optimizer moments).
//
// Arena order: embed; per layer: input norm, q/k/v weights (adjacent, so one GEMM computes all
// three), q/k/v biases (Qwen2), o, post-attention norm, gate/up weights (adjacent: one GEMM),
// down; final norm; lm_head (untied only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"

namespace swerl {

enum class ParamKind { Embedding, Norm, Linear, Bias };

struct ParamSpec {
  std::string name;             // e.g. "model.layers.0.self_attn.q_proj.weight"
  std::vector<int64_t> shape;   // [rows, cols] or [n]
  size_t offset = 0, size = 0;  // in floats, within the arena
  ParamKind kind = ParamKind::Linear;
};

/** Every parameter of a model of this config, in arena order. */
std::vector<ParamSpec> paramTable(const ModelConfig& c);

/** Where one layer's parameters start in the arena. */
struct LayerOffsets {
  size_t inNorm, qkv, qkvBias, o, postNorm, gateUp, down;  // qkvBias: SIZE_MAX without biases
};

/** Arena offsets of the parts the forward and backward passes use. */
struct ArenaLayout {
  size_t embed = 0, finalNorm = 0, lmHead = 0, total = 0;  // lmHead == embed when tied
  std::vector<LayerOffsets> layers;
};

ArenaLayout arenaLayout(const ModelConfig& c);

}  // namespace swerl

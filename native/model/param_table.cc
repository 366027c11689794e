// Parameter names, shapes and arena offsets (see param_table.h).
#include "model/param_table.h"

#include <cstdint>

#include "common/error.h"

namespace swerl {

void ModelConfig::validate() const {
  auto positive = [](int64_t v, const char* name) {
    SWERL_CHECK(v >= 1 && v <= (int64_t(1) << 31), InvalidArgument,
                std::string("config.") + name + " must be an integer in [1, 2^31]");
  };
  positive(vocab, "vocab_size");
  positive(hidden, "hidden_size");
  positive(intermediate, "intermediate_size");
  positive(layers, "num_hidden_layers");
  positive(heads, "num_attention_heads");
  positive(kvHeads, "num_key_value_heads");
  positive(headDim, "head_dim");
  SWERL_CHECK(heads % kvHeads == 0, InvalidArgument,
              "config.num_attention_heads must be a multiple of num_key_value_heads");
  SWERL_CHECK(headDim % 2 == 0, InvalidArgument, "config.head_dim must be even (rotary embeddings)");
  SWERL_CHECK(invFreq.size() == static_cast<size_t>(headDim / 2), InvalidArgument,
              "the rotary frequencies must have head_dim / 2 entries");
  SWERL_CHECK(rmsEps > 0, InvalidArgument, "config.rms_norm_eps must be > 0");
}

std::vector<ParamSpec> paramTable(const ModelConfig& c) {
  std::vector<ParamSpec> out;
  size_t offset = 0;
  auto add = [&](std::string name, std::vector<int64_t> shape, ParamKind kind) {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    out.push_back(ParamSpec{std::move(name), std::move(shape), offset, n, kind});
    offset += n;
  };
  add("model.embed_tokens.weight", {c.vocab, c.hidden}, ParamKind::Embedding);
  for (int64_t i = 0; i < c.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    add(p + "input_layernorm.weight", {c.hidden}, ParamKind::Norm);
    add(p + "self_attn.q_proj.weight", {c.qDim(), c.hidden}, ParamKind::Linear);
    add(p + "self_attn.k_proj.weight", {c.kvDim(), c.hidden}, ParamKind::Linear);
    add(p + "self_attn.v_proj.weight", {c.kvDim(), c.hidden}, ParamKind::Linear);
    if (c.qkvBias) {
      add(p + "self_attn.q_proj.bias", {c.qDim()}, ParamKind::Bias);
      add(p + "self_attn.k_proj.bias", {c.kvDim()}, ParamKind::Bias);
      add(p + "self_attn.v_proj.bias", {c.kvDim()}, ParamKind::Bias);
    }
    add(p + "self_attn.o_proj.weight", {c.hidden, c.qDim()}, ParamKind::Linear);
    add(p + "post_attention_layernorm.weight", {c.hidden}, ParamKind::Norm);
    add(p + "mlp.gate_proj.weight", {c.intermediate, c.hidden}, ParamKind::Linear);
    add(p + "mlp.up_proj.weight", {c.intermediate, c.hidden}, ParamKind::Linear);
    add(p + "mlp.down_proj.weight", {c.hidden, c.intermediate}, ParamKind::Linear);
  }
  add("model.norm.weight", {c.hidden}, ParamKind::Norm);
  if (!c.tiedEmbeddings) add("lm_head.weight", {c.vocab, c.hidden}, ParamKind::Linear);
  return out;
}

ArenaLayout arenaLayout(const ModelConfig& c) {
  const std::vector<ParamSpec> t = paramTable(c);
  ArenaLayout a;
  size_t i = 0;
  a.embed = t[i++].offset;
  for (int64_t l = 0; l < c.layers; ++l) {
    LayerOffsets o{};
    o.inNorm = t[i++].offset;
    o.qkv = t[i].offset;
    i += 3;
    o.qkvBias = SIZE_MAX;
    if (c.qkvBias) {
      o.qkvBias = t[i].offset;
      i += 3;
    }
    o.o = t[i++].offset;
    o.postNorm = t[i++].offset;
    o.gateUp = t[i].offset;
    i += 2;
    o.down = t[i++].offset;
    a.layers.push_back(o);
  }
  a.finalNorm = t[i++].offset;
  a.lmHead = c.tiedEmbeddings ? a.embed : t[i++].offset;
  a.total = t.back().offset + t.back().size;
  return a;
}

}  // namespace swerl

// The decoder's training forward and backward (see model.h).
//
// Per layer, backward from dx (the gradient of the layer's output):
//   MLP:  dAct = dx·Wd, dWd += dxᵀ·act, dGu = silu·mul backward, dh2 = dGu·Wgu, dWgu += dGuᵀ·h2,
//         dxMid = dx + rmsNorm backward(dh2) (and its weight's gradient)
//   attn: dAtt = dxMid·Wo, dWo += dxMidᵀ·att, dqkv = attention backward, rope transposed on dq
//         and dk, bias += Σ dqkv, dh1 = dqkv·Wqkv, dWqkv += dqkvᵀ·h1, dx = dxMid + rmsNorm backward
// With recompute, a layer's activations are rebuilt from its saved input just before its backward.
#include <cmath>
#include <cstring>
#include <vector>

#include "common/error.h"
#include "model/linear.h"
#include "model/model.h"

namespace swerl {

void Model::forwardTrain(const int32_t* tokens, size_t T, bool recompute, TrainState& st) const {
  SWERL_CHECK(T >= 1, InvalidArgument, "the training forward needs at least one token");
  const size_t H = cfg_.hidden, half = cfg_.headDim / 2;
  st.tokens.assign(tokens, tokens + T);
  st.pos.resize(T);
  for (size_t t = 0; t < T; ++t) st.pos[t] = static_cast<int64_t>(t);
  st.cosT.resize(T * half);
  st.sinT.resize(T * half);
  st.recompute = recompute;
  std::vector<float> x(T * H);
  embed(tokens, T, x.data());
  k_.ropeTables(st.pos.data(), T, cfg_.invFreq.data(), half, cfg_.ropeAttentionFactor, st.cosT.data(), st.sinT.data());
  st.layers.assign(cfg_.layers, LayerActivations{});
  LayerActivations scratch;  // recompute: every layer's intermediates, overwritten
  if (recompute) scratch.resize(cfg_, T);
  for (int64_t l = 0; l < cfg_.layers; ++l) {
    LayerActivations& a = st.layers[l];
    a.xIn.resize(T * H);
    if (recompute) {
      std::memcpy(a.xIn.data(), x.data(), T * H * sizeof(float));
      layerForward(l, x.data(), T, st.pos.data(), st.cosT.data(), st.sinT.data(), Attn{}, scratch);
    } else {
      a.resize(cfg_, T);
      a.xMid.resize(T * H);
      layerForward(l, x.data(), T, st.pos.data(), st.cosT.data(), st.sinT.data(), Attn{}, a);
    }
  }
  st.xFinal = x;
  st.invRmsFinal.resize(T);
  st.hidden.resize(T * H);
  k_.rmsNorm(x.data(), T, H, weights_.data() + layout_.finalNorm, cfg_.rmsEps, st.hidden.data(), st.invRmsFinal.data());
}

void Model::backward(TrainState& st, const float* dHidden, float* grad) const {
  const ModelConfig& c = cfg_;
  const size_t T = st.tokens.size(), H = c.hidden, I = c.intermediate, half = c.headDim / 2;
  const size_t qDim = c.qDim(), kvDim = c.kvDim(), qkvDim = c.qkvDim();
  const float* W = weights_.data();
  const AttentionShape shape{static_cast<size_t>(c.heads), static_cast<size_t>(c.kvHeads),
                             static_cast<size_t>(c.headDim),
                             static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.headDim)))};
  std::vector<float> dx(T * H), dxMid(T * H), dh(T * H), dAct(T * I), dGu(T * 2 * I), dAtt(T * qDim), dqkv(T * qkvDim),
      negSin(st.sinT.size());
  for (size_t i = 0; i < negSin.size(); ++i) negSin[i] = -st.sinT[i];
  k_.rmsNormBackward(st.xFinal.data(), st.invRmsFinal.data(), W + layout_.finalNorm, dHidden, T, H, dx.data(), false,
                     grad + layout_.finalNorm);
  LayerActivations scratch;
  for (int64_t l = c.layers - 1; l >= 0; --l) {
    const LayerOffsets& o = layout_.layers[l];
    const float* xIn = st.layers[l].xIn.data();
    LayerActivations* a = &st.layers[l];
    if (st.recompute) {  // rebuild the layer's intermediates from its input
      scratch.resize(c, T);
      scratch.xMid.resize(T * H);
      std::vector<float> x(st.layers[l].xIn);
      layerForward(l, x.data(), T, st.pos.data(), st.cosT.data(), st.sinT.data(), Attn{}, scratch);
      a = &scratch;
    }
    // MLP.
    linearInputGrad(k_, dx.data(), T, H, W + o.down, I, dAct.data());
    linearWeightGrad(k_, dx.data(), T, H, a->act.data(), I, grad + o.down);
    k_.siluMulBackward(a->gu.data(), dAct.data(), T, I, dGu.data());
    linearInputGrad(k_, dGu.data(), T, 2 * I, W + o.gateUp, H, dh.data());
    linearWeightGrad(k_, dGu.data(), T, 2 * I, a->h2.data(), H, grad + o.gateUp);
    dxMid = dx;
    k_.rmsNormBackward(a->xMid.data(), a->invRms2.data(), W + o.postNorm, dh.data(), T, H, dxMid.data(), true,
                       grad + o.postNorm);
    // Attention.
    linearInputGrad(k_, dxMid.data(), T, H, W + o.o, qDim, dAtt.data());
    linearWeightGrad(k_, dxMid.data(), T, H, a->att.data(), qDim, grad + o.o);
    k_.causalAttentionBackward(a->qkv.data(), qkvDim, qDim, qDim + kvDim, T, a->att.data(), a->lse.data(), dAtt.data(),
                               shape, dqkv.data());
    k_.applyRope(dqkv.data(), T, qkvDim, c.heads, half, st.cosT.data(), negSin.data());
    k_.applyRope(dqkv.data() + qDim, T, qkvDim, c.kvHeads, half, st.cosT.data(), negSin.data());
    if (o.qkvBias != SIZE_MAX) k_.addColumnSums(dqkv.data(), T, qkvDim, grad + o.qkvBias);
    linearInputGrad(k_, dqkv.data(), T, qkvDim, W + o.qkv, H, dh.data());
    linearWeightGrad(k_, dqkv.data(), T, qkvDim, a->h1.data(), H, grad + o.qkv);
    dx = dxMid;
    k_.rmsNormBackward(xIn, a->invRms1.data(), W + o.inNorm, dh.data(), T, H, dx.data(), true, grad + o.inNorm);
  }
  k_.embeddingBackward(st.tokens.data(), dx.data(), T, H, grad + layout_.embed);
}

}  // namespace swerl

// The decoder's forward passes (see model.h); every kernel runs through the backend table k_.
//
// Per layer, for the T tokens of a call (rows of the activations):
//   h = rmsNorm(x) · w_in;  qkv = h·[Wq; Wk; Wv]ᵀ (+ bias);  rope(q), rope(k)
//   a = causalAttention(q, K, V);  x += a·Woᵀ
//   h = rmsNorm(x) · w_post;  gu = h·[Wg; Wu]ᵀ;  x += (silu(g)·u)·Wdᵀ
// then logits = rmsNorm(x) · w_final · Ŵᵀ. Every step is per-row or a batch-invariant GEMM, so a
// token's values never depend on which other tokens share the call.
#include "model/model.h"

#include <cmath>
#include <cstring>
#include <string>

#include "common/error.h"
#include "common/thread_pool.h"
#include "model/linear.h"

namespace swerl {

namespace {

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

Model::Model(ModelConfig config) : cfg_(std::move(config)) {
  cfg_.validate();
  table_ = paramTable(cfg_);
  layout_ = arenaLayout(cfg_);
  try {
    weights_.assign(layout_.total, 0.0f);
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::OutOfMemory,
                "cannot allocate " + std::to_string(layout_.total * 4 >> 20) + " MiB for the model's weights");
  }
}

const Model::PackedWeights& Model::packed() const {
  std::lock_guard<std::mutex> lock(packMutex_);
  const uint64_t v = version_.load();
  if (packed_.version == v) return packed_;
  const ModelConfig& c = cfg_;
  const size_t H = c.hidden, I = c.intermediate;
  const float* W = weights_.data();
  // Weight w [N, K] (HF layout) as the product's B [K, N]: element (k, n) = w[n·K + k].
  auto pack = [&](PackedMatrix& m, size_t offset, size_t N, size_t K) { m.pack(MatView{W + offset, 1, K}, K, N); };
  packed_.mats.resize(4 * c.layers + 1);
  for (int64_t l = 0; l < c.layers; ++l) {
    const LayerOffsets& o = layout_.layers[l];
    pack(packed_.mats[4 * l], o.qkv, c.qkvDim(), H);
    pack(packed_.mats[4 * l + 1], o.o, H, c.qDim());
    pack(packed_.mats[4 * l + 2], o.gateUp, 2 * I, H);
    pack(packed_.mats[4 * l + 3], o.down, H, I);
  }
  pack(packed_.mats[4 * c.layers], layout_.lmHead, c.vocab, H);
  packed_.version = v;
  return packed_;
}

void Model::initRandom(uint64_t seed, float std) {
  ++version_;
  for (size_t i = 0; i < table_.size(); ++i) {
    const ParamSpec& p = table_[i];
    float* w = weights_.data() + p.offset;
    if (p.kind == ParamKind::Norm) {
      std::fill(w, w + p.size, 1.0f);
      continue;
    }
    if (p.kind == ParamKind::Bias) {
      std::fill(w, w + p.size, 0.0f);
      continue;
    }
    const uint64_t key = mix64(mix64(seed) ^ (i + 1));
    parallelFor((p.size + 1) / 2, 1, 65536, [&](size_t k) {
      // Box–Muller on two 53-bit uniforms from the counter (key, k): elements 2k and 2k + 1.
      const uint64_t a = mix64(key ^ (2 * k)), b = mix64(key ^ (2 * k + 1));
      const double u1 = (static_cast<double>(a >> 11) + 1) * 0x1p-53, u2 = static_cast<double>(b >> 11) * 0x1p-53;
      const double r = std::sqrt(-2 * std::log(u1)) * std, th = 6.283185307179586 * u2;
      w[2 * k] = static_cast<float>(r * std::cos(th));
      if (2 * k + 1 < p.size) w[2 * k + 1] = static_cast<float>(r * std::sin(th));
    });
  }
}

void Model::forward(const int32_t* tokens, size_t T, float* logits) const {
  if (T == 0) return;
  std::vector<int64_t> pos(T);
  for (size_t t = 0; t < T; ++t) pos[t] = static_cast<int64_t>(t);
  run(tokens, pos.data(), T, Attn{}, nullptr, T, logits);
}

void Model::forwardPaged(const PagedBatch& b, KvStorage& kv, float* logits) const {
  const KvGeometry& g = kv.geometry();
  SWERL_CHECK(g.dtype == KvDtype::F32 && kv.device() == Device::Cpu, InvalidArgument,
              "the paged forward needs an f32 KV cache on the CPU");
  SWERL_CHECK(g.numLayers == cfg_.layers && g.numKvHeads == cfg_.kvHeads && g.headDim == cfg_.headDim, InvalidArgument,
              "the KV cache's numLayers, numKvHeads and headDim must match the model's");
  Attn attn;
  attn.kv = &kv;
  attn.batch = &b;
  attn.seqOfToken.resize(b.numTokens);
  std::vector<int64_t> pos(b.numTokens);
  size_t t = 0;
  for (size_t s = 0; s < b.seqs.size(); ++s) {
    const PagedSequence& q = b.seqs[s];
    SWERL_CHECK(q.start >= 0 && q.count >= 1, InvalidArgument, "each sequence needs at least one new token");
    const int64_t last = q.start + static_cast<int64_t>(q.count) - 1;
    SWERL_CHECK(static_cast<size_t>(last / g.blockSize) < q.numBlocks, InvalidArgument,
                "sequence " + std::to_string(s) + "'s block table does not cover position " + std::to_string(last));
    for (size_t i = 0; i < q.numBlocks; ++i)
      SWERL_CHECK(q.blockTable[i] >= 0 && q.blockTable[i] < g.numBlocks, InvalidArgument,
                  "block table entry out of range");
    for (size_t i = 0; i < q.count; ++i, ++t) {
      SWERL_CHECK(t < b.numTokens, InvalidArgument, "the sequences hold more tokens than the batch");
      attn.seqOfToken[t] = static_cast<int32_t>(s);
      pos[t] = q.start + static_cast<int64_t>(i);
    }
  }
  SWERL_CHECK(t == b.numTokens, InvalidArgument, "the sequences must account for every token of the batch");
  for (size_t i = 0; i < b.numTokens; ++i)
    SWERL_CHECK(b.slots[i] >= 0 && static_cast<size_t>(b.slots[i]) < g.slots(), InvalidArgument, "slot out of range");
  for (size_t i = 0; i < b.numLogitRows; ++i)
    SWERL_CHECK(b.logitRows[i] >= 0 && static_cast<size_t>(b.logitRows[i]) < b.numTokens, InvalidArgument,
                "logit row out of range");
  if (b.numTokens == 0) return;
  run(b.tokens, pos.data(), b.numTokens, attn, b.logitRows, b.numLogitRows, logits);
}

void LayerActivations::resize(const ModelConfig& c, size_t T) {
  const size_t H = c.hidden, I = c.intermediate;
  h1.resize(T * H);
  invRms1.resize(T);
  qkv.resize(T * c.qkvDim());
  att.resize(T * c.qDim());
  lse.resize(T * c.heads);
  h2.resize(T * H);
  invRms2.resize(T);
  gu.resize(T * 2 * I);
  act.resize(T * I);
}

namespace {
void growVec(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

// Per-thread scratch of the inference forward, grown and never shrunk: a step reuses memory
// already faulted in instead of zero-filling fresh pages (for a shallow model, allocating the
// activations cost as much as the step's arithmetic). Every buffer is written before it is read.
struct ForwardScratch {
  LayerActivations a;
  std::vector<float> x, cosT, sinT, kbuf, vbuf;
};
thread_local ForwardScratch tScratch;
}  // namespace

void LayerActivations::growTo(const ModelConfig& c, size_t T) {
  const size_t H = c.hidden, I = c.intermediate;
  growVec(h1, T * H);
  growVec(invRms1, T);
  growVec(qkv, T * c.qkvDim());
  growVec(att, T * c.qDim());
  growVec(lse, T * c.heads);
  growVec(h2, T * H);
  growVec(invRms2, T);
  growVec(gu, T * 2 * I);
  growVec(act, T * I);
}

void Model::embed(const int32_t* tokens, size_t T, float* x) const {
  const size_t H = cfg_.hidden;
  for (size_t t = 0; t < T; ++t)
    SWERL_CHECK(tokens[t] >= 0 && tokens[t] < cfg_.vocab, InvalidArgument,
                "token " + std::to_string(tokens[t]) + " at row " + std::to_string(t) + " is outside the vocabulary");
  for (size_t t = 0; t < T; ++t)
    std::memcpy(x + t * H, weights_.data() + layout_.embed + static_cast<size_t>(tokens[t]) * H, H * sizeof(float));
}

void Model::layerForward(int64_t l, float* x, size_t T, const int64_t* pos, const float* cosT, const float* sinT,
                         const Attn& attn, LayerActivations& a) const {
  const ModelConfig& c = cfg_;
  const size_t H = c.hidden, I = c.intermediate, hd = c.headDim, half = hd / 2;
  const size_t qDim = c.qDim(), kvDim = c.kvDim(), qkvDim = c.qkvDim();
  const float* W = weights_.data();
  const LayerOffsets& o = layout_.layers[l];
  const std::vector<PackedMatrix>& P = packed().mats;
  auto product = [this](const float* a, size_t M, size_t K, const PackedMatrix& w, float* out, float beta) {
    k_.gemmPacked(M, MatView{a, K, 1}, w, out, w.cols(), beta);
  };
  const AttentionShape shape{static_cast<size_t>(c.heads), static_cast<size_t>(c.kvHeads), hd,
                             static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)))};
  if (!a.xIn.empty()) std::memcpy(a.xIn.data(), x, T * H * sizeof(float));
  k_.rmsNorm(x, T, H, W + o.inNorm, c.rmsEps, a.h1.data(), a.invRms1.data());
  product(a.h1.data(), T, H, P[4 * l], a.qkv.data(), 0.0f);
  if (o.qkvBias != SIZE_MAX) k_.addBias(a.qkv.data(), T, qkvDim, W + o.qkvBias);
  k_.applyRope(a.qkv.data(), T, qkvDim, c.heads, half, cosT, sinT);
  k_.applyRope(a.qkv.data() + qDim, T, qkvDim, c.kvHeads, half, cosT, sinT);
  if (attn.kv == nullptr) {
    const KvRows k{a.qkv.data() + qDim, qkvDim}, v{a.qkv.data() + qDim + kvDim, qkvDim};
    k_.causalAttention(a.qkv.data(), qkvDim, pos, T, &k, &v, nullptr, shape, a.att.data(), a.lse.data());
  } else {
    std::vector<float>& kbuf = tScratch.kbuf;
    std::vector<float>& vbuf = tScratch.vbuf;
    growVec(kbuf, T * kvDim);
    growVec(vbuf, T * kvDim);
    for (size_t t = 0; t < T; ++t) {
      std::memcpy(kbuf.data() + t * kvDim, a.qkv.data() + t * qkvDim + qDim, kvDim * sizeof(float));
      std::memcpy(vbuf.data() + t * kvDim, a.qkv.data() + t * qkvDim + qDim + kvDim, kvDim * sizeof(float));
    }
    attn.kv->write(static_cast<int32_t>(l), attn.batch->slots, T, kbuf.data(), vbuf.data());
    const size_t bs = static_cast<size_t>(attn.kv->geometry().blockSize);
    const auto* kp = static_cast<const float*>(attn.kv->kPages(static_cast<int32_t>(l)));
    const auto* vp = static_cast<const float*>(attn.kv->vPages(static_cast<int32_t>(l)));
    std::vector<KvRows> ks, vs;
    for (const PagedSequence& s : attn.batch->seqs) {
      ks.push_back(KvRows{kp, kvDim, s.blockTable, bs, bs * kvDim});
      vs.push_back(KvRows{vp, kvDim, s.blockTable, bs, bs * kvDim});
    }
    k_.causalAttention(a.qkv.data(), qkvDim, pos, T, ks.data(), vs.data(), attn.seqOfToken.data(), shape, a.att.data(),
                       a.lse.data());
  }
  product(a.att.data(), T, qDim, P[4 * l + 1], x, 1.0f);
  if (!a.xMid.empty()) std::memcpy(a.xMid.data(), x, T * H * sizeof(float));
  k_.rmsNorm(x, T, H, W + o.postNorm, c.rmsEps, a.h2.data(), a.invRms2.data());
  product(a.h2.data(), T, H, P[4 * l + 2], a.gu.data(), 0.0f);
  k_.siluMul(a.gu.data(), T, I, a.act.data());
  product(a.act.data(), T, I, P[4 * l + 3], x, 1.0f);
}

void Model::run(const int32_t* tokens, const int64_t* pos, size_t T, const Attn& attn, const int32_t* logitRows,
                size_t numLogitRows, float* logits) const {
  const size_t H = cfg_.hidden, half = cfg_.headDim / 2;
  ForwardScratch& s = tScratch;
  growVec(s.x, T * H);
  growVec(s.cosT, T * half);
  growVec(s.sinT, T * half);
  std::vector<float>& x = s.x;
  std::vector<float>& cosT = s.cosT;
  std::vector<float>& sinT = s.sinT;
  embed(tokens, T, x.data());
  k_.ropeTables(pos, T, cfg_.invFreq.data(), half, cfg_.ropeAttentionFactor, cosT.data(), sinT.data());
  LayerActivations& a = s.a;  // reused by every layer
  a.growTo(cfg_, T);
  for (int64_t l = 0; l < cfg_.layers; ++l) layerForward(l, x.data(), T, pos, cosT.data(), sinT.data(), attn, a);
  // The final norm and LM head, only for the rows that want logits.
  const float* rows = x.data();
  std::vector<float>& h = a.h1;
  if (logitRows) {
    for (size_t i = 0; i < numLogitRows; ++i)
      std::memcpy(h.data() + i * H, x.data() + static_cast<size_t>(logitRows[i]) * H, H * sizeof(float));
    rows = h.data();
  }
  k_.rmsNorm(rows, numLogitRows, H, weights_.data() + layout_.finalNorm, cfg_.rmsEps, h.data(), nullptr);
  k_.gemmPacked(numLogitRows, MatView{h.data(), H, 1}, packed().mats[4 * cfg_.layers], logits, cfg_.vocab, 0.0f);
}

}  // namespace swerl

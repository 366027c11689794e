// JS binding of the decoder (model/model.h): class NativeModel, wrapped by src/model/model.ts,
// which validates first. Heavy calls (forward, loading weights) are AsyncWorkers resolving a
// Promise; while one runs, calls that change the weights throw INVALID_ARGUMENT instead of racing.
// The training logic lives in native/train: a backward job's body (train/backward_job.h), the
// gradient slots, clipping and AdamW (train/optimizer.h); this file converts and schedules.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "io/safetensors_reader.h"
#include "model/model.h"
#include "napi/args.h"
#include "napi/errors.h"
#include "napi/kv_binding.h"
#include "napi/loss_binding.h"
#include "train/backward_job.h"
#include "train/losses.h"
#include "train/optimizer.h"

namespace swerl::napi {

namespace {

int64_t intField(Napi::Object o, const char* name) {
  Napi::Value v = o.Get(name);
  require(o.Env(), v.IsNumber(), std::string("config.") + name + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  require(o.Env(), std::floor(d) == d && std::fabs(d) <= 9007199254740991.0,
          std::string("config.") + name + " must be an integer");
  return static_cast<int64_t>(d);
}

double numberField(Napi::Object o, const char* name) {
  Napi::Value v = o.Get(name);
  require(o.Env(), v.IsNumber(), std::string("config.") + name + " must be a number");
  return v.As<Napi::Number>().DoubleValue();
}

ModelConfig parseConfig(Napi::Object o) {
  ModelConfig c;
  c.vocab = intField(o, "vocab");
  c.hidden = intField(o, "hidden");
  c.intermediate = intField(o, "intermediate");
  c.layers = intField(o, "layers");
  c.heads = intField(o, "heads");
  c.kvHeads = intField(o, "kvHeads");
  c.headDim = intField(o, "headDim");
  c.rmsEps = static_cast<float>(numberField(o, "rmsEps"));
  c.ropeAttentionFactor = numberField(o, "ropeAttentionFactor");
  c.qkvBias = o.Get("qkvBias").ToBoolean();
  c.tiedEmbeddings = o.Get("tiedEmbeddings").ToBoolean();
  Napi::Value f = o.Get("invFreq");
  require(o.Env(), f.IsTypedArray() && f.As<Napi::TypedArray>().TypedArrayType() == napi_float64_array,
          "config.invFreq must be a Float64Array");
  Napi::Float64Array fa = f.As<Napi::Float64Array>();
  c.invFreq.assign(fa.Data(), fa.Data() + fa.ElementLength());
  return c;
}

// A background job on the model: counts itself busy from construction to completion, and
// mutating too when it writes the weights.
class ModelWorker : public Napi::AsyncWorker {
 public:
  ModelWorker(Napi::Env env, std::shared_ptr<std::atomic<int>> busy,
              std::shared_ptr<std::atomic<int>> mutating = nullptr)
      : Napi::AsyncWorker(env, "swerl:ModelWorker"),
        busy_(std::move(busy)),
        mutating_(std::move(mutating)),
        deferred_(Napi::Promise::Deferred::New(env)) {
    ++*busy_;
    if (mutating_) ++*mutating_;
  }
  ~ModelWorker() override {
    --*busy_;
    if (mutating_) --*mutating_;
  }
  Napi::Promise Promise() { return deferred_.Promise(); }

  void Execute() override {
    try {
      run();
    } catch (...) {
      describeCurrentException(code_, message_);
      SetError(message_);
    }
  }
  void OnError(const Napi::Error&) override { deferred_.Reject(swerlError(Env(), code_.c_str(), message_).Value()); }

 protected:
  virtual void run() = 0;
  Napi::Promise::Deferred& deferred() { return deferred_; }

 private:
  std::shared_ptr<std::atomic<int>> busy_, mutating_;
  Napi::Promise::Deferred deferred_;
  std::string code_, message_;
};

class ForwardWorker : public ModelWorker {
 public:
  ForwardWorker(Napi::Env env, std::shared_ptr<std::atomic<int>> busy, std::shared_ptr<const Model> model,
                std::vector<int32_t> tokens, Napi::Float32Array out)
      : ModelWorker(env, std::move(busy)),
        model_(std::move(model)),
        tokens_(std::move(tokens)),
        out_(Napi::Persistent(out)),
        dst_(out.Data()) {}
  void OnOK() override { deferred().Resolve(out_.Value()); }

 private:
  void run() override { model_->forward(tokens_.data(), tokens_.size(), dst_); }
  std::shared_ptr<const Model> model_;
  std::vector<int32_t> tokens_;
  Napi::Reference<Napi::Float32Array> out_;  // keeps the result alive; JS sees it only on resolve
  float* dst_;
};

class LoadWorker : public ModelWorker {
 public:
  LoadWorker(Napi::Env env, std::shared_ptr<std::atomic<int>> busy, std::shared_ptr<std::atomic<int>> mutating,
             std::shared_ptr<Model> model, std::string path, std::vector<TensorCopy> copies)
      : ModelWorker(env, std::move(busy), std::move(mutating)),
        model_(std::move(model)),
        path_(std::move(path)),
        copies_(std::move(copies)) {}
  void OnOK() override { deferred().Resolve(Env().Undefined()); }

 private:
  void run() override {
    readSafetensors(path_, copies_);
    model_->weightsChanged();
  }
  std::shared_ptr<Model> model_;  // owns the arena the copies write to
  std::string path_;
  std::vector<TensorCopy> copies_;
};

// A backward job (train/backward_job.h) on its gradient slot, which it holds busy while it runs.
class LossWorker : public ModelWorker {
 public:
  LossWorker(Napi::Env env, std::shared_ptr<std::atomic<int>> busy, std::shared_ptr<const Model> model,
             std::shared_ptr<Optimizer> train, BackwardJob job, Napi::Float32Array logprobs,
             std::shared_ptr<uint32_t> slotsBusy, int slot)
      : ModelWorker(env, std::move(busy)),
        model_(std::move(model)),
        train_(std::move(train)),
        job_(std::move(job)),
        logprobs_(Napi::Persistent(logprobs)),
        logprobsData_(logprobs.Data()),
        slotsBusy_(std::move(slotsBusy)),
        slot_(slot),
        grad_(train_->gradSlot(slot)) {
    *slotsBusy_ |= 1u << slot_;
  }
  // Destroyed on the JS thread after OnOK/OnError, as the constructor ran: no race on the mask.
  ~LossWorker() override { *slotsBusy_ &= ~(1u << slot_); }
  void OnOK() override {
    Napi::Object o = Napi::Object::New(Env());
    o.Set("loss", r_.loss);
    o.Set("entropy", r_.entropy);
    o.Set("clipFracLow", r_.clipFracLow);
    o.Set("clipFracHigh", r_.clipFracHigh);
    o.Set("logprobs", logprobs_.Value());
    deferred().Resolve(o);
  }

 private:
  void run() override { r_ = runBackwardJob(*model_, job_, grad_, logprobsData_); }
  std::shared_ptr<const Model> model_;
  std::shared_ptr<Optimizer> train_;  // owns grad_
  BackwardJob job_;
  Napi::Reference<Napi::Float32Array> logprobs_;
  float* logprobsData_;
  PolicyLossResult r_{};
  std::shared_ptr<uint32_t> slotsBusy_;
  int slot_;
  float* grad_;  // the slot's buffer (allocated before the job runs)
};

// An optimizer step (Optimizer::step) on the model's weights.
class StepWorker : public ModelWorker {
 public:
  StepWorker(Napi::Env env, std::shared_ptr<std::atomic<int>> busy, std::shared_ptr<std::atomic<int>> mutating,
             std::shared_ptr<Model> model, std::shared_ptr<Optimizer> train, OptimizerStepConfig cfg)
      : ModelWorker(env, std::move(busy), std::move(mutating)),
        model_(std::move(model)),
        train_(std::move(train)),
        cfg_(cfg) {}
  void OnOK() override {
    Napi::Object o = Napi::Object::New(Env());
    o.Set("gradNorm", norm_);
    o.Set("step", static_cast<double>(train_->steps()));
    deferred().Resolve(o);
  }

 private:
  void run() override {
    norm_ = train_->step(model_->params(), cfg_, [&] { return model_->arena(); });
    model_->weightsChanged();
  }
  std::shared_ptr<Model> model_;
  std::shared_ptr<Optimizer> train_;
  OptimizerStepConfig cfg_;
  double norm_ = 0;
};

// A paged forward step off the JS thread: owns copies of the batch, holds the cache's JS object
// (so it cannot be collected mid-step) and writes the logits into a preallocated array.
class PagedWorker : public ModelWorker {
 public:
  PagedWorker(Napi::Env env, std::shared_ptr<std::atomic<int>> busy, std::shared_ptr<const Model> model,
              PagedKvCache& cache, Napi::Object cacheObject, std::vector<int32_t> tokens, std::vector<int32_t> slots,
              std::vector<std::vector<int32_t>> tables, std::vector<std::pair<int64_t, size_t>> seqs,
              std::vector<int32_t> rows, Napi::Float32Array out)
      : ModelWorker(env, std::move(busy)),
        model_(std::move(model)),
        cache_(cache),
        cacheObject_(Napi::Persistent(cacheObject)),
        tokens_(std::move(tokens)),
        slots_(std::move(slots)),
        tables_(std::move(tables)),
        seqs_(std::move(seqs)),
        rows_(std::move(rows)),
        out_(Napi::Persistent(out)),
        dst_(out.Data()) {}
  void OnOK() override { deferred().Resolve(out_.Value()); }

 private:
  void run() override {
    PagedBatch b{tokens_.data(), slots_.data(), tokens_.size(), {}, rows_.data(), rows_.size()};
    for (size_t s = 0; s < seqs_.size(); ++s)
      b.seqs.push_back(PagedSequence{tables_[s].data(), tables_[s].size(), seqs_[s].first, seqs_[s].second});
    model_->forwardPaged(b, cache_.storage(), dst_);
  }
  std::shared_ptr<const Model> model_;
  PagedKvCache& cache_;
  Napi::ObjectReference cacheObject_;
  std::vector<int32_t> tokens_, slots_;
  std::vector<std::vector<int32_t>> tables_;
  std::vector<std::pair<int64_t, size_t>> seqs_;
  std::vector<int32_t> rows_;
  Napi::Reference<Napi::Float32Array> out_;
  float* dst_;
};

}  // namespace

class ModelWrap : public Napi::ObjectWrap<ModelWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(
        env, "NativeModel",
        {InstanceMethod<&ModelWrap::ParamTable>("paramTable"), InstanceMethod<&ModelWrap::InitRandom>("initRandom"),
         InstanceMethod<&ModelWrap::GetParams>("getParams"), InstanceMethod<&ModelWrap::SetParams>("setParams"),
         InstanceMethod<&ModelWrap::LoadSafetensors>("loadSafetensors"), InstanceMethod<&ModelWrap::Forward>("forward"),
         InstanceMethod<&ModelWrap::ForwardPaged>("forwardPaged"), InstanceMethod<&ModelWrap::ZeroGrad>("zeroGrad"),
         InstanceMethod<&ModelWrap::GetGrads>("getGrads"),
         InstanceMethod<&ModelWrap::LossAndBackward>("lossAndBackward"),
         InstanceMethod<&ModelWrap::OptimizerStep>("optimizerStep"),
         InstanceMethod<&ModelWrap::OptimizerState>("optimizerState"),
         InstanceMethod<&ModelWrap::OptimizerSteps>("optimizerSteps"),
         InstanceMethod<&ModelWrap::WeightVersion>("weightVersion"),
         InstanceMethod<&ModelWrap::SetOptimizerState>("setOptimizerState"),
         InstanceMethod<&ModelWrap::ResetOptimizer>("resetOptimizer")});
  }

  // new NativeModel(config): all weights 0.
  explicit ModelWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ModelWrap>(info) {
    Napi::Env env = info.Env();
    require(env, info.Length() >= 1 && info[0].IsObject(), "NativeModel expects a config object");
    ModelConfig cfg = parseConfig(info[0].As<Napi::Object>());
    guarded(env, [&] {
      model_ = std::make_shared<Model>(std::move(cfg));
      train_ = std::make_shared<Optimizer>(model_->arenaSize(), cpuOptimizerDevice());
    });
    externalBytes_ = static_cast<int64_t>(model_->arenaSize() * sizeof(float));
    Napi::MemoryManagement::AdjustExternalMemory(env, externalBytes_);
  }
  ~ModelWrap() override {
    if (externalBytes_ > 0) Napi::MemoryManagement::AdjustExternalMemory(Env(), -externalBytes_);
  }

 private:
  // For jobs that read the weights: none may be changing them.
  void requireStable(Napi::Env env) {
    require(env, *mutating_ == 0,
            "the model's weights are being changed (a load or an optimizer step); await it first");
  }

  void requireIdle(Napi::Env env) {
    require(env, *busy_ == 0, "the model is busy (a forward pass or a load is running); await it first");
  }

  // [{ name, shape, offset, size }] in arena order.
  Napi::Value ParamTable(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const auto& t = model_->params();
    Napi::Array out = Napi::Array::New(env, t.size());
    for (size_t i = 0; i < t.size(); ++i) {
      Napi::Object o = Napi::Object::New(env);
      o.Set("name", t[i].name);
      Napi::Array shape = Napi::Array::New(env, t[i].shape.size());
      for (size_t d = 0; d < t[i].shape.size(); ++d) shape.Set(d, static_cast<double>(t[i].shape[d]));
      o.Set("shape", shape);
      o.Set("offset", static_cast<double>(t[i].offset));
      o.Set("size", static_cast<double>(t[i].size));
      out.Set(i, o);
    }
    return out;
  }

  Napi::Value InitRandom(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    requireIdle(env);
    const int64_t seed = argInteger(info, 0, "seed");
    require(env, info.Length() > 1 && info[1].IsNumber(), "std must be a number");
    const float std = info[1].As<Napi::Number>().FloatValue();
    require(env, seed >= 0 && std >= 0, "seed and std must be >= 0");
    guarded(env, [&] { model_->initRandom(static_cast<uint64_t>(seed), std); });
    return env.Undefined();
  }

  size_t checkedRange(const Napi::CallbackInfo& info, int64_t offset, size_t count) {
    require(info.Env(),
            offset >= 0 && static_cast<size_t>(offset) <= model_->arenaSize() &&
                count <= model_->arenaSize() - static_cast<size_t>(offset),
            "parameter range outside the model");
    return static_cast<size_t>(offset);
  }

  // getParams(offset, count): a copy of arena[offset, offset + count).
  Napi::Value GetParams(const Napi::CallbackInfo& info) {
    const int64_t offset = argInteger(info, 0, "offset"), count = argInteger(info, 1, "count");
    require(info.Env(), count >= 0, "count must be >= 0");
    const size_t off = checkedRange(info, offset, static_cast<size_t>(count));
    Napi::Float32Array out = Napi::Float32Array::New(info.Env(), static_cast<size_t>(count));
    const float* w = static_cast<const Model&>(*model_).arena();
    std::copy(w + off, w + off + count, out.Data());
    return out;
  }

  // setParams(offset, values): arena[offset, ...) = values.
  Napi::Value SetParams(const Napi::CallbackInfo& info) {
    requireIdle(info.Env());
    const int64_t offset = argInteger(info, 0, "offset");
    Napi::Float32Array v = argFloat32Array(info, 1, "values");
    const size_t off = checkedRange(info, offset, v.ElementLength());
    std::copy(v.Data(), v.Data() + v.ElementLength(), model_->arena() + off);
    return info.Env().Undefined();
  }

  // loadSafetensors(path, plan): plan is a Float64Array of [arenaOffset, fileOffset, count, dtype]
  // quadruples (dtype 0 f32, 1 f16, 2 bf16). Resolves when every tensor is copied.
  Napi::Value LoadSafetensors(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    requireIdle(env);
    require(env, info.Length() > 0 && info[0].IsString(), "path must be a string");
    Napi::Float64Array plan = argFloat64Array(info, 1, "plan");
    require(env, plan.ElementLength() % 4 == 0, "plan must hold quadruples");
    std::vector<TensorCopy> copies;
    for (size_t i = 0; i < plan.ElementLength(); i += 4) {
      const double off = plan[i], fileOff = plan[i + 1], count = plan[i + 2], dt = plan[i + 3];
      require(env, off >= 0 && fileOff >= 0 && count >= 0 && (dt == 0 || dt == 1 || dt == 2), "bad plan entry");
      const size_t o = checkedRange(info, static_cast<int64_t>(off), static_cast<size_t>(count));
      copies.push_back(TensorCopy{static_cast<uint64_t>(fileOff), static_cast<uint64_t>(count),
                                  dt == 0   ? TensorDtype::F32
                                  : dt == 1 ? TensorDtype::F16
                                            : TensorDtype::Bf16,
                                  model_->arena() + o});
    }
    auto* w = new LoadWorker(env, busy_, mutating_, model_, info[0].As<Napi::String>().Utf8Value(), std::move(copies));
    Napi::Promise p = w->Promise();
    w->Queue();
    return p;
  }

  // forward(tokens): Promise<Float32Array [T, vocab]>.
  Napi::Value Forward(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    requireStable(env);
    Napi::Int32Array t = argInt32Array(info, 0, "tokens");
    const size_t T = t.ElementLength(), V = static_cast<size_t>(model_->config().vocab);
    for (size_t i = 0; i < T; ++i)
      require(env, t[i] >= 0 && t[i] < model_->config().vocab, "tokens must be in [0, vocab)");
    Napi::Float32Array out = Napi::Float32Array::New(env, T * V);
    auto* w = new ForwardWorker(env, busy_, model_, std::vector<int32_t>(t.Data(), t.Data() + T), out);
    Napi::Promise p = w->Promise();
    w->Queue();
    return p;
  }

  // forwardPaged(kvCache, tokens, slots, seqs, blockTables, logitRows): Float32Array
  // [logitRows.length, vocab]. seqs: Float64Array of [start, count] per sequence; blockTables:
  // one Int32Array per sequence. Synchronous (the engine batches whole steps into one call).
  Napi::Value ForwardPaged(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    requireStable(env);
    PagedKvCache& cache = unwrapKvCache(env, info[0]);
    Napi::Int32Array tokens = argInt32Array(info, 1, "tokens");
    Napi::Int32Array slots = argInt32Array(info, 2, "slots");
    Napi::Float64Array seqs = argFloat64Array(info, 3, "seqs");
    require(env, info.Length() > 4 && info[4].IsArray(), "blockTables must be an array");
    Napi::Array tables = info[4].As<Napi::Array>();
    Napi::Int32Array rows = argInt32Array(info, 5, "logitRows");
    require(env, slots.ElementLength() == tokens.ElementLength(), "slots must have one entry per token");
    require(env, seqs.ElementLength() % 2 == 0 && tables.Length() == seqs.ElementLength() / 2,
            "seqs must be [start, count] pairs, one block table each");
    require(env, rows.ElementLength() <= tokens.ElementLength(), "more logit rows than tokens");
    PagedBatch b{tokens.Data(), slots.Data(), tokens.ElementLength(), {}, rows.Data(), rows.ElementLength()};
    std::vector<Napi::Int32Array> keep;
    for (uint32_t s = 0; s < tables.Length(); ++s) {
      Napi::Value tv = tables.Get(s);
      require(env, tv.IsTypedArray() && tv.As<Napi::TypedArray>().TypedArrayType() == napi_int32_array,
              "each block table must be an Int32Array");
      keep.push_back(tv.As<Napi::Int32Array>());
      const double start = seqs[2 * s], count = seqs[2 * s + 1];
      require(env, start >= 0 && count >= 1 && std::floor(start) == start && std::floor(count) == count,
              "seqs: start must be >= 0 and count >= 1, integers");
      b.seqs.push_back(PagedSequence{keep.back().Data(), keep.back().ElementLength(), static_cast<int64_t>(start),
                                     static_cast<size_t>(count)});
    }
    Napi::Float32Array out =
        Napi::Float32Array::New(env, rows.ElementLength() * static_cast<size_t>(model_->config().vocab));
    if (info.Length() > 6 && info[6].ToBoolean()) {  // async: a Promise, the step on a worker thread
      std::vector<std::vector<int32_t>> tablesCopy;
      std::vector<std::pair<int64_t, size_t>> seqsCopy;
      for (const PagedSequence& q : b.seqs) {
        tablesCopy.emplace_back(q.blockTable, q.blockTable + q.numBlocks);
        seqsCopy.emplace_back(q.start, q.count);
      }
      auto* w = new PagedWorker(
          env, busy_, model_, cache, info[0].As<Napi::Object>(), std::vector<int32_t>(b.tokens, b.tokens + b.numTokens),
          std::vector<int32_t>(b.slots, b.slots + b.numTokens), std::move(tablesCopy), std::move(seqsCopy),
          std::vector<int32_t>(b.logitRows, b.logitRows + b.numLogitRows), out);
      Napi::Promise p = w->Promise();
      w->Queue();
      return p;
    }
    guarded(env, [&] { model_->forwardPaged(b, cache.storage(), out.Data()); });
    return out;
  }

  Napi::Value ZeroGrad(const Napi::CallbackInfo& info) {
    requireIdle(info.Env());
    guarded(info.Env(), [&] { train_->zeroGrad(); });
    return info.Env().Undefined();
  }

  // getGrads(offset, count): a copy of the accumulated gradient (the slots folded in first).
  Napi::Value GetGrads(const Napi::CallbackInfo& info) {
    requireIdle(info.Env());
    const int64_t offset = argInteger(info, 0, "offset"), count = argInteger(info, 1, "count");
    require(info.Env(), count >= 0, "count must be >= 0");
    const size_t off = checkedRange(info, offset, static_cast<size_t>(count));
    Napi::Float32Array out = Napi::Float32Array::New(info.Env(), static_cast<size_t>(count));
    guarded(info.Env(), [&] { train_->readGradient(off, static_cast<size_t>(count), out.Data()); });
    return out;
  }

  static std::vector<float> floats(Napi::Object o, const char* name, size_t n, bool required) {
    Napi::Value v = o.Get(name);
    if (!required && (v.IsUndefined() || v.IsNull())) return {};
    require(o.Env(),
            v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == napi_float32_array &&
                v.As<Napi::TypedArray>().ElementLength() == n,
            std::string(name) + " must be a Float32Array with one entry per token");
    Napi::Float32Array a = v.As<Napi::Float32Array>();
    return std::vector<float>(a.Data(), a.Data() + n);
  }

  // lossAndBackward(tokens, targets, mask, policy | null, options): forward, the fused LM-head
  // loss (SFT, or the policy loss with policy = { oldLogprobs, advantages, seqIds?, refLogprobs?,
  // rolloutLogprobs?, config }), and backward, adding gradients into slot options.gradSlot (0, the
  // gradient itself, by default). options: { recompute, lossScale, chunkTokens, gradSlot,
  // ownThread } (ownThread: the kernels run on the job's thread only, unless the job has 256
  // tokens or more and no other such job runs).
  // Jobs on different slots may run at once; nothing else may run beside them.
  // Promise<{ loss, logprobs, entropy, clipFracLow, clipFracHigh }>.
  Napi::Value LossAndBackward(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Int32Array tokens = argInt32Array(info, 0, "tokens");
    Napi::Int32Array targets = argInt32Array(info, 1, "targets");
    Napi::Float32Array mask = argFloat32Array(info, 2, "mask");
    const size_t T = tokens.ElementLength();
    require(env, T >= 1 && targets.ElementLength() == T && mask.ElementLength() == T,
            "tokens, targets and mask must have the same length >= 1");
    for (size_t i = 0; i < T; ++i)
      require(env, tokens[i] >= 0 && tokens[i] < model_->config().vocab, "tokens must be in [0, vocab)");
    BackwardJob job;
    job.tokens.assign(tokens.Data(), tokens.Data() + T);
    job.targets.assign(targets.Data(), targets.Data() + T);
    job.mask.assign(mask.Data(), mask.Data() + T);
    if (info.Length() > 3 && info[3].IsObject()) {
      Napi::Object p = info[3].As<Napi::Object>();
      job.policy = true;
      job.oldLogprobs = floats(p, "oldLogprobs", T, true);
      job.advantages = floats(p, "advantages", T, true);
      job.refLogprobs = floats(p, "refLogprobs", T, false);
      job.rolloutLogprobs = floats(p, "rolloutLogprobs", T, false);
      Napi::Value s = p.Get("seqIds");
      if (!s.IsUndefined() && !s.IsNull()) {
        require(env,
                s.IsTypedArray() && s.As<Napi::TypedArray>().TypedArrayType() == napi_int32_array &&
                    s.As<Napi::TypedArray>().ElementLength() == T,
                "seqIds must be an Int32Array with one entry per token");
        Napi::Int32Array a = s.As<Napi::Int32Array>();
        job.seqIds.assign(a.Data(), a.Data() + T);
      }
      require(env, p.Get("config").IsObject(), "policy.config must be an object");
      job.cfg = parsePolicyLossConfig(p.Get("config").As<Napi::Object>());
    }
    require(env, info.Length() > 4 && info[4].IsObject(), "options must be an object");
    Napi::Object o = info[4].As<Napi::Object>();
    job.recompute = o.Get("recompute").ToBoolean();
    job.inlineRuns = o.Get("ownThread").ToBoolean();
    job.lossScale = numberField(o, "lossScale");
    const double chunk = numberField(o, "chunkTokens");
    require(env, chunk >= 1 && std::floor(chunk) == chunk, "chunkTokens must be an integer >= 1");
    job.chunkTokens = static_cast<size_t>(chunk);
    const double slot = o.Has("gradSlot") ? numberField(o, "gradSlot") : 0;
    require(env, slot >= 0 && slot < Optimizer::kGradSlots && std::floor(slot) == slot,
            "gradSlot must be an integer in [0, " + std::to_string(Optimizer::kGradSlots) + ")");
    const int s = static_cast<int>(slot);
    require(env, !(*slotsBusy_ & (1u << s)), "a backward on this gradient slot is running; await it first");
    require(env, *busy_ == __builtin_popcount(*slotsBusy_),
            "the model is busy (a forward pass, a load or an optimizer step is running); await it first");
    Napi::Float32Array logprobs = Napi::Float32Array::New(env, T);
    // The worker takes its gradient slot (allocated on first use) here, on the JS thread.
    auto* w = guarded(
        env, [&] { return new LossWorker(env, busy_, model_, train_, std::move(job), logprobs, slotsBusy_, s); });
    Napi::Promise pr = w->Promise();
    w->Queue();
    return pr;
  }

  // optimizerStep({ lr, beta1, beta2, eps, weightDecay, maxGradNorm, decayAll }): clip, AdamW,
  // zero the gradients. Promise<{ gradNorm (before clipping), step }>.
  Napi::Value OptimizerStep(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    requireIdle(env);
    require(env, info.Length() > 0 && info[0].IsObject(), "optimizerStep expects a config object");
    Napi::Object o = info[0].As<Napi::Object>();
    OptimizerStepConfig cfg;
    AdamWConfig& c = cfg.adamw;
    c.lr = numberField(o, "lr");
    c.beta1 = numberField(o, "beta1");
    c.beta2 = numberField(o, "beta2");
    c.eps = numberField(o, "eps");
    c.weightDecay = numberField(o, "weightDecay");
    cfg.maxGradNorm = numberField(o, "maxGradNorm");
    cfg.decayAll = o.Get("decayAll").ToBoolean();
    require(env,
            c.lr >= 0 && c.beta1 >= 0 && c.beta1 < 1 && c.beta2 >= 0 && c.beta2 < 1 && c.eps > 0 &&
                c.weightDecay >= 0 && cfg.maxGradNorm >= 0,
            "bad AdamW config");
    auto* w = new StepWorker(env, busy_, mutating_, model_, train_, cfg);
    Napi::Promise p = w->Promise();
    w->Queue();
    return p;
  }

  // optimizerState(): { step, m, v } copies (m, v null before the first step), for checkpoints.
  Napi::Value OptimizerState(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    requireIdle(env);
    Napi::Object o = Napi::Object::New(env);
    o.Set("step", static_cast<double>(train_->steps()));
    if (!train_->hasMoments()) {
      o.Set("m", env.Null());
      o.Set("v", env.Null());
      return o;
    }
    Napi::Float32Array m = Napi::Float32Array::New(env, train_->size());
    Napi::Float32Array v = Napi::Float32Array::New(env, train_->size());
    guarded(env, [&] { train_->readMoments(m.Data(), v.Data()); });
    o.Set("m", m);
    o.Set("v", v);
    return o;
  }

  // weightVersion(): changes whenever the weights do (loads, setParams, optimizer steps).
  Napi::Value WeightVersion(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(model_->weightVersion()));
  }

  Napi::Value OptimizerSteps(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(train_->steps()));
  }

  // setOptimizerState(step, m, v): restores a checkpoint's moments.
  Napi::Value SetOptimizerState(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    requireIdle(env);
    const int64_t step = argInteger(info, 0, "step");
    Napi::Float32Array m = argFloat32Array(info, 1, "m"), v = argFloat32Array(info, 2, "v");
    require(env, step >= 0 && m.ElementLength() == model_->arenaSize() && v.ElementLength() == model_->arenaSize(),
            "m and v must each hold one value per parameter");
    guarded(env, [&] { train_->setState(step, m.Data(), v.Data()); });
    return env.Undefined();
  }

  // resetOptimizer(): a fresh optimizer's state (no steps, zero moments), as a new torch optimizer.
  Napi::Value ResetOptimizer(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    requireIdle(env);
    train_->reset();
    return env.Undefined();
  }

  std::shared_ptr<Model> model_;
  std::shared_ptr<std::atomic<int>> busy_ = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<Optimizer> train_;  // the gradients and AdamW state, on the model's device (the host)
  std::shared_ptr<uint32_t> slotsBusy_ = std::make_shared<uint32_t>(0);  // bit s: a backward on slot s runs
  std::shared_ptr<std::atomic<int>> mutating_ = std::make_shared<std::atomic<int>>(0);
  int64_t externalBytes_ = 0;
};

Napi::Function defineModel(Napi::Env env) { return ModelWrap::Define(env); }

}  // namespace swerl::napi

// JS binding of the decoder (model/model.h): class NativeModel, wrapped by src/model/model.ts,
// which validates first. Heavy calls (forward, loading weights) are AsyncWorkers resolving a
// Promise; while one runs, calls that change the weights throw INVALID_ARGUMENT instead of racing.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "io/safetensors_reader.h"
#include "model/model.h"
#include "napi/args.h"
#include "napi/errors.h"
#include "napi/kv_binding.h"

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

// A background job on the model: counts itself busy from construction to completion.
class ModelWorker : public Napi::AsyncWorker {
 public:
  ModelWorker(Napi::Env env, std::shared_ptr<std::atomic<int>> busy)
      : Napi::AsyncWorker(env, "swerl:ModelWorker"),
        busy_(std::move(busy)),
        deferred_(Napi::Promise::Deferred::New(env)) {
    ++*busy_;
  }
  ~ModelWorker() override { --*busy_; }
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
  std::shared_ptr<std::atomic<int>> busy_;
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
  LoadWorker(Napi::Env env, std::shared_ptr<std::atomic<int>> busy, std::shared_ptr<Model> model, std::string path,
             std::vector<TensorCopy> copies)
      : ModelWorker(env, std::move(busy)),
        model_(std::move(model)),
        path_(std::move(path)),
        copies_(std::move(copies)) {}
  void OnOK() override { deferred().Resolve(Env().Undefined()); }

 private:
  void run() override { readSafetensors(path_, copies_); }
  std::shared_ptr<Model> model_;  // owns the arena the copies write to
  std::string path_;
  std::vector<TensorCopy> copies_;
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
         InstanceMethod<&ModelWrap::ForwardPaged>("forwardPaged")});
  }

  // new NativeModel(config): all weights 0.
  explicit ModelWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ModelWrap>(info) {
    Napi::Env env = info.Env();
    require(env, info.Length() >= 1 && info[0].IsObject(), "NativeModel expects a config object");
    ModelConfig cfg = parseConfig(info[0].As<Napi::Object>());
    guarded(env, [&] { model_ = std::make_shared<Model>(std::move(cfg)); });
    externalBytes_ = static_cast<int64_t>(model_->arenaSize() * sizeof(float));
    Napi::MemoryManagement::AdjustExternalMemory(env, externalBytes_);
  }
  ~ModelWrap() override {
    if (externalBytes_ > 0) Napi::MemoryManagement::AdjustExternalMemory(Env(), -externalBytes_);
  }

 private:
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
    std::copy(model_->arena() + off, model_->arena() + off + count, out.Data());
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
    auto* w = new LoadWorker(env, busy_, model_, info[0].As<Napi::String>().Utf8Value(), std::move(copies));
    Napi::Promise p = w->Promise();
    w->Queue();
    return p;
  }

  // forward(tokens): Promise<Float32Array [T, vocab]>.
  Napi::Value Forward(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
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
    requireIdle(env);
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
    guarded(env, [&] { model_->forwardPaged(b, cache.storage(), out.Data()); });
    return out;
  }

  std::shared_ptr<Model> model_;
  std::shared_ptr<std::atomic<int>> busy_ = std::make_shared<std::atomic<int>>(0);
  int64_t externalBytes_ = 0;
};

Napi::Function defineModel(Napi::Env env) { return ModelWrap::Define(env); }

}  // namespace swerl::napi

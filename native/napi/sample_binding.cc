// JS binding of the batched sampler (kernels/cpu/sampler.h), wrapped by src/sample.ts, which
// fills in defaults and validates; the checks here keep a bypassing caller from crashing.
#include <string>
#include <vector>

#include "kernels/cpu/sampler.h"
#include "napi/args.h"
#include "napi/errors.h"

namespace swerl::napi {

namespace {

float floatField(Napi::Object o, const char* name) {
  Napi::Value v = o.Get(name);
  require(o.Env(), v.IsNumber(), std::string("params.") + name + " must be a number");
  return v.As<Napi::Number>().FloatValue();
}

void tokensField(Napi::Object o, const char* name, const int32_t*& data, size_t& n) {
  Napi::Value v = o.Get(name);
  if (v.IsUndefined() || v.IsNull()) return;
  require(o.Env(), v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == napi_int32_array,
          std::string("params.") + name + " must be an Int32Array");
  Napi::Int32Array a = v.As<Napi::Int32Array>();
  data = a.Data();
  n = a.ElementLength();
}

// sampleRows on the libuv pool: owns copies of the params' token histories and the positions,
// holds the logits array (the caller must not change it until the Promise settles).
class SampleWorker : public Napi::AsyncWorker {
 public:
  SampleWorker(Napi::Env env, Napi::Float32Array logits, size_t vocab, std::vector<SamplingParams> params,
               std::vector<std::vector<int32_t>> histories, std::vector<int32_t> positions)
      : Napi::AsyncWorker(env, "swerl:SampleWorker"),
        deferred_(Napi::Promise::Deferred::New(env)),
        logitsRef_(Napi::Persistent(logits)),
        logits_(logits.Data()),
        vocab_(vocab),
        params_(std::move(params)),
        histories_(std::move(histories)),
        positions_(std::move(positions)),
        out_(params_.size()) {
    for (size_t r = 0; r < params_.size(); ++r) {  // point the params at the owned copies
      params_[r].promptTokens = histories_[2 * r].data();
      params_[r].outputTokens = histories_[2 * r + 1].data();
    }
  }
  Napi::Promise Promise() { return deferred_.Promise(); }
  void Execute() override {
    try {
      sampleRows(logits_, params_.size(), vocab_, params_.data(), positions_.empty() ? nullptr : positions_.data(),
                 out_.data());
    } catch (...) {
      describeCurrentException(code_, message_);
      SetError(message_);
    }
  }
  void OnOK() override {
    const size_t rows = out_.size();
    Napi::Env env = Env();
    Napi::Int32Array tokens = Napi::Int32Array::New(env, rows);
    Napi::Float32Array logprobs = Napi::Float32Array::New(env, rows), raw = Napi::Float32Array::New(env, rows);
    for (size_t r = 0; r < rows; ++r) {
      tokens[r] = out_[r].token;
      logprobs[r] = out_[r].logprob;
      raw[r] = out_[r].rawLogprob;
    }
    Napi::Array result = Napi::Array::New(env, 3);
    result.Set(0u, tokens);
    result.Set(1u, logprobs);
    result.Set(2u, raw);
    deferred_.Resolve(result);
  }
  void OnError(const Napi::Error&) override { deferred_.Reject(swerlError(Env(), code_.c_str(), message_).Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  Napi::Reference<Napi::Float32Array> logitsRef_;
  const float* logits_;
  size_t vocab_;
  std::vector<SamplingParams> params_;
  std::vector<std::vector<int32_t>> histories_;  // per row: prompt tokens, output tokens
  std::vector<int32_t> positions_;
  std::vector<SampleResult> out_;
  std::string code_, message_;
};

}  // namespace

// sample(logits: Float32Array, vocab, params: object[], positions: Int32Array | null, async?)
//   -> [tokens: Int32Array, logprobs: Float32Array, rawLogprobs: Float32Array]
Napi::Value Sample(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    Napi::Float32Array logits = argFloat32Array(info, 0, "logits");
    const int64_t vocab = argInteger(info, 1, "vocab");
    require(env, vocab >= 1, "vocab must be >= 1");
    require(env, info.Length() > 2 && info[2].IsArray(), "params must be an array");
    Napi::Array list = info[2].As<Napi::Array>();
    const size_t rows = list.Length();
    require(env, logits.ElementLength() == rows * static_cast<size_t>(vocab), "logits must be [params.length, vocab]");
    const int32_t* positions = nullptr;
    if (info.Length() > 3 && !info[3].IsNull() && !info[3].IsUndefined()) {
      Napi::Int32Array pos = argInt32Array(info, 3, "positions");
      require(env, pos.ElementLength() == rows, "positions must have one entry per row");
      positions = pos.Data();
    }
    std::vector<SamplingParams> params(rows);
    for (size_t r = 0; r < rows; ++r) {
      Napi::Value v = list.Get(static_cast<uint32_t>(r));
      require(env, v.IsObject(), "params[" + std::to_string(r) + "] must be an object");
      Napi::Object o = v.As<Napi::Object>();
      SamplingParams& p = params[r];
      p.temperature = floatField(o, "temperature");
      const double topK = o.Get("topK").IsNumber() ? o.Get("topK").As<Napi::Number>().DoubleValue() : -1;
      require(env, topK >= 0 && topK <= 2147483647.0 && topK == static_cast<int32_t>(topK),
              "params.topK must be an integer >= 0");
      p.topK = static_cast<int32_t>(topK);
      p.topP = floatField(o, "topP");
      p.minP = floatField(o, "minP");
      const double seed = o.Get("seed").IsNumber() ? o.Get("seed").As<Napi::Number>().DoubleValue() : -1;
      require(env, seed >= 0 && seed <= 9007199254740991.0 && seed == static_cast<double>(static_cast<uint64_t>(seed)),
              "params.seed must be an integer in [0, 2^53)");
      p.seed = static_cast<uint64_t>(seed);
      p.repetitionPenalty = floatField(o, "repetitionPenalty");
      p.presencePenalty = floatField(o, "presencePenalty");
      p.frequencyPenalty = floatField(o, "frequencyPenalty");
      tokensField(o, "promptTokens", p.promptTokens, p.numPromptTokens);
      tokensField(o, "outputTokens", p.outputTokens, p.numOutputTokens);
    }
    if (info.Length() > 4 && info[4].ToBoolean()) {  // async: a Promise of the same triple
      std::vector<std::vector<int32_t>> histories(2 * rows);
      for (size_t r = 0; r < rows; ++r) {
        const SamplingParams& p = params[r];
        histories[2 * r].assign(p.promptTokens, p.promptTokens + p.numPromptTokens);
        histories[2 * r + 1].assign(p.outputTokens, p.outputTokens + p.numOutputTokens);
      }
      auto* w =
          new SampleWorker(env, logits, static_cast<size_t>(vocab), std::move(params), std::move(histories),
                           positions ? std::vector<int32_t>(positions, positions + rows) : std::vector<int32_t>());
      Napi::Promise promise = w->Promise();
      w->Queue();
      return promise;
    }
    std::vector<SampleResult> out(rows);
    sampleRows(logits.Data(), rows, static_cast<size_t>(vocab), params.data(), positions, out.data());
    Napi::Int32Array tokens = Napi::Int32Array::New(env, rows);
    Napi::Float32Array logprobs = Napi::Float32Array::New(env, rows), raw = Napi::Float32Array::New(env, rows);
    for (size_t r = 0; r < rows; ++r) {
      tokens[r] = out[r].token;
      logprobs[r] = out[r].logprob;
      raw[r] = out[r].rawLogprob;
    }
    Napi::Array result = Napi::Array::New(env, 3);
    result.Set(0u, tokens);
    result.Set(1u, logprobs);
    result.Set(2u, raw);
    return result;
  });
}

}  // namespace swerl::napi

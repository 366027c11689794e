// JS binding of the batched sampler (kernels/cpu/sampler.h), wrapped by src/sample.ts, which
// fills in defaults and validates; the checks here keep a bypassing caller from crashing.
#include <string>
#include <vector>

#include "kernels/cpu/sampler.h"
#include "napi/args.h"
#include "napi/errors.h"
#include "napi/sampling_params_arg.h"

namespace swerl::napi {

namespace {

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
    std::vector<SamplingParams> params = samplingParamsArg(info, 2);
    const size_t rows = params.size();
    require(env, logits.ElementLength() == rows * static_cast<size_t>(vocab), "logits must be [params.length, vocab]");
    const int32_t* positions = positionsArg(info, 3, rows);
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

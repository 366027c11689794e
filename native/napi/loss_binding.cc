// JS bindings of the token losses (train/losses.h), wrapped by src/train/losses.ts, which
// validates first; the checks here only keep a bypassing caller from crashing the process.
#include <string>

#include "napi/args.h"
#include "napi/errors.h"
#include "train/losses.h"

namespace swerl::napi {

namespace {

const float* optionalFloats(const Napi::CallbackInfo& info, size_t i, const char* name, size_t n) {
  if (info.Length() <= i || info[i].IsNull() || info[i].IsUndefined()) return nullptr;
  Napi::Float32Array a = argFloat32Array(info, i, name);
  require(info.Env(), a.ElementLength() == n, std::string(name) + " must have one entry per token");
  static const float kEmpty = 0;  // an empty array's Data() may be null, which means "absent" here
  return n == 0 ? &kEmpty : a.Data();
}

double numberField(Napi::Object o, const char* name) {
  Napi::Value v = o.Get(name);
  require(o.Env(), v.IsNumber(), std::string("config.") + name + " must be a number");
  return v.As<Napi::Number>().DoubleValue();
}

// Common arguments: logits, vocab, targets, ...; returns T after checking shapes.
size_t tokenCount(const Napi::CallbackInfo& info, Napi::Float32Array logits, size_t vocab, Napi::Int32Array targets) {
  require(info.Env(), vocab >= 1, "vocab must be >= 1");
  require(info.Env(), logits.ElementLength() == targets.ElementLength() * vocab,
          "logits must be [targets.length, vocab]");
  return targets.ElementLength();
}

Napi::Object resultObject(Napi::Env env, double loss, Napi::Float32Array grad, Napi::Float32Array logprobs) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("loss", loss);
  o.Set("gradLogits", grad);
  o.Set("logprobs", logprobs);
  return o;
}

}  // namespace

// policyLoss(logits, vocab, targets, oldLogprobs, advantages, mask, seqIds|null, refLogprobs|null,
//            rolloutLogprobs|null, config) -> { loss, gradLogits, logprobs, entropy, clipFracLow, clipFracHigh }
Napi::Value PolicyLoss(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    Napi::Float32Array logits = argFloat32Array(info, 0, "logits");
    const int64_t vocab = argInteger(info, 1, "vocab");
    Napi::Int32Array targets = argInt32Array(info, 2, "targets");
    const size_t T = tokenCount(info, logits, static_cast<size_t>(vocab < 1 ? 0 : vocab), targets);
    PolicyLossInputs in{};
    in.logits = logits.Data();
    in.tokens = T;
    in.vocab = static_cast<size_t>(vocab);
    in.targets = targets.Data();
    in.oldLogprobs = optionalFloats(info, 3, "oldLogprobs", T);
    in.advantages = optionalFloats(info, 4, "advantages", T);
    in.mask = optionalFloats(info, 5, "mask", T);
    require(env, in.oldLogprobs && in.advantages && in.mask, "oldLogprobs, advantages and mask are required");
    if (info.Length() > 6 && !info[6].IsNull() && !info[6].IsUndefined()) {
      Napi::Int32Array ids = argInt32Array(info, 6, "seqIds");
      require(env, ids.ElementLength() == T, "seqIds must have one entry per token");
      in.seqIds = ids.Data();
    }
    in.refLogprobs = optionalFloats(info, 7, "refLogprobs", T);
    in.rolloutLogprobs = optionalFloats(info, 8, "rolloutLogprobs", T);
    require(env, info.Length() > 9 && info[9].IsObject(), "config must be an object");
    Napi::Object c = info[9].As<Napi::Object>();
    PolicyLossConfig cfg;
    cfg.clipLow = static_cast<float>(numberField(c, "clipLow"));
    cfg.clipHigh = static_cast<float>(numberField(c, "clipHigh"));
    cfg.dualClip = static_cast<float>(numberField(c, "dualClip"));
    cfg.normLength = numberField(c, "normLength");
    cfg.klCoef = static_cast<float>(numberField(c, "klCoef"));
    cfg.entropyCoef = static_cast<float>(numberField(c, "entropyCoef"));
    cfg.tisCap = static_cast<float>(numberField(c, "tisCap"));
    require(env, c.Get("agg").IsString(), "config.agg must be a string");
    cfg.agg = parseLossAgg(c.Get("agg").As<Napi::String>().Utf8Value());
    Napi::Float32Array grad = Napi::Float32Array::New(env, T * in.vocab);
    Napi::Float32Array logprobs = Napi::Float32Array::New(env, T);
    const PolicyLossResult r = policyLoss(in, cfg, grad.Data(), logprobs.Data());
    Napi::Object o = resultObject(env, r.loss, grad, logprobs);
    o.Set("entropy", r.entropy);
    o.Set("clipFracLow", r.clipFracLow);
    o.Set("clipFracHigh", r.clipFracHigh);
    return o;
  });
}

// sftLoss(logits, vocab, targets, mask) -> { loss, gradLogits, logprobs }
Napi::Value SftLoss(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    Napi::Float32Array logits = argFloat32Array(info, 0, "logits");
    const int64_t vocab = argInteger(info, 1, "vocab");
    Napi::Int32Array targets = argInt32Array(info, 2, "targets");
    const size_t T = tokenCount(info, logits, static_cast<size_t>(vocab < 1 ? 0 : vocab), targets);
    const float* mask = optionalFloats(info, 3, "mask", T);
    require(env, mask != nullptr, "mask is required");
    Napi::Float32Array grad = Napi::Float32Array::New(env, T * static_cast<size_t>(vocab));
    Napi::Float32Array logprobs = Napi::Float32Array::New(env, T);
    const double loss =
        sftLoss(logits.Data(), T, static_cast<size_t>(vocab), targets.Data(), mask, grad.Data(), logprobs.Data());
    return resultObject(env, loss, grad, logprobs);
  });
}

}  // namespace swerl::napi

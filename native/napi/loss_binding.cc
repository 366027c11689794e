// JS bindings of the token losses (train/losses.h), wrapped by src/train/losses.ts, which
// validates first; the checks here only keep a bypassing caller from crashing the process.
#include <string>

#include "napi/args.h"
#include "napi/errors.h"
#include "napi/loss_args.h"
#include "napi/loss_binding.h"
#include "train/fused_lm_head_loss.h"
#include "train/losses.h"

namespace swerl::napi {

namespace {

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

// The gradient buffer: the caller's (info[i], [T, V]; may be the logits themselves: the gradient
// is written in place) or a new one. Reusing one avoids page-faulting a fresh [T, V] array each
// call, which costs more than the loss itself.
Napi::Float32Array gradBuffer(const Napi::CallbackInfo& info, size_t i, size_t n) {
  if (info.Length() > i && !info[i].IsUndefined() && !info[i].IsNull()) {
    Napi::Float32Array g = argFloat32Array(info, i, "gradLogits");
    require(info.Env(), g.ElementLength() == n, "gradLogits must be [targets.length, vocab]");
    return g;
  }
  return Napi::Float32Array::New(info.Env(), n);
}

Napi::Object resultObject(Napi::Env env, double loss, Napi::Float32Array grad, Napi::Float32Array logprobs) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("loss", loss);
  o.Set("gradLogits", grad);
  o.Set("logprobs", logprobs);
  return o;
}

}  // namespace

// ---- shared with the device bindings (napi/loss_args.h) ----

const float* optionalFloats(const Napi::CallbackInfo& info, size_t i, const char* name, size_t n) {
  if (info.Length() <= i || info[i].IsNull() || info[i].IsUndefined()) return nullptr;
  Napi::Float32Array a = argFloat32Array(info, i, name);
  require(info.Env(), a.ElementLength() == n, std::string(name) + " must have one entry per token");
  static const float kEmpty = 0;  // an empty array's Data() may be null, which means "absent" here
  return n == 0 ? &kEmpty : a.Data();
}

float invTemperatureArg(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() <= i || info[i].IsUndefined() || info[i].IsNull()) return 1.0f;
  require(info.Env(), info[i].IsNumber(), "invTemperature must be a number");
  return static_cast<float>(info[i].As<Napi::Number>().DoubleValue());
}

void setPolicyStats(Napi::Object o, const PolicyLossResult& r) {
  o.Set("entropy", r.entropy);
  o.Set("clipFracLow", r.clipFracLow);
  o.Set("clipFracHigh", r.clipFracHigh);
}

void readPolicyTokens(const Napi::CallbackInfo& info, size_t first, size_t T, PolicyLossInputs& in) {
  Napi::Env env = info.Env();
  in.oldLogprobs = optionalFloats(info, first, "oldLogprobs", T);
  in.advantages = optionalFloats(info, first + 1, "advantages", T);
  in.mask = optionalFloats(info, first + 2, "mask", T);
  require(env, in.oldLogprobs && in.advantages && in.mask, "oldLogprobs, advantages and mask are required");
  if (info.Length() > first + 3 && !info[first + 3].IsNull() && !info[first + 3].IsUndefined()) {
    Napi::Int32Array ids = argInt32Array(info, first + 3, "seqIds");
    require(env, ids.ElementLength() == T, "seqIds must have one entry per token");
    in.seqIds = ids.Data();
  }
  in.refLogprobs = optionalFloats(info, first + 4, "refLogprobs", T);
  in.rolloutLogprobs = optionalFloats(info, first + 5, "rolloutLogprobs", T);
}

PolicyLossConfig parsePolicyLossConfig(Napi::Object c) {
  PolicyLossConfig cfg;
  cfg.clipLow = static_cast<float>(numberField(c, "clipLow"));
  cfg.clipHigh = static_cast<float>(numberField(c, "clipHigh"));
  cfg.dualClip = static_cast<float>(numberField(c, "dualClip"));
  cfg.normLength = numberField(c, "normLength");
  cfg.klCoef = static_cast<float>(numberField(c, "klCoef"));
  cfg.entropyCoef = static_cast<float>(numberField(c, "entropyCoef"));
  cfg.tisCap = static_cast<float>(numberField(c, "tisCap"));
  cfg.invTemperature = static_cast<float>(numberField(c, "invTemperature"));
  require(c.Env(), c.Get("agg").IsString(), "config.agg must be a string");
  cfg.agg = parseLossAgg(c.Get("agg").As<Napi::String>().Utf8Value());
  return cfg;
}

// policyLoss(logits, vocab, targets, oldLogprobs, advantages, mask, seqIds|null, refLogprobs|null,
//            rolloutLogprobs|null, config, gradLogits?) -> { loss, gradLogits, logprobs, entropy, clipFracLow,
//            clipFracHigh }
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
    readPolicyTokens(info, 3, T, in);
    require(env, info.Length() > 9 && info[9].IsObject(), "config must be an object");
    const PolicyLossConfig cfg = parsePolicyLossConfig(info[9].As<Napi::Object>());
    Napi::Float32Array grad = gradBuffer(info, 10, T * in.vocab);
    Napi::Float32Array logprobs = Napi::Float32Array::New(env, T);
    const PolicyLossResult r = policyLoss(in, cfg, grad.Data(), logprobs.Data());
    Napi::Object o = resultObject(env, r.loss, grad, logprobs);
    setPolicyStats(o, r);
    return o;
  });
}

// sftLoss(logits, vocab, targets, mask, gradLogits?, invTemperature?) -> { loss, gradLogits, logprobs }
Napi::Value SftLoss(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    Napi::Float32Array logits = argFloat32Array(info, 0, "logits");
    const int64_t vocab = argInteger(info, 1, "vocab");
    Napi::Int32Array targets = argInt32Array(info, 2, "targets");
    const size_t T = tokenCount(info, logits, static_cast<size_t>(vocab < 1 ? 0 : vocab), targets);
    const float* mask = optionalFloats(info, 3, "mask", T);
    require(env, mask != nullptr, "mask is required");
    Napi::Float32Array grad = gradBuffer(info, 4, T * static_cast<size_t>(vocab));
    Napi::Float32Array logprobs = Napi::Float32Array::New(env, T);
    const double loss = sftLoss(logits.Data(), T, static_cast<size_t>(vocab), targets.Data(), mask, grad.Data(),
                                logprobs.Data(), invTemperatureArg(info, 5));
    return resultObject(env, loss, grad, logprobs);
  });
}

// The LM-head arguments at info[0..3]: hidden [T, H], weight [V, H], hiddenSize, vocab; T from targets.
static LmHead readLmHead(const Napi::CallbackInfo& info, size_t T, size_t chunkArg) {
  Napi::Env env = info.Env();
  Napi::Float32Array hidden = argFloat32Array(info, 0, "hidden"), weight = argFloat32Array(info, 1, "weight");
  const int64_t H = argInteger(info, 2, "hiddenSize"), V = argInteger(info, 3, "vocab");
  require(env, H >= 1 && V >= 1, "hiddenSize and vocab must be >= 1");
  require(env, hidden.ElementLength() == T * static_cast<size_t>(H), "hidden must be [targets.length, hiddenSize]");
  require(env, weight.ElementLength() == static_cast<size_t>(V * H), "weight must be [vocab, hiddenSize]");
  const int64_t chunk = argInteger(info, chunkArg, "chunkTokens");
  require(env, chunk >= 1, "chunkTokens must be >= 1");
  return LmHead{hidden.Data(),          weight.Data(),          T,
                static_cast<size_t>(H), static_cast<size_t>(V), static_cast<size_t>(chunk)};
}

// Output buffers at info[i] (gradHidden) and info[i + 1] (gradWeight, accumulated into: dW += ...),
// or new ones (a new gradWeight starts at zero).
static Napi::Float32Array outBuffer(const Napi::CallbackInfo& info, size_t i, const char* name, size_t n) {
  if (info.Length() > i && !info[i].IsUndefined() && !info[i].IsNull()) {
    Napi::Float32Array a = argFloat32Array(info, i, name);
    require(info.Env(), a.ElementLength() == n, std::string(name) + " has the wrong length");
    return a;
  }
  return Napi::Float32Array::New(info.Env(), n);
}

static Napi::Object fusedResult(const Napi::CallbackInfo& info, size_t outArg, const LmHead& h, TokenLoss& loss) {
  Napi::Env env = info.Env();
  Napi::Float32Array dHidden = outBuffer(info, outArg, "gradHidden", h.tokens * h.hiddenSize);
  Napi::Float32Array dWeight = outBuffer(info, outArg + 1, "gradWeight", h.vocab * h.hiddenSize);
  Napi::Float32Array logprobs = Napi::Float32Array::New(env, h.tokens);
  fusedLmHeadLoss(h, loss, dHidden.Data(), dWeight.Data(), logprobs.Data());
  const PolicyLossResult r = loss.result();
  Napi::Object o = Napi::Object::New(env);
  o.Set("loss", r.loss);
  o.Set("gradHidden", dHidden);
  o.Set("gradWeight", dWeight);
  o.Set("logprobs", logprobs);
  setPolicyStats(o, r);
  return o;
}

// policyLossFused(hidden, weight, hiddenSize, vocab, targets, oldLogprobs, advantages, mask, seqIds|null,
//                 refLogprobs|null, rolloutLogprobs|null, config, chunkTokens, gradHidden?, gradWeight?)
Napi::Value PolicyLossFused(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    Napi::Int32Array targets = argInt32Array(info, 4, "targets");
    const size_t T = targets.ElementLength();
    const LmHead h = readLmHead(info, T, 12);
    PolicyLossInputs in{};
    in.tokens = T;
    in.vocab = h.vocab;
    in.targets = targets.Data();
    readPolicyTokens(info, 5, T, in);
    require(env, info.Length() > 11 && info[11].IsObject(), "config must be an object");
    TokenLoss loss(in, parsePolicyLossConfig(info[11].As<Napi::Object>()));
    return fusedResult(info, 13, h, loss);
  });
}

// sftLossFused(hidden, weight, hiddenSize, vocab, targets, mask, chunkTokens, gradHidden?, gradWeight?,
//              invTemperature?)
Napi::Value SftLossFused(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    Napi::Int32Array targets = argInt32Array(info, 4, "targets");
    const size_t T = targets.ElementLength();
    const LmHead h = readLmHead(info, T, 6);
    const float* mask = optionalFloats(info, 5, "mask", T);
    require(env, mask != nullptr, "mask is required");
    TokenLoss loss(T, h.vocab, targets.Data(), mask, invTemperatureArg(info, 9));
    return fusedResult(info, 7, h, loss);
  });
}

}  // namespace swerl::napi

// JS bindings of the CUDA losses (kernels/cuda/losses_cuda.h) on DeviceTensor buffers, wrapped by
// src/train/losses.ts, which validates first. They only convert: the logits and the gradient are
// NativeDeviceBuffers of at least [T, vocab] f32 (the gradient may be the logits' buffer: written
// in place); the per-token inputs are host arrays, read as by the host-array bindings
// (napi/loss_args.h); the logprobs and statistics come back on the host.
#include <cstdint>
#include <string>

#include "kernels/cuda/losses_cuda.h"
#include "napi/args.h"
#include "napi/device_binding.h"
#include "napi/errors.h"
#include "napi/loss_args.h"
#include "napi/loss_binding.h"
#include "train/losses.h"

namespace swerl::napi {

namespace {

// T from targets (info[2]) and vocab (info[1]); the logits (info[0]) and gradient (info[gradArg])
// buffers of at least T·vocab floats, as device pointers.
struct DeviceRows {
  size_t tokens, vocab;
  const int32_t* targets;
  const float* logits;
  float* grad;
};

DeviceRows deviceRows(const Napi::CallbackInfo& info, size_t gradArg) {
  const int64_t vocab = argInteger(info, 1, "vocab");
  require(info.Env(), vocab >= 1, "vocab must be >= 1");
  Napi::Int32Array targets = argInt32Array(info, 2, "targets");
  const size_t T = targets.ElementLength(), V = static_cast<size_t>(vocab);
  require(info.Env(), T == 0 || V <= SIZE_MAX / sizeof(float) / T, "[targets.length, vocab] is too large");
  const size_t bytes = T * V * sizeof(float);
  const DeviceBuffer& logits = deviceBufferArg(info, 0, "logits", bytes);
  DeviceBuffer& grad = deviceBufferArg(info, gradArg, "gradLogits", bytes);
  return DeviceRows{T, V, targets.Data(), static_cast<const float*>(logits.data()), static_cast<float*>(grad.data())};
}

}  // namespace

// policyLossDevice(logits, vocab, targets, oldLogprobs, advantages, mask, seqIds|null, refLogprobs|null,
//                  rolloutLogprobs|null, config, gradLogits) -> { loss, logprobs, entropy, clipFracLow, clipFracHigh }
Napi::Value PolicyLossDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    const DeviceRows rows = deviceRows(info, 10);
    PolicyLossInputs in{};
    in.logits = rows.logits;
    in.tokens = rows.tokens;
    in.vocab = rows.vocab;
    in.targets = rows.targets;
    readPolicyTokens(info, 3, rows.tokens, in);
    require(env, info.Length() > 9 && info[9].IsObject(), "config must be an object");
    const PolicyLossConfig cfg = parsePolicyLossConfig(info[9].As<Napi::Object>());
    Napi::Float32Array logprobs = Napi::Float32Array::New(env, rows.tokens);
    const PolicyLossResult r = policyLossCuda(in, cfg, rows.grad, logprobs.Data());
    Napi::Object o = Napi::Object::New(env);
    o.Set("loss", r.loss);
    o.Set("logprobs", logprobs);
    setPolicyStats(o, r);
    return o;
  });
}

// sftLossDevice(logits, vocab, targets, mask, gradLogits, invTemperature?) -> { loss, logprobs }
Napi::Value SftLossDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    const DeviceRows rows = deviceRows(info, 4);
    const float* mask = optionalFloats(info, 3, "mask", rows.tokens);
    require(env, mask != nullptr, "mask is required");
    Napi::Float32Array logprobs = Napi::Float32Array::New(env, rows.tokens);
    const double loss = sftLossCuda(rows.logits, rows.tokens, rows.vocab, rows.targets, mask, rows.grad,
                                    logprobs.Data(), invTemperatureArg(info, 5));
    Napi::Object o = Napi::Object::New(env);
    o.Set("loss", loss);
    o.Set("logprobs", logprobs);
    return o;
  });
}

}  // namespace swerl::napi

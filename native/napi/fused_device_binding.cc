// JS bindings of the fused LM-head losses on the GPU (kernels/cuda/fused_loss_cuda.h), wrapped by
// src/train/losses.ts (policyLossFused / sftLossFused given DeviceTensors), which validates first;
// the checks here keep a bypassing caller from crashing the process. The hidden states [T, H], the
// weight [V, H] and both gradients are NativeDeviceBuffers of f32 (at least that many bytes; the
// gradients distinct from each other and from the inputs); the per-token inputs are host arrays,
// read as by the host-array bindings (napi/loss_args.h); the logprobs and statistics come back on
// the host. Exports:
//   policyLossFusedDevice(hidden, weight, hiddenSize, vocab, targets, oldLogprobs, advantages, mask,
//       seqIds|null, refLogprobs|null, rolloutLogprobs|null, config, chunkTokens, gradHidden, gradWeight)
//       -> { loss, logprobs, entropy, clipFracLow, clipFracHigh }
//   sftLossFusedDevice(hidden, weight, hiddenSize, vocab, targets, mask, chunkTokens, gradHidden,
//       gradWeight, invTemperature?) -> { loss, logprobs }
// gradHidden is written, gradWeight added to (dW += ...).
#include <cstdint>
#include <string>

#include "kernels/cuda/fused_loss_cuda.h"
#include "napi/args.h"
#include "napi/device_binding.h"
#include "napi/errors.h"
#include "napi/loss_args.h"
#include "napi/loss_binding.h"
#include "train/fused_lm_head_loss.h"
#include "train/losses.h"

namespace swerl::napi {

namespace {

// The device LM head and gradient buffers of one call.
struct DeviceHead {
  LmHead head;  // hidden, weight: device pointers
  float* dHidden;
  float* dWeight;
};

// hidden (info[0]), weight (info[1]), hiddenSize (info[2]), vocab (info[3]), chunkTokens
// (info[chunkArg]), gradHidden and gradWeight (info[gradArg], info[gradArg + 1]) for T tokens.
DeviceHead deviceHead(const Napi::CallbackInfo& info, size_t T, size_t chunkArg, size_t gradArg) {
  Napi::Env env = info.Env();
  const int64_t H = argInteger(info, 2, "hiddenSize"), V = argInteger(info, 3, "vocab");
  require(env, H >= 1 && V >= 1 && H <= 0x7fffffff && V <= 0x7fffffff, "hiddenSize and vocab must be in [1, 2^31 - 1]");
  const int64_t chunk = argInteger(info, chunkArg, "chunkTokens");
  require(env, chunk >= 1, "chunkTokens must be >= 1");
  const size_t h = static_cast<size_t>(H), v = static_cast<size_t>(V);
  require(env, T <= SIZE_MAX / sizeof(float) / h && v <= SIZE_MAX / sizeof(float) / h,
          "[targets.length, hiddenSize] or [vocab, hiddenSize] is too large");
  const size_t hiddenBytes = T * h * sizeof(float), weightBytes = v * h * sizeof(float);
  DeviceBuffer& hidden = deviceBufferArg(info, 0, "hidden", hiddenBytes);
  DeviceBuffer& weight = deviceBufferArg(info, 1, "weight", weightBytes);
  DeviceBuffer& gradHidden = deviceBufferArg(info, gradArg, "gradHidden", hiddenBytes);
  DeviceBuffer& gradWeight = deviceBufferArg(info, gradArg + 1, "gradWeight", weightBytes);
  require(env,
          &gradHidden != &gradWeight && &gradHidden != &hidden && &gradHidden != &weight && &gradWeight != &hidden &&
              &gradWeight != &weight,
          "gradHidden and gradWeight must be distinct tensors, neither of them hidden or weight");
  return DeviceHead{LmHead{static_cast<const float*>(hidden.data()), static_cast<const float*>(weight.data()), T, h, v,
                           static_cast<size_t>(chunk)},
                    static_cast<float*>(gradHidden.data()), static_cast<float*>(gradWeight.data())};
}

}  // namespace

// policyLossFusedDevice(...): see the header.
Napi::Value PolicyLossFusedDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    Napi::Int32Array targets = argInt32Array(info, 4, "targets");
    const size_t T = targets.ElementLength();
    const DeviceHead d = deviceHead(info, T, 12, 13);
    PolicyLossInputs in{};
    in.tokens = T;
    in.vocab = d.head.vocab;
    in.targets = targets.Data();
    readPolicyTokens(info, 5, T, in);
    require(env, info.Length() > 11 && info[11].IsObject(), "config must be an object");
    const PolicyLossConfig cfg = parsePolicyLossConfig(info[11].As<Napi::Object>());
    TokenLoss loss(in, cfg);  // checks the targets and per-token inputs before any device work
    Napi::Float32Array logprobs = Napi::Float32Array::New(env, T);
    fusedLmHeadLossCuda(d.head, loss, in.targets, cfg.invTemperature, d.dHidden, d.dWeight, logprobs.Data());
    const PolicyLossResult r = loss.result();
    Napi::Object o = Napi::Object::New(env);
    o.Set("loss", r.loss);
    o.Set("logprobs", logprobs);
    setPolicyStats(o, r);
    return o;
  });
}

// sftLossFusedDevice(...): see the header.
Napi::Value SftLossFusedDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    Napi::Int32Array targets = argInt32Array(info, 4, "targets");
    const size_t T = targets.ElementLength();
    const DeviceHead d = deviceHead(info, T, 6, 7);
    const float* mask = optionalFloats(info, 5, "mask", T);
    require(env, mask != nullptr, "mask is required");
    const float s = invTemperatureArg(info, 9);
    TokenLoss loss(T, d.head.vocab, targets.Data(), mask, s);
    Napi::Float32Array logprobs = Napi::Float32Array::New(env, T);
    fusedLmHeadLossCuda(d.head, loss, targets.Data(), s, d.dHidden, d.dWeight, logprobs.Data());
    Napi::Object o = Napi::Object::New(env);
    o.Set("loss", loss.result().loss);
    o.Set("logprobs", logprobs);
    return o;
  });
}

}  // namespace swerl::napi

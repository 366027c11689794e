// JS bindings of the CUDA AdamW kernels (kernels/cuda/adamw_cuda.h) on DeviceTensor buffers,
// wrapped by src/train/adamw-device.ts, which validates first:
//   adamwDevice(w, g, m, v, n, { lr, beta1, beta2, eps, weightDecay }, step, decay): void
//   globalNormDevice(g, n): number
//   scaleDevice(g, n, s): void
//   zeroDevice(a, n): void
//   accumulateDevice(into, from, n): void   (into += from, then from = 0)
// Each converts its arguments and calls one kernel entry; the calls are synchronous (the kernels
// are short and the results small).
#include <cmath>
#include <string>

#include "kernels/cuda/adamw_cuda.h"
#include "napi/args.h"
#include "napi/device_binding.h"
#include "napi/errors.h"

namespace swerl::napi {

namespace {

// info[i], a count of f32 elements (≥ 0), and the bytes they take.
size_t elementCount(const Napi::CallbackInfo& info, size_t i) {
  const int64_t n = argInteger(info, i, "n");
  require(info.Env(), n >= 0, "n must be >= 0");
  return static_cast<size_t>(n);
}

double numberField(Napi::Object o, const char* name) {
  Napi::Value v = o.Get(name);
  require(o.Env(), v.IsNumber(), std::string("cfg.") + name + " must be a number");
  return v.As<Napi::Number>().DoubleValue();
}

AdamWConfig adamwConfig(const Napi::CallbackInfo& info, size_t i) {
  Napi::Env env = info.Env();
  require(env, info.Length() > i && info[i].IsObject(), "cfg must be an object");
  Napi::Object o = info[i].As<Napi::Object>();
  AdamWConfig c;
  c.lr = numberField(o, "lr");
  c.beta1 = numberField(o, "beta1");
  c.beta2 = numberField(o, "beta2");
  c.eps = numberField(o, "eps");
  c.weightDecay = numberField(o, "weightDecay");
  require(env,
          c.lr >= 0 && c.beta1 >= 0 && c.beta1 < 1 && c.beta2 >= 0 && c.beta2 < 1 && c.eps > 0 && c.weightDecay >= 0,
          "bad AdamW config");
  return c;
}

}  // namespace

Napi::Value AdamwDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const size_t n = elementCount(info, 4);
  DeviceBuffer& w = deviceBufferArg(info, 0, "w", n * sizeof(float));
  DeviceBuffer& g = deviceBufferArg(info, 1, "g", n * sizeof(float));
  DeviceBuffer& m = deviceBufferArg(info, 2, "m", n * sizeof(float));
  DeviceBuffer& v = deviceBufferArg(info, 3, "v", n * sizeof(float));
  // The kernel reads and writes them as distinct arrays (__restrict__).
  require(env, &w != &g && &w != &m && &w != &v && &g != &m && &g != &v && &m != &v,
          "w, g, m and v must be four different DeviceTensors");
  const AdamWConfig cfg = adamwConfig(info, 5);
  const int64_t step = argInteger(info, 6, "step");
  require(env, step >= 1, "step must be >= 1");
  const bool decay = info.Length() > 7 && info[7].ToBoolean();
  guarded(env, [&] {
    adamwUpdateCuda(static_cast<float*>(w.data()), static_cast<const float*>(g.data()), static_cast<float*>(m.data()),
                    static_cast<float*>(v.data()), n, cfg, step, decay);
  });
  return env.Undefined();
}

Napi::Value GlobalNormDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const size_t n = elementCount(info, 1);
  DeviceBuffer& g = deviceBufferArg(info, 0, "g", n * sizeof(float));
  const double norm = guarded(env, [&] { return globalNormCuda(static_cast<const float*>(g.data()), n); });
  return Napi::Number::New(env, norm);
}

Napi::Value ScaleDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const size_t n = elementCount(info, 1);
  DeviceBuffer& g = deviceBufferArg(info, 0, "g", n * sizeof(float));
  require(env, info.Length() > 2 && info[2].IsNumber(), "s must be a number");
  const float s = info[2].As<Napi::Number>().FloatValue();
  guarded(env, [&] { scaleInPlaceCuda(static_cast<float*>(g.data()), n, s); });
  return env.Undefined();
}

Napi::Value ZeroDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const size_t n = elementCount(info, 1);
  DeviceBuffer& a = deviceBufferArg(info, 0, "a", n * sizeof(float));
  guarded(env, [&] { zeroCuda(static_cast<float*>(a.data()), n); });
  return env.Undefined();
}

Napi::Value AccumulateDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const size_t n = elementCount(info, 2);
  DeviceBuffer& into = deviceBufferArg(info, 0, "into", n * sizeof(float));
  DeviceBuffer& from = deviceBufferArg(info, 1, "from", n * sizeof(float));
  require(env, &into != &from, "into and from must be two different DeviceTensors");
  guarded(env, [&] { accumulateCuda(static_cast<float*>(into.data()), static_cast<float*>(from.data()), n); });
  return env.Undefined();
}

}  // namespace swerl::napi

// JS bindings of the CUDA adamw kernels on DeviceTensor buffers. Not yet written.
#include "napi/args.h"
#include "napi/device_binding.h"
#include "napi/errors.h"

namespace swerl::napi {
Napi::Value AdamwDevice(const Napi::CallbackInfo& info) {
  throw swerlError(info.Env(), "INTERNAL", "AdamwDevice: not written yet");
}
Napi::Value GlobalNormDevice(const Napi::CallbackInfo& info) {
  throw swerlError(info.Env(), "INTERNAL", "GlobalNormDevice: not written yet");
}
Napi::Value ScaleDevice(const Napi::CallbackInfo& info) {
  throw swerlError(info.Env(), "INTERNAL", "ScaleDevice: not written yet");
}
}  // namespace swerl::napi

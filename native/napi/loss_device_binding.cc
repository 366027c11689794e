// JS bindings of the CUDA loss kernels on DeviceTensor buffers. Not yet written.
#include "napi/args.h"
#include "napi/device_binding.h"
#include "napi/errors.h"

namespace swerl::napi {
Napi::Value PolicyLossDevice(const Napi::CallbackInfo& info) {
  throw swerlError(info.Env(), "INTERNAL", "PolicyLossDevice: not written yet");
}
Napi::Value SftLossDevice(const Napi::CallbackInfo& info) {
  throw swerlError(info.Env(), "INTERNAL", "SftLossDevice: not written yet");
}
}  // namespace swerl::napi

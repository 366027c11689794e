// JS bindings of the CUDA sample kernels on DeviceTensor buffers. Not yet written.
#include "napi/args.h"
#include "napi/device_binding.h"
#include "napi/errors.h"

namespace swerl::napi {
Napi::Value SampleDevice(const Napi::CallbackInfo& info) {
  throw swerlError(info.Env(), "INTERNAL", "SampleDevice: not written yet");
}
}  // namespace swerl::napi

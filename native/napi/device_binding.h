// What other bindings need from the device buffer binding: the DeviceBuffer behind an argument.
#pragma once

#include <napi.h>

#include "kernels/cuda/device_buffer.h"

namespace swerl::napi {

/**
 * The buffer behind info[i], a NativeDeviceBuffer of at least minBytes; INVALID_ARGUMENT for
 * anything else or a smaller one, DISPOSED after dispose().
 */
DeviceBuffer& deviceBufferArg(const Napi::CallbackInfo& info, size_t i, const char* name, size_t minBytes);

}  // namespace swerl::napi

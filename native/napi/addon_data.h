// Per-environment state of the addon (one per main thread or worker thread that loads it).
// Never static: an addon may be loaded into several worker threads at once.
#pragma once

#include <napi.h>

namespace swerl::napi {

struct AddonData {
  Napi::FunctionReference swerlError;         // the JS SwerlError class, set by init()
  Napi::FunctionReference kvCacheClass;       // NativePagedKvCache, to recognise its instances
  Napi::FunctionReference deviceBufferClass;  // NativeDeviceBuffer, likewise
};

inline AddonData& addonData(Napi::Env env) { return *env.GetInstanceData<AddonData>(); }

}  // namespace swerl::napi

// The addon's entry point: module exports and per-environment setup. The only native file,
// with the other napi/ files, that knows about Node.
//
// Exports: init(SwerlError), nativeInfo(), NativePagedKvCache, measureStreamCopy(),
// measurePeakFma(). src/native.ts declares the same shape as the NativeBinding interface.
#include <napi.h>

#include "napi/addon_data.h"
#include "napi/args.h"

namespace swerl::napi {

Napi::Function defineKvCache(Napi::Env env);
Napi::Value NativeInfo(const Napi::CallbackInfo& info);
Napi::Value MeasureStreamCopy(const Napi::CallbackInfo& info);
Napi::Value MeasurePeakFma(const Napi::CallbackInfo& info);

// init(SwerlError): the JS class native errors are created as; called once by src/native.ts.
static Napi::Value InitErrors(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  require(env, info.Length() >= 1 && info[0].IsFunction(), "init expects the SwerlError class");
  addonData(env).swerlError = Napi::Persistent(info[0].As<Napi::Function>());
  return env.Undefined();
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  auto* data = new AddonData();
  env.SetInstanceData(data);  // deleted by Node when the environment shuts down
  exports.Set("init", Napi::Function::New(env, InitErrors, "init"));
  exports.Set("nativeInfo", Napi::Function::New(env, NativeInfo, "nativeInfo"));
  exports.Set("measureStreamCopy", Napi::Function::New(env, MeasureStreamCopy, "measureStreamCopy"));
  exports.Set("measurePeakFma", Napi::Function::New(env, MeasurePeakFma, "measurePeakFma"));
  Napi::Function kv = defineKvCache(env);
  data->kvCacheClass = Napi::Persistent(kv);
  exports.Set("NativePagedKvCache", kv);
  return exports;
}

}  // namespace swerl::napi

static Napi::Object InitSwerl(Napi::Env env, Napi::Object exports) { return swerl::napi::Init(env, exports); }

NODE_API_MODULE(swerl, InitSwerl)

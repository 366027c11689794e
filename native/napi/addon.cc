// The addon's entry point: module exports and per-environment setup. The only native file,
// with the other napi/ files, that knows about Node.
//
// Exports: init(SwerlError), nativeInfo(), NativePagedKvCache, measureStreamCopy(),
// measurePeakFma(), measureDeviceCopy(), policyLoss(), sftLoss(), sample(), policyLossFused(), sftLossFused(),
// gemm(), packMatrix(), gemmPacked(), NativeModel, and the CUDA kernels on device memory:
// NativeDeviceBuffer, sampleDevice(), policyLossDevice(), sftLossDevice(), adamwDevice(),
// globalNormDevice(), scaleDevice(), zeroDevice(), accumulateDevice(), gemmBf16Device(), policyLossFusedDevice(),
// sftLossFusedDevice(). src/native.ts declares the same shape as the NativeBinding interface.
#include <napi.h>

#if defined(__unix__) || defined(__APPLE__)
#include <dlfcn.h>
#endif

#include <mutex>

#include "napi/addon_data.h"
#include "napi/args.h"

namespace swerl::napi {

Napi::Function defineKvCache(Napi::Env env);
Napi::Function defineModel(Napi::Env env);
Napi::Value NativeInfo(const Napi::CallbackInfo& info);
Napi::Value MeasureStreamCopy(const Napi::CallbackInfo& info);
Napi::Value MeasurePeakFma(const Napi::CallbackInfo& info);
Napi::Value MeasureDeviceCopy(const Napi::CallbackInfo& info);
Napi::Value PolicyLoss(const Napi::CallbackInfo& info);
Napi::Value SftLoss(const Napi::CallbackInfo& info);
Napi::Value Sample(const Napi::CallbackInfo& info);
Napi::Value PolicyLossFused(const Napi::CallbackInfo& info);
Napi::Value SftLossFused(const Napi::CallbackInfo& info);
Napi::Value Gemm(const Napi::CallbackInfo& info);
Napi::Value AttentionScores(const Napi::CallbackInfo& info);
Napi::Value AttentionGradients(const Napi::CallbackInfo& info);
Napi::Value PackMatrix(const Napi::CallbackInfo& info);
Napi::Value GemmPacked(const Napi::CallbackInfo& info);
Napi::Function defineDeviceBuffer(Napi::Env env);
Napi::Value SampleDevice(const Napi::CallbackInfo& info);
Napi::Value PolicyLossDevice(const Napi::CallbackInfo& info);
Napi::Value SftLossDevice(const Napi::CallbackInfo& info);
Napi::Value AdamwDevice(const Napi::CallbackInfo& info);
Napi::Value GlobalNormDevice(const Napi::CallbackInfo& info);
Napi::Value ScaleDevice(const Napi::CallbackInfo& info);
Napi::Value ZeroDevice(const Napi::CallbackInfo& info);
Napi::Value AccumulateDevice(const Napi::CallbackInfo& info);
Napi::Value GemmBf16Device(const Napi::CallbackInfo& info);
Napi::Value PolicyLossFusedDevice(const Napi::CallbackInfo& info);
Napi::Value SftLossFusedDevice(const Napi::CallbackInfo& info);

// init(SwerlError): the JS class native errors are created as; called once by src/native.ts.
static Napi::Value InitErrors(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  require(env, info.Length() >= 1 && info[0].IsFunction(), "init expects the SwerlError class");
  addonData(env).swerlError = Napi::Persistent(info[0].As<Napi::Function>());
  return env.Undefined();
}

// Node unloads an addon (dlclose) when the last environment that loaded it, e.g. a worker
// thread, exits. The kernel thread pool's threads live as long as the process and run code in
// this library, so it must never be unmapped: take a reference that dlclose cannot drop.
static void pinLibrary() {
#if defined(__unix__) || defined(__APPLE__)
  Dl_info self;
  if (dladdr(reinterpret_cast<void*>(&pinLibrary), &self) != 0 && self.dli_fname != nullptr)
    dlopen(self.dli_fname, RTLD_LAZY | RTLD_NODELETE);
#endif
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  static std::once_flag pinned;
  std::call_once(pinned, pinLibrary);
  auto* data = new AddonData();
  env.SetInstanceData(data);  // deleted by Node when the environment shuts down
  exports.Set("init", Napi::Function::New(env, InitErrors, "init"));
  exports.Set("nativeInfo", Napi::Function::New(env, NativeInfo, "nativeInfo"));
  exports.Set("measureStreamCopy", Napi::Function::New(env, MeasureStreamCopy, "measureStreamCopy"));
  exports.Set("measurePeakFma", Napi::Function::New(env, MeasurePeakFma, "measurePeakFma"));
  exports.Set("measureDeviceCopy", Napi::Function::New(env, MeasureDeviceCopy, "measureDeviceCopy"));
  exports.Set("policyLoss", Napi::Function::New(env, PolicyLoss, "policyLoss"));
  exports.Set("sftLoss", Napi::Function::New(env, SftLoss, "sftLoss"));
  exports.Set("sample", Napi::Function::New(env, Sample, "sample"));
  exports.Set("policyLossFused", Napi::Function::New(env, PolicyLossFused, "policyLossFused"));
  exports.Set("sftLossFused", Napi::Function::New(env, SftLossFused, "sftLossFused"));
  exports.Set("gemm", Napi::Function::New(env, Gemm, "gemm"));
  exports.Set("attentionScores", Napi::Function::New(env, AttentionScores, "attentionScores"));
  exports.Set("attentionGradients", Napi::Function::New(env, AttentionGradients, "attentionGradients"));
  exports.Set("packMatrix", Napi::Function::New(env, PackMatrix, "packMatrix"));
  exports.Set("gemmPacked", Napi::Function::New(env, GemmPacked, "gemmPacked"));
  exports.Set("NativePagedKvCache", defineKvCache(env));
  exports.Set("NativeModel", defineModel(env));
  exports.Set("NativeDeviceBuffer", defineDeviceBuffer(env));
  exports.Set("sampleDevice", Napi::Function::New(env, SampleDevice, "sampleDevice"));
  exports.Set("policyLossDevice", Napi::Function::New(env, PolicyLossDevice, "policyLossDevice"));
  exports.Set("sftLossDevice", Napi::Function::New(env, SftLossDevice, "sftLossDevice"));
  exports.Set("adamwDevice", Napi::Function::New(env, AdamwDevice, "adamwDevice"));
  exports.Set("globalNormDevice", Napi::Function::New(env, GlobalNormDevice, "globalNormDevice"));
  exports.Set("scaleDevice", Napi::Function::New(env, ScaleDevice, "scaleDevice"));
  exports.Set("zeroDevice", Napi::Function::New(env, ZeroDevice, "zeroDevice"));
  exports.Set("accumulateDevice", Napi::Function::New(env, AccumulateDevice, "accumulateDevice"));
  exports.Set("gemmBf16Device", Napi::Function::New(env, GemmBf16Device, "gemmBf16Device"));
  exports.Set("policyLossFusedDevice", Napi::Function::New(env, PolicyLossFusedDevice, "policyLossFusedDevice"));
  exports.Set("sftLossFusedDevice", Napi::Function::New(env, SftLossFusedDevice, "sftLossFusedDevice"));
  return exports;
}

}  // namespace swerl::napi

static Napi::Object InitSwerl(Napi::Env env, Napi::Object exports) { return swerl::napi::Init(env, exports); }

NODE_API_MODULE(swerl, InitSwerl)

// nativeInfo() and the machine-limit probes of the benchmark harness. The probes run for a
// second or more, so they are AsyncWorkers that resolve a Promise: the JS thread stays free.
#include <functional>
#include <string>

#include "bench/machine_limits.h"
#include "common/cpu_features.h"
#include "common/error.h"
#include "common/thread_pool.h"
#include "kernels/cuda/cuda_runtime.h"
#include "napi/args.h"
#include "napi/errors.h"

#ifndef SWERL_VERSION
#define SWERL_VERSION "0.0.0"
#endif

namespace swerl::napi {

namespace {

// Runs a double-valued native computation on the libuv pool and resolves with its result.
class NumberWorker : public Napi::AsyncWorker {
 public:
  NumberWorker(Napi::Env env, std::function<double()> fn)
      : Napi::AsyncWorker(env, "swerl:NumberWorker"),
        fn_(std::move(fn)),
        deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise Promise() { return deferred_.Promise(); }

  void Execute() override {
    try {
      result_ = fn_();
    } catch (...) {
      describeCurrentException(code_, message_);
      SetError(message_);
    }
  }
  void OnOK() override { deferred_.Resolve(Napi::Number::New(Env(), result_)); }
  void OnError(const Napi::Error&) override { deferred_.Reject(swerlError(Env(), code_.c_str(), message_).Value()); }

 private:
  std::function<double()> fn_;
  Napi::Promise::Deferred deferred_;
  double result_ = 0;
  std::string code_, message_;
};

Napi::Value queue(Napi::Env env, std::function<double()> fn) {
  auto* worker = new NumberWorker(env, std::move(fn));  // deleted by node-addon-api after OnOK/OnError
  Napi::Promise p = worker->Promise();
  worker->Queue();
  return p;
}

}  // namespace

Napi::Value NativeInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&] {
    Napi::Object o = Napi::Object::New(env);
    o.Set("version", SWERL_VERSION);
    o.Set("cuda", cudaBuilt());
    o.Set("cudaDevices", cudaDeviceCount());
    o.Set("cudaSimulated", cudaSimulated());
    o.Set("cudaRuntimeVersion", cudaRuntimeVersion());
    o.Set("simd", simdLevelName(simdLevel()));
    o.Set("threads", ThreadPool::global().size());
    o.Set("peakFmaIsa", peakFmaIsa());
    Napi::Array codes = Napi::Array::New(env);
    for (int c = 0; c < static_cast<int>(ErrorCode::Count); ++c)
      codes.Set(static_cast<uint32_t>(c), errorCodeName(static_cast<ErrorCode>(c)));
    o.Set("errorCodes", codes);
    return o;
  });
}

// measureStreamCopy(bytes, reps, threads) -> Promise<GB/s>
Napi::Value MeasureStreamCopy(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&] {
    int64_t bytes = argInteger(info, 0, "bytes"), reps = argInteger(info, 1, "reps"),
            threads = argInteger(info, 2, "threads");
    require(info.Env(), bytes >= 1024 && reps >= 1 && reps <= 1000 && threads >= 1 && threads <= 1024,
            "bytes >= 1024, 1 <= reps <= 1000, 1 <= threads <= 1024");
    return queue(info.Env(), [=] {
      return measureStreamCopyGbps(static_cast<size_t>(bytes), static_cast<int>(reps), static_cast<int>(threads));
    });
  });
}

// measureDeviceCopy(bytes, reps) -> GB/s of the CUDA device's copies (synchronous: a GPU copy
// takes microseconds).
Napi::Value MeasureDeviceCopy(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&] {
    int64_t bytes = argInteger(info, 0, "bytes"), reps = argInteger(info, 1, "reps");
    require(info.Env(), bytes >= 1024 && reps >= 1 && reps <= 1000, "bytes >= 1024, 1 <= reps <= 1000");
    return Napi::Number::New(info.Env(), measureDeviceCopyGbps(static_cast<size_t>(bytes), static_cast<int>(reps)));
  });
}

// measurePeakFma(seconds, threads) -> Promise<GFLOP/s>
Napi::Value MeasurePeakFma(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&] {
    require(info.Env(), info.Length() >= 1 && info[0].IsNumber(), "seconds must be a number");
    double secs = info[0].As<Napi::Number>().DoubleValue();
    int64_t threads = argInteger(info, 1, "threads");
    require(info.Env(), secs > 0 && secs <= 60 && threads >= 1 && threads <= 1024,
            "0 < seconds <= 60, 1 <= threads <= 1024");
    return queue(info.Env(), [=] { return measurePeakFmaGflops(secs, static_cast<int>(threads)); });
  });
}

}  // namespace swerl::napi

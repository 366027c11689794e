// JS binding of DeviceBuffer (kernels/cuda/device_buffer.h), wrapped by src/device-tensor.ts:
//   new NativeDeviceBuffer(bytes); upload(typedArray, byteOffset); download(typedArray, byteOffset);
//   bytes(); dispose().
// Copies are synchronous and explicit; the typed array's whole byte range is copied.
#include <memory>
#include <string>

#include "napi/addon_data.h"
#include "napi/args.h"
#include "napi/device_binding.h"
#include "napi/errors.h"

namespace swerl::napi {

namespace {

class DeviceBufferWrap : public Napi::ObjectWrap<DeviceBufferWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(
        env, "NativeDeviceBuffer",
        {InstanceMethod<&DeviceBufferWrap::Upload>("upload"), InstanceMethod<&DeviceBufferWrap::Download>("download"),
         InstanceMethod<&DeviceBufferWrap::Bytes>("bytes"), InstanceMethod<&DeviceBufferWrap::Dispose>("dispose")});
  }

  explicit DeviceBufferWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<DeviceBufferWrap>(info) {
    guarded(info.Env(), [&] {
      const int64_t bytes = argInteger(info, 0, "bytes");
      require(info.Env(), bytes >= 1, "bytes must be >= 1");
      buffer_ = std::make_unique<DeviceBuffer>(static_cast<size_t>(bytes));
      return 0;
    });
  }

  DeviceBuffer& buffer(Napi::Env env) {
    if (!buffer_) throw swerlError(env, "DISPOSED", "this DeviceTensor was disposed; create a new one");
    return *buffer_;
  }

 private:
  // The byte range of info[0], a typed array, and the byte offset info[1] in the device buffer.
  static Napi::TypedArray hostArg(const Napi::CallbackInfo& info) {
    require(info.Env(), info.Length() >= 1 && info[0].IsTypedArray(), "a typed array is required");
    return info[0].As<Napi::TypedArray>();
  }

  Napi::Value Upload(const Napi::CallbackInfo& info) {
    return guarded(info.Env(), [&] {
      Napi::TypedArray a = hostArg(info);
      const int64_t offset = info.Length() > 1 ? argInteger(info, 1, "byteOffset") : 0;
      require(info.Env(), offset >= 0, "byteOffset must be >= 0");
      const auto* src = static_cast<const char*>(a.ArrayBuffer().Data()) + a.ByteOffset();
      buffer(info.Env()).upload(static_cast<size_t>(offset), src, a.ByteLength());
      return info.Env().Undefined();
    });
  }

  Napi::Value Download(const Napi::CallbackInfo& info) {
    return guarded(info.Env(), [&] {
      Napi::TypedArray a = hostArg(info);
      const int64_t offset = info.Length() > 1 ? argInteger(info, 1, "byteOffset") : 0;
      require(info.Env(), offset >= 0, "byteOffset must be >= 0");
      auto* dst = static_cast<char*>(a.ArrayBuffer().Data()) + a.ByteOffset();
      buffer(info.Env()).download(static_cast<size_t>(offset), dst, a.ByteLength());
      return info.Env().Undefined();
    });
  }

  Napi::Value Bytes(const Napi::CallbackInfo& info) {
    return guarded(info.Env(), [&] { return Napi::Number::New(info.Env(), buffer(info.Env()).bytes()); });
  }

  // dispose(): frees the device memory now instead of at garbage collection; idempotent.
  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    buffer_.reset();
    return info.Env().Undefined();
  }

  std::unique_ptr<DeviceBuffer> buffer_;
};

}  // namespace

Napi::Function defineDeviceBuffer(Napi::Env env) {
  Napi::Function ctor = DeviceBufferWrap::Define(env);
  addonData(env).deviceBufferClass = Napi::Persistent(ctor);
  return ctor;
}

DeviceBuffer& deviceBufferArg(const Napi::CallbackInfo& info, size_t i, const char* name, size_t minBytes) {
  Napi::Env env = info.Env();
  require(env,
          info.Length() > i && info[i].IsObject() &&
              info[i].As<Napi::Object>().InstanceOf(addonData(env).deviceBufferClass.Value()),
          std::string(name) + " must be a DeviceTensor");
  DeviceBuffer& b = DeviceBufferWrap::Unwrap(info[i].As<Napi::Object>())->buffer(env);
  require(env, b.bytes() >= minBytes,
          std::string(name) + " holds " + std::to_string(b.bytes()) + " bytes; " + std::to_string(minBytes) +
              " are needed");
  return b;
}

}  // namespace swerl::napi

// JS binding of the device GEMM (kernels/cuda/blas.h), for tests and benchmarks:
//   gemmBf16Device(a, b, M, N, K, transA, transB, c, beta): c[M, N] = op(bf16(a)) · op(bf16(b)) + beta · c
// with a, b, c NativeDeviceBuffers of f32.
#include "kernels/cuda/blas.h"
#include "napi/args.h"
#include "napi/device_binding.h"
#include "napi/errors.h"

namespace swerl::napi {

Napi::Value GemmBf16Device(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&] {
    const int64_t M = argInteger(info, 2, "M"), N = argInteger(info, 3, "N"), K = argInteger(info, 4, "K");
    require(env, M >= 0 && N >= 0 && K >= 0, "M, N and K must be >= 0");
    require(env, info.Length() > 8 && info[5].IsBoolean() && info[6].IsBoolean() && info[8].IsNumber(),
            "transA, transB must be booleans and beta a number");
    const size_t m = static_cast<size_t>(M), n = static_cast<size_t>(N), k = static_cast<size_t>(K);
    DeviceBuffer& a = deviceBufferArg(info, 0, "a", m * k * sizeof(float));
    DeviceBuffer& b = deviceBufferArg(info, 1, "b", k * n * sizeof(float));
    DeviceBuffer& c = deviceBufferArg(info, 7, "c", m * n * sizeof(float));
    gemmBf16FromF32Cuda(m, n, k, static_cast<const float*>(a.data()), info[5].As<Napi::Boolean>().Value(),
                        static_cast<const float*>(b.data()), info[6].As<Napi::Boolean>().Value(),
                        static_cast<float*>(c.data()), n, static_cast<float>(info[8].As<Napi::Number>().DoubleValue()));
    return env.Undefined();
  });
}

}  // namespace swerl::napi

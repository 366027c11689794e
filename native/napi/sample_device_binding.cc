// JS binding of the CUDA sampler (kernels/cuda/sampler_cuda.h) on a DeviceTensor's buffer,
// wrapped by src/sample.ts, which validates first. It only converts: the logits are a
// NativeDeviceBuffer of at least [rows, vocab] f32, the params and positions are read as by the
// host-array binding (napi/sampling_params_arg.h), and the results come back on the host.
#include <cstdint>
#include <vector>

#include "kernels/cuda/sampler_cuda.h"
#include "napi/args.h"
#include "napi/device_binding.h"
#include "napi/errors.h"
#include "napi/sampling_params_arg.h"

namespace swerl::napi {

// sampleDevice(logits: NativeDeviceBuffer, rows, vocab, params: object[], positions: Int32Array | null,
//              topLogprobs = 0)
//   -> [tokens: Int32Array, logprobs: Float32Array, rawLogprobs: Float32Array], and with
//      topLogprobs n > 0 also [topTokens: Int32Array [rows, n], topLogprobs: Float32Array [rows, n]]
Napi::Value SampleDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    const int64_t rows = argInteger(info, 1, "rows");
    const int64_t vocab = argInteger(info, 2, "vocab");
    require(env, rows >= 0, "rows must be >= 0");
    require(env, vocab >= 1, "vocab must be >= 1");
    const size_t R = static_cast<size_t>(rows), V = static_cast<size_t>(vocab);
    require(env, R == 0 || V <= SIZE_MAX / sizeof(float) / R, "[rows, vocab] is too large");
    const DeviceBuffer& logits = deviceBufferArg(info, 0, "logits", R * V * sizeof(float));
    std::vector<SamplingParams> params = samplingParamsArg(info, 3);
    require(env, params.size() == R, "params must have one entry per row");
    const int32_t* positions = positionsArg(info, 4, R);
    const int64_t topN = info.Length() > 5 && !info[5].IsUndefined() ? argInteger(info, 5, "topLogprobs") : 0;
    require(env, topN >= 0, "topLogprobs must be >= 0");
    const size_t N = static_cast<size_t>(topN);
    std::vector<SampleResult> out(R);
    Napi::Int32Array topTokens = Napi::Int32Array::New(env, R * N);
    Napi::Float32Array topLogprobs = Napi::Float32Array::New(env, R * N);
    sampleRowsCuda(static_cast<const float*>(logits.data()), R, V, params.data(), positions, out.data(), N,
                   N > 0 ? topTokens.Data() : nullptr, N > 0 ? topLogprobs.Data() : nullptr);
    Napi::Int32Array tokens = Napi::Int32Array::New(env, R);
    Napi::Float32Array logprobs = Napi::Float32Array::New(env, R), raw = Napi::Float32Array::New(env, R);
    for (size_t r = 0; r < R; ++r) {
      tokens[r] = out[r].token;
      logprobs[r] = out[r].logprob;
      raw[r] = out[r].rawLogprob;
    }
    Napi::Array result = Napi::Array::New(env, N > 0 ? 5 : 3);
    result.Set(0u, tokens);
    result.Set(1u, logprobs);
    result.Set(2u, raw);
    if (N > 0) {
      result.Set(3u, topTokens);
      result.Set(4u, topLogprobs);
    }
    return result;
  });
}

}  // namespace swerl::napi

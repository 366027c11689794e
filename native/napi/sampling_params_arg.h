// Argument readers shared by the sampler bindings (napi/sample_binding.cc on host logits,
// napi/sample_device_binding.cc on device logits): the rows' SamplingParams objects, as
// src/sample.ts normalises them (every field present), and the optional positions. The token
// histories are borrowed from the JS arrays for the call's duration.
#pragma once

#include <napi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/sampler.h"
#include "napi/args.h"
#include "napi/errors.h"

namespace swerl::napi {

namespace sampling_args_detail {

inline float floatField(Napi::Object o, const char* name) {
  Napi::Value v = o.Get(name);
  require(o.Env(), v.IsNumber(), std::string("params.") + name + " must be a number");
  return v.As<Napi::Number>().FloatValue();
}

inline void tokensField(Napi::Object o, const char* name, const int32_t*& data, size_t& n) {
  Napi::Value v = o.Get(name);
  if (v.IsUndefined() || v.IsNull()) return;
  require(o.Env(), v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == napi_int32_array,
          std::string("params.") + name + " must be an Int32Array");
  Napi::Int32Array a = v.As<Napi::Int32Array>();
  data = a.Data();
  n = a.ElementLength();
}

inline SamplingParams oneRow(Napi::Env env, Napi::Value v, size_t r) {
  require(env, v.IsObject(), "params[" + std::to_string(r) + "] must be an object");
  Napi::Object o = v.As<Napi::Object>();
  SamplingParams p;
  p.temperature = floatField(o, "temperature");
  const double topK = o.Get("topK").IsNumber() ? o.Get("topK").As<Napi::Number>().DoubleValue() : -1;
  require(env, topK >= 0 && topK <= 2147483647.0 && topK == static_cast<int32_t>(topK),
          "params.topK must be an integer >= 0");
  p.topK = static_cast<int32_t>(topK);
  p.topP = floatField(o, "topP");
  p.minP = floatField(o, "minP");
  const double seed = o.Get("seed").IsNumber() ? o.Get("seed").As<Napi::Number>().DoubleValue() : -1;
  require(env, seed >= 0 && seed <= 9007199254740991.0 && seed == static_cast<double>(static_cast<uint64_t>(seed)),
          "params.seed must be an integer in [0, 2^53)");
  p.seed = static_cast<uint64_t>(seed);
  p.repetitionPenalty = floatField(o, "repetitionPenalty");
  p.presencePenalty = floatField(o, "presencePenalty");
  p.frequencyPenalty = floatField(o, "frequencyPenalty");
  tokensField(o, "promptTokens", p.promptTokens, p.numPromptTokens);
  tokensField(o, "outputTokens", p.outputTokens, p.numOutputTokens);
  return p;
}

}  // namespace sampling_args_detail

/** info[i]: an array of one params object per row. */
inline std::vector<SamplingParams> samplingParamsArg(const Napi::CallbackInfo& info, size_t i) {
  Napi::Env env = info.Env();
  require(env, info.Length() > i && info[i].IsArray(), "params must be an array");
  Napi::Array list = info[i].As<Napi::Array>();
  std::vector<SamplingParams> params(list.Length());
  for (size_t r = 0; r < params.size(); ++r)
    params[r] = sampling_args_detail::oneRow(env, list.Get(static_cast<uint32_t>(r)), r);
  return params;
}

/** info[i]: an Int32Array of one position per row, or null/undefined/absent (nullptr: all 0). */
inline const int32_t* positionsArg(const Napi::CallbackInfo& info, size_t i, size_t rows) {
  if (info.Length() <= i || info[i].IsNull() || info[i].IsUndefined()) return nullptr;
  Napi::Int32Array pos = argInt32Array(info, i, "positions");
  require(info.Env(), pos.ElementLength() == rows, "positions must have one entry per row");
  return pos.Data();
}

}  // namespace swerl::napi

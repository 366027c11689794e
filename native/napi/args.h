// Argument readers for the bindings. TypeScript validates first with precise messages; these
// re-check the shape so that a caller who bypasses the wrapper still gets INVALID_ARGUMENT,
// never a crash. TypedArray readers borrow the JS memory (no copy) for the call's duration.
#pragma once

#include <napi.h>

#include <cmath>
#include <string>

#include "napi/errors.h"

namespace swerl::napi {

inline int64_t argInteger(const Napi::CallbackInfo& info, size_t i, const char* name) {
  // Messages are built only on failure: this runs on every hot call.
  Napi::Env env = info.Env();
  if (info.Length() <= i || !info[i].IsNumber())
    throw swerlError(env, "INVALID_ARGUMENT", std::string(name) + " must be a number");
  double d = info[i].As<Napi::Number>().DoubleValue();
  if (!(std::isfinite(d) && std::floor(d) == d && std::fabs(d) <= 9007199254740991.0))
    throw swerlError(env, "INVALID_ARGUMENT", std::string(name) + " must be a safe integer, got " + std::to_string(d));
  return static_cast<int64_t>(d);
}

template <typename T>
inline Napi::TypedArrayOf<T> argTypedArray(const Napi::CallbackInfo& info, size_t i, const char* name,
                                           napi_typedarray_type type, const char* typeName) {
  if (info.Length() <= i || !info[i].IsTypedArray() || info[i].As<Napi::TypedArray>().TypedArrayType() != type)
    throw swerlError(info.Env(), "INVALID_ARGUMENT", std::string(name) + " must be a " + typeName);
  return info[i].As<Napi::TypedArrayOf<T>>();
}

inline Napi::Int32Array argInt32Array(const Napi::CallbackInfo& info, size_t i, const char* name) {
  return argTypedArray<int32_t>(info, i, name, napi_int32_array, "Int32Array");
}

inline Napi::Float32Array argFloat32Array(const Napi::CallbackInfo& info, size_t i, const char* name) {
  return argTypedArray<float>(info, i, name, napi_float32_array, "Float32Array");
}

inline Napi::Float64Array argFloat64Array(const Napi::CallbackInfo& info, size_t i, const char* name) {
  return argTypedArray<double>(info, i, name, napi_float64_array, "Float64Array");
}

}  // namespace swerl::napi

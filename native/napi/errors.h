// Error plumbing between the native core and JS: every native failure becomes a JS SwerlError
// with a stable code, and no C++ exception escapes into Node.
#pragma once

#include <napi.h>

#include <string>

namespace swerl::napi {

/** A Napi::Error wrapping `new SwerlError(message, code)`; throw it. */
Napi::Error swerlError(Napi::Env env, const char* code, const std::string& message);

/** Throws INVALID_ARGUMENT unless cond. */
void require(Napi::Env env, bool cond, const std::string& message);
/** The same for a literal message: nothing is allocated when cond holds. */
inline void require(Napi::Env env, bool cond, const char* message) {
  if (!cond) require(env, false, std::string(message));
}

/** Converts the exception in flight (called from a catch(...) block) into a JS SwerlError. */
[[noreturn]] void rethrowAsSwerlError(Napi::Env env);

/** Runs fn and converts any native exception into a JS SwerlError. */
template <typename Fn>
auto guarded(Napi::Env env, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Napi::Error&) {
    throw;
  } catch (...) {
    rethrowAsSwerlError(env);
  }
}

/** The message and code of the exception in flight, for AsyncWorker::Execute (no JS there). */
void describeCurrentException(std::string& code, std::string& message);

}  // namespace swerl::napi

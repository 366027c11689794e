// Typed errors of the native core.
//
// Every failure a user can cause carries one of a fixed set of codes. native/napi turns a
// swerl::Error into a JS SwerlError whose `code` is errorCodeName(code), so these names are part
// of the public API: add codes freely, never rename one. Nothing in this file knows about Node.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace swerl {

enum class ErrorCode : int {
  InvalidArgument = 0,  // wrong type, range or shape of an argument
  UnknownSequence,      // a sequence id that was never created or was already freed
  KvCacheFull,          // not enough free KV blocks for the request
  CudaUnavailable,      // CUDA asked for, but not built in or no device present
  CudaError,            // a CUDA runtime call failed
  OutOfMemory,          // a host allocation failed
  Internal,             // a broken invariant: a bug in swerl, please report it
  Disposed,             // the object's native resources were released with dispose()
  NonFiniteLogits,      // NaN or ±Inf in logits given to the sampler or a loss
  CorruptFile,          // a model file is truncated or its contents are inconsistent
  IoError,              // a file could not be opened, mapped or written
  NonFiniteGradient,    // NaN or ±Inf in the accumulated gradients: the optimizer step was skipped
  Count
};

/** The stable string for a code, e.g. "KV_CACHE_FULL". */
const char* errorCodeName(ErrorCode code);

/** The exception every native component throws; the binding layer converts it. */
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace swerl

// Throws swerl::Error(code, msg) unless cond holds. msg is any expression convertible to
// std::string; it is only evaluated on failure.
#define SWERL_CHECK(cond, code, msg)                                    \
  do {                                                                  \
    if (!(cond)) throw ::swerl::Error(::swerl::ErrorCode::code, (msg)); \
  } while (0)

// An internal invariant. Failing it is a bug, reported with file:line instead of crashing.
#define SWERL_ASSERT(cond)                                                                                             \
  do {                                                                                                                 \
    if (!(cond))                                                                                                       \
      throw ::swerl::Error(::swerl::ErrorCode::Internal, std::string("internal invariant failed: ") + #cond + " at " + \
                                                             __FILE__ + ":" + std::to_string(__LINE__));               \
  } while (0)

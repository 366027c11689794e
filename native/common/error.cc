// Names of the native error codes (see error.h). The TypeScript side checks at load time that it
// knows every name listed here.
#include "common/error.h"

namespace swerl {

const char* errorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidArgument:
      return "INVALID_ARGUMENT";
    case ErrorCode::UnknownSequence:
      return "UNKNOWN_SEQUENCE";
    case ErrorCode::KvCacheFull:
      return "KV_CACHE_FULL";
    case ErrorCode::CudaUnavailable:
      return "CUDA_UNAVAILABLE";
    case ErrorCode::CudaError:
      return "CUDA_ERROR";
    case ErrorCode::OutOfMemory:
      return "OUT_OF_MEMORY";
    case ErrorCode::Internal:
      return "INTERNAL";
    case ErrorCode::Disposed:
      return "DISPOSED";
    case ErrorCode::NonFiniteLogits:
      return "NON_FINITE_LOGITS";
    case ErrorCode::CorruptFile:
      return "CORRUPT_FILE";
    case ErrorCode::IoError:
      return "IO_ERROR";
    case ErrorCode::NonFiniteGradient:
      return "NON_FINITE_GRADIENT";
    case ErrorCode::Count:
      break;
  }
  return "INTERNAL";
}

}  // namespace swerl

// The CUDA losses kernels (losses_cuda.h). Not yet written: every entry throws INTERNAL.
#include "common/error.h"
#include "kernels/cuda/losses_cuda.h"
namespace swerl {
PolicyLossResult policyLossCuda(const PolicyLossInputs&, const PolicyLossConfig&, float*, float*) {
  throw Error(ErrorCode::Internal, "policyLossCuda: not written yet");
}
double sftLossCuda(const float*, size_t, size_t, const int32_t*, const float*, float*, float*, float) {
  throw Error(ErrorCode::Internal, "sftLossCuda: not written yet");
}
}  // namespace swerl

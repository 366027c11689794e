// The CUDA adamw kernels (adamw_cuda.h). Not yet written: every entry throws INTERNAL.
#include "common/error.h"
#include "kernels/cuda/adamw_cuda.h"
namespace swerl {
double globalNormCuda(const float*, size_t) { throw Error(ErrorCode::Internal, "globalNormCuda: not written yet"); }
void scaleInPlaceCuda(float*, size_t, float) { throw Error(ErrorCode::Internal, "scaleInPlaceCuda: not written yet"); }
void adamwUpdateCuda(float*, const float*, float*, float*, size_t, const AdamWConfig&, int64_t, bool) {
  throw Error(ErrorCode::Internal, "adamwUpdateCuda: not written yet");
}
}  // namespace swerl

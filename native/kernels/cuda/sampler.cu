// The CUDA sampler kernels (sampler_cuda.h). Not yet written: every entry throws INTERNAL.
#include "common/error.h"
#include "kernels/cuda/sampler_cuda.h"
namespace swerl {
void sampleRowsCuda(const float*, size_t, size_t, const SamplingParams*, const int32_t*, SampleResult*) {
  throw Error(ErrorCode::Internal, "sampleRowsCuda: not written yet");
}
}  // namespace swerl

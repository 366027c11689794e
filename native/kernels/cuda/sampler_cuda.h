// Batched sampling on device logits: the CUDA twin of sampleRows (kernels/cpu/sampler.h), with
// the same contract. logits [rows, vocab] f32 in device memory; params, positions and out on the
// host. Implemented by sampler.cu; sampler_absent.cc throws CUDA_UNAVAILABLE.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/sampler.h"

namespace swerl {

/** Samples every row on the device; throws INVALID_ARGUMENT or NON_FINITE_LOGITS before writing `out`. */
void sampleRowsCuda(const float* deviceLogits, size_t rows, size_t vocab, const SamplingParams* params,
                    const int32_t* positions, SampleResult* out);

}  // namespace swerl

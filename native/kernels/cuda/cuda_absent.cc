// The CUDA entry points of a CPU-only build: CUDA reports absent, and every CUDA kernel entry
// (a CUDA KV cache, a device buffer, sampling, the losses, AdamW) says how to get one.
#include <string>

#include "common/error.h"
#include "kernels/cuda/adamw_cuda.h"
#include "kernels/cuda/blas.h"
#include "kernels/cuda/cuda_runtime.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/fused_loss_cuda.h"
#include "kernels/cuda/losses_cuda.h"
#include "kernels/cuda/sampler_cuda.h"
#include "kv/kv_storage.h"

namespace swerl {

namespace {
[[noreturn]] void unavailable() {
  throw Error(ErrorCode::CudaUnavailable,
              "this swerl build has no CUDA kernels. Rebuild on a machine with the CUDA toolkit (nvcc on PATH): "
              "npm run build:native, or use device: 'cpu'.");
}
}  // namespace

bool cudaBuilt() { return false; }
bool cudaSimulated() { return false; }
int cudaDeviceCount() { return 0; }
int cudaRuntimeVersion() { return 0; }
double measureDeviceCopyGbps(size_t, int) { unavailable(); }

std::unique_ptr<KvStorage> makeCudaKvStorage(const KvGeometry&) { unavailable(); }

void gemmBf16Cuda(size_t, size_t, size_t, const uint16_t*, bool, const uint16_t*, bool, float*, size_t, float) {
  unavailable();
}
void gemmBf16FromF32Cuda(size_t, size_t, size_t, const float*, bool, const float*, bool, float*, size_t, float) {
  unavailable();
}
void toBf16Cuda(const float*, uint16_t*, size_t) { unavailable(); }

DeviceBuffer::DeviceBuffer(size_t) { unavailable(); }
DeviceBuffer::~DeviceBuffer() = default;
void DeviceBuffer::upload(size_t, const void*, size_t) { unavailable(); }
void DeviceBuffer::download(size_t, void*, size_t) const { unavailable(); }

void sampleRowsCuda(const float*, size_t, size_t, const SamplingParams*, const int32_t*, SampleResult*, size_t,
                    int32_t*, float*) {
  unavailable();
}
PolicyLossResult policyLossCuda(const PolicyLossInputs&, const PolicyLossConfig&, float*, float*) { unavailable(); }
double sftLossCuda(const float*, size_t, size_t, const int32_t*, const float*, float*, float*, float) { unavailable(); }
void fusedLmHeadLossCuda(const LmHead&, TokenLoss&, const int32_t*, float, float*, float*, float*) { unavailable(); }
double globalNormCuda(const float*, size_t) { unavailable(); }
void scaleInPlaceCuda(float*, size_t, float) { unavailable(); }
void adamwUpdateCuda(float*, const float*, float*, float*, size_t, const AdamWConfig&, int64_t, bool) { unavailable(); }
void zeroCuda(float*, size_t) { unavailable(); }
void accumulateCuda(float*, float*, size_t) { unavailable(); }

}  // namespace swerl

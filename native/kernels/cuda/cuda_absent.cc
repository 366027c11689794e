// The CUDA entry points of a CPU-only build: CUDA reports absent, and asking for a CUDA KV cache
// says how to get one.
#include "common/error.h"
#include "kernels/cuda/cuda_runtime.h"
#include "kv/kv_storage.h"

namespace swerl {

bool cudaBuilt() { return false; }
int cudaDeviceCount() { return 0; }
int cudaRuntimeVersion() { return 0; }

std::unique_ptr<KvStorage> makeCudaKvStorage(const KvGeometry&) {
  throw Error(ErrorCode::CudaUnavailable,
              "this swerl build has no CUDA kernels. Rebuild on a machine with the CUDA toolkit (nvcc on PATH): "
              "npm run build:native, or use device: 'cpu'.");
}

}  // namespace swerl

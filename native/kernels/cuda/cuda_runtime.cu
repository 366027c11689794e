// CUDA device discovery for a CUDA build. The runtime is linked statically and loads the driver
// lazily, so on a machine without a driver or GPU every query reports zero devices instead of
// failing to load.
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_runtime.h"

namespace swerl {

bool cudaBuilt() { return true; }

int cudaDeviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device / insufficient driver" error
    return 0;
  }
  return n;
}

int cudaRuntimeVersion() {
  int v = 0;
  return cudaRuntimeGetVersion(&v) == cudaSuccess ? v : 0;
}

}  // namespace swerl

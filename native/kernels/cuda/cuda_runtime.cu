// CUDA device discovery for a CUDA build (and for the simulation addon, whose one device is the CPU). The runtime is
// linked statically and loads the driver lazily, so on a machine without a driver or GPU every query reports zero
// devices instead of failing to load.
#include "kernels/cuda/cuda_compat.h"
#include "kernels/cuda/cuda_runtime.h"

namespace swerl {

bool cudaBuilt() { return true; }

bool cudaSimulated() { return SWERL_CUDA_SIMULATED != 0; }

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

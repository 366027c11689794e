// CUDA device discovery for a CUDA build (and for the simulation addon, whose one device is the CPU). The runtime is
// linked statically and loads the driver lazily, so on a machine without a driver or GPU every query reports zero
// devices instead of failing to load.
#include <string>

#include "common/error.h"
#include "kernels/cuda/cuda_check.h"
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

double measureDeviceCopyGbps(size_t bytes, int reps) {
  if (cudaDeviceCount() == 0) throw Error(ErrorCode::CudaUnavailable, "no CUDA device is visible");
  void* src = nullptr;
  void* dst = nullptr;
  cudaEvent_t start = nullptr, end = nullptr;
  float ms = 0;
  try {
    CUDA_CHECK(cudaMalloc(&src, bytes));
    CUDA_CHECK(cudaMalloc(&dst, bytes));
    CUDA_CHECK(cudaMemset(src, 1, bytes));
    CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));  // warm-up
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&end));
    CUDA_CHECK(cudaEventRecord(start));
    for (int r = 0; r < reps; ++r) CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
    CUDA_CHECK(cudaEventRecord(end));
    CUDA_CHECK(cudaEventSynchronize(end));
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, end));
  } catch (...) {
    cudaFree(src);
    cudaFree(dst);
    if (start) cudaEventDestroy(start);
    if (end) cudaEventDestroy(end);
    throw;
  }
  cudaFree(src);
  cudaFree(dst);
  cudaEventDestroy(start);
  cudaEventDestroy(end);
  return 2.0 * static_cast<double>(bytes) * reps / (static_cast<double>(ms) * 1e6);  // read + write
}

}  // namespace swerl

// DeviceBuffer (device_buffer.h) on CUDA's runtime: cudaMalloc, cudaMemcpy, synchronous.
#include <string>

#include "common/error.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_compat.h"
#include "kernels/cuda/cuda_runtime.h"
#include "kernels/cuda/device_buffer.h"

namespace swerl {

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) throw Error(ErrorCode::InvalidArgument, "a device buffer needs at least one byte");
  if (cudaDeviceCount() == 0)
    throw Error(ErrorCode::CudaUnavailable,
                "no CUDA device is visible (check the driver and CUDA_VISIBLE_DEVICES); use the CPU arrays instead");
  CUDA_CHECK(cudaMalloc(&ptr_, bytes));
  const cudaError_t zeroed = cudaMemset(ptr_, 0, bytes);
  if (zeroed != cudaSuccess) {
    cudaFree(ptr_);
    CUDA_CHECK(zeroed);
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

void DeviceBuffer::checkRange(size_t offset, size_t n) const {
  if (offset > bytes_ || n > bytes_ - offset)
    throw Error(ErrorCode::InvalidArgument, "a copy of " + std::to_string(n) + " bytes at offset " +
                                                std::to_string(offset) + " runs past the device buffer's " +
                                                std::to_string(bytes_) + " bytes");
}

void DeviceBuffer::upload(size_t offset, const void* src, size_t n) {
  checkRange(offset, n);
  CUDA_CHECK(cudaMemcpy(static_cast<char*>(ptr_) + offset, src, n, cudaMemcpyHostToDevice));
}

void DeviceBuffer::download(size_t offset, void* dst, size_t n) const {
  checkRange(offset, n);
  CUDA_CHECK(cudaMemcpy(dst, static_cast<const char*>(ptr_) + offset, n, cudaMemcpyDeviceToHost));
}

}  // namespace swerl

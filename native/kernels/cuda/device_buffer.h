// Device memory held from JavaScript (DeviceTensor): one owned allocation, zero-filled, with
// explicit copies in and out. The kernels' host entry points (sampler_cuda.h, losses_cuda.h,
// adamw_cuda.h) take its data() pointer. Implemented by device_buffer.cu (nvcc, or the CPU
// simulation) and by cuda_absent.cc, where the constructor throws CUDA_UNAVAILABLE.
#pragma once

#include <cstddef>

namespace swerl {

class DeviceBuffer {
 public:
  /** Allocates `bytes` (≥ 1) of device memory, zeroed; CUDA_UNAVAILABLE without a device. */
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  /** Copies n host bytes to [offset, offset + n); INVALID_ARGUMENT (nothing copied) if out of range. */
  void upload(size_t offset, const void* src, size_t n);
  /** Copies [offset, offset + n) to host memory; INVALID_ARGUMENT if out of range. */
  void download(size_t offset, void* dst, size_t n) const;

 private:
  void checkRange(size_t offset, size_t n) const;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace swerl

// Device-memory KV pages with the same layout and conversions as the CPU storage
// (kv_storage.h): [numBlocks, blockSize, numKvHeads, headDim] per layer for K and for V.
// write()/read() take host f32 rows, stage them on the device and scatter/gather by slot.
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_compat.h"
#include "kernels/cuda/cuda_runtime.h"
#include "kv/kv_storage.h"

namespace swerl {

namespace {

template <typename T>
__device__ T fromF32(float x);
template <>
__device__ float fromF32<float>(float x) {
  return x;
}
template <>
__device__ __half fromF32<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __nv_bfloat16 fromF32<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

__device__ float toF32(float x) { return x; }
__device__ float toF32(__half x) { return __half2float(x); }
__device__ float toF32(__nv_bfloat16 x) { return __bfloat162float(x); }

// grid.x = rows; each block strides over the row's elements.
template <typename T>
__global__ void scatterRows(T* pages, const int32_t* slots, const float* src, size_t rowElems) {
  const size_t row = blockIdx.x;
  T* dst = pages + static_cast<size_t>(slots[row]) * rowElems;
  for (size_t i = threadIdx.x; i < rowElems; i += blockDim.x) dst[i] = fromF32<T>(src[row * rowElems + i]);
}

template <typename T>
__global__ void gatherRows(const T* pages, const int32_t* slots, float* dst, size_t rowElems) {
  const size_t row = blockIdx.x;
  const T* src = pages + static_cast<size_t>(slots[row]) * rowElems;
  for (size_t i = threadIdx.x; i < rowElems; i += blockDim.x) dst[row * rowElems + i] = toF32(src[i]);
}

template <typename T>
void launchScatter(void* pages, const int32_t* slots, size_t n, const float* src, size_t rowElems) {
  SWERL_LAUNCH(scatterRows<T>, static_cast<unsigned>(n), 256, 0, static_cast<T*>(pages), slots, src, rowElems);
}

template <typename T>
void launchGather(const void* pages, const int32_t* slots, size_t n, float* dst, size_t rowElems) {
  SWERL_LAUNCH(gatherRows<T>, static_cast<unsigned>(n), 256, 0, static_cast<const T*>(pages), slots, dst, rowElems);
}

class CudaKvStorage final : public KvStorage {
 public:
  explicit CudaKvStorage(const KvGeometry& geo) : KvStorage(geo) {
    SWERL_CHECK(cudaDeviceCount() > 0, CudaUnavailable,
                "no CUDA device is visible (check the driver and CUDA_VISIBLE_DEVICES), use device: 'cpu'");
    pageBytes_ = geo.slots() * geo.rowElems() * dtypeBytes(geo.dtype);
    try {
      for (int32_t l = 0; l < 2 * geo.numLayers; ++l) {
        void* p = nullptr;
        CUDA_CHECK(cudaMalloc(&p, pageBytes_));
        pages_.push_back(p);
        CUDA_CHECK(cudaMemset(p, 0, pageBytes_));
      }
    } catch (...) {
      release();
      throw;
    }
  }
  ~CudaKvStorage() override { release(); }
  Device device() const override { return Device::Cuda; }

  void write(int32_t layer, const int32_t* slots, size_t n, const float* k, const float* v) override {
    if (n == 0) return;
    stage(slots, n);
    for (int kv = 0; kv < 2; ++kv) {
      CUDA_CHECK(cudaMemcpy(rows_, kv == 0 ? k : v, n * geo_.rowElems() * sizeof(float), cudaMemcpyHostToDevice));
      void* page = pages_[2 * layer + kv];
      switch (geo_.dtype) {
        case KvDtype::F32:
          launchScatter<float>(page, slotsDev_, n, rows_, geo_.rowElems());
          break;
        case KvDtype::F16:
          launchScatter<__half>(page, slotsDev_, n, rows_, geo_.rowElems());
          break;
        case KvDtype::Bf16:
          launchScatter<__nv_bfloat16>(page, slotsDev_, n, rows_, geo_.rowElems());
          break;
      }
      CUDA_CHECK(cudaGetLastError());
    }
    CUDA_CHECK(cudaDeviceSynchronize());
  }

  void read(int32_t layer, const int32_t* slots, size_t n, float* k, float* v) const override {
    if (n == 0) return;
    auto* self = const_cast<CudaKvStorage*>(this);
    self->stage(slots, n);
    for (int kv = 0; kv < 2; ++kv) {
      const void* page = pages_[2 * layer + kv];
      switch (geo_.dtype) {
        case KvDtype::F32:
          launchGather<float>(page, slotsDev_, n, rows_, geo_.rowElems());
          break;
        case KvDtype::F16:
          launchGather<__half>(page, slotsDev_, n, rows_, geo_.rowElems());
          break;
        case KvDtype::Bf16:
          launchGather<__nv_bfloat16>(page, slotsDev_, n, rows_, geo_.rowElems());
          break;
      }
      CUDA_CHECK(cudaGetLastError());
      CUDA_CHECK(cudaMemcpy(kv == 0 ? k : v, rows_, n * geo_.rowElems() * sizeof(float), cudaMemcpyDeviceToHost));
    }
  }

  void copyBlock(int32_t src, int32_t dst, int32_t slots) override {
    const size_t rowBytes = geo_.rowElems() * dtypeBytes(geo_.dtype);
    const size_t blockBytes = static_cast<size_t>(geo_.blockSize) * rowBytes;
    for (void* page : pages_) {
      auto* base = static_cast<unsigned char*>(page);
      CUDA_CHECK(
          cudaMemcpy(base + dst * blockBytes, base + src * blockBytes, slots * rowBytes, cudaMemcpyDeviceToDevice));
    }
  }

  const void* kPages(int32_t layer) const override { return pages_[2 * layer]; }
  const void* vPages(int32_t layer) const override { return pages_[2 * layer + 1]; }

 private:
  // Grows the device staging buffers to n rows and uploads the slot ids.
  void stage(const int32_t* slots, size_t n) {
    if (n > capacity_) {
      if (slotsDev_) cudaFree(slotsDev_);
      if (rows_) cudaFree(rows_);
      slotsDev_ = nullptr;
      rows_ = nullptr;
      capacity_ = 0;
      CUDA_CHECK(cudaMalloc(&slotsDev_, n * sizeof(int32_t)));
      CUDA_CHECK(cudaMalloc(&rows_, n * geo_.rowElems() * sizeof(float)));
      capacity_ = n;
    }
    CUDA_CHECK(cudaMemcpy(slotsDev_, slots, n * sizeof(int32_t), cudaMemcpyHostToDevice));
  }

  void release() {
    for (void* p : pages_) cudaFree(p);
    pages_.clear();
    if (slotsDev_) cudaFree(slotsDev_);
    if (rows_) cudaFree(rows_);
  }

  size_t pageBytes_ = 0;
  std::vector<void*> pages_;  // device pointers: K0, V0, K1, V1, ...
  int32_t* slotsDev_ = nullptr;
  float* rows_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace

std::unique_ptr<KvStorage> makeCudaKvStorage(const KvGeometry& geo) { return std::make_unique<CudaKvStorage>(geo); }

}  // namespace swerl

// Scatter/gather of KV rows with the portable converters and run-time AVX2 dispatch.
#include "kernels/cpu/kv_kernels.h"

#include <algorithm>
#include <cstring>

#include "common/cpu_features.h"
#include "common/half.h"
#include "common/thread_pool.h"

namespace swerl {

void convertRowF32To(void* dst, const float* src, size_t n, KvDtype dtype) {
  if (dtype == KvDtype::F32) {
    std::memcpy(dst, src, n * sizeof(float));
  } else if (dtype == KvDtype::F16) {
    auto* d = static_cast<uint16_t*>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = f32ToF16(src[i]);
  } else {
    auto* d = static_cast<uint16_t*>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = f32ToBf16(src[i]);
  }
}

void convertRowToF32(float* dst, const void* src, size_t n, KvDtype dtype) {
  if (dtype == KvDtype::F32) {
    std::memcpy(dst, src, n * sizeof(float));
  } else if (dtype == KvDtype::F16) {
    const auto* s = static_cast<const uint16_t*>(src);
    for (size_t i = 0; i < n; ++i) dst[i] = f16ToF32(s[i]);
  } else {
    const auto* s = static_cast<const uint16_t*>(src);
    for (size_t i = 0; i < n; ++i) dst[i] = bf16ToF32(s[i]);
  }
}

// Rows are split over the pool when there is enough work to pay for the hand-off.
constexpr size_t kMinElemsPerTask = 1 << 16;

void kvScatterRows(void* pages, const int32_t* slots, size_t n, const float* src, size_t rowElems, KvDtype dtype) {
  const size_t rowBytes = rowElems * dtypeBytes(dtype);
  auto* base = static_cast<unsigned char*>(pages);
  const bool avx2 = hasAvx2() && dtype != KvDtype::F32;
  parallelFor(n, rowElems, kMinElemsPerTask, [&](size_t i) {
    void* dst = base + static_cast<size_t>(slots[i]) * rowBytes;
    if (avx2)
      convertRowF32ToAvx2(dst, src + i * rowElems, rowElems, dtype);
    else
      convertRowF32To(dst, src + i * rowElems, rowElems, dtype);
  });
}

void kvGatherRows(const void* pages, const int32_t* slots, size_t n, float* dst, size_t rowElems, KvDtype dtype) {
  const size_t rowBytes = rowElems * dtypeBytes(dtype);
  const auto* base = static_cast<const unsigned char*>(pages);
  const bool avx2 = hasAvx2() && dtype != KvDtype::F32;
  parallelFor(n, rowElems, kMinElemsPerTask, [&](size_t i) {
    const void* src = base + static_cast<size_t>(slots[i]) * rowBytes;
    if (avx2)
      convertRowToF32Avx2(dst + i * rowElems, src, rowElems, dtype);
    else
      convertRowToF32(dst + i * rowElems, src, rowElems, dtype);
  });
}

}  // namespace swerl

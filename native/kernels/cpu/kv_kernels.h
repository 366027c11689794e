// CPU kernels that move KV rows between f32 activations and the paged KV pages.
//
// pages: [slots, rowElems] of dtype. src/dst: [n, rowElems] f32. slots[i] is the destination or
// source row of row i. Rows are independent, so the result does not depend on threading.
// Conversions round to nearest even (common/half.h) on every path.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kv/kv_storage.h"

namespace swerl {

void kvScatterRows(void* pages, const int32_t* slots, size_t n, const float* src, size_t rowElems, KvDtype dtype);
void kvGatherRows(const void* pages, const int32_t* slots, size_t n, float* dst, size_t rowElems, KvDtype dtype);

// Single-threaded row converters; the *Avx2 versions live in kv_kernels_avx2.cc and may only be
// called when simdLevel() == Avx2Fma.
void convertRowF32To(void* dst, const float* src, size_t n, KvDtype dtype);
void convertRowToF32(float* dst, const void* src, size_t n, KvDtype dtype);
void convertRowF32ToAvx2(void* dst, const float* src, size_t n, KvDtype dtype);
void convertRowToF32Avx2(float* dst, const void* src, size_t n, KvDtype dtype);

}  // namespace swerl

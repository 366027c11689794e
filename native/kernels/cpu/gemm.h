// Single-precision GEMM on the CPU: C = A·B + beta·C with arbitrary strides, so one routine
// serves x·Wᵀ (logits), dY·W (input gradients) and dYᵀ·X (weight gradients).
//
// Blocked and packed (K in blocks of kKc, M in blocks of kMc, N split over threads), with a
// 12×16 AVX-512 micro-kernel, a 6×16 AVX2/FMA one and a portable one. Each C element is reduced over k in the same
// fixed order (K blocks in order, k in order inside a block) whatever M, N or the thread count
// are, so a row's result does not depend on the batch it is computed in.
#pragma once

#include <cstddef>

namespace swerl {

/** A view of a matrix: element (i, j) is data[i * rowStride + j * colStride]. */
struct MatView {
  const float* data;
  size_t rowStride, colStride;
  float at(size_t i, size_t j) const { return data[i * rowStride + j * colStride]; }
};

/** C[M, N] (row-major, leading dimension ldc) = A[M, K] · B[K, N] + beta · C. */
void gemm(size_t M, size_t N, size_t K, MatView A, MatView B, float* C, size_t ldc, float beta);

// Panels: A in kGemmMr-row panels (12 for the AVX-512 kernel), B in 16-column panels. kGemmMc is a
// multiple of both row heights.
constexpr size_t kGemmMr = 6, kGemmMr512 = 12, kGemmNr = 16, kGemmKc = 256, kGemmMc = 72;

/** The micro-kernels: C[mr, nr] += Apanel[kc × MR] · Bpanel[kc × 16] (packed, zero-padded). */
void gemmMicroAvx2(size_t kc, const float* a, const float* b, float* c, size_t ldc, size_t mr, size_t nr);
void gemmMicroAvx512(size_t kc, const float* a, const float* b, float* c, size_t ldc, size_t mr, size_t nr);
void gemmMicroScalar(size_t kc, const float* a, const float* b, float* c, size_t ldc, size_t mr, size_t nr);

}  // namespace swerl

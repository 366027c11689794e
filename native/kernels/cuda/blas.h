// bf16 matrix products on device memory, through cuBLAS with f32 accumulation: the GEMMs of the
// fused LM-head loss on the GPU. cuBLAS is loaded at run time (libcublas.so.13, or the path in
// SWERL_CUBLAS_PATH); where it is missing, the first call throws CUDA_UNAVAILABLE saying so. In
// the simulation the products run on the CPU GEMM (kernels/cpu/gemm.h). All pointers are device
// memory; matrices are row-major.
#pragma once

#include <cstddef>
#include <cstdint>

namespace swerl {

/**
 * C[M, N] (f32, row-major, leading dimension ldc) = op(A) · op(B) + beta · C, with A bf16 [M, K]
 * row-major ([K, M] when transA) and B bf16 [K, N] ([N, K] when transB).
 */
void gemmBf16Cuda(size_t M, size_t N, size_t K, const uint16_t* A, bool transA, const uint16_t* B, bool transB,
                  float* C, size_t ldc, float beta);

/**
 * gemmBf16Cuda on f32 operands rounded to bf16 first (into temporary device buffers): A f32 [M, K]
 * ([K, M] when transA), B f32 [K, N] ([N, K] when transB).
 */
void gemmBf16FromF32Cuda(size_t M, size_t N, size_t K, const float* A, bool transA, const float* B, bool transB,
                         float* C, size_t ldc, float beta);

/** y[i] = bf16(x[i]) (round to nearest even) for i < n. */
void toBf16Cuda(const float* x, uint16_t* y, size_t n);

}  // namespace swerl

// The simulation's cuBLAS: the functions of cublas_api.h that swerl calls, run by the CPU GEMM
// (kernels/cpu/gemm.h) on the simulation's device memory (host memory). Only the swerl_cudasim
// addon links it.
#pragma once

#include "kernels/cuda/cublas_api.h"

namespace swerl::sim {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle);
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle);
/** cublasGemmEx for bf16 or f32 A and B, an f32 C, f32 compute and alpha 1 (else NOT_SUPPORTED). */
cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t opA, cublasOperation_t opB, int m, int n, int k,
                            const void* alpha, const void* A, int aType, int lda, const void* B, int bType, int ldb,
                            const void* beta, void* C, int cType, int ldc, int computeType, int algo);

}  // namespace swerl::sim

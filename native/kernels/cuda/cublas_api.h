// The part of cuBLAS's C ABI that swerl calls, declared here rather than taken from cublas_v2.h:
// the addon loads libcublas at run time (blas.cu), so that it builds without cuBLAS's headers
// and loads on machines without the library; the simulation implements the same functions over
// the CPU GEMM (sim/cublas_sim.cc). The values are cuBLAS's and CUDA's published enum values.
#pragma once

#include <cstdint>

struct cublasContext;
using cublasHandle_t = cublasContext*;

enum cublasStatus_t { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_NOT_SUPPORTED = 15 };
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum swerlCudaDataType { SWERL_CUDA_R_32F = 0, SWERL_CUDA_R_16BF = 14 };  // cudaDataType's values
enum cublasComputeType_t { CUBLAS_COMPUTE_32F = 68 };
enum cublasGemmAlgo_t { CUBLAS_GEMM_DEFAULT = -1 };

// Column-major, as cuBLAS: C[m, n] = alpha · op(A)[m, k] · op(B)[k, n] + beta · C.
using CublasCreateFn = cublasStatus_t (*)(cublasHandle_t*);
using CublasDestroyFn = cublasStatus_t (*)(cublasHandle_t);
using CublasGemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int m, int n, int k,
                                          const void* alpha, const void* A, int aType, int lda, const void* B,
                                          int bType, int ldb, const void* beta, void* C, int cType, int ldc,
                                          int computeType, int algo);

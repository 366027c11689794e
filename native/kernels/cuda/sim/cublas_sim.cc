// The simulation's cublasGemmEx (cublas_sim.h): widens bf16 operands to f32 and runs the CPU
// GEMM on column-major views, so C = op(A) · op(B) + beta · C is computed with the CPU's fixed
// reduction order. cuBLAS on a GPU rounds differently; tests compare both with tolerances.
#include "kernels/cuda/sim/cublas_sim.h"

#include <vector>

#include "common/half.h"
#include "kernels/cpu/gemm.h"

namespace swerl::sim {

namespace {

int handles = 0;

// The stored elements of a column-major operand (rows × cols, leading dimension ld) as f32.
std::vector<float> widen(const void* p, int type, size_t ld, size_t cols) {
  std::vector<float> out(ld * cols);
  if (type == SWERL_CUDA_R_32F) {
    const auto* f = static_cast<const float*>(p);
    out.assign(f, f + out.size());
  } else {
    const auto* h = static_cast<const uint16_t*>(p);
    for (size_t i = 0; i < out.size(); ++i) out[i] = bf16ToF32(h[i]);
  }
  return out;
}

}  // namespace

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  *handle = reinterpret_cast<cublasHandle_t>(&handles);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t) { return CUBLAS_STATUS_SUCCESS; }

cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t opA, cublasOperation_t opB, int m, int n, int k,
                            const void* alpha, const void* A, int aType, int lda, const void* B, int bType, int ldb,
                            const void* beta, void* C, int cType, int ldc, int computeType, int) {
  const bool typesOk = (aType == SWERL_CUDA_R_16BF || aType == SWERL_CUDA_R_32F) &&
                       (bType == SWERL_CUDA_R_16BF || bType == SWERL_CUDA_R_32F) && cType == SWERL_CUDA_R_32F &&
                       computeType == CUBLAS_COMPUTE_32F;
  if (!typesOk || *static_cast<const float*>(alpha) != 1.0f || m < 0 || n < 0 || k < 0)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  // Stored shapes: A is m×k (opA N) or k×m (T), column-major with leading dimension lda; B likewise.
  const std::vector<float> a = widen(A, aType, lda, opA == CUBLAS_OP_N ? k : m);
  const std::vector<float> b = widen(B, bType, ldb, opB == CUBLAS_OP_N ? n : k);
  // Column-major C (m×n, ldc) is row-major Cᵀ (n×m, row stride ldc): Cᵀ = op(B)ᵀ · op(A)ᵀ.
  // op(B)ᵀ (n×k): element (j, l) = op(B)(l, j); op(A)ᵀ (k×m): element (l, i) = op(A)(i, l).
  const MatView bt = opB == CUBLAS_OP_N ? MatView{b.data(), static_cast<size_t>(ldb), 1}
                                        : MatView{b.data(), 1, static_cast<size_t>(ldb)};
  const MatView at = opA == CUBLAS_OP_N ? MatView{a.data(), static_cast<size_t>(lda), 1}
                                        : MatView{a.data(), 1, static_cast<size_t>(lda)};
  gemm(static_cast<size_t>(n), static_cast<size_t>(m), static_cast<size_t>(k), bt, at, static_cast<float*>(C),
       static_cast<size_t>(ldc), *static_cast<const float*>(beta));
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace swerl::sim

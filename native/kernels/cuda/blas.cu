// gemmBf16Cuda and toBf16Cuda (blas.h). On a GPU the products call cublasGemmEx from libcublas,
// opened with dlopen on first use; in the simulation they call sim/cublas_sim.cc's cublasGemmEx,
// which runs the CPU GEMM. Row-major products map onto cuBLAS's column-major ones by computing
// Cᵀ = op(B)ᵀ · op(A)ᵀ.
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "common/error.h"
#include "kernels/cuda/blas.h"
#include "kernels/cuda/cublas_api.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_compat.h"
#include "kernels/cuda/device_buffer.h"

#if SWERL_CUDA_SIMULATED
#include "kernels/cuda/sim/cublas_sim.h"
#endif

namespace swerl {

namespace {

struct Cublas {
  CublasCreateFn create = nullptr;
  CublasDestroyFn destroy = nullptr;
  CublasGemmExFn gemmEx = nullptr;
  cublasHandle_t handle = nullptr;
};

// The process's cuBLAS: loaded and given a handle once (never closed: the handle lives as long
// as the process, as PyTorch's does).
Cublas& cublas() {
  static Cublas api;
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] {
#if SWERL_CUDA_SIMULATED
    api.create = sim::cublasCreate_v2;
    api.destroy = sim::cublasDestroy_v2;
    api.gemmEx = sim::cublasGemmEx;
#else
    const char* path = std::getenv("SWERL_CUBLAS_PATH");
    void* lib = dlopen(path && *path ? path : "libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      failure = std::string("cuBLAS could not be loaded (") + dlerror() +
                "): install it (e.g. pip install nvidia-cublas, or the CUDA toolkit) and put its lib folder on "
                "LD_LIBRARY_PATH, or set SWERL_CUBLAS_PATH to libcublas.so.13";
      return;
    }
    api.create = reinterpret_cast<CublasCreateFn>(dlsym(lib, "cublasCreate_v2"));
    api.destroy = reinterpret_cast<CublasDestroyFn>(dlsym(lib, "cublasDestroy_v2"));
    api.gemmEx = reinterpret_cast<CublasGemmExFn>(dlsym(lib, "cublasGemmEx"));
    if (!api.create || !api.destroy || !api.gemmEx) {
      failure = "the cuBLAS library found lacks cublasCreate_v2/cublasGemmEx";
      return;
    }
#endif
    if (api.create(&api.handle) != CUBLAS_STATUS_SUCCESS) failure = "cublasCreate failed";
  });
  if (!failure.empty()) throw Error(ErrorCode::CudaUnavailable, failure);
  return api;
}

__global__ void toBf16Kernel(const float* x, __nv_bfloat16* y, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    y[i] = __float2bfloat16_rn(x[i]);
}

}  // namespace

void gemmBf16Cuda(size_t M, size_t N, size_t K, const uint16_t* A, bool transA, const uint16_t* B, bool transB,
                  float* C, size_t ldc, float beta) {
  if (M == 0 || N == 0) return;
  SWERL_CHECK(M <= 0x7fffffff && N <= 0x7fffffff && K <= 0x7fffffff && ldc >= N, InvalidArgument,
              "gemmBf16Cuda: dimensions must fit in int and ldc >= N");
  Cublas& api = cublas();
  const float alpha = 1.0f;
  const cublasStatus_t st =
      api.gemmEx(api.handle, transB ? CUBLAS_OP_T : CUBLAS_OP_N, transA ? CUBLAS_OP_T : CUBLAS_OP_N,
                 static_cast<int>(N), static_cast<int>(M), static_cast<int>(K), &alpha, B, SWERL_CUDA_R_16BF,
                 static_cast<int>(transB ? K : N), A, SWERL_CUDA_R_16BF, static_cast<int>(transA ? M : K), &beta, C,
                 SWERL_CUDA_R_32F, static_cast<int>(ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  SWERL_CHECK(st == CUBLAS_STATUS_SUCCESS, CudaError, "cublasGemmEx failed with status " + std::to_string(st));
}

void gemmBf16FromF32Cuda(size_t M, size_t N, size_t K, const float* A, bool transA, const float* B, bool transB,
                         float* C, size_t ldc, float beta) {
  if (M == 0 || N == 0) return;
  const size_t a = M * K, b = K * N;
  DeviceBuffer scratch((a + b > 0 ? a + b : 1) * sizeof(uint16_t));
  auto* a16 = static_cast<uint16_t*>(scratch.data());
  toBf16Cuda(A, a16, a);
  toBf16Cuda(B, a16 + a, b);
  gemmBf16Cuda(M, N, K, a16, transA, a16 + a, transB, C, ldc, beta);
}

void toBf16Cuda(const float* x, uint16_t* y, size_t n) {
  if (n == 0) return;
  const size_t blocks = (n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096;
  SWERL_LAUNCH(toBf16Kernel, static_cast<unsigned>(blocks), 256, 0, x, reinterpret_cast<__nv_bfloat16*>(y), n);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace swerl

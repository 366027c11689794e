// The decoder's linear layers as GEMM calls, weights in Hugging Face's [out, in] layout.
#pragma once

#include <cstddef>

#include "kernels/decoder_backend.h"

namespace swerl {

/** out[M, N] = a[M, K] · w[N, K]ᵀ + beta · out. */
inline void linear(const DecoderBackend& k, const float* a, size_t M, size_t K, const float* w, size_t N, float* out,
                   float beta = 0) {
  k.gemm(M, N, K, MatView{a, K, 1}, MatView{w, 1, K}, out, N, beta);
}

/** dA[M, K] = dOut[M, N] · w[N, K] + beta · dA: the input's gradient. */
inline void linearInputGrad(const DecoderBackend& k, const float* dOut, size_t M, size_t N, const float* w, size_t K,
                            float* dA, float beta = 0) {
  k.gemm(M, K, N, MatView{dOut, N, 1}, MatView{w, K, 1}, dA, K, beta);
}

/** dW[N, K] += dOut[M, N]ᵀ · a[M, K]: the weight's gradient, accumulated. */
inline void linearWeightGrad(const DecoderBackend& k, const float* dOut, size_t M, size_t N, const float* a, size_t K,
                             float* dW) {
  k.gemm(N, K, M, MatView{dOut, 1, N}, MatView{a, K, 1}, dW, K, 1.0f);
}

}  // namespace swerl

// The decoder's kernels as one table, the interface between the model and a device: the model
// (native/model) calls only these, and each backend fills the table for its memory. The CPU
// backend (kernels/cpu/decoder_backend_cpu.cc) points at the host kernels; a CUDA backend will
// fill the same table with device kernels over device pointers. Signatures and semantics are
// those of the CPU headers named beside each entry.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/gemm.h"

namespace swerl {

struct DecoderBackend {
  const char* name;
  // decoder_kernels.h
  void (*rmsNorm)(const float* x, size_t rows, size_t n, const float* w, float eps, float* out, float* invRms);
  void (*ropeTables)(const int64_t* pos, size_t count, const double* invFreq, size_t half, double attentionFactor,
                     float* cosOut, float* sinOut);
  void (*applyRope)(float* x, size_t rows, size_t rowStride, size_t heads, size_t half, const float* cosT,
                    const float* sinT);
  void (*siluMul)(const float* gu, size_t rows, size_t n, float* out);
  void (*addBias)(float* x, size_t rows, size_t n, const float* bias);
  // attention.h
  void (*causalAttention)(const float* q, size_t qStride, const int64_t* pos, size_t T, const KvRows* k,
                          const KvRows* v, const int32_t* seq, const AttentionShape& shape, float* out, float* lse);
  void (*causalAttentionBackward)(const float* qkv, size_t qkvStride, size_t kOffset, size_t vOffset, size_t T,
                                  const float* o, const float* lse, const float* dO, const AttentionShape& shape,
                                  float* dqkv);
  // decoder_backward.h
  void (*rmsNormBackward)(const float* x, const float* invRms, const float* w, const float* dy, size_t rows, size_t n,
                          float* dx, bool accumulate, float* dw);
  void (*siluMulBackward)(const float* gu, const float* dOut, size_t rows, size_t n, float* dgu);
  void (*addColumnSums)(const float* x, size_t rows, size_t n, float* sums);
  void (*embeddingBackward)(const int32_t* tokens, const float* dx, size_t rows, size_t n, float* dE);
  // gemm.h
  void (*gemm)(size_t M, size_t N, size_t K, MatView A, MatView B, float* C, size_t ldc, float beta);
  void (*gemmPacked)(size_t M, MatView A, const PackedMatrix& B, float* C, size_t ldc, float beta);
};

/** The host kernels (AVX-512, AVX2 or portable, chosen at run time inside each kernel). */
const DecoderBackend& cpuDecoderBackend();

}  // namespace swerl

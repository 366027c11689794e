// The fused LM-head loss on the GPU (fused_loss_cuda.h): per chunk of tokens, the logits from a
// cuBLAS bf16 product, the loss rows of losses.cu turning them into their gradient in place, and
// the two backward products, with one [chunk, V] logits buffer (and its bf16 copy) alive.
//
// Order of work in one call (everything on the default stream, so each step sees the last):
//   1. X is checked and W converted to bf16 (checked too), in one pass each; a flag on the device
//      says whether any value is NaN or ±Inf after rounding to bf16, and the host reads it before
//      the first product: non-finite inputs are refused before anything is written.
//   2. Per chunk [t0, t0 + n): X_c → bf16; logits = X_c·Wᵀ; processRowsCuda (row statistics on the
//      device, the per-token terms on the host in token order, the gradient in place: the one host
//      round trip of a chunk); G → bf16; dX_c = G·W; dW += Gᵀ·X_c.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.h"
#include "kernels/cuda/blas.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_compat.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/fused_loss_cuda.h"
#include "kernels/cuda/losses_cuda.h"

namespace swerl {

namespace {

constexpr unsigned kThreads = 256;
constexpr size_t kMaxBlocks = 1024;
constexpr size_t kIntMax = 0x7fffffff;

// Offsets into the call's one scratch allocation are multiples of 256 bytes (cuBLAS's and the
// vector loads' alignment).
size_t align256(size_t bytes) { return (bytes + 255) & ~static_cast<size_t>(255); }

__device__ __forceinline__ bool finiteFloat(float v) { return (__float_as_uint(v) & 0x7f800000u) != 0x7f800000u; }

// y[i] = bf16(x[i]) for i < n (y may be null: only the check), and *nonFinite = 1 when some
// bf16(x[i]) is NaN or ±Inf (a NaN or ±Inf x[i], or a finite one beyond bf16's range). Grid-stride.
__global__ void toBf16CheckedKernel(const float* x, __nv_bfloat16* y, size_t n, int32_t* nonFinite) {
  bool bad = false;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const __nv_bfloat16 b = __float2bfloat16_rn(x[i]);
    bad = bad || !finiteFloat(__bfloat162float(b));
    if (y != nullptr) y[i] = b;
  }
  if (bad) *nonFinite = 1;  // every writer stores the same value
}

void toBf16Checked(const float* x, uint16_t* y, size_t n, int32_t* nonFinite) {
  if (n == 0) return;
  const size_t blocks = (n + kThreads - 1) / kThreads < kMaxBlocks ? (n + kThreads - 1) / kThreads : kMaxBlocks;
  SWERL_LAUNCH(toBf16CheckedKernel, static_cast<unsigned>(blocks), kThreads, 0, x, reinterpret_cast<__nv_bfloat16*>(y),
               n, nonFinite);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void fusedLmHeadLossCuda(const LmHead& h, TokenLoss& loss, const int32_t* targets, float invTemperature, float* dHidden,
                         float* dWeight, float* logprobs) {
  SWERL_CHECK(h.chunkTokens >= 1, InvalidArgument, "chunkTokens must be >= 1");
  SWERL_CHECK(h.hiddenSize >= 1 && h.vocab >= 1, InvalidArgument, "hiddenSize and vocab must be >= 1");
  const size_t T = h.tokens, H = h.hiddenSize, V = h.vocab;
  SWERL_CHECK(T <= kIntMax && H <= kIntMax && V <= kIntMax, InvalidArgument,
              "the CUDA fused loss takes tokens, hiddenSize and vocab below 2^31");
  if (T == 0) return;
  const size_t chunk = h.chunkTokens < T ? h.chunkTokens : T;
  SWERL_CHECK(V <= SIZE_MAX / 8 / chunk && V <= SIZE_MAX / 8 / H, InvalidArgument,
              "chunkTokens × vocab is too large for this machine's size_t");

  // Scratch, one allocation: the flag, bf16(W) [V, H], bf16(X_c) [chunk, H], the f32 logits (then
  // G) [chunk, V], bf16(G) [chunk, V]. Freed when the call returns or throws.
  const size_t wOff = align256(sizeof(int32_t));
  const size_t xOff = wOff + align256(V * H * sizeof(uint16_t));
  const size_t logitsOff = xOff + align256(chunk * H * sizeof(uint16_t));
  const size_t gOff = logitsOff + align256(chunk * V * sizeof(float));
  DeviceBuffer scratch(gOff + chunk * V * sizeof(uint16_t));
  char* base = static_cast<char*>(scratch.data());
  auto* nonFinite = reinterpret_cast<int32_t*>(base);  // zeroed by DeviceBuffer
  auto* w16 = reinterpret_cast<uint16_t*>(base + wOff);
  auto* x16 = reinterpret_cast<uint16_t*>(base + xOff);
  auto* logits = reinterpret_cast<float*>(base + logitsOff);
  auto* g16 = reinterpret_cast<uint16_t*>(base + gOff);

  // 1. Refuse non-finite inputs before anything is written; W to bf16 once.
  toBf16Checked(h.hidden, nullptr, T * H, nonFinite);
  toBf16Checked(h.weight, w16, V * H, nonFinite);
  int32_t bad = 0;
  scratch.download(0, &bad, sizeof(bad));
  SWERL_CHECK(bad == 0, NonFiniteLogits,
              "the hidden states or the LM-head weight hold NaN or ±Inf (or values beyond bf16's range), so the "
              "logits would too; check the model's numerics");

  // 2. The chunks.
  for (size_t t0 = 0; t0 < T; t0 += chunk) {
    const size_t n = chunk < T - t0 ? chunk : T - t0;
    toBf16Cuda(h.hidden + t0 * H, x16, n * H);                                           // bf16(X_c) [n, H]
    gemmBf16Cuda(n, V, H, x16, false, w16, true, logits, V, 0.0f);                       // logits = X_c · Wᵀ
    processRowsCuda(loss, logits, t0, n, V, targets, invTemperature, logits, logprobs);  // now G [n, V]
    toBf16Cuda(logits, g16, n * V);                                                      // bf16(G) [n, V]
    gemmBf16Cuda(n, H, V, g16, false, w16, false, dHidden + t0 * H, H, 0.0f);            // dX_c = G · W
    gemmBf16Cuda(V, H, n, g16, true, x16, false, dWeight, H, 1.0f);                      // dW += Gᵀ · X_c
  }
  CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace swerl

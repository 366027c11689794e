// The CUDA policy and SFT losses on device logits (losses_cuda.h): two row kernels around the
// host's TokenLoss (train/losses.cc), which owns every per-token formula (aggregation weights,
// clip, dual clip, TIS, k3 KL, entropy bonus, the loss total in token order).
//
//   1. rowStatsKernel, one block per row: each thread folds its elements j ≡ tid (mod blockDim)
//      into an online (max m, Σ e^((x−m)s), Σ e^((x−m)s)·(x−m)s) in f32, then the block combines
//      the threads' partials in f64 in a fixed tree (warp shuffles, then the warps' results).
//      Reads the row once, plus x[target]; writes a RowStats (32 bytes).
//   2. The host downloads the RowStats [T], refuses non-finite rows (NON_FINITE_LOGITS, before
//      any gradient exists), and TokenLoss::rowTerms writes the logprobs, adds up the loss and
//      works out each row's coefficients; they go up as RowGrad [T].
//   3. rowGradKernel, one block per row: g_j = p_j·(a + b·log p_j), plus s·c at the target, with
//      p_j = e^((x_j − m)s) / Z. Reads the row once and writes each gradient element once (the
//      same thread reads x_j and then writes g_j, so the gradient may be the logits in place). A
//      row whose coefficients are 0 (masked, or a zero weight) is only written, with zeros.
//
// Batch invariance: the block size depends only on V (rowThreads), each thread's elements and
// the reduction tree only on the block size, so a row's statistics, logprob and gradient row are
// bitwise the same whatever else is in the batch (given the same coefficients).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_compat.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/losses_cuda.h"
#include "train/losses.h"

namespace swerl {

namespace {

// One row's softmax statistics of s·x, from rowStatsKernel.
struct RowStats {
  double logZ;     // log Z, Z = Σ_j e^((x_j − max)·s)
  double entropy;  // H = log Z − Σ_j e^((x_j − max)·s)·(x_j − max)·s / Z
  double logp;     // (x_target − max)·s − log Z
  float max;       // max_j x_j
  int32_t finite;  // 1 when every x_j is finite
};

// One row's gradient: g_j = p_j·(a + b·(d_j − logZ)) with d_j = (x_j − max)·s, p_j = e^(d_j)·invZ,
// plus atTarget at j = target; all zeros when zero != 0 (the logits are then not read).
struct RowGrad {
  float max, logZ, invZ, a, b, atTarget;
  int32_t target, zero;
};

constexpr unsigned kWarp = 32;
constexpr unsigned kMaxThreads = 512;
constexpr unsigned kFullMask = 0xffffffffu;

// Threads per row block: a power of two in [32, 512], about 16 elements per thread below 8192.
// A function of V only (batch invariance).
unsigned rowThreads(size_t V) {
  unsigned t = kWarp;
  while (t < kMaxThreads && static_cast<size_t>(t) * 16 < V) t *= 2;
  return t;
}

// Partial statistics of some elements of s·x relative to their own max m: s = Σ e^((x−m)s),
// q = Σ e^((x−m)s)·(x−m)s. s == 0 means no elements.
struct Partial {
  float m;
  double s, q;
};

__device__ __forceinline__ bool finiteFloat(float v) { return (__float_as_uint(v) & 0x7f800000u) != 0x7f800000u; }

// The statistics of a ∪ b. Symmetric in a and b bit for bit (only commutative operations combine
// them), so the tree's result does not depend on which side a partial lands.
__device__ __forceinline__ Partial combine(const Partial& a, const Partial& b, float scale) {
  if (b.s == 0) return a;
  if (a.s == 0) return b;
  const float m = a.m > b.m ? a.m : b.m;
  const double da = (static_cast<double>(a.m) - m) * scale, db = (static_cast<double>(b.m) - m) * scale;
  const double fa = exp(da), fb = exp(db);
  return Partial{m, a.s * fa + b.s * fb, fa * (a.q + a.s * da) + fb * (b.q + b.s * db)};
}

// Lane 0 ends with the combination of the warp's 32 partials, in a fixed tree (lane i takes lane
// i + 16, then i + 8, ...).
__device__ __forceinline__ Partial warpCombine(Partial p, float scale) {
  for (unsigned offset = kWarp / 2; offset > 0; offset /= 2) {
    const Partial o{__shfl_down_sync(kFullMask, p.m, offset), __shfl_down_sync(kFullMask, p.s, offset),
                    __shfl_down_sync(kFullMask, p.q, offset)};
    p = combine(p, o, scale);
  }
  return p;
}

// grid.x = T rows, blockDim.x = rowThreads(V). logits [T, V], targets [T] → out [T].
__global__ void __launch_bounds__(kMaxThreads)
    rowStatsKernel(const float* logits, size_t V, const int32_t* targets, float scale, RowStats* out) {
  __shared__ float warpMax[kMaxThreads / kWarp];
  __shared__ double warpS[kMaxThreads / kWarp], warpQ[kMaxThreads / kWarp];
  const size_t row = blockIdx.x;
  const float* x = logits + row * V;
  // The thread's elements, folded online in f32: one read and one exp per element.
  float m = __int_as_float(static_cast<int>(0xff800000u)), s = 0.0f, q = 0.0f;
  bool finite = true;
  size_t j = threadIdx.x;
  if (j < V) {
    m = x[j];
    s = 1.0f;
    finite = finiteFloat(m);
    j += blockDim.x;
  }
  for (; j < V; j += blockDim.x) {
    const float v = x[j];
    finite = finite && finiteFloat(v);
    if (v > m) {
      // A new max: rescale what was summed relative to the old one.
      const float d = (m - v) * scale, f = expf(d);
      q = f * (q + s * d);
      s = s * f + 1.0f;
      m = v;
    } else {
      const float d = (v - m) * scale, e = expf(d);
      s += e;
      q += e * d;
    }
  }
  const bool rowFinite = !__syncthreads_or(!finite);
  // Threads → warps → block, in f64.
  Partial p = warpCombine(Partial{m, s, q}, scale);
  const unsigned lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, warps = blockDim.x / kWarp;
  if (lane == 0) {
    warpMax[warp] = p.m;
    warpS[warp] = p.s;
    warpQ[warp] = p.q;
  }
  __syncthreads();
  if (warp != 0) return;
  p = lane < warps ? Partial{warpMax[lane], warpS[lane], warpQ[lane]} : Partial{0.0f, 0.0, 0.0};
  p = warpCombine(p, scale);
  if (lane != 0) return;
  RowStats r;
  r.max = p.m;
  r.finite = rowFinite ? 1 : 0;
  r.logZ = log(p.s);
  r.entropy = r.logZ - p.q / p.s;
  r.logp = (static_cast<double>(x[targets[row]]) - p.m) * scale - r.logZ;
  out[row] = r;
}

// grid.x = T rows, blockDim.x = rowThreads(V). logits [T, V], coef [T] → grad [T, V] (may be
// logits: element j is read and then written by the same thread).
__global__ void __launch_bounds__(kMaxThreads)
    rowGradKernel(const float* logits, size_t V, float scale, const RowGrad* coef, float* grad) {
  const size_t row = blockIdx.x;
  const RowGrad k = coef[row];
  float* g = grad + row * V;
  if (k.zero) {
    for (size_t j = threadIdx.x; j < V; j += blockDim.x) g[j] = 0.0f;
    return;
  }
  const float* x = logits + row * V;
  const size_t target = static_cast<size_t>(k.target);
  for (size_t j = threadIdx.x; j < V; j += blockDim.x) {
    const float d = (x[j] - k.max) * scale;
    float v = expf(d) * k.invZ * (k.a + k.b * (d - k.logZ));
    if (j == target) v += k.atTarget;
    g[j] = v;
  }
}

}  // namespace

// The device half of TokenLoss::processRows for rows [t0, t0 + n) (see losses_cuda.h).
void processRowsCuda(TokenLoss& loss, const float* chunkLogits, size_t t0, size_t n, size_t V, const int32_t* targets,
                     float s, float* chunkGrad, float* logprobs) {
  if (n == 0) return;
  SWERL_CHECK(n <= 0x7fffffffu, InvalidArgument,
              "the CUDA losses take at most 2^31 - 1 rows per call, got " + std::to_string(n));
  const int32_t* rowTargets = targets + t0;  // this chunk's targets [n]
  const unsigned threads = rowThreads(V);
  // Scratch: RowStats [n], then RowGrad [n], then the targets [n].
  const size_t gradOff = n * sizeof(RowStats), targetOff = gradOff + n * sizeof(RowGrad);
  DeviceBuffer scratch(targetOff + n * sizeof(int32_t));
  char* base = static_cast<char*>(scratch.data());
  auto* dStats = reinterpret_cast<RowStats*>(base);
  auto* dCoef = reinterpret_cast<RowGrad*>(base + gradOff);
  auto* dTargets = reinterpret_cast<int32_t*>(base + targetOff);
  scratch.upload(targetOff, rowTargets, n * sizeof(int32_t));

  SWERL_LAUNCH(rowStatsKernel, static_cast<unsigned>(n), threads, 0, chunkLogits, V, dTargets, s, dStats);
  CUDA_CHECK(cudaGetLastError());
  std::vector<RowStats> stats(n);
  scratch.download(0, stats.data(), n * sizeof(RowStats));

  std::vector<TokenLoss::RowInfo> info(n);
  std::vector<char> finite(n);
  for (size_t i = 0; i < n; ++i) {
    const RowStats& r = stats[i];
    finite[i] = r.finite != 0;
    info[i] = TokenLoss::RowInfo{static_cast<double>(r.max) * s + r.logZ, r.entropy, r.logp, std::exp(r.logZ), r.max};
  }
  std::vector<double> c, e;
  loss.rowTerms(t0, n, info, finite, logprobs, c, e);  // NON_FINITE_LOGITS here: no gradient written yet

  // The coefficients of g = s·(c·(δ − p) + e·p·(log p + H)) = p·(a + b·log p) + s·c·δ.
  std::vector<RowGrad> coef(n);
  for (size_t i = 0; i < n; ++i) {
    RowGrad& k = coef[i];
    k.zero = c[i] == 0 && e[i] == 0 ? 1 : 0;
    k.target = rowTargets[i];
    k.max = stats[i].max;
    k.logZ = static_cast<float>(stats[i].logZ);
    k.invZ = static_cast<float>(std::exp(-stats[i].logZ));
    k.a = static_cast<float>(s * (-c[i] + e[i] * info[i].entropy));
    k.b = static_cast<float>(s * e[i]);
    k.atTarget = static_cast<float>(s * c[i]);
  }
  scratch.upload(gradOff, coef.data(), n * sizeof(RowGrad));
  SWERL_LAUNCH(rowGradKernel, static_cast<unsigned>(n), threads, 0, chunkLogits, V, s, dCoef, chunkGrad);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
}

PolicyLossResult policyLossCuda(const PolicyLossInputs& in, const PolicyLossConfig& cfg, float* deviceGradLogits,
                                float* logprobs) {
  TokenLoss loss(in, cfg);  // checks the inputs, works out the aggregation weights
  processRowsCuda(loss, in.logits, 0, in.tokens, in.vocab, in.targets, cfg.invTemperature, deviceGradLogits, logprobs);
  return loss.result();
}

double sftLossCuda(const float* deviceLogits, size_t tokens, size_t vocab, const int32_t* targets, const float* mask,
                   float* deviceGradLogits, float* logprobs, float invTemperature) {
  TokenLoss loss(tokens, vocab, targets, mask, invTemperature);
  processRowsCuda(loss, deviceLogits, 0, tokens, vocab, targets, invTemperature, deviceGradLogits, logprobs);
  return loss.result().loss;
}

}  // namespace swerl

// The CUDA AdamW and global-norm kernels (adamw_cuda.h): one thread per element for the
// elementwise updates (and the optimizer's zero and accumulate); for the norm, f64 partials of
// fixed chunks (one block each, a fixed tree inside the block), then one block that sums the
// partials in a fixed order. Nothing in the order depends on the launch beyond n, so the norm is
// reproducible bit for bit.
#include <cmath>
#include <string>

#include "common/error.h"
#include "kernels/cuda/adamw_cuda.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_compat.h"

namespace swerl {

namespace {

constexpr unsigned kThreads = 256;       // threads per block, every kernel here
constexpr size_t kNormChunk = 8192;      // elements per partial of the norm (32 per thread)
constexpr size_t kMaxGrid = 2147483647;  // CUDA's gridDim.x limit

// Sums s[0, kThreads) into s[0] by a fixed tree (pairs at distance 128, 64, ..., 1).
__device__ void treeSum(double* s) {
  for (unsigned stride = kThreads / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
    __syncthreads();
  }
}

// partials[b] = Σ g[i]² over chunk b, [b·kNormChunk, (b+1)·kNormChunk) ∩ [0, n). Thread t adds
// the elements t, t + kThreads, ... of the chunk in order, then the threads' sums meet in the tree.
// x·x of a float is exact in f64 (48 significant bits), so a fused multiply-add rounds as a
// multiply then an add does: the result is the same on a GPU as in the simulation.
__global__ void __launch_bounds__(kThreads)
    sumSquaresKernel(const float* __restrict__ g, size_t n, double* __restrict__ partials) {
  __shared__ double s[kThreads];
  const size_t begin = static_cast<size_t>(blockIdx.x) * kNormChunk;
  const size_t end = n - begin < kNormChunk ? n : begin + kNormChunk;
  double acc = 0;
  for (size_t i = begin + threadIdx.x; i < end; i += kThreads) {
    const double x = g[i];
    acc += x * x;
  }
  s[threadIdx.x] = acc;
  __syncthreads();
  treeSum(s);
  if (threadIdx.x == 0) partials[blockIdx.x] = s[0];
}

// *out = Σ partials[0, count), on one block: thread t adds partials t, t + kThreads, ... in order,
// then the tree.
__global__ void __launch_bounds__(kThreads)
    sumPartialsKernel(const double* __restrict__ partials, size_t count, double* __restrict__ out) {
  __shared__ double s[kThreads];
  double acc = 0;
  for (size_t i = threadIdx.x; i < count; i += kThreads) acc += partials[i];
  s[threadIdx.x] = acc;
  __syncthreads();
  treeSum(s);
  if (threadIdx.x == 0) *out = s[0];
}

__global__ void __launch_bounds__(kThreads) scaleKernel(float* __restrict__ g, size_t n, float s) {
  const size_t i = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i < n) g[i] = __fmul_rn(g[i], s);
}

__global__ void __launch_bounds__(kThreads) zeroKernel(float* __restrict__ a, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i < n) a[i] = 0.0f;
}

__global__ void __launch_bounds__(kThreads)
    accumulateKernel(float* __restrict__ into, float* __restrict__ from, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  into[i] = __fadd_rn(into[i], from[i]);
  from[i] = 0.0f;
}

// The scalars of one step, computed on the host exactly as adamwUpdate computes them.
struct AdamWScalars {
  float b1, oneMinusB1, b2, oneMinusB2, eps, stepSize, invSqrtBc2, keep;
};

// adamwUpdate's loop body, operation for operation (train/adamw.cc):
//   m = b1·m + (1 − b1)·g;  v = b2·v + ((1 − b2)·g)·g;
//   w = w·keep − (stepSize·m) / (sqrt(v)·invSqrtBc2 + eps)
// each operation rounded to f32 on its own (the _rn intrinsics are never contracted into FMAs).
__global__ void __launch_bounds__(kThreads)
    adamwKernel(float* __restrict__ w, const float* __restrict__ g, float* __restrict__ m, float* __restrict__ v,
                size_t n, AdamWScalars c) {
  const size_t i = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  const float gi = g[i];
  const float mi = __fadd_rn(__fmul_rn(c.b1, m[i]), __fmul_rn(c.oneMinusB1, gi));
  const float vi = __fadd_rn(__fmul_rn(c.b2, v[i]), __fmul_rn(__fmul_rn(c.oneMinusB2, gi), gi));
  m[i] = mi;
  v[i] = vi;
  const float denom = __fadd_rn(__fmul_rn(__fsqrt_rn(vi), c.invSqrtBc2), c.eps);
  w[i] = __fsub_rn(__fmul_rn(w[i], c.keep), __fdiv_rn(__fmul_rn(c.stepSize, mi), denom));
}

// Blocks of kThreads covering n elements (n ≥ 1).
unsigned elementBlocks(size_t n) {
  const size_t blocks = (n + kThreads - 1) / kThreads;
  SWERL_CHECK(blocks <= kMaxGrid, InvalidArgument,
              std::to_string(n) + " elements are more than one launch of the AdamW kernels covers");
  return static_cast<unsigned>(blocks);
}

// Device scratch memory freed on every path out of the call.
class Scratch {
 public:
  explicit Scratch(size_t bytes) { CUDA_CHECK(cudaMalloc(&ptr_, bytes)); }
  ~Scratch() { cudaFree(ptr_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  double* doubles() const { return static_cast<double*>(ptr_); }

 private:
  void* ptr_ = nullptr;
};

}  // namespace

double globalNormCuda(const float* g, size_t n) {
  if (n == 0) return 0;
  const size_t chunks = (n + kNormChunk - 1) / kNormChunk;
  SWERL_CHECK(chunks <= kMaxGrid, InvalidArgument,
              std::to_string(n) + " elements are more than one launch of the norm kernel covers");
  Scratch scratch((chunks + 1) * sizeof(double));  // the partials, then the total
  double* partials = scratch.doubles();
  SWERL_LAUNCH(sumSquaresKernel, dim3(static_cast<unsigned>(chunks)), dim3(kThreads), 0, g, n, partials);
  CUDA_CHECK(cudaGetLastError());
  SWERL_LAUNCH(sumPartialsKernel, dim3(1), dim3(kThreads), 0, partials, chunks, partials + chunks);
  CUDA_CHECK(cudaGetLastError());
  double total = 0;
  CUDA_CHECK(cudaMemcpy(&total, partials + chunks, sizeof(double), cudaMemcpyDeviceToHost));
  return std::sqrt(total);
}

void scaleInPlaceCuda(float* g, size_t n, float s) {
  if (n == 0) return;
  SWERL_LAUNCH(scaleKernel, dim3(elementBlocks(n)), dim3(kThreads), 0, g, n, s);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
}

void adamwUpdateCuda(float* w, const float* g, float* m, float* v, size_t n, const AdamWConfig& c, int64_t step,
                     bool decay) {
  if (n == 0) return;
  // As adamwUpdate (train/adamw.cc): f64 bias corrections, rounded once to f32.
  const double bc1 = 1 - std::pow(c.beta1, static_cast<double>(step));
  const double bc2 = 1 - std::pow(c.beta2, static_cast<double>(step));
  AdamWScalars s;
  s.b1 = static_cast<float>(c.beta1);
  s.b2 = static_cast<float>(c.beta2);
  s.oneMinusB1 = 1 - s.b1;  // the CPU's (1 - b1): int 1 converted, an f32 subtraction
  s.oneMinusB2 = 1 - s.b2;
  s.eps = static_cast<float>(c.eps);
  s.stepSize = static_cast<float>(c.lr / bc1);
  s.invSqrtBc2 = static_cast<float>(1 / std::sqrt(bc2));
  s.keep = decay ? static_cast<float>(1 - c.lr * c.weightDecay) : 1.0f;
  SWERL_LAUNCH(adamwKernel, dim3(elementBlocks(n)), dim3(kThreads), 0, w, g, m, v, n, s);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
}

void zeroCuda(float* a, size_t n) {
  if (n == 0) return;
  SWERL_LAUNCH(zeroKernel, dim3(elementBlocks(n)), dim3(kThreads), 0, a, n);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
}

void accumulateCuda(float* into, float* from, size_t n) {
  if (n == 0) return;
  SWERL_LAUNCH(accumulateKernel, dim3(elementBlocks(n)), dim3(kThreads), 0, into, from, n);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace swerl

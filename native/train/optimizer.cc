// The optimizer driver (optimizer.h) and its two devices: the host (std::vector, train/adamw.h)
// and CUDA (DeviceBuffer, kernels/cuda/adamw_cuda.h; in a build without CUDA those entries throw
// CUDA_UNAVAILABLE). The driver's order of operations is the CPU trainer's, unchanged, so the
// host results are bitwise what they were when this logic sat in the binding.
#include "train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"
#include "common/thread_pool.h"
#include "kernels/cuda/adamw_cuda.h"
#include "kernels/cuda/device_buffer.h"

namespace swerl {

namespace {

constexpr size_t kBlock = 1 << 16;  // elements per task of the host's elementwise loops

class HostArray : public DeviceArray {
 public:
  explicit HostArray(size_t n) : v_(n, 0.0f) {}
  float* data() override { return v_.data(); }
  void read(size_t offset, size_t count, float* host) const override {
    std::copy(v_.begin() + offset, v_.begin() + offset + count, host);
  }
  void write(size_t offset, const float* host, size_t count) override {
    std::copy(host, host + count, v_.begin() + offset);
  }

 private:
  std::vector<float> v_;
};

class CpuDevice : public OptimizerDevice {
 public:
  std::unique_ptr<DeviceArray> allocate(size_t n) const override { return std::make_unique<HostArray>(n); }
  void zero(float* a, size_t n) const override { std::fill(a, a + n, 0.0f); }
  void accumulate(float* into, float* from, size_t n) const override {
    parallelFor((n + kBlock - 1) / kBlock, kBlock, kBlock, [&](size_t k) {
      const size_t end = std::min(n, (k + 1) * kBlock);
      for (size_t i = k * kBlock; i < end; ++i) {
        into[i] += from[i];
        from[i] = 0.0f;
      }
    });
  }
  double globalNorm(const float* g, size_t n) const override { return swerl::globalNorm(g, n); }
  void scale(float* g, size_t n, float s) const override { scaleInPlace(g, n, s); }
  void adamw(float* w, const float* g, float* m, float* v, size_t n, const AdamWConfig& cfg, int64_t step,
             bool decay) const override {
    adamwUpdate(w, g, m, v, n, cfg, step, decay);
  }
};

class CudaArray : public DeviceArray {
 public:
  explicit CudaArray(size_t n) : b_(std::max<size_t>(1, n) * sizeof(float)) {}
  float* data() override { return static_cast<float*>(b_.data()); }
  void read(size_t offset, size_t count, float* host) const override {
    b_.download(offset * sizeof(float), host, count * sizeof(float));
  }
  void write(size_t offset, const float* host, size_t count) override {
    b_.upload(offset * sizeof(float), host, count * sizeof(float));
  }

 private:
  DeviceBuffer b_;  // zeroed by its constructor
};

class CudaDevice : public OptimizerDevice {
 public:
  std::unique_ptr<DeviceArray> allocate(size_t n) const override { return std::make_unique<CudaArray>(n); }
  void zero(float* a, size_t n) const override { zeroCuda(a, n); }
  void accumulate(float* into, float* from, size_t n) const override { accumulateCuda(into, from, n); }
  double globalNorm(const float* g, size_t n) const override { return globalNormCuda(g, n); }
  void scale(float* g, size_t n, float s) const override { scaleInPlaceCuda(g, n, s); }
  void adamw(float* w, const float* g, float* m, float* v, size_t n, const AdamWConfig& cfg, int64_t step,
             bool decay) const override {
    adamwUpdateCuda(w, g, m, v, n, cfg, step, decay);
  }
};

}  // namespace

const OptimizerDevice& cpuOptimizerDevice() {
  static const CpuDevice device;
  return device;
}

const OptimizerDevice& cudaOptimizerDevice() {
  static const CudaDevice device;
  return device;
}

bool takesWeightDecay(const ParamSpec& p, bool decayAll) {
  return decayAll || p.kind == ParamKind::Linear || p.kind == ParamKind::Embedding;
}

Optimizer::Optimizer(size_t n, const OptimizerDevice& device) : dev_(device), n_(n) {}

float* Optimizer::grad() {
  if (!grad_) grad_ = dev_.allocate(n_);
  return grad_->data();
}

float* Optimizer::gradSlot(int slot) {
  SWERL_CHECK(slot >= 0 && slot < kGradSlots, InvalidArgument,
              "gradSlot must be in [0, " + std::to_string(kGradSlots) + ")");
  if (slot == 0) return grad();
  grad();  // the slots are folded into it
  std::unique_ptr<DeviceArray>& b = slots_[slot - 1];
  if (!b) b = dev_.allocate(n_);
  pending_ |= 1u << slot;
  return b->data();
}

void Optimizer::fold() {
  for (int s = 1; s < kGradSlots; ++s)
    if (pending_ & (1u << s)) dev_.accumulate(grad(), slots_[s - 1]->data(), n_);
  pending_ = 0;
}

void Optimizer::zeroGrad() {
  dev_.zero(grad(), n_);
  for (int s = 1; s < kGradSlots; ++s)
    if (pending_ & (1u << s)) dev_.zero(slots_[s - 1]->data(), n_);
  pending_ = 0;
}

void Optimizer::readGradient(size_t offset, size_t count, float* out) {
  SWERL_CHECK(offset <= n_ && count <= n_ - offset, InvalidArgument, "gradient range outside the parameters");
  fold();
  grad();
  grad_->read(offset, count, out);
}

double Optimizer::step(const std::vector<ParamSpec>& params, const OptimizerStepConfig& cfg,
                       const std::function<float*()>& weights) {
  fold();
  float* g = grad();
  const double norm = dev_.globalNorm(g, n_);
  SWERL_CHECK(std::isfinite(norm), NonFiniteGradient,
              "the gradient norm is not finite; the step was skipped and the weights are unchanged");
  if (cfg.maxGradNorm > 0 && norm > cfg.maxGradNorm)
    dev_.scale(g, n_, static_cast<float>(cfg.maxGradNorm / (norm + 1e-6)));
  if (!m_) {
    m_ = dev_.allocate(n_);
    v_ = dev_.allocate(n_);
  }
  const int64_t step = ++step_;
  float* w = weights();
  for (const ParamSpec& p : params) {
    SWERL_ASSERT(p.offset <= n_ && p.size <= n_ - p.offset);
    dev_.adamw(w + p.offset, g + p.offset, m_->data() + p.offset, v_->data() + p.offset, p.size, cfg.adamw, step,
               takesWeightDecay(p, cfg.decayAll));
  }
  zeroGrad();
  return norm;
}

void Optimizer::readMoments(float* m, float* v) const {
  if (!m_) {
    std::fill(m, m + n_, 0.0f);
    std::fill(v, v + n_, 0.0f);
    return;
  }
  m_->read(0, n_, m);
  v_->read(0, n_, v);
}

void Optimizer::setState(int64_t step, const float* m, const float* v) {
  SWERL_CHECK(step >= 0, InvalidArgument, "the step count must be >= 0");
  if (!m_) {
    m_ = dev_.allocate(n_);
    v_ = dev_.allocate(n_);
  }
  m_->write(0, m, n_);
  v_->write(0, v, n_);
  step_ = step;
}

void Optimizer::reset() {
  step_ = 0;
  m_.reset();
  v_.reset();
}

}  // namespace swerl

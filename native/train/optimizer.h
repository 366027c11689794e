// A model's training state beside its weights, and the optimizer step that consumes it: the
// accumulated gradient and its slots (folded in slot order), AdamW's moments and step count,
// global-norm clipping, and the AdamW loop over the parameter table with the weight-decay choice.
// One driver for every device: the arrays live in one device's memory and all arithmetic runs
// through its OptimizerDevice, the CPU's over train/adamw.h or CUDA's over
// kernels/cuda/adamw_cuda.h. The bindings (napi/model_binding.cc) only convert and call it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "model/param_table.h"
#include "train/adamw.h"

namespace swerl {

/** n floats in one device's memory, owned; freed with the object. */
class DeviceArray {
 public:
  virtual ~DeviceArray() = default;
  /** The first float, in the device's memory. */
  virtual float* data() = 0;
  /** [offset, offset + count) to host memory. */
  virtual void read(size_t offset, size_t count, float* host) const = 0;
  /** host[0, count) to [offset, offset + count). */
  virtual void write(size_t offset, const float* host, size_t count) = 0;
};

/**
 * What the optimizer needs of a device: its memory and its kernels. Every float* is that
 * device's memory (for the CPU, the host's).
 */
class OptimizerDevice {
 public:
  virtual ~OptimizerDevice() = default;
  /** n zeroed floats (n ≥ 1). */
  virtual std::unique_ptr<DeviceArray> allocate(size_t n) const = 0;
  virtual void zero(float* a, size_t n) const = 0;
  /** into += from, then from = 0, elementwise (a gradient slot folded into the gradient). */
  virtual void accumulate(float* into, float* from, size_t n) const = 0;
  virtual double globalNorm(const float* g, size_t n) const = 0;
  virtual void scale(float* g, size_t n, float s) const = 0;
  virtual void adamw(float* w, const float* g, float* m, float* v, size_t n, const AdamWConfig& cfg, int64_t step,
                     bool decay) const = 0;
};

/** The host: std::vector memory, train/adamw.h's kernels (multi-threaded, fixed order). */
const OptimizerDevice& cpuOptimizerDevice();
/** The CUDA device: DeviceBuffer memory and kernels/cuda/adamw_cuda.h (CUDA_UNAVAILABLE without one). */
const OptimizerDevice& cudaOptimizerDevice();

/**
 * Whether a parameter takes decoupled weight decay: linear and embedding weights do, norms and
 * biases do not (as the Hugging Face Trainer groups them), unless decayAll.
 */
bool takesWeightDecay(const ParamSpec& p, bool decayAll);

/** One optimizer step's settings. */
struct OptimizerStepConfig {
  AdamWConfig adamw;
  double maxGradNorm = 0;  // clip the global norm to this first (0: no clipping)
  bool decayAll = false;   // weight decay on every parameter, norms and biases too
};

/**
 * The gradients and AdamW state of a parameter arena of n floats (the layout of ParamSpec
 * offsets). Gradient slots 1..kGradSlots−1 let backward jobs run at once, each adding into its
 * own buffer; fold() adds the pending ones into the gradient in slot order (so the sum depends on
 * which samples went to which slot, never on timing) before anything reads the gradient.
 * Buffers are allocated on first use. Not thread-safe: the caller keeps a step or a read apart
 * from running backward jobs, and jobs on one slot apart from each other.
 */
class Optimizer {
 public:
  static constexpr int kGradSlots = 8;

  Optimizer(size_t n, const OptimizerDevice& device);

  size_t size() const { return n_; }

  /**
   * Where a backward job adds its gradient: slot 0 is the gradient itself, slots 1..7 buffers of
   * their own (allocated here, so call it before the job starts, on the thread that schedules it).
   */
  float* gradSlot(int slot);

  /** Adds the pending slots into the gradient in slot order and zeroes them. */
  void fold();

  /** Zeroes the gradient and every pending slot. */
  void zeroGrad();

  /** gradient[offset, offset + count) to host memory, the slots folded in first. */
  void readGradient(size_t offset, size_t count, float* out);

  /**
   * The optimizer step: folds the slots, measures the global gradient norm (NON_FINITE_GRADIENT,
   * and nothing else changes, when it is NaN or infinite), clips it (torch.nn.utils.clip_grad_norm_:
   * scale by max / (norm + 1e-6) when the norm exceeds max), counts the step, runs AdamW on every
   * parameter of `params` (weight decay per takesWeightDecay), and zeroes the gradient.
   * `weights` gives the arena to update (device memory, the same layout); it is called only once
   * the step goes ahead. Returns the norm before clipping.
   */
  double step(const std::vector<ParamSpec>& params, const OptimizerStepConfig& cfg,
              const std::function<float*()>& weights);

  /** Steps taken (the count the next step's bias corrections continue from). */
  int64_t steps() const { return step_.load(); }

  /** Whether the moments exist (they do after the first step or setState). */
  bool hasMoments() const { return m_ != nullptr; }

  /** The moments m, v (n floats each) to host memory; zeros before they exist. */
  void readMoments(float* m, float* v) const;

  /** Restores a checkpoint: the step count and the moments (n host floats each). */
  void setState(int64_t step, const float* m, const float* v);

  /** A fresh optimizer's state, as a new torch optimizer: no steps, no moments. */
  void reset();

 private:
  float* grad();  // the gradient, allocated (zeroed) on first use

  const OptimizerDevice& dev_;
  size_t n_;
  std::unique_ptr<DeviceArray> grad_, m_, v_;
  std::vector<std::unique_ptr<DeviceArray>> slots_ = std::vector<std::unique_ptr<DeviceArray>>(kGradSlots - 1);
  uint32_t pending_ = 0;          // bit s: slot s holds gradient not yet folded
  std::atomic<int64_t> step_{0};  // read from the JS thread while a step may run
};

}  // namespace swerl

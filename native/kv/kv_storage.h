// Where the KV data of the paged cache lives.
//
// Per layer, one K page array and one V page array, each [numBlocks, blockSize, numKvHeads,
// headDim] in the storage dtype, row-major, so the KV of token slot s (= block * blockSize +
// offset) for a layer is the contiguous row of numKvHeads * headDim elements at s. The
// attention kernels read it through PagedKvView; the model writes it through write().
// Inputs and outputs of write()/read() are f32 host arrays [n, numKvHeads * headDim].
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace swerl {

enum class KvDtype { F32, F16, Bf16 };
enum class Device { Cpu, Cuda };

struct KvGeometry {
  int32_t numBlocks, blockSize, numLayers, numKvHeads, headDim;
  KvDtype dtype;
  size_t rowElems() const { return static_cast<size_t>(numKvHeads) * headDim; }
  size_t slots() const { return static_cast<size_t>(numBlocks) * blockSize; }
};

size_t dtypeBytes(KvDtype dtype);

/** What an attention kernel needs to read one sequence's KV for one layer. Borrowed pointers. */
struct PagedKvView {
  const void* k;  // [numBlocks, blockSize, numKvHeads, headDim] of dtype
  const void* v;
  const int32_t* blockTable;  // the sequence's blocks in order
  int32_t numTableBlocks;
  int64_t length;  // tokens in the sequence
  int32_t blockSize, numKvHeads, headDim;
  KvDtype dtype;
  Device device;
};

class KvStorage {
 public:
  virtual ~KvStorage() = default;
  const KvGeometry& geometry() const { return geo_; }
  virtual Device device() const = 0;
  /** Writes rows k[i], v[i] into slot slots[i] of layer, converting from f32. */
  virtual void write(int32_t layer, const int32_t* slots, size_t n, const float* k, const float* v) = 0;
  /** Reads slot rows back as f32 (tests and debugging). */
  virtual void read(int32_t layer, const int32_t* slots, size_t n, float* k, float* v) const = 0;
  /** Copies the first `slots` token rows of block src to block dst, every layer, K and V. */
  virtual void copyBlock(int32_t src, int32_t dst, int32_t slots) = 0;
  virtual const void* kPages(int32_t layer) const = 0;
  virtual const void* vPages(int32_t layer) const = 0;

 protected:
  explicit KvStorage(const KvGeometry& geo) : geo_(geo) {}
  KvGeometry geo_;
};

std::unique_ptr<KvStorage> makeCpuKvStorage(const KvGeometry& geo);
/** Throws CUDA_UNAVAILABLE when swerl was built without CUDA or no device is present. */
std::unique_ptr<KvStorage> makeCudaKvStorage(const KvGeometry& geo);

}  // namespace swerl

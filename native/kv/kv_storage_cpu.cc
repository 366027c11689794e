// Host-memory KV pages (see kv_storage.h). Pages come from calloc, so untouched slots read as
// zeros and the OS only backs pages that are written.
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/kv_kernels.h"
#include "kv/kv_storage.h"

namespace swerl {

size_t dtypeBytes(KvDtype dtype) { return dtype == KvDtype::F32 ? 4 : 2; }

namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

class CpuKvStorage final : public KvStorage {
 public:
  explicit CpuKvStorage(const KvGeometry& geo) : KvStorage(geo) {
    pageBytes_ = geo.slots() * geo.rowElems() * dtypeBytes(geo.dtype);
    for (int32_t l = 0; l < 2 * geo.numLayers; ++l) {
      void* p = std::calloc(pageBytes_, 1);
      SWERL_CHECK(p != nullptr, OutOfMemory,
                  "cannot allocate " + std::to_string(pageBytes_ * 2 * geo.numLayers) +
                      " bytes of KV cache; lower numBlocks or use a 16-bit dtype");
      pages_.emplace_back(p);
    }
  }
  Device device() const override { return Device::Cpu; }

  void write(int32_t layer, const int32_t* slots, size_t n, const float* k, const float* v) override {
    kvScatterRows(pages_[2 * layer].get(), slots, n, k, geo_.rowElems(), geo_.dtype);
    kvScatterRows(pages_[2 * layer + 1].get(), slots, n, v, geo_.rowElems(), geo_.dtype);
  }

  void read(int32_t layer, const int32_t* slots, size_t n, float* k, float* v) const override {
    kvGatherRows(pages_[2 * layer].get(), slots, n, k, geo_.rowElems(), geo_.dtype);
    kvGatherRows(pages_[2 * layer + 1].get(), slots, n, v, geo_.rowElems(), geo_.dtype);
  }

  void copyBlock(int32_t src, int32_t dst, int32_t slots) override {
    size_t blockBytes = static_cast<size_t>(geo_.blockSize) * geo_.rowElems() * dtypeBytes(geo_.dtype);
    size_t bytes = static_cast<size_t>(slots) * geo_.rowElems() * dtypeBytes(geo_.dtype);
    for (auto& page : pages_) {
      auto* base = static_cast<unsigned char*>(page.get());
      std::memcpy(base + dst * blockBytes, base + src * blockBytes, bytes);
    }
  }

  const void* kPages(int32_t layer) const override { return pages_[2 * layer].get(); }
  const void* vPages(int32_t layer) const override { return pages_[2 * layer + 1].get(); }

 private:
  size_t pageBytes_ = 0;
  std::vector<std::unique_ptr<void, FreeDeleter>> pages_;  // K0, V0, K1, V1, ...
};

}  // namespace

std::unique_ptr<KvStorage> makeCpuKvStorage(const KvGeometry& geo) { return std::make_unique<CpuKvStorage>(geo); }

}  // namespace swerl

// A fixed-capacity open-addressing map from a 64-bit block hash to a block id.
//
// Capacity is a power of two at least twice the number of blocks, and there is at most one
// entry per block, so it never grows or rehashes. Linear probing with backward-shift deletion
// (no tombstones), so lookups stay short however many evictions happen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace swerl {

class HashIndex {
 public:
  explicit HashIndex(size_t maxEntries);

  /** The block stored under hash, or -1. */
  int32_t find(uint64_t hash) const {
    for (size_t i = slot(hash);; i = (i + 1) & mask_) {
      if (values_[i] < 0) return -1;
      if (keys_[i] == hash) return values_[i];
    }
  }
  /** Stores hash -> block; hash must not be present. */
  void insert(uint64_t hash, int32_t block);
  /** Removes hash if it maps to block; returns whether it did. */
  bool erase(uint64_t hash, int32_t block);
  void clear();
  size_t size() const { return size_; }

 private:
  size_t slot(uint64_t hash) const { return static_cast<size_t>((hash * 0x9e3779b97f4a7c15ull) >> shift_) & mask_; }

  std::vector<uint64_t> keys_;
  std::vector<int32_t> values_;  // -1 = empty
  size_t mask_ = 0, size_ = 0;
  int shift_ = 0;
};

}  // namespace swerl

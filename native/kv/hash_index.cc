// Open-addressing block-hash index (see hash_index.h).
#include "kv/hash_index.h"

#include <algorithm>

#include "common/error.h"

namespace swerl {

HashIndex::HashIndex(size_t maxEntries) {
  size_t cap = 16;
  int bits = 4;
  while (cap < 2 * maxEntries) {
    cap <<= 1;
    ++bits;
  }
  keys_.assign(cap, 0);
  values_.assign(cap, -1);
  mask_ = cap - 1;
  shift_ = 64 - bits;
}

void HashIndex::insert(uint64_t hash, int32_t block) {
  SWERL_ASSERT(size_ < mask_);
  size_t i = slot(hash);
  while (values_[i] >= 0) {
    SWERL_ASSERT(keys_[i] != hash);
    i = (i + 1) & mask_;
  }
  keys_[i] = hash;
  values_[i] = block;
  ++size_;
}

bool HashIndex::erase(uint64_t hash, int32_t block) {
  size_t i = slot(hash);
  for (;; i = (i + 1) & mask_) {
    if (values_[i] < 0) return false;
    if (keys_[i] == hash) break;
  }
  if (values_[i] != block) return false;
  // Backward-shift: pull later entries of the probe run into the hole when their home slot
  // does not lie cyclically in (hole, j].
  size_t hole = i;
  for (size_t j = (hole + 1) & mask_; values_[j] >= 0; j = (j + 1) & mask_) {
    size_t home = slot(keys_[j]);
    bool homeInRange = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (homeInRange) continue;
    keys_[hole] = keys_[j];
    values_[hole] = values_[j];
    hole = j;
  }
  values_[hole] = -1;
  --size_;
  return true;
}

void HashIndex::clear() {
  std::fill(values_.begin(), values_.end(), -1);
  size_ = 0;
}

}  // namespace swerl

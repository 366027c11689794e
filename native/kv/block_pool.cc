// Block pool, free queue and prefix-cache registry (see block_pool.h).
#include "kv/block_pool.h"

#include <cstring>

#include "common/error.h"

namespace swerl {

BlockPool::BlockPool(int32_t numBlocks, int32_t blockSize)
    : numBlocks_(numBlocks),
      blockSize_(blockSize),
      blocks_(static_cast<size_t>(numBlocks) + 2),
      tokens_(static_cast<size_t>(numBlocks) * blockSize),
      index_(static_cast<size_t>(numBlocks)),
      head_(numBlocks),
      tail_(numBlocks + 1) {
  blocks_[head_].next = tail_;
  blocks_[tail_].prev = head_;
  for (int32_t b = 0; b < numBlocks; ++b) linkBack(b);
  freeCount_ = numBlocks;
}

void BlockPool::linkBack(int32_t b) {
  int32_t last = blocks_[tail_].prev;
  blocks_[b].prev = last;
  blocks_[b].next = tail_;
  blocks_[last].next = b;
  blocks_[tail_].prev = b;
}

void BlockPool::linkFront(int32_t b) {
  int32_t first = blocks_[head_].next;
  blocks_[b].prev = head_;
  blocks_[b].next = first;
  blocks_[first].prev = b;
  blocks_[head_].next = b;
}

void BlockPool::unlink(int32_t b) {
  BlockMeta& m = blocks_[b];
  blocks_[m.prev].next = m.next;
  blocks_[m.next].prev = m.prev;
  m.prev = m.next = -1;
}

int32_t BlockPool::allocate() {
  SWERL_ASSERT(freeCount_ > 0);
  int32_t b = blocks_[head_].next;
  unlink(b);
  --freeCount_;
  if (blocks_[b].registered) {
    --cachedFree_;
    ++evictions_;
    unregister(b);
  }
  blocks_[b].ref = 1;
  return b;
}

void BlockPool::retain(int32_t b) {
  BlockMeta& m = blocks_[b];
  if (m.ref++ == 0) {
    unlink(b);
    --freeCount_;
    if (m.registered) --cachedFree_;
  }
}

void BlockPool::release(int32_t b) {
  BlockMeta& m = blocks_[b];
  SWERL_ASSERT(m.ref > 0);
  if (--m.ref > 0) return;
  ++freeCount_;
  if (m.registered) {
    ++cachedFree_;
    linkBack(b);
  } else {
    linkFront(b);
  }
}

int32_t BlockPool::lookup(uint64_t hash, const int32_t* tokens, int64_t version, int32_t parent) const {
  int32_t b = index_.find(hash);
  if (b < 0) return -1;
  const BlockMeta& m = blocks_[b];
  if (!m.registered || m.version != version || m.parent != parent) return -1;
  if (parent >= 0 && (!blocks_[parent].registered || blocks_[parent].gen != m.parentGen)) return -1;
  if (std::memcmp(&tokens_[static_cast<size_t>(b) * blockSize_], tokens, sizeof(int32_t) * blockSize_) != 0)
    return -1;
  return b;
}

void BlockPool::registerBlock(int32_t b, uint64_t hash, const int32_t* tokens, int64_t version, int32_t parent) {
  BlockMeta& m = blocks_[b];
  SWERL_ASSERT(!m.registered && m.ref > 0);
  SWERL_ASSERT(parent < 0 || blocks_[parent].registered);
  index_.insert(hash, b);
  m.registered = true;
  ++m.gen;
  m.hash = hash;
  m.version = version;
  m.parent = parent;
  m.parentGen = parent >= 0 ? blocks_[parent].gen : 0;
  std::memcpy(&tokens_[static_cast<size_t>(b) * blockSize_], tokens, sizeof(int32_t) * blockSize_);
}

void BlockPool::unregister(int32_t b) {
  BlockMeta& m = blocks_[b];
  index_.erase(m.hash, b);
  m.registered = false;
  ++m.gen;
}

void BlockPool::unregisterAll() {
  for (int32_t b = 0; b < numBlocks_; ++b) {
    if (!blocks_[b].registered) continue;
    blocks_[b].registered = false;
    ++blocks_[b].gen;
  }
  index_.clear();
  cachedFree_ = 0;
}

}  // namespace swerl

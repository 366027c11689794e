// Block pool, free queue and prefix-cache registry (see block_pool.h).
#include "kv/block_pool.h"

#include <cstring>

#include "common/error.h"

namespace swerl {

BlockPool::BlockPool(int32_t numBlocks, int32_t blockSize)
    : numBlocks_(numBlocks),
      blockSize_(blockSize),
      blocks_(static_cast<size_t>(numBlocks) + 2),
      tokens_(new int32_t[static_cast<size_t>(numBlocks) * blockSize]),
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
  blocks_[b].ref = 1;  // before unregister, so that it is not counted as a cached free block
  if (blocks_[b].registered) {
    --cachedFree_;
    ++evictions_;
    unregister(b);
  }
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
  if (std::memcmp(&tokens_[static_cast<size_t>(b) * blockSize_], tokens, sizeof(int32_t) * blockSize_) != 0) return -1;
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
  if (parent >= 0) {  // link as the first child of parent
    BlockMeta& p = blocks_[parent];
    m.prevSibling = -1;
    m.nextSibling = p.firstChild;
    if (p.firstChild >= 0) blocks_[p.firstChild].prevSibling = b;
    p.firstChild = b;
  }
  std::memcpy(&tokens_[static_cast<size_t>(b) * blockSize_], tokens, sizeof(int32_t) * blockSize_);
}

void BlockPool::unregister(int32_t b) {
  // Depth-first over the registered subtree rooted at b; children are unlinked as they go.
  stack_.clear();
  stack_.push_back(b);
  while (!stack_.empty()) {
    int32_t x = stack_.back();
    int32_t child = blocks_[x].firstChild;
    if (child >= 0) {
      stack_.push_back(child);
      continue;
    }
    stack_.pop_back();
    unregisterOne(x);
  }
}

void BlockPool::unregisterOne(int32_t b) {
  BlockMeta& m = blocks_[b];
  SWERL_ASSERT(m.registered && m.firstChild < 0);
  if (m.parent >= 0) {
    BlockMeta& p = blocks_[m.parent];
    if (m.prevSibling >= 0)
      blocks_[m.prevSibling].nextSibling = m.nextSibling;
    else
      p.firstChild = m.nextSibling;
    if (m.nextSibling >= 0) blocks_[m.nextSibling].prevSibling = m.prevSibling;
  }
  m.prevSibling = m.nextSibling = -1;
  const bool indexed = index_.erase(m.hash, b);
  SWERL_ASSERT(indexed);
  m.registered = false;
  ++m.gen;
  if (m.ref == 0) --cachedFree_;
}

void BlockPool::unregisterAll() {
  for (int32_t b = 0; b < numBlocks_; ++b) {
    BlockMeta& m = blocks_[b];
    m.firstChild = m.prevSibling = m.nextSibling = -1;
    if (!m.registered) continue;
    m.registered = false;
    ++m.gen;
  }
  index_.clear();
  cachedFree_ = 0;
}

}  // namespace swerl

// The pool of KV blocks: ref counts, the LRU free queue, and the prefix-cache registry.
//
// Blocks are ids 0..numBlocks-1; the KV data lives in kv_storage.h. A block is either active
// (ref > 0, owned by one or more sequences) or free (ref == 0, in the free queue). A full,
// committed block may be *registered*: it then carries its chained hash, its tokens, the weight
// version and a link to its parent block, and can be hit by another sequence with the same
// prefix. A free registered block is "cached"; reallocating it evicts it.
//
// A hit is never trusted to the hash alone: registered blocks record (parent id, parent's
// generation), and a block's generation changes whenever its registration does, so a lookup
// that walks a prefix block by block and checks tokens, version and parent link at each step
// returns only blocks whose whole prefix equals the caller's. Unregistering a block (eviction,
// weight update) unregisters its registered descendants too, so every registered block is
// reachable from a sequence start: nothing unreachable is counted as cached, and no stale entry
// can occupy the hash of a prefix that is being cached again.
//
// Free queue order: popped from the front. Blocks without a registration go to the front (they
// hold nothing worth keeping); registered blocks go to the back, so the least recently freed is
// evicted first, and freeing a sequence tail-first queues the end of its chain before its start.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kv/hash_index.h"

namespace swerl {

struct BlockMeta {
  int32_t ref = 0;
  int32_t prev = -1, next = -1;  // free-queue links (sentinel ids numBlocks and numBlocks+1)
  bool registered = false;
  uint32_t gen = 0;  // bumped on every registration change
  uint64_t hash = 0;
  int64_t version = 0;
  int32_t parent = -1;  // registered parent block, -1 for a sequence's first block
  uint32_t parentGen = 0;
  int32_t firstChild = -1, prevSibling = -1, nextSibling = -1;  // registered children of this block
};

class BlockPool {
 public:
  BlockPool(int32_t numBlocks, int32_t blockSize);

  int32_t numBlocks() const { return numBlocks_; }
  int32_t blockSize() const { return blockSize_; }
  int32_t freeCount() const { return freeCount_; }
  int32_t cachedCount() const { return cachedFree_; }
  uint64_t evictions() const { return evictions_; }
  const BlockMeta& meta(int32_t b) const { return blocks_[b]; }

  /** Takes the front free block, evicting its registration if it has one. freeCount() must be > 0. */
  int32_t allocate();
  /** One more owner; a free block leaves the free queue. */
  void retain(int32_t b);
  /** One owner less; at zero the block joins the free queue (see the order above). */
  void release(int32_t b);

  /** The registered block for hash whose tokens, version and parent link match exactly, or -1. */
  int32_t lookup(uint64_t hash, const int32_t* tokens, int64_t version, int32_t parent) const;
  /** Whether hash is taken in the index (by any block). */
  bool hashTaken(uint64_t hash) const { return index_.find(hash) >= 0; }
  /** Registers active block b (full, KV written) under hash with the given parent (-1 or registered). */
  void registerBlock(int32_t b, uint64_t hash, const int32_t* tokens, int64_t version, int32_t parent);
  /** Drops every registration (a weight update): nothing cached can be hit afterwards. */
  void unregisterAll();

 private:
  void unregister(int32_t b);  // b and its descendants
  void unregisterOne(int32_t b);
  void linkFront(int32_t b);
  void linkBack(int32_t b);
  void unlink(int32_t b);

  int32_t numBlocks_, blockSize_;
  std::vector<BlockMeta> blocks_;      // numBlocks + 2 sentinels
  std::unique_ptr<int32_t[]> tokens_;  // [numBlocks, blockSize]: tokens of registered blocks (uninitialised)
  HashIndex index_;
  int32_t head_, tail_;  // sentinel ids
  int32_t freeCount_ = 0, cachedFree_ = 0;
  uint64_t evictions_ = 0;
  std::vector<int32_t> stack_;  // scratch for unregister (chains can be thousands of blocks deep)
};

}  // namespace swerl

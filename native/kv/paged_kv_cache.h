// The paged KV cache: sequences with block tables over a BlockPool, automatic prefix caching,
// fork, and the KV storage, with vLLM-v1 semantics.
//
// Sequence lifecycle: createSequence -> append (reserve slots; leading full blocks that match
// committed cached blocks are reused) -> the forward pass writes the KV -> commit (the written
// full blocks become hittable) -> ... -> free (committed full blocks stay cached until evicted).
//
// Rules (each is tested):
// - hits only on a sequence's leading full blocks, only on committed blocks of the current
//   weight version, and never after the sequence allocated a block of its own (a "miss");
// - fork shares full blocks and copies the partial tail block (KV included), so block tables
//   are append-only and a block with more than one owner is always full and never written;
// - every call that throws leaves the cache exactly as it was.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "kv/block_pool.h"
#include "kv/kv_storage.h"

namespace swerl {

struct KvCacheOptions {
  int32_t numBlocks = 0, blockSize = 16, numLayers = 0, numKvHeads = 0, headDim = 0;
  KvDtype dtype = KvDtype::F32;
  Device device = Device::Cpu;
  bool prefixCaching = true;
};

struct AppendResult {
  int64_t cachedTokens;  // tokens whose KV came from the prefix cache
  int64_t newBlocks;     // blocks taken from the free queue
};

struct KvCacheStats {
  int64_t numBlocks, freeBlocks, cachedBlocks, activeBlocks;
  int64_t queriedTokens, cachedTokens, evictions;
};

class PagedKvCache {
 public:
  explicit PagedKvCache(const KvCacheOptions& options);

  int32_t blockSize() const { return pool_.blockSize(); }
  const KvGeometry& geometry() const { return storage_->geometry(); }
  /** The KV pages, for the model's paged forward. */
  KvStorage& storage() { return *storage_; }
  bool prefixCaching() const { return prefixCaching_; }
  int64_t weightVersion() const { return version_; }

  int64_t createSequence();
  AppendResult append(int64_t seq, const int32_t* tokens, size_t n);
  /**
   * Appends counts[i] tokens (consecutive in `tokens`) to seqs[i] for every i, all or nothing;
   * sequences must be distinct. Every sequence's prefix hits are taken before any block is
   * allocated. Writes each sequence's cached tokens to cachedTokens[i]; returns the new blocks.
   * One call per engine step instead of one per sequence.
   */
  int64_t appendBatch(const int64_t* seqs, size_t numSeqs, const int32_t* tokens, const int32_t* counts,
                      int64_t* cachedTokens);
  void commit(int64_t seq);
  /** commit() of each sequence; all must exist, or nothing changes. */
  void commitBatch(const int64_t* seqs, size_t numSeqs);
  int64_t fork(int64_t seq);
  void free(int64_t seq);
  int64_t length(int64_t seq) const;
  int64_t committedLength(int64_t seq) const;
  const std::vector<int32_t>& blockTable(int64_t seq) const;
  void setWeightVersion(int64_t version);
  KvCacheStats stats() const;

  /** Slot (block * blockSize + offset) of positions [start, start+count) of seq. */
  void slotMapping(int64_t seq, int64_t start, int64_t count, int32_t* out) const;
  /** Writes f32 K/V rows [count, numKvHeads*headDim] for positions [start, start+count) of seq. */
  void writeKv(int64_t seq, int32_t layer, int64_t start, int64_t count, const float* k, const float* v);
  void readKv(int64_t seq, int32_t layer, int64_t start, int64_t count, float* k, float* v) const;
  PagedKvView view(int64_t seq, int32_t layer) const;

 private:
  struct Sequence {
    std::vector<int32_t> tokens;
    std::vector<int32_t> blocks;  // block table
    // For the leading full blocks whose prefix is registered: the chained hash, the registered
    // block holding that prefix (this sequence's own block, or an identical one), its generation.
    std::vector<uint64_t> hashes;
    std::vector<int32_t> canon;
    std::vector<uint32_t> canonGen;
    int64_t committed = 0;    // tokens whose KV has been written
    bool missed = false;      // allocated a block of its own: no more prefix hits
    uint64_t batchStamp = 0;  // the last appendBatch that named it (duplicate check)
  };

  // An append worked out against the current state; its hits are hitScratch_[hitBegin, hitEnd).
  struct AppendPlan {
    Sequence* seq;
    const int32_t* tokens;
    size_t n;
    size_t hitBegin, hitEnd;
    int64_t newBlocks;
    bool lookup;
  };

  void checkTokens(const int32_t* tokens, size_t n) const;
  AppendPlan planAppend(Sequence& s, const int32_t* tokens, size_t n);  // changes nothing
  void checkCapacity(int64_t newBlocks, int64_t tokens);                // throws KV_CACHE_FULL
  void reserveFor(const AppendPlan& p);                                 // may throw bad_alloc only
  void applyHits(const AppendPlan& p);                                  // nothing below throws
  int64_t applyAllocations(const AppendPlan& p);                        // returns cached tokens

  Sequence& get(int64_t seq);
  const Sequence& get(int64_t seq) const;
  void checkRange(const Sequence& s, int64_t start, int64_t count) const;
  void checkLayer(int32_t layer) const;
  void registerCommitted(Sequence& s);

  std::unique_ptr<KvStorage> storage_;  // first: the big allocation fails before anything else is built
  BlockPool pool_;
  bool prefixCaching_;
  int64_t version_ = 0;
  int64_t nextSeq_ = 1;
  std::unordered_map<int64_t, Sequence> seqs_;
  int64_t queriedTokens_ = 0, cachedTokens_ = 0;
  std::vector<int32_t> hitScratch_, freeHitScratch_;
  std::vector<uint64_t> hashScratch_;
  uint64_t batchStamp_ = 0;
  std::vector<AppendPlan> plans_;
};

}  // namespace swerl

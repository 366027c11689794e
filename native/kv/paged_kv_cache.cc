// Paged KV cache: sequence bookkeeping and prefix caching (see paged_kv_cache.h).
#include "kv/paged_kv_cache.h"

#include <algorithm>
#include <climits>
#include <string>

#include "common/error.h"
#include "kv/block_hash.h"

namespace swerl {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

// Makes room for `extra` more elements, growing geometrically (an exact reserve on every small
// append would copy the whole vector each time: quadratic for decode-style appends).
template <typename T>
void reserveMore(std::vector<T>& v, size_t extra) {
  const size_t need = v.size() + extra;
  if (need > v.capacity()) v.reserve(std::max(need, 2 * v.capacity()));
}

KvGeometry checkedGeometry(const KvCacheOptions& o) {
  SWERL_CHECK(o.numBlocks >= 1, InvalidArgument, "numBlocks must be an integer >= 1, got " + str(o.numBlocks));
  SWERL_CHECK(o.blockSize >= 1 && o.blockSize <= 4096, InvalidArgument,
              "blockSize must be an integer in [1, 4096], got " + str(o.blockSize));
  SWERL_CHECK(o.numLayers >= 1, InvalidArgument, "numLayers must be an integer >= 1, got " + str(o.numLayers));
  SWERL_CHECK(o.numKvHeads >= 1, InvalidArgument, "numKvHeads must be an integer >= 1, got " + str(o.numKvHeads));
  SWERL_CHECK(o.headDim >= 1, InvalidArgument, "headDim must be an integer >= 1, got " + str(o.headDim));
  SWERL_CHECK(static_cast<int64_t>(o.numBlocks) * o.blockSize <= INT32_MAX, InvalidArgument,
              "numBlocks * blockSize must be < 2^31 token slots");
  KvGeometry geo{o.numBlocks, o.blockSize, o.numLayers, o.numKvHeads, o.headDim, o.dtype};
  const double bytes = 2.0 * geo.numLayers * static_cast<double>(geo.slots()) * static_cast<double>(geo.rowElems()) *
                       static_cast<double>(dtypeBytes(geo.dtype));
  SWERL_CHECK(bytes < 281474976710656.0, OutOfMemory,
              "the KV cache would need " + std::to_string(bytes / 1e12) + " TB; lower numBlocks or the model shape");
  return geo;
}

std::unique_ptr<KvStorage> makeStorage(const KvCacheOptions& o) {
  KvGeometry geo = checkedGeometry(o);
  return o.device == Device::Cuda ? makeCudaKvStorage(geo) : makeCpuKvStorage(geo);
}

}  // namespace

PagedKvCache::PagedKvCache(const KvCacheOptions& o)
    : storage_(makeStorage(o)), pool_(o.numBlocks, o.blockSize), prefixCaching_(o.prefixCaching) {}

PagedKvCache::Sequence& PagedKvCache::get(int64_t seq) {
  auto it = seqs_.find(seq);
  SWERL_CHECK(it != seqs_.end(), UnknownSequence,
              "sequence " + str(seq) + " does not exist (never created, or already freed)");
  return it->second;
}

const PagedKvCache::Sequence& PagedKvCache::get(int64_t seq) const { return const_cast<PagedKvCache*>(this)->get(seq); }

int64_t PagedKvCache::createSequence() {
  int64_t id = nextSeq_;
  seqs_.emplace(id, Sequence{});
  ++nextSeq_;
  return id;
}

void PagedKvCache::checkTokens(const int32_t* tokens, size_t n) const {
  for (size_t i = 0; i < n; ++i)
    SWERL_CHECK(
        tokens[i] >= 0, InvalidArgument,
        "tokens[" + str(static_cast<int64_t>(i)) + "] is " + str(tokens[i]) + "; token ids must be integers >= 0");
}

PagedKvCache::AppendPlan PagedKvCache::planAppend(Sequence& s, const int32_t* tokens, size_t n) {
  const int64_t bs = blockSize();
  const int64_t len = static_cast<int64_t>(s.tokens.size());
  AppendPlan p{&s, tokens, n, hitScratch_.size(), 0, 0, prefixCaching_ && !s.missed};
  int64_t hitTokens = 0;
  if (p.lookup) {
    SWERL_ASSERT(len % bs == 0 && s.committed == len && s.canon.size() == s.blocks.size());
    int32_t parent = s.canon.empty() ? -1 : s.canon.back();
    uint64_t parentHash = s.hashes.empty() ? kRootBlockHash : s.hashes.back();
    bool alive = parent < 0 || (pool_.meta(parent).registered && pool_.meta(parent).gen == s.canonGen.back());
    while (alive && hitTokens + bs <= static_cast<int64_t>(n)) {
      uint64_t h = hashBlock(parentHash, tokens + hitTokens, bs, version_);
      int32_t b = pool_.lookup(h, tokens + hitTokens, version_, parent);
      if (b < 0) break;
      hitScratch_.push_back(b);
      hashScratch_.push_back(h);
      parent = b;
      parentHash = h;
      hitTokens += bs;
    }
  }
  p.hitEnd = hitScratch_.size();
  const int64_t rest = static_cast<int64_t>(n) - hitTokens;
  const int64_t tailRoom = len % bs == 0 ? 0 : bs - len % bs;
  p.newBlocks = rest > tailRoom ? (rest - tailRoom + bs - 1) / bs : 0;
  return p;
}

void PagedKvCache::checkCapacity(int64_t newBlocks, int64_t tokens) {
  // Hit blocks that are free now leave the free queue before anything is allocated.
  freeHitScratch_.clear();
  for (int32_t b : hitScratch_)
    if (pool_.meta(b).ref == 0) freeHitScratch_.push_back(b);
  std::sort(freeHitScratch_.begin(), freeHitScratch_.end());
  const auto distinct = std::unique(freeHitScratch_.begin(), freeHitScratch_.end()) - freeHitScratch_.begin();
  const int64_t available = pool_.freeCount() - distinct;
  SWERL_CHECK(newBlocks <= available, KvCacheFull,
              "KV cache full: appending " + str(tokens) + " tokens needs " + str(newBlocks) + " free blocks but only " +
                  str(available) + " are free (" + str(pool_.cachedCount()) +
                  " of the free blocks hold cached prefixes). Free or preempt sequences, or create the cache "
                  "with more numBlocks.");
}

void PagedKvCache::reserveFor(const AppendPlan& p) {
  Sequence& s = *p.seq;
  const size_t hits = p.hitEnd - p.hitBegin;
  reserveMore(s.tokens, p.n);
  reserveMore(s.blocks, hits + static_cast<size_t>(p.newBlocks));
  reserveMore(s.hashes, hits);
  reserveMore(s.canon, hits);
  reserveMore(s.canonGen, hits);
}

void PagedKvCache::applyHits(const AppendPlan& p) {
  Sequence& s = *p.seq;
  s.tokens.insert(s.tokens.end(), p.tokens, p.tokens + p.n);
  for (size_t i = p.hitBegin; i < p.hitEnd; ++i) {
    int32_t b = hitScratch_[i];
    pool_.retain(b);
    s.blocks.push_back(b);
    s.hashes.push_back(hashScratch_[i]);
    s.canon.push_back(b);
    s.canonGen.push_back(pool_.meta(b).gen);
  }
}

int64_t PagedKvCache::applyAllocations(const AppendPlan& p) {
  Sequence& s = *p.seq;
  for (int64_t i = 0; i < p.newBlocks; ++i) s.blocks.push_back(pool_.allocate());
  if (p.newBlocks > 0) s.missed = true;
  const int64_t hitTokens = static_cast<int64_t>(p.hitEnd - p.hitBegin) * blockSize();
  if (p.lookup) {
    queriedTokens_ += static_cast<int64_t>(p.n);
    cachedTokens_ += hitTokens;
    s.committed += hitTokens;  // cached KV is already written
  }
  return hitTokens;
}

AppendResult PagedKvCache::append(int64_t seq, const int32_t* tokens, size_t n) {
  Sequence& s = get(seq);
  checkTokens(tokens, n);
  hitScratch_.clear();
  hashScratch_.clear();
  const AppendPlan p = planAppend(s, tokens, n);
  checkCapacity(p.newBlocks, static_cast<int64_t>(n));
  reserveFor(p);  // the last step that can throw
  applyHits(p);
  return AppendResult{applyAllocations(p), p.newBlocks};
}

int64_t PagedKvCache::appendBatch(const int64_t* seqs, size_t numSeqs, const int32_t* tokens, const int32_t* counts,
                                  int64_t* cachedTokens) {
  size_t total = 0;
  for (size_t i = 0; i < numSeqs; ++i) {
    SWERL_CHECK(counts[i] >= 0, InvalidArgument, "counts[" + str(static_cast<int64_t>(i)) + "] is negative");
    total += static_cast<size_t>(counts[i]);
  }
  checkTokens(tokens, total);
  hitScratch_.clear();
  hashScratch_.clear();
  plans_.clear();
  int64_t newBlocks = 0;
  size_t offset = 0;
  ++batchStamp_;
  for (size_t i = 0; i < numSeqs; ++i) {
    Sequence& s = get(seqs[i]);
    SWERL_CHECK(
        s.batchStamp != batchStamp_, InvalidArgument,
        "appendBatch: sequence " + str(seqs[i]) + " appears twice; give each sequence once with all its tokens");
    s.batchStamp = batchStamp_;
    plans_.push_back(planAppend(s, tokens + offset, static_cast<size_t>(counts[i])));
    newBlocks += plans_.back().newBlocks;
    offset += static_cast<size_t>(counts[i]);
  }
  checkCapacity(newBlocks, static_cast<int64_t>(total));
  for (const AppendPlan& p : plans_) reserveFor(p);
  // Every sequence's hits are retained before any block is allocated, so no allocation can evict
  // a block another sequence of the batch was promised.
  for (const AppendPlan& p : plans_) applyHits(p);
  for (size_t i = 0; i < numSeqs; ++i) cachedTokens[i] = applyAllocations(plans_[i]);
  return newBlocks;
}

void PagedKvCache::registerCommitted(Sequence& s) {
  const size_t bs = static_cast<size_t>(blockSize());
  const size_t full = static_cast<size_t>(s.committed) / bs;
  if (s.canon.size() >= full) return;
  reserveMore(s.hashes, full - s.hashes.size());
  reserveMore(s.canon, full - s.canon.size());
  reserveMore(s.canonGen, full - s.canonGen.size());
  while (s.canon.size() < full) {
    const size_t i = s.canon.size();
    int32_t parent = i == 0 ? -1 : s.canon[i - 1];
    if (parent >= 0 && !(pool_.meta(parent).registered && pool_.meta(parent).gen == s.canonGen[i - 1]))
      return;  // the prefix left the cache (evicted, or a weight update): nothing after it is reachable
    const int32_t* blockTokens = &s.tokens[i * bs];
    const int32_t own = s.blocks[i];
    int32_t canon;
    uint64_t h;
    if (pool_.meta(own).registered) {  // registered through a fork sibling
      canon = own;
      h = pool_.meta(own).hash;
    } else {
      h = hashBlock(i == 0 ? kRootBlockHash : s.hashes[i - 1], blockTokens, bs, version_);
      canon = pool_.lookup(h, blockTokens, version_, parent);  // an identical block already cached
      if (canon < 0) {
        if (pool_.hashTaken(h)) return;  // a 64-bit hash collision: leave this prefix uncached
        pool_.registerBlock(own, h, blockTokens, version_, parent);
        canon = own;
      }
    }
    s.hashes.push_back(h);
    s.canon.push_back(canon);
    s.canonGen.push_back(pool_.meta(canon).gen);
  }
}

void PagedKvCache::commit(int64_t seq) {
  Sequence& s = get(seq);
  s.committed = static_cast<int64_t>(s.tokens.size());
  if (prefixCaching_) registerCommitted(s);
}

void PagedKvCache::commitBatch(const int64_t* seqs, size_t numSeqs) {
  for (size_t i = 0; i < numSeqs; ++i) get(seqs[i]);  // all known, or nothing changes
  for (size_t i = 0; i < numSeqs; ++i) commit(seqs[i]);
}

int64_t PagedKvCache::fork(int64_t seq) {
  const Sequence& s = get(seq);
  const int64_t bs = blockSize();
  const int64_t len = static_cast<int64_t>(s.tokens.size());
  const size_t full = static_cast<size_t>(len / bs);
  const int32_t tail = static_cast<int32_t>(len % bs);
  SWERL_CHECK(tail == 0 || pool_.freeCount() > 0, KvCacheFull,
              "KV cache full: fork needs one free block for the partial tail block and none is free. Free or "
              "preempt sequences, or create the cache with more numBlocks.");
  Sequence t;
  t.tokens = s.tokens;
  t.blocks.reserve(full + (tail ? 1 : 0));
  t.blocks.assign(s.blocks.begin(), s.blocks.begin() + static_cast<std::ptrdiff_t>(full));
  t.hashes = s.hashes;
  t.canon = s.canon;
  t.canonGen = s.canonGen;
  t.committed = s.committed;
  t.missed = s.missed;
  const int32_t srcTail = tail ? s.blocks[full] : -1;
  const int64_t id = nextSeq_;
  Sequence& f = seqs_.emplace(id, std::move(t)).first->second;  // may throw: nothing changed yet
  for (int32_t b : f.blocks) pool_.retain(b);
  if (tail) {
    int32_t b = pool_.allocate();
    f.blocks.push_back(b);
    try {
      storage_->copyBlock(srcTail, b, tail);
    } catch (...) {
      for (auto it = f.blocks.rbegin(); it != f.blocks.rend(); ++it) pool_.release(*it);
      seqs_.erase(id);
      throw;
    }
  }
  ++nextSeq_;
  return id;
}

void PagedKvCache::free(int64_t seq) {
  Sequence& s = get(seq);
  for (auto it = s.blocks.rbegin(); it != s.blocks.rend(); ++it) pool_.release(*it);  // tail first
  seqs_.erase(seq);
}

int64_t PagedKvCache::length(int64_t seq) const { return static_cast<int64_t>(get(seq).tokens.size()); }

int64_t PagedKvCache::committedLength(int64_t seq) const { return get(seq).committed; }

const std::vector<int32_t>& PagedKvCache::blockTable(int64_t seq) const { return get(seq).blocks; }

void PagedKvCache::setWeightVersion(int64_t version) {
  if (version == version_) return;
  pool_.unregisterAll();
  version_ = version;
}

KvCacheStats PagedKvCache::stats() const {
  const int64_t free = pool_.freeCount();
  return KvCacheStats{pool_.numBlocks(),
                      free,
                      pool_.cachedCount(),
                      pool_.numBlocks() - free,
                      queriedTokens_,
                      cachedTokens_,
                      static_cast<int64_t>(pool_.evictions())};
}

void PagedKvCache::checkRange(const Sequence& s, int64_t start, int64_t count) const {
  const int64_t len = static_cast<int64_t>(s.tokens.size());
  SWERL_CHECK(
      start >= 0 && count >= 0 && start + count <= len, InvalidArgument,
      "positions [" + str(start) + ", " + str(start + count) + ") are outside the sequence (length " + str(len) + ")");
}

void PagedKvCache::checkLayer(int32_t layer) const {
  SWERL_CHECK(layer >= 0 && layer < geometry().numLayers, InvalidArgument,
              "layer " + str(layer) + " is outside [0, " + str(geometry().numLayers) + ")");
}

void PagedKvCache::slotMapping(int64_t seq, int64_t start, int64_t count, int32_t* out) const {
  const Sequence& s = get(seq);
  checkRange(s, start, count);
  const int64_t bs = blockSize();
  for (int64_t i = 0; i < count; ++i) {
    const int64_t p = start + i;
    out[i] = static_cast<int32_t>(s.blocks[p / bs] * bs + p % bs);
  }
}

void PagedKvCache::writeKv(int64_t seq, int32_t layer, int64_t start, int64_t count, const float* k, const float* v) {
  const Sequence& s = get(seq);
  checkLayer(layer);
  checkRange(s, start, count);
  SWERL_CHECK(start >= s.committed, InvalidArgument,
              "positions before " + str(s.committed) +
                  " are committed; their KV is immutable (the blocks may be shared). Write only appended, "
                  "uncommitted positions.");
  std::vector<int32_t> slots(static_cast<size_t>(count));
  slotMapping(seq, start, count, slots.data());
  storage_->write(layer, slots.data(), slots.size(), k, v);
}

void PagedKvCache::readKv(int64_t seq, int32_t layer, int64_t start, int64_t count, float* k, float* v) const {
  checkLayer(layer);
  std::vector<int32_t> slots(static_cast<size_t>(count < 0 ? 0 : count));
  slotMapping(seq, start, count, slots.data());
  storage_->read(layer, slots.data(), slots.size(), k, v);
}

PagedKvView PagedKvCache::view(int64_t seq, int32_t layer) const {
  const Sequence& s = get(seq);
  checkLayer(layer);
  const KvGeometry& g = geometry();
  return PagedKvView{storage_->kPages(layer),
                     storage_->vPages(layer),
                     s.blocks.data(),
                     static_cast<int32_t>(s.blocks.size()),
                     static_cast<int64_t>(s.tokens.size()),
                     g.blockSize,
                     g.numKvHeads,
                     g.headDim,
                     g.dtype,
                     storage_->device()};
}

}  // namespace swerl

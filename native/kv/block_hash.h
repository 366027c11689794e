// The chained hash that names a full KV block for prefix caching.
//
// hash(block i) = H(hash(block i-1), the block's token ids, weight version), with a fixed root
// for block 0, so equal hashes mean (barring collisions) equal whole prefixes. It is a fast
// multiply-mix hash, not a cryptographic one: a single-tenant RL trainer needs no SHA-256, and
// correctness never rests on it (a hit is verified against the stored tokens and parent link,
// see block_pool.h). Deterministic across processes and machines.
#pragma once

#include <cstddef>
#include <cstdint>

namespace swerl {

constexpr uint64_t kRootBlockHash = 0x9e3779b97f4a7c15ull;

inline uint64_t mix64(uint64_t a, uint64_t b) {
  __uint128_t r = static_cast<__uint128_t>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

inline uint64_t hashBlock(uint64_t parent, const int32_t* tokens, size_t n, int64_t version) {
  constexpr uint64_t k1 = 0xa0761d6478bd642full, k2 = 0xe7037ed1a0b428dbull, k3 = 0x8ebc6af09c88c6e3ull;
  uint64_t h = mix64(parent ^ k1, static_cast<uint64_t>(version) ^ (k2 + n));
  size_t i = 0;
  for (; i + 2 <= n; i += 2) {
    uint64_t w = static_cast<uint32_t>(tokens[i]) | (static_cast<uint64_t>(static_cast<uint32_t>(tokens[i + 1])) << 32);
    h = mix64(h ^ w ^ k3, k2 ^ (h >> 17)) ^ w;
  }
  if (i < n) h = mix64(h ^ static_cast<uint32_t>(tokens[i]) ^ k3, k1);
  return mix64(h ^ k2, k1 ^ n);
}

}  // namespace swerl

import type { KvCacheStats, PagedKvCache } from '../../src/index.js';

/** Everything observable about a cache and some of its sequences, to prove a failed call changed nothing. */
export interface KvSnapshot {
  stats: KvCacheStats;
  seqs: { id: number; length: number; committed: number; table: number[]; k: number[]; v: number[] }[];
}

export function snapshot(cache: PagedKvCache, seqs: number[]): KvSnapshot {
  return {
    stats: cache.stats(),
    seqs: seqs.map((id) => {
      const length = cache.length(id);
      const kv = cache.readKv(id, 0, 0, length);
      return {
        id,
        length,
        committed: cache.committedLength(id),
        table: Array.from(cache.blockTable(id)),
        k: Array.from(kv.k),
        v: Array.from(kv.v),
      };
    }),
  };
}

/** Tokens 0..n-1 shifted by `offset`. */
export function range(n: number, offset = 0): number[] {
  return Array.from({ length: n }, (_, i) => i + offset);
}

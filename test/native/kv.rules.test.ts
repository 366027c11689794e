// The paged KV cache rules of DESIGN.md section 6 and issue 2, one test per rule.
import { describe, expect, it } from 'vitest';
import { PagedKvCache } from '../../src/index.js';
import { errorCode } from '../helpers/errors.js';
import { range, snapshot } from '../helpers/kv-snapshot.js';

function cache(numBlocks: number, blockSize = 4, extra: Partial<ConstructorParameters<typeof PagedKvCache>[0]> = {}) {
  return new PagedKvCache({ numBlocks, blockSize, numLayers: 2, numKvHeads: 1, headDim: 2, ...extra });
}

describe('block pool', () => {
  it('starts with every block free and keeps free + active = numBlocks', () => {
    const kv = cache(10);
    expect(kv.stats()).toEqual({
      numBlocks: 10,
      freeBlocks: 10,
      cachedBlocks: 0,
      activeBlocks: 0,
      queriedTokens: 0,
      cachedTokens: 0,
      evictions: 0,
    });
    const s = kv.createSequence();
    expect(kv.append(s, range(9))).toEqual({ cachedTokens: 0, newBlocks: 3 });
    expect(kv.append(s, range(3, 9))).toEqual({ cachedTokens: 0, newBlocks: 0 }); // fills the tail block
    expect(kv.append(s, [12])).toEqual({ cachedTokens: 0, newBlocks: 1 });
    const st = kv.stats();
    expect(st.activeBlocks).toBe(4);
    expect(st.freeBlocks + st.activeBlocks).toBe(10);
    expect(kv.length(s)).toBe(13);
    expect(kv.blockTable(s)).toEqual(new Int32Array([0, 1, 2, 3]));
  });

  it('uses the default block size of 16', () => {
    const kv = new PagedKvCache({ numBlocks: 4, numLayers: 1, numKvHeads: 1, headDim: 1 });
    expect(kv.blockSize).toBe(16);
    const s = kv.createSequence();
    expect(kv.append(s, range(17)).newBlocks).toBe(2);
  });

  it('frees a block only when its last owner is freed', () => {
    const kv = cache(6);
    const a = kv.createSequence();
    kv.append(a, range(8));
    kv.commit(a);
    const b = kv.fork(a);
    expect(kv.stats().activeBlocks).toBe(2);
    kv.free(a);
    expect(kv.stats().activeBlocks).toBe(2);
    kv.free(b);
    expect(kv.stats()).toMatchObject({ activeBlocks: 0, freeBlocks: 6, cachedBlocks: 2 });
  });
});

describe('free queue order', () => {
  it('evicts the end of a freed chain before its start', () => {
    const kv = cache(5);
    const a = kv.createSequence();
    kv.append(a, range(16)); // blocks 0..3
    kv.commit(a);
    kv.free(a);
    expect(kv.stats().cachedBlocks).toBe(4);
    const b = kv.createSequence();
    kv.append(b, range(4, 100)); // takes the never-used block 4: no eviction
    expect(kv.stats().evictions).toBe(0);
    const c = kv.createSequence();
    kv.append(c, range(4, 200)); // must evict: the chain's last block (tokens 12..15)
    expect(kv.stats().evictions).toBe(1);
    const d = kv.createSequence();
    expect(kv.append(d, range(12)).cachedTokens).toBe(12); // the first three blocks survived
  });

  it('evicts the least recently freed sequence first', () => {
    const kv = cache(4);
    const a = kv.createSequence();
    kv.append(a, range(8, 0));
    kv.commit(a);
    const b = kv.createSequence();
    kv.append(b, range(8, 50));
    kv.commit(b);
    kv.free(a);
    kv.free(b);
    const c = kv.createSequence();
    kv.append(c, range(8, 500)); // two evictions, both from a
    expect(kv.stats().evictions).toBe(2);
    kv.free(c); // uncommitted: its blocks hold no prefix and go to the front of the queue
    const probeB = kv.createSequence();
    expect(kv.append(probeB, range(8, 50)).cachedTokens).toBe(8);
    const probeA = kv.createSequence();
    expect(kv.append(probeA, range(8, 0)).cachedTokens).toBe(0);
  });

  it('reuses blocks without a cached prefix before evicting cached ones', () => {
    const kv = cache(4);
    const a = kv.createSequence();
    kv.append(a, range(8));
    kv.commit(a);
    kv.free(a); // two cached blocks at the back
    const b = kv.createSequence();
    kv.append(b, range(6, 100)); // uncommitted, takes the two unused blocks
    kv.free(b); // not cached: they go to the front
    const c = kv.createSequence();
    kv.append(c, range(8, 300));
    expect(kv.stats().evictions).toBe(0);
  });
});

describe('prefix caching', () => {
  it('hits committed full blocks of a freed sequence', () => {
    const kv = cache(8);
    const a = kv.createSequence();
    kv.append(a, range(10));
    kv.commit(a);
    const tableA = kv.blockTable(a);
    kv.free(a);
    const b = kv.createSequence();
    expect(kv.append(b, range(10))).toEqual({ cachedTokens: 8, newBlocks: 1 });
    expect(Array.from(kv.blockTable(b).slice(0, 2))).toEqual(Array.from(tableA.slice(0, 2)));
    expect(kv.committedLength(b)).toBe(8);
    expect(kv.stats()).toMatchObject({ queriedTokens: 20, cachedTokens: 8, cachedBlocks: 0 });
  });

  it('hits blocks still owned by a live sequence, sharing them', () => {
    const kv = cache(8);
    const a = kv.createSequence();
    kv.append(a, range(8));
    kv.commit(a);
    const b = kv.createSequence();
    expect(kv.append(b, range(8)).cachedTokens).toBe(8);
    expect(kv.blockTable(b)).toEqual(kv.blockTable(a));
    expect(kv.stats().activeBlocks).toBe(2);
  });

  it('never hits blocks that were not committed', () => {
    const kv = cache(8);
    const a = kv.createSequence();
    kv.append(a, range(8));
    const b = kv.createSequence();
    expect(kv.append(b, range(8)).cachedTokens).toBe(0);
    kv.free(a);
    const c = kv.createSequence();
    expect(kv.append(c, range(8)).cachedTokens).toBe(0);
  });

  it('hits only leading blocks: a different first block means no hits at all', () => {
    const kv = cache(8);
    const a = kv.createSequence();
    kv.append(a, range(12));
    kv.commit(a);
    const b = kv.createSequence();
    expect(kv.append(b, [99, 1, 2, 3, ...range(8, 4)]).cachedTokens).toBe(0);
  });

  it('never hits once the sequence has had a miss', () => {
    const kv = cache(10);
    const a = kv.createSequence();
    kv.append(a, range(12));
    kv.commit(a);
    const b = kv.createSequence();
    expect(kv.append(b, range(4)).cachedTokens).toBe(4);
    expect(kv.append(b, [7, 7, 7, 7]).cachedTokens).toBe(0); // a miss: b owns a block now
    const c = kv.createSequence();
    expect(kv.append(c, range(2)).cachedTokens).toBe(0); // a partial block is a miss too
    expect(kv.append(c, range(10, 2)).cachedTokens).toBe(0);
  });

  it('keeps hitting while a sequence grows by whole cached blocks', () => {
    const kv = cache(10);
    const a = kv.createSequence();
    kv.append(a, range(12));
    kv.commit(a);
    const b = kv.createSequence();
    expect(kv.append(b, range(4)).cachedTokens).toBe(4);
    expect(kv.append(b, range(8, 4)).cachedTokens).toBe(8);
    expect(kv.stats().cachedTokens).toBe(12);
  });

  it('compares the whole prefix: equal blocks after different prefixes do not hit', () => {
    const kv = cache(10);
    const a = kv.createSequence();
    kv.append(a, [1, 1, 1, 1, 5, 5, 5, 5]);
    kv.commit(a);
    const b = kv.createSequence();
    kv.append(b, [2, 2, 2, 2, 5, 5, 5, 5]);
    kv.commit(b);
    const c = kv.createSequence();
    expect(kv.append(c, [2, 2, 2, 2, 5, 5, 5, 5]).cachedTokens).toBe(8);
    expect(kv.blockTable(c)).toEqual(kv.blockTable(b));
  });

  it('does nothing with prefixCaching: false', () => {
    const kv = cache(8, 4, { prefixCaching: false });
    const a = kv.createSequence();
    kv.append(a, range(8));
    kv.commit(a);
    kv.free(a);
    expect(kv.stats().cachedBlocks).toBe(0);
    const b = kv.createSequence();
    expect(kv.append(b, range(8)).cachedTokens).toBe(0);
    expect(kv.stats().queriedTokens).toBe(0);
  });

  it('makes older versions unhittable after setWeightVersion', () => {
    const kv = cache(8);
    const a = kv.createSequence();
    kv.append(a, range(8));
    kv.commit(a);
    kv.free(a);
    expect(kv.stats().cachedBlocks).toBe(2);
    kv.setWeightVersion(1);
    expect(kv.stats().cachedBlocks).toBe(0);
    const b = kv.createSequence();
    expect(kv.append(b, range(8)).cachedTokens).toBe(0);
    kv.commit(b);
    kv.free(b);
    const c = kv.createSequence();
    expect(kv.append(c, range(8)).cachedTokens).toBe(8); // cached again under version 1
    kv.setWeightVersion(1); // same version: nothing changes
    kv.commit(c);
    const d = kv.createSequence();
    expect(kv.append(d, range(8)).cachedTokens).toBe(8);
    kv.setWeightVersion(0); // going back does not revive version-0 blocks
    const e = kv.createSequence();
    expect(kv.append(e, range(8)).cachedTokens).toBe(0);
  });

  it('does not cache blocks a live sequence computes after a weight update', () => {
    const kv = cache(10);
    const a = kv.createSequence();
    kv.append(a, range(4));
    kv.commit(a);
    kv.setWeightVersion(7);
    kv.append(a, range(4, 4)); // its KV attends to version-0 KV: must not be reusable at version 7
    kv.commit(a);
    kv.free(a);
    expect(kv.stats().cachedBlocks).toBe(0);
    const b = kv.createSequence();
    expect(kv.append(b, range(8)).cachedTokens).toBe(0);
  });
});

describe('fork', () => {
  it('shares full blocks and copies the partial tail block with its KV', () => {
    const kv = cache(8);
    const a = kv.createSequence();
    kv.append(a, range(6));
    const k = Float32Array.from(range(12), (x) => x + 0.5);
    const v = Float32Array.from(range(12), (x) => -x);
    kv.writeKv(a, 1, 0, k, v);
    kv.commit(a);
    const f = kv.fork(a);
    const ta = kv.blockTable(a);
    const tf = kv.blockTable(f);
    expect(tf[0]).toBe(ta[0]);
    expect(tf[1]).not.toBe(ta[1]);
    expect(kv.length(f)).toBe(6);
    expect(kv.committedLength(f)).toBe(6);
    expect(kv.readKv(f, 1, 0, 6)).toEqual(kv.readKv(a, 1, 0, 6));
    expect(kv.readKv(f, 1, 0, 6).k).toEqual(k);
    expect(kv.stats().activeBlocks).toBe(3);
  });

  it('appending to either side never touches the other side KV', () => {
    const kv = cache(8);
    const a = kv.createSequence();
    kv.append(a, range(6));
    kv.writeKv(a, 0, 0, new Float32Array(12).fill(1), new Float32Array(12).fill(2));
    kv.commit(a);
    const f = kv.fork(a);
    kv.append(a, [100, 101]);
    kv.writeKv(a, 0, 6, new Float32Array(4).fill(7), new Float32Array(4).fill(7));
    kv.append(f, [200, 201, 202]);
    kv.writeKv(f, 0, 6, new Float32Array(6).fill(9), new Float32Array(6).fill(9));
    expect(Array.from(kv.readKv(a, 0, 4, 4).k)).toEqual([1, 1, 1, 1, 7, 7, 7, 7]);
    expect(Array.from(kv.readKv(f, 0, 4, 5).k)).toEqual([1, 1, 1, 1, 9, 9, 9, 9, 9, 9]);
  });

  it('copies no block when the length is a multiple of the block size', () => {
    const kv = cache(4);
    const a = kv.createSequence();
    kv.append(a, range(8));
    const before = kv.stats().freeBlocks;
    const f = kv.fork(a);
    expect(kv.stats().freeBlocks).toBe(before);
    expect(kv.blockTable(f)).toEqual(kv.blockTable(a));
  });

  it('fails with KV_CACHE_FULL and changes nothing when no block is free for the tail', () => {
    const kv = cache(2);
    const a = kv.createSequence();
    kv.append(a, range(6));
    const snap = snapshot(kv, [a]);
    expect(errorCode(() => kv.fork(a))).toBe('KV_CACHE_FULL');
    expect(snapshot(kv, [a])).toEqual(snap);
    const b = kv.createSequence();
    expect(b).toBe(a + 1); // the failed fork consumed no id
  });

  it('serves a group: eight forks of a prompt hold its full blocks once', () => {
    const kv = cache(64, 16);
    const root = kv.createSequence();
    kv.append(root, range(100));
    kv.commit(root);
    const group = Array.from({ length: 8 }, () => kv.fork(root));
    kv.free(root);
    expect(kv.stats().activeBlocks).toBe(6 + 8); // 6 shared full blocks + 8 private tails
    for (const s of group) expect(kv.blockTable(s).slice(0, 6)).toEqual(kv.blockTable(group[0] as number).slice(0, 6));
  });
});

describe('eviction and a full cache', () => {
  it('counts evictions of cached blocks when the free queue runs dry', () => {
    const kv = cache(3);
    const a = kv.createSequence();
    kv.append(a, range(12));
    kv.commit(a);
    kv.free(a);
    const b = kv.createSequence();
    kv.append(b, range(8, 50));
    expect(kv.stats()).toMatchObject({ evictions: 2, cachedBlocks: 1, activeBlocks: 2 });
  });

  it('append that cannot be satisfied throws KV_CACHE_FULL and changes nothing', () => {
    const kv = cache(3);
    const a = kv.createSequence();
    kv.append(a, range(6));
    kv.commit(a);
    const b = kv.createSequence();
    kv.append(b, range(3, 40));
    const snap = snapshot(kv, [a, b]);
    expect(errorCode(() => kv.append(a, range(3, 10)))).toBe('KV_CACHE_FULL');
    expect(snapshot(kv, [a, b])).toEqual(snap);
    expect(kv.append(a, range(2, 10))).toEqual({ cachedTokens: 0, newBlocks: 0 }); // fits the tail
  });

  it('counts hits on free cached blocks against the free blocks', () => {
    const kv = cache(2);
    const a = kv.createSequence();
    kv.append(a, range(8));
    kv.commit(a);
    kv.free(a);
    const b = kv.createSequence();
    // Both blocks would be hits, but the 9th token needs a third block: full, nothing changes.
    const snap = snapshot(kv, [b]);
    expect(errorCode(() => kv.append(b, range(9)))).toBe('KV_CACHE_FULL');
    expect(snapshot(kv, [b])).toEqual(snap);
    expect(kv.append(b, range(8)).cachedTokens).toBe(8);
  });
});

describe('appendBatch and commitBatch', () => {
  it('appends to many sequences in one call, like appends one by one', () => {
    const kv = cache(8);
    const a = kv.createSequence();
    const b = kv.createSequence();
    kv.append(a, range(3));
    const r = kv.appendBatch([a, b], [10, 20, 21], [1, 2]);
    expect(r).toEqual({ cachedTokens: 0, newBlocks: 1 });
    expect(kv.length(a)).toBe(4);
    expect(kv.length(b)).toBe(2);
    expect(kv.appendBatch([a, b], [11, 22]).newBlocks).toBe(1); // one token each by default
    kv.commitBatch([a, b]);
    expect(kv.committedLength(a)).toBe(5);
    expect(kv.committedLength(b)).toBe(3);
  });

  it('takes every prefix hit of the batch before allocating any block', () => {
    const kv = cache(3, 2);
    const a = kv.createSequence();
    kv.append(a, [1, 1]); // block 0
    kv.commit(a);
    kv.free(a); // free queue: 1, 2, 0
    const d = kv.createSequence();
    kv.append(d, [7, 7, 8, 8]); // blocks 1, 2
    kv.commit(d);
    kv.free(d); // free queue: 0, 2, 1 (block 0 least recently freed, at the front)
    const b = kv.createSequence();
    const c = kv.createSequence();
    // One by one, b's allocation would evict block 0 before c could hit it.
    const perSequence = new Int32Array(2);
    const r = kv.appendBatch([b, c], [5, 5, 1, 1], [2, 2], perSequence);
    expect(r).toEqual({ cachedTokens: 2, newBlocks: 1 });
    expect(Array.from(perSequence)).toEqual([0, 2]);
    expect(Array.from(kv.blockTable(c))).toEqual([0]);
    expect(kv.stats().evictions).toBe(1); // d's last block, not a's
  });

  it('changes nothing when any part fails', () => {
    const kv = cache(3);
    const a = kv.createSequence();
    const b = kv.createSequence();
    kv.append(a, range(4));
    const freed = kv.createSequence();
    kv.free(freed);
    const snap = snapshot(kv, [a, b]);
    expect(errorCode(() => kv.appendBatch([a, freed], [1, 2]))).toBe('UNKNOWN_SEQUENCE');
    expect(errorCode(() => kv.appendBatch([a, a], [1, 2]))).toBe('INVALID_ARGUMENT');
    expect(errorCode(() => kv.appendBatch([a, b], [1, -2]))).toBe('INVALID_ARGUMENT');
    expect(errorCode(() => kv.appendBatch([a, b], [1, 2, 3]))).toBe('INVALID_ARGUMENT');
    expect(errorCode(() => kv.appendBatch([a, b], [1, 2], [1, -1]))).toBe('INVALID_ARGUMENT');
    expect(errorCode(() => kv.appendBatch([a, b], range(9), [1, 8]))).toBe('KV_CACHE_FULL');
    expect(errorCode(() => kv.appendBatch([a, b], [1, 2], undefined, new Int32Array(1)))).toBe('INVALID_ARGUMENT');
    expect(errorCode(() => kv.commitBatch([a, freed]))).toBe('UNKNOWN_SEQUENCE');
    expect(snapshot(kv, [a, b])).toEqual(snap);
  });
});

describe('KV storage', () => {
  it('writes and reads f32 rows exactly and rejects writes to committed positions', () => {
    const kv = cache(4, 4, { numKvHeads: 2, headDim: 3 });
    const s = kv.createSequence();
    kv.append(s, range(5));
    const k = Float32Array.from({ length: 30 }, (_, i) => Math.sin(i));
    const v = Float32Array.from({ length: 30 }, (_, i) => Math.cos(i));
    kv.writeKv(s, 1, 0, k, v);
    expect(kv.readKv(s, 1, 0, 5)).toEqual({ k, v });
    expect(kv.readKv(s, 0, 0, 5).k).toEqual(new Float32Array(30)); // other layer untouched
    kv.commit(s);
    expect(errorCode(() => kv.writeKv(s, 1, 4, k.subarray(0, 6), v.subarray(0, 6)))).toBe('INVALID_ARGUMENT');
  });

  it('maps positions to block * blockSize + offset', () => {
    const kv = cache(8);
    const a = kv.createSequence();
    kv.append(a, range(3));
    const b = kv.createSequence();
    kv.append(b, range(3, 50));
    kv.append(a, range(6, 3));
    const table = kv.blockTable(a);
    const expected = range(9).map((p) => (table[Math.floor(p / 4)] as number) * 4 + (p % 4));
    expect(Array.from(kv.slotMapping(a, 0, 9))).toEqual(expected);
  });
});

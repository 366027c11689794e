/**
 * The paged KV cache (vLLM v1 semantics) over native/kv. See DESIGN.md section 6 and
 * native/kv/paged_kv_cache.h for the rules; this class validates arguments and shapes results.
 */
import { invalidArgument } from '../errors.js';
import { type NativePagedKvCache, native } from '../native.js';
import { checkBoolean, checkEnum, checkInteger, checkObject, toTokenArray } from '../validate.js';

/** Storage type of the K and V pages. */
export type KvDtype = 'f32' | 'f16' | 'bf16';

/** Options of {@link PagedKvCache}. */
export interface PagedKvCacheOptions {
  /** Blocks in the pool; the cache holds numBlocks * blockSize token slots. */
  numBlocks: number;
  /** Tokens per block (default 16, as vLLM). */
  blockSize?: number;
  /** Transformer layers (one K and one V page array each). */
  numLayers: number;
  /** KV heads per layer (GQA groups). */
  numKvHeads: number;
  /** Head dimension. */
  headDim: number;
  /** Storage type (default 'f32'); writes round to nearest even. */
  dtype?: KvDtype;
  /** Where the pages live (default 'cpu'); 'cuda' needs a CUDA build and a device. */
  device?: 'cpu' | 'cuda';
  /** Automatic prefix caching (default true). */
  prefixCaching?: boolean;
}

/** Result of {@link PagedKvCache.append}. */
export interface AppendResult {
  /** Tokens whose KV was found in the prefix cache (whole leading blocks). */
  cachedTokens: number;
  /** Blocks taken from the free queue for this append. */
  newBlocks: number;
}

/** Counters of {@link PagedKvCache.stats}. `freeBlocks + activeBlocks === numBlocks` always. */
export interface KvCacheStats {
  numBlocks: number;
  /** Blocks with no owner (in the free queue), cached or not. */
  freeBlocks: number;
  /** Free blocks that still hold a hittable prefix (committed, current weight version). */
  cachedBlocks: number;
  /** Blocks owned by at least one sequence. */
  activeBlocks: number;
  /** Tokens of appends that looked up the prefix cache (sequences that had no miss yet). */
  queriedTokens: number;
  /** Of those, tokens found in the cache. */
  cachedTokens: number;
  /** Cached blocks that were reallocated, losing their prefix. */
  evictions: number;
}

/**
 * A fixed pool of KV blocks shared by sequences, with ref counts, an LRU free queue and
 * automatic prefix caching by chained block hashes (parent hash, token ids, weight version).
 *
 * - {@link append} reserves slots; a sequence's leading full blocks that match committed
 *   cached blocks are reused, until its first miss.
 * - {@link commit} declares the KV of everything appended so far written: full blocks become
 *   hittable.
 * - {@link fork} shares full blocks and copies the partial tail block (KV included).
 * - {@link free} keeps committed full blocks cached until they are evicted.
 * - A call that throws changes nothing.
 * - {@link dispose} releases the native memory at once; otherwise garbage collection does.
 */
export class PagedKvCache {
  /** Tokens per block. */
  readonly blockSize: number;
  /** Blocks in the pool. */
  readonly numBlocks: number;
  /** Layers, KV heads and head dimension of the pages. */
  readonly numLayers: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  readonly dtype: KvDtype;
  readonly device: 'cpu' | 'cuda';
  readonly prefixCaching: boolean;
  readonly #native: NativePagedKvCache;
  readonly #out = new Float64Array(8);
  #onesBuf = new Int32Array(64).fill(1);

  constructor(options: PagedKvCacheOptions) {
    const o = checkObject('options', options);
    const opts = {
      numBlocks: checkInteger('numBlocks', o.numBlocks, 1, 0x7fffffff),
      blockSize: checkInteger('blockSize', o.blockSize ?? 16, 1, 4096),
      numLayers: checkInteger('numLayers', o.numLayers, 1, 0x7fffffff),
      numKvHeads: checkInteger('numKvHeads', o.numKvHeads, 1, 0x7fffffff),
      headDim: checkInteger('headDim', o.headDim, 1, 0x7fffffff),
      dtype: checkEnum('dtype', o.dtype ?? 'f32', ['f32', 'f16', 'bf16'] as const),
      device: checkEnum('device', o.device ?? 'cpu', ['cpu', 'cuda'] as const),
      prefixCaching: checkBoolean('prefixCaching', o.prefixCaching ?? true),
    };
    if (opts.numBlocks * opts.blockSize > 0x7fffffff) {
      throw invalidArgument('numBlocks * blockSize', 'below 2^31 token slots', opts.numBlocks * opts.blockSize);
    }
    this.#native = new (native().NativePagedKvCache)(opts, this.#out);
    this.blockSize = opts.blockSize;
    this.numBlocks = opts.numBlocks;
    this.numLayers = opts.numLayers;
    this.numKvHeads = opts.numKvHeads;
    this.headDim = opts.headDim;
    this.dtype = opts.dtype;
    this.device = opts.device;
    this.prefixCaching = opts.prefixCaching;
  }

  /** @internal The native cache, for the model's paged forward. */
  get nativeHandle(): NativePagedKvCache {
    return this.#native;
  }

  /** A new empty sequence; ids are never reused. */
  createSequence(): number {
    return this.#native.createSequence();
  }

  /**
   * Reserves slots for `tokens` appended to `seq`. Throws SwerlError 'KV_CACHE_FULL' (and changes
   * nothing) when the free blocks do not suffice.
   */
  append(seq: number, tokens: ArrayLike<number>): AppendResult {
    const ids = toTokenArray('tokens', tokens);
    const cachedTokens = this.#native.append(seqId(seq), ids);
    return { cachedTokens, newBlocks: this.#out[0] as number };
  }

  /**
   * Appends to many sequences in one call (an engine step): `counts[i]` consecutive tokens of
   * `tokens` go to `seqs[i]` (default: one token each). All or nothing; sequences must be
   * distinct; every sequence's prefix hits are taken before any block is allocated. Returns the
   * totals; pass `cachedPerSequence` to receive each sequence's cached tokens. Allocates nothing
   * when given typed arrays.
   */
  appendBatch(
    seqs: ArrayLike<number>,
    tokens: ArrayLike<number>,
    counts?: ArrayLike<number>,
    cachedPerSequence?: Int32Array,
  ): AppendResult {
    const ids = toSeqIds(seqs);
    const ts = toTokenArray('tokens', tokens);
    let cs: Int32Array;
    if (counts === undefined) {
      if (ts.length !== ids.length) throw invalidArgument('tokens', `one token per sequence (${ids.length})`, tokens);
      cs = this.#ones(ids.length);
    } else {
      cs = toCounts(counts);
      if (cs.length !== ids.length) throw invalidArgument('counts', `one count per sequence (${ids.length})`, counts);
      let total = 0;
      for (const c of cs) total += c;
      if (total !== ts.length) throw invalidArgument('tokens', `${total} tokens (the sum of counts)`, tokens);
    }
    if (
      cachedPerSequence !== undefined &&
      !(cachedPerSequence instanceof Int32Array && cachedPerSequence.length >= ids.length)
    ) {
      throw invalidArgument('cachedPerSequence', `an Int32Array of at least ${ids.length} elements`, cachedPerSequence);
    }
    const cachedTokens = this.#native.appendBatch(ids, ts, cs, cachedPerSequence);
    return { cachedTokens, newBlocks: this.#out[0] as number };
  }

  /** commit() of every sequence in `seqs`; all must exist, or nothing changes. */
  commitBatch(seqs: ArrayLike<number>): void {
    this.#native.commitBatch(toSeqIds(seqs));
  }

  /** The KV of all tokens appended to `seq` so far is written: its full blocks become hittable. */
  commit(seq: number): void {
    this.#native.commit(seqId(seq));
  }

  /** A new sequence with seq's tokens: full blocks shared, the partial tail block copied. */
  fork(seq: number): number {
    return this.#native.fork(seqId(seq));
  }

  /** Releases seq; its committed full blocks stay cached until evicted. The id becomes unknown. */
  free(seq: number): void {
    this.#native.free(seqId(seq));
  }

  /** Tokens in seq. */
  length(seq: number): number {
    return this.#native.length(seqId(seq));
  }

  /** Tokens of seq whose KV is written (committed, or taken from the cache). */
  committedLength(seq: number): number {
    return this.#native.committedLength(seqId(seq));
  }

  /** seq's block ids in order (a copy). */
  blockTable(seq: number): Int32Array {
    return this.#native.blockTable(seqId(seq));
  }

  /** Sets the weight version: cached blocks of other versions can no longer be hit. */
  setWeightVersion(version: number): void {
    this.#native.setWeightVersion(checkInteger('version', version, 0));
  }

  /** Current counters. */
  stats(): KvCacheStats {
    this.#native.stats();
    const o = this.#out;
    return {
      numBlocks: o[0] as number,
      freeBlocks: o[1] as number,
      cachedBlocks: o[2] as number,
      activeBlocks: o[3] as number,
      queriedTokens: o[4] as number,
      cachedTokens: o[5] as number,
      evictions: o[6] as number,
    };
  }

  /** Token slots (block * blockSize + offset) of positions [start, start + count) of seq. */
  slotMapping(seq: number, start: number, count: number): Int32Array {
    return this.#native.slotMapping(seqId(seq), checkInteger('start', start, 0), checkInteger('count', count, 0));
  }

  /**
   * Writes K and V rows for positions [start, start + n) of seq in `layer`, where k and v are f32
   * [n, numKvHeads * headDim]. Only uncommitted positions may be written: committed KV may be
   * shared with other sequences and is immutable.
   */
  writeKv(seq: number, layer: number, start: number, k: Float32Array, v: Float32Array): void {
    if (!(k instanceof Float32Array)) throw invalidArgument('k', 'a Float32Array', k);
    if (!(v instanceof Float32Array)) throw invalidArgument('v', 'a Float32Array', v);
    this.#native.writeKv(seqId(seq), this.#layer(layer), checkInteger('start', start, 0), k, v);
  }

  /** Reads K and V rows of positions [start, start + count) of seq in `layer`, as f32. */
  readKv(seq: number, layer: number, start: number, count: number): { k: Float32Array; v: Float32Array } {
    const [k, v] = this.#native.readKv(
      seqId(seq),
      this.#layer(layer),
      checkInteger('start', start, 0),
      checkInteger('count', count, 0),
    );
    return { k, v };
  }

  /** n ones (a view of a reused buffer). */
  #ones(n: number): Int32Array {
    if (this.#onesBuf.length < n) this.#onesBuf = new Int32Array(Math.max(n, 2 * this.#onesBuf.length)).fill(1);
    return this.#onesBuf.subarray(0, n);
  }

  /**
   * Frees the KV pages and bookkeeping now rather than at garbage collection (which Node runs
   * only when it sees fit). Idempotent; any later call throws SwerlError 'DISPOSED'.
   */
  dispose(): void {
    this.#native.dispose();
  }

  #layer(layer: number): number {
    return checkInteger('layer', layer, 0, this.numLayers - 1);
  }
}

function seqId(seq: unknown): number {
  return checkInteger('seq', seq);
}

function toSeqIds(seqs: unknown): Float64Array {
  if (seqs instanceof Float64Array) return seqs;
  if (seqs === null || typeof seqs !== 'object' || typeof (seqs as { length?: unknown }).length !== 'number') {
    throw invalidArgument('seqs', 'an array of sequence ids', seqs);
  }
  const src = seqs as ArrayLike<unknown>;
  const out = new Float64Array(src.length);
  for (let i = 0; i < src.length; i++) out[i] = checkInteger(`seqs[${i}]`, src[i]);
  return out;
}

function toCounts(counts: unknown): Int32Array {
  if (counts === null || typeof counts !== 'object' || typeof (counts as { length?: unknown }).length !== 'number') {
    throw invalidArgument('counts', 'an array of token counts', counts);
  }
  const src = counts as ArrayLike<unknown>;
  const out = new Int32Array(src.length);
  for (let i = 0; i < src.length; i++) out[i] = checkInteger(`counts[${i}]`, src[i], 0, 0x7fffffff);
  return out;
}

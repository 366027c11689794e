/**
 * An independent, plain-TypeScript reference model of the paged KV cache semantics, written from
 * the specification (not from native/kv), for the property tests in test/native/kv.property.test.ts.
 *
 * It mirrors the public surface of PagedKvCache (f32 storage, CPU) and throws KvModelError with the
 * same codes as SwerlError. Every call validates everything before it changes anything, so a call
 * that throws leaves the model exactly as it was.
 *
 * The prefix-cache index is keyed exactly instead of by a chained hash: a lookup for a chunk of a
 * sequence whose previous canonical block is P (or -1) finds the registered block B with
 * B.version == current version, B.parent == P, (P == -1 or (P registered and gen[P] ==
 * B.parentGen)) and B.tokens equal to the chunk. At most one registered block matches a key.
 * Unregistering a block (eviction, weight update) unregisters its descendants too, so every
 * registered block is reachable from a sequence start.
 */

/** Error codes the model raises (a subset of swerl's ErrorCode). */
export type KvModelErrorCode = 'INVALID_ARGUMENT' | 'UNKNOWN_SEQUENCE' | 'KV_CACHE_FULL';

/** An error of the model; `code` is compared with SwerlError.code. */
export class KvModelError extends Error {
  readonly code: KvModelErrorCode;

  constructor(code: KvModelErrorCode, message: string) {
    super(message);
    this.name = 'KvModelError';
    this.code = code;
  }
}

/** An append worked out against the current state (see KvModel.appendBatch). */
interface AppendPlan {
  s: ModelSequence;
  ids: number[];
  hits: number[];
  newBlocks: number;
  lookup: boolean;
}

/** Options of {@link KvModel} (the f32 subset of PagedKvCacheOptions; blockSize is required). */
export interface KvModelOptions {
  numBlocks: number;
  blockSize: number;
  numLayers: number;
  numKvHeads: number;
  headDim: number;
  prefixCaching: boolean;
}

/** Same shape as KvCacheStats. */
export interface KvModelStats {
  numBlocks: number;
  freeBlocks: number;
  cachedBlocks: number;
  activeBlocks: number;
  queriedTokens: number;
  cachedTokens: number;
  evictions: number;
}

interface ModelSequence {
  tokens: number[];
  blocks: number[];
  committed: number;
  missed: boolean;
  /** canon[i]: the registered block holding the prefix of full block i; canonGen[i]: its gen then. */
  canon: number[];
  canonGen: number[];
}

interface Registration {
  tokens: number[];
  version: number;
  parent: number;
  parentGen: number;
}

const MAX_TOKEN = 0x7fffffff;

export class KvModel {
  readonly numBlocks: number;
  readonly blockSize: number;
  readonly numLayers: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  readonly prefixCaching: boolean;
  /** Floats per token row: numKvHeads * headDim. */
  readonly rowElems: number;

  readonly #ref: number[];
  readonly #gen: number[];
  /** The registration of each block, or null when the block is not registered. */
  readonly #reg: (Registration | null)[];
  /** Free block ids, front first. */
  #freeQueue: number[];
  /** Per layer: numBlocks * blockSize slots of rowElems floats. */
  readonly #k: Float32Array[];
  readonly #v: Float32Array[];
  readonly #seqs = new Map<number, ModelSequence>();
  #nextId = 1;
  #version = 0;
  #queriedTokens = 0;
  #cachedTokens = 0;
  #evictions = 0;

  constructor(options: KvModelOptions) {
    this.numBlocks = options.numBlocks;
    this.blockSize = options.blockSize;
    this.numLayers = options.numLayers;
    this.numKvHeads = options.numKvHeads;
    this.headDim = options.headDim;
    this.prefixCaching = options.prefixCaching;
    this.rowElems = options.numKvHeads * options.headDim;
    const n = options.numBlocks;
    this.#ref = new Array<number>(n).fill(0);
    this.#gen = new Array<number>(n).fill(0);
    this.#reg = new Array<Registration | null>(n).fill(null);
    this.#freeQueue = Array.from({ length: n }, (_, i) => i);
    const floats = n * options.blockSize * this.rowElems;
    this.#k = Array.from({ length: options.numLayers }, () => new Float32Array(floats));
    this.#v = Array.from({ length: options.numLayers }, () => new Float32Array(floats));
  }

  // ---- sequences -------------------------------------------------------------------------------

  createSequence(): number {
    const id = this.#nextId++;
    this.#seqs.set(id, { tokens: [], blocks: [], committed: 0, missed: false, canon: [], canonGen: [] });
    return id;
  }

  append(seq: number, tokens: ArrayLike<number>): { cachedTokens: number; newBlocks: number } {
    const ids = checkTokens(tokens);
    const plan = this.#planAppend(this.#get(seq), ids);
    this.#checkCapacity([plan]);
    this.#applyHits(plan);
    return { cachedTokens: this.#applyAllocations(plan), newBlocks: plan.newBlocks };
  }

  /**
   * counts[i] consecutive tokens go to seqs[i] (default one each), all or nothing; every
   * sequence's hits are taken before any block is allocated.
   */
  appendBatch(
    seqs: ArrayLike<number>,
    tokens: ArrayLike<number>,
    counts?: ArrayLike<number>,
    cachedPerSequence?: Int32Array,
  ): { cachedTokens: number; newBlocks: number } {
    const cs = counts === undefined ? Array.from(seqs, () => 1) : Array.from(counts);
    if (cs.length !== seqs.length || cs.some((c) => !Number.isInteger(c) || c < 0)) {
      throw new KvModelError('INVALID_ARGUMENT', 'bad counts');
    }
    const ids = checkTokens(tokens);
    if (cs.reduce((a, b) => a + b, 0) !== ids.length) throw new KvModelError('INVALID_ARGUMENT', 'counts sum');
    const plans: AppendPlan[] = [];
    const seen = new Set<number>();
    let offset = 0;
    for (let i = 0; i < seqs.length; i++) {
      // In order: an unknown sequence, or one named a second time, stops the batch.
      const s = this.#get(seqs[i] as number);
      if (seen.has(seqs[i] as number)) throw new KvModelError('INVALID_ARGUMENT', 'duplicate seq');
      seen.add(seqs[i] as number);
      plans.push(this.#planAppend(s, ids.slice(offset, offset + (cs[i] as number))));
      offset += cs[i] as number;
    }
    this.#checkCapacity(plans);
    for (const p of plans) this.#applyHits(p);
    const perSeq = plans.map((p) => this.#applyAllocations(p));
    if (cachedPerSequence) cachedPerSequence.set(perSeq);
    return { cachedTokens: perSeq.reduce((a, b) => a + b, 0), newBlocks: plans.reduce((a, p) => a + p.newBlocks, 0) };
  }

  commitBatch(seqs: ArrayLike<number>): void {
    for (const id of Array.from(seqs)) this.#get(id);
    for (const id of Array.from(seqs)) this.commit(id);
  }

  /** Works out an append against the current state without changing anything. */
  #planAppend(s: ModelSequence, ids: number[]): AppendPlan {
    const bs = this.blockSize;
    const n = ids.length;
    const lookup = this.prefixCaching && !s.missed;
    const hits: number[] = [];
    if (lookup && this.#chainValid(s, s.canon.length)) {
      let parent = s.canon.length === 0 ? -1 : (s.canon[s.canon.length - 1] as number);
      for (let j = 0; (j + 1) * bs <= n; j++) {
        const b = this.#lookup(parent, ids.slice(j * bs, (j + 1) * bs));
        if (b < 0) break;
        hits.push(b);
        parent = b;
      }
    }
    const rest = n - hits.length * bs;
    const used = s.tokens.length % bs;
    const room = used === 0 ? 0 : bs - used;
    const newBlocks = rest > room ? Math.ceil((rest - room) / bs) : 0;
    return { s, ids, hits, newBlocks, lookup };
  }

  #checkCapacity(plans: AppendPlan[]): void {
    const newBlocks = plans.reduce((a, p) => a + p.newBlocks, 0);
    const freeHits = new Set(plans.flatMap((p) => p.hits).filter((b) => this.#ref[b] === 0)).size;
    const available = this.#freeQueue.length - freeHits;
    if (newBlocks > available) {
      throw new KvModelError('KV_CACHE_FULL', `append needs ${newBlocks} new blocks, ${available} available`);
    }
  }

  #applyHits({ s, ids, hits }: AppendPlan): void {
    s.tokens.push(...ids);
    for (const b of hits) {
      if (this.#ref[b] === 0) this.#removeFromFreeQueue(b);
      this.#ref[b] = (this.#ref[b] as number) + 1;
      s.blocks.push(b);
      s.canon.push(b);
      s.canonGen.push(this.#gen[b] as number);
    }
  }

  /** Allocates the plan's new blocks and counts its lookup; returns its cached tokens. */
  #applyAllocations({ s, ids, hits, newBlocks, lookup }: AppendPlan): number {
    for (let i = 0; i < newBlocks; i++) s.blocks.push(this.#allocate());
    if (newBlocks > 0) s.missed = true;
    const hitTokens = hits.length * this.blockSize;
    if (lookup) {
      this.#queriedTokens += ids.length;
      this.#cachedTokens += hitTokens;
      s.committed += hitTokens;
    }
    return hitTokens;
  }

  commit(seq: number): void {
    const s = this.#get(seq);
    s.committed = s.tokens.length;
    if (!this.prefixCaching) return;
    const bs = this.blockSize;
    const full = Math.floor(s.committed / bs);
    while (s.canon.length < full) {
      const i = s.canon.length;
      if (!this.#chainValid(s, i)) break;
      const parent = i === 0 ? -1 : (s.canon[i - 1] as number);
      const own = s.blocks[i] as number;
      const chunk = s.tokens.slice(i * bs, (i + 1) * bs);
      let canon: number;
      if (this.#reg[own]) {
        canon = own;
      } else {
        const q = this.#lookup(parent, chunk);
        if (q >= 0) {
          canon = q;
        } else {
          this.#reg[own] = {
            tokens: chunk,
            version: this.#version,
            parent,
            parentGen: parent === -1 ? 0 : (this.#gen[parent] as number),
          };
          this.#gen[own] = (this.#gen[own] as number) + 1;
          canon = own;
        }
      }
      s.canon.push(canon);
      s.canonGen.push(this.#gen[canon] as number);
    }
  }

  fork(seq: number): number {
    const s = this.#get(seq);
    const bs = this.blockSize;
    const len = s.tokens.length;
    const full = Math.floor(len / bs);
    const tail = len % bs;
    if (tail > 0 && this.#freeQueue.length === 0) {
      throw new KvModelError('KV_CACHE_FULL', 'fork needs a block for the partial tail, none is free');
    }
    const id = this.#nextId++;
    const blocks = s.blocks.slice(0, full);
    for (const b of blocks) {
      if ((this.#ref[b] as number) <= 0) throw new Error(`model: shared block ${b} of a live sequence is free`);
      this.#ref[b] = (this.#ref[b] as number) + 1;
    }
    if (tail > 0) {
      const src = s.blocks[full] as number;
      const dst = this.#allocate();
      const row = this.rowElems;
      for (let layer = 0; layer < this.numLayers; layer++) {
        const k = this.#k[layer] as Float32Array;
        const v = this.#v[layer] as Float32Array;
        k.copyWithin(dst * bs * row, src * bs * row, (src * bs + tail) * row);
        v.copyWithin(dst * bs * row, src * bs * row, (src * bs + tail) * row);
      }
      blocks.push(dst);
    }
    this.#seqs.set(id, {
      tokens: s.tokens.slice(),
      blocks,
      committed: s.committed,
      missed: s.missed,
      canon: s.canon.slice(),
      canonGen: s.canonGen.slice(),
    });
    return id;
  }

  free(seq: number): void {
    const s = this.#get(seq);
    for (let i = s.blocks.length - 1; i >= 0; i--) {
      const b = s.blocks[i] as number;
      const r = (this.#ref[b] as number) - 1;
      if (r < 0) throw new Error(`model: negative ref count of block ${b}`);
      this.#ref[b] = r;
      if (r === 0) {
        if (this.#reg[b]) this.#freeQueue.push(b);
        else this.#freeQueue.unshift(b);
      }
    }
    this.#seqs.delete(seq);
  }

  length(seq: number): number {
    return this.#get(seq).tokens.length;
  }

  committedLength(seq: number): number {
    return this.#get(seq).committed;
  }

  blockTable(seq: number): Int32Array {
    return Int32Array.from(this.#get(seq).blocks);
  }

  setWeightVersion(version: number): void {
    checkInt('version', version, 0, Number.MAX_SAFE_INTEGER);
    if (version === this.#version) return;
    for (let b = 0; b < this.numBlocks; b++) {
      if (this.#reg[b]) this.#unregister(b);
    }
    this.#version = version;
  }

  stats(): KvModelStats {
    const freeBlocks = this.#freeQueue.length;
    return {
      numBlocks: this.numBlocks,
      freeBlocks,
      cachedBlocks: this.#freeQueue.filter((b) => this.#reg[b]).length,
      activeBlocks: this.numBlocks - freeBlocks,
      queriedTokens: this.#queriedTokens,
      cachedTokens: this.#cachedTokens,
      evictions: this.#evictions,
    };
  }

  // ---- KV data ---------------------------------------------------------------------------------

  writeKv(seq: number, layer: number, start: number, k: Float32Array, v: Float32Array): void {
    if (!(k instanceof Float32Array)) throw invalid('k must be a Float32Array');
    if (!(v instanceof Float32Array)) throw invalid('v must be a Float32Array');
    checkInt('layer', layer, 0, this.numLayers - 1);
    checkInt('start', start, 0, Number.MAX_SAFE_INTEGER);
    const row = this.rowElems;
    if (k.length !== v.length || k.length % row !== 0) {
      throw invalid(`k and v must have the same length, a multiple of ${row}`);
    }
    const count = k.length / row;
    const s = this.#get(seq);
    if (start + count > s.tokens.length) throw invalid('positions must lie inside the sequence');
    if (start < s.committed) throw invalid(`positions before ${s.committed} are committed`);
    const kl = this.#k[layer] as Float32Array;
    const vl = this.#v[layer] as Float32Array;
    for (let i = 0; i < count; i++) {
      const at = this.#slot(s, start + i) * row;
      kl.set(k.subarray(i * row, (i + 1) * row), at);
      vl.set(v.subarray(i * row, (i + 1) * row), at);
    }
  }

  readKv(seq: number, layer: number, start: number, count: number): { k: Float32Array; v: Float32Array } {
    checkInt('layer', layer, 0, this.numLayers - 1);
    checkInt('start', start, 0, Number.MAX_SAFE_INTEGER);
    checkInt('count', count, 0, Number.MAX_SAFE_INTEGER);
    const s = this.#get(seq);
    if (start + count > s.tokens.length) throw invalid('positions must lie inside the sequence');
    const row = this.rowElems;
    const k = new Float32Array(count * row);
    const v = new Float32Array(count * row);
    const kl = this.#k[layer] as Float32Array;
    const vl = this.#v[layer] as Float32Array;
    for (let i = 0; i < count; i++) {
      const at = this.#slot(s, start + i) * row;
      k.set(kl.subarray(at, at + row), i * row);
      v.set(vl.subarray(at, at + row), i * row);
    }
    return { k, v };
  }

  // ---- introspection for tests -----------------------------------------------------------------

  /** Ids of the live sequences, in creation order. */
  liveSequences(): number[] {
    return [...this.#seqs.keys()];
  }

  /** The id the next createSequence or fork will return. */
  peekNextId(): number {
    return this.#nextId;
  }

  /** The tokens of a live sequence (a copy). */
  tokens(seq: number): number[] {
    return this.#get(seq).tokens.slice();
  }

  /** Current weight version. */
  weightVersion(): number {
    return this.#version;
  }

  /** Number of registered blocks (free or not). */
  registeredBlocks(): number {
    return this.#reg.filter((r) => r).length;
  }

  /** Throws an Error when an internal invariant of the model is broken (a bug in the model). */
  checkInvariants(): void {
    const bs = this.blockSize;
    const refs = new Array<number>(this.numBlocks).fill(0);
    for (const [id, s] of this.#seqs) {
      const want = Math.ceil(s.tokens.length / bs);
      if (s.blocks.length !== want) throw new Error(`model: seq ${id} has ${s.blocks.length} blocks, want ${want}`);
      if (new Set(s.blocks).size !== s.blocks.length) throw new Error(`model: seq ${id} holds a block twice`);
      for (const b of s.blocks) refs[b] = (refs[b] as number) + 1;
      if (s.committed > s.tokens.length) throw new Error(`model: seq ${id} committed past its length`);
      if (s.canon.length !== s.canonGen.length) throw new Error(`model: seq ${id} canon/canonGen lengths`);
      if (s.canon.length > Math.floor(s.committed / bs)) throw new Error(`model: seq ${id} canon past committed`);
      if (!s.missed && (s.tokens.length % bs !== 0 || s.committed !== s.tokens.length)) {
        if (this.prefixCaching) throw new Error(`model: seq ${id} has not missed but is not all hits`);
      }
    }
    for (let b = 0; b < this.numBlocks; b++) {
      if (refs[b] !== this.#ref[b]) throw new Error(`model: block ${b} ref ${this.#ref[b]}, owners ${refs[b]}`);
    }
    const free = new Set(this.#freeQueue);
    if (free.size !== this.#freeQueue.length) throw new Error('model: free queue holds a block twice');
    for (let b = 0; b < this.numBlocks; b++) {
      if ((this.#ref[b] === 0) !== free.has(b)) throw new Error(`model: block ${b} free-queue membership`);
    }
    const keys = new Set<string>();
    for (let b = 0; b < this.numBlocks; b++) {
      const r = this.#reg[b];
      if (!r) continue;
      if (r.version !== this.#version) throw new Error(`model: block ${b} registered under an old version`);
      if (r.tokens.length !== bs) throw new Error(`model: block ${b} registered with ${r.tokens.length} tokens`);
      const key = `${r.parent}/${r.parentGen}/${r.tokens.join(',')}`;
      if (keys.has(key)) throw new Error(`model: two registered blocks with key ${key}`);
      keys.add(key);
    }
  }

  // ---- internals -------------------------------------------------------------------------------

  #get(seq: number): ModelSequence {
    checkInt('seq', seq, Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
    const s = this.#seqs.get(seq);
    if (s === undefined) throw new KvModelError('UNKNOWN_SEQUENCE', `unknown sequence ${seq}`);
    return s;
  }

  /** Whether the parent of full block i (canon[i-1], or none for i == 0) is still registered as recorded. */
  #chainValid(s: ModelSequence, i: number): boolean {
    if (i === 0) return true;
    const p = s.canon[i - 1] as number;
    return !!this.#reg[p] && this.#gen[p] === s.canonGen[i - 1];
  }

  /** The registered block for (parent, chunk, current version), or -1. */
  #lookup(parent: number, chunk: number[]): number {
    let found = -1;
    for (let b = 0; b < this.numBlocks; b++) {
      const r = this.#reg[b];
      if (!r || r.version !== this.#version || r.parent !== parent) continue;
      if (parent !== -1 && (!this.#reg[parent] || this.#gen[parent] !== r.parentGen)) continue;
      if (r.tokens.length !== chunk.length || r.tokens.some((t, i) => t !== chunk[i])) continue;
      if (found !== -1) throw new Error(`model: two registered blocks ${found} and ${b} match one key`);
      found = b;
    }
    return found;
  }

  /**
   * Drops b's registration and, since they are reachable only through it, the registrations of
   * its descendants (registered blocks whose recorded parent is b at its current generation).
   */
  #unregister(b: number): void {
    const gen = this.#gen[b] as number;
    this.#reg[b] = null;
    this.#gen[b] = gen + 1;
    for (let c = 0; c < this.numBlocks; c++) {
      const r = this.#reg[c];
      if (r && r.parent === b && r.parentGen === gen) this.#unregister(c);
    }
  }

  /** Pops the front of the free queue, evicting its prefix if it holds one; ref becomes 1. */
  #allocate(): number {
    const b = this.#freeQueue.shift();
    if (b === undefined) throw new Error('model: allocate from an empty free queue');
    if (this.#ref[b] !== 0) throw new Error(`model: free block ${b} has ref ${this.#ref[b]}`);
    if (this.#reg[b]) {
      this.#unregister(b);
      this.#evictions++;
    }
    this.#ref[b] = 1;
    return b;
  }

  #removeFromFreeQueue(b: number): void {
    const i = this.#freeQueue.indexOf(b);
    if (i < 0) throw new Error(`model: block ${b} with ref 0 is not in the free queue`);
    this.#freeQueue.splice(i, 1);
  }

  #slot(s: ModelSequence, pos: number): number {
    const bs = this.blockSize;
    return (s.blocks[Math.floor(pos / bs)] as number) * bs + (pos % bs);
  }
}

function invalid(message: string): KvModelError {
  return new KvModelError('INVALID_ARGUMENT', message);
}

function checkInt(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalid(`${name} must be an integer in [${min}, ${max}], got ${String(value)}`);
  }
  return value;
}

function checkTokens(tokens: ArrayLike<number>): number[] {
  if (tokens === null || typeof tokens !== 'object' || typeof tokens.length !== 'number') {
    throw invalid('tokens must be an array of token ids');
  }
  const out: number[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as unknown;
    if (typeof t !== 'number' || !Number.isInteger(t) || t < 0 || t > MAX_TOKEN) {
      throw invalid(`tokens[${i}] must be an integer token id in [0, 2^31), got ${String(t)}`);
    }
    out.push(t);
  }
  return out;
}

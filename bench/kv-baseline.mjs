/**
 * Plain-JavaScript baselines for the KV benchmarks (bench/kv.mjs).
 *
 * {@link JsPagedKvCache} is the paged KV cache's bookkeeping as a user would reasonably write it in
 * JS, with the same rules as native/kv (vLLM v1 semantics) so both do the same work: ref counts, an
 * LRU free queue (a doubly linked list over typed arrays; unregistered blocks at the front,
 * registered ones at the back), chained block hashes of the token ids (a 30-bit number hash) in a
 * Map, hits verified against the stored tokens and parent link, registration on commit. It keeps
 * no KV data (the bookkeeping benchmark does not touch it).
 *
 * {@link jsScatterF32} and {@link jsScatterBf16} are the KV write baselines: the same scatter of
 * rows into a page array through a slot mapping, as plain JS loops.
 */

const ROOT_HASH = 0x1f3d5b79;

/**
 * Chained hash of one block: a 30-bit integer (a V8 small integer, so Map keys stay unboxed) from
 * the parent's hash and the block's token ids, two murmur-style 32-bit lanes folded together.
 * Collisions are harmless: a hit is verified against the stored tokens and parent link, and a
 * block whose hash is taken is left uncached (as the native cache does).
 * @param {number} parent the parent block's hash (ROOT_HASH for a sequence's first block)
 * @param {Int32Array} tokens
 * @param {number} off first token of the block
 * @param {number} n tokens per block
 * @returns {number}
 */
export function hashBlock(parent, tokens, off, n) {
  let h1 = parent ^ 0x85ebca6b;
  let h2 = Math.imul(parent, 0xc2b2ae35) ^ n;
  for (let i = off, end = off + n; i < end; i++) {
    const t = /** @type {number} */ (tokens[i]);
    h1 = Math.imul(h1 ^ t, 0x9e3779b1);
    h1 = (h1 << 13) | (h1 >>> 19);
    h2 = Math.imul(h2 ^ t, 0x85ebca77) + h1;
    h2 = (h2 << 17) | (h2 >>> 15);
  }
  h1 = Math.imul(h1 ^ (h2 >>> 16), 0x7feb352d);
  h2 = Math.imul(h2 ^ (h1 >>> 15), 0x846ca68b);
  return (h1 ^ h2 ^ (h2 >>> 13)) & 0x3fffffff;
}

/**
 * @typedef {object} JsSequence
 * @property {Int32Array} tokens grows by doubling
 * @property {number} length
 * @property {number[]} blocks block table
 * @property {number[]} hashes chained hashes of the registered leading full blocks
 * @property {number[]} canon the registered block holding each such prefix
 * @property {number[]} canonGen its generation when recorded
 * @property {number} committed
 * @property {boolean} missed allocated a block of its own: no more prefix hits
 */

/** The paged KV cache's bookkeeping in plain JS (see the file comment). */
export class JsPagedKvCache {
  /**
   * @param {{ numBlocks: number, blockSize?: number }} options
   */
  constructor(options) {
    const n = options.numBlocks;
    const bs = options.blockSize ?? 16;
    this.numBlocks = n;
    this.blockSize = bs;
    this.ref = new Int32Array(n);
    this.prev = new Int32Array(n + 2).fill(-1);
    this.next = new Int32Array(n + 2).fill(-1);
    this.registered = new Uint8Array(n);
    this.gen = new Uint32Array(n);
    this.hash = new Float64Array(n);
    this.parent = new Int32Array(n).fill(-1);
    this.parentGen = new Uint32Array(n);
    this.blockTokens = new Int32Array(n * bs);
    /** @type {Map<number, number>} hash -> registered block */
    this.index = new Map();
    /** @type {Map<number, JsSequence>} */
    this.seqs = new Map();
    this.nextSeq = 1;
    this.head = n;
    this.tail = n + 1;
    this.next[this.head] = this.tail;
    this.prev[this.tail] = this.head;
    for (let b = 0; b < n; b++) this.#linkBack(b);
    this.freeCount = n;
    this.cachedFree = 0;
    this.evictions = 0;
    this.queriedTokens = 0;
    this.cachedTokens = 0;
  }

  /** @returns {number} */
  createSequence() {
    const id = this.nextSeq++;
    this.seqs.set(id, {
      tokens: new Int32Array(64),
      length: 0,
      blocks: [],
      hashes: [],
      canon: [],
      canonGen: [],
      committed: 0,
      missed: false,
    });
    return id;
  }

  /**
   * @param {number} seq
   * @param {Int32Array} tokens
   * @returns {{ cachedTokens: number, newBlocks: number }}
   */
  append(seq, tokens) {
    const s = this.#get(seq);
    const bs = this.blockSize;
    const n = tokens.length;
    const len = s.length;
    const lookup = !s.missed;
    /** @type {number[]} */
    const hits = [];
    /** @type {number[]} */
    const hitHashes = [];
    let hitTokens = 0;
    let freeHits = 0;
    if (lookup) {
      let parent = s.canon.length === 0 ? -1 : s.canon[s.canon.length - 1];
      let parentHash = s.hashes.length === 0 ? ROOT_HASH : s.hashes[s.hashes.length - 1];
      const alive =
        parent < 0 || (this.registered[parent] === 1 && this.gen[parent] === s.canonGen[s.canonGen.length - 1]);
      while (alive && hitTokens + bs <= n) {
        const h = hashBlock(parentHash, tokens, hitTokens, bs);
        const b = this.#lookup(h, tokens, hitTokens, parent);
        if (b < 0) break;
        hits.push(b);
        hitHashes.push(h);
        if (this.ref[b] === 0) freeHits++;
        parent = b;
        parentHash = h;
        hitTokens += bs;
      }
    }
    const rest = n - hitTokens;
    const tailRoom = len % bs === 0 ? 0 : bs - (len % bs);
    const newBlocks = rest > tailRoom ? Math.ceil((rest - tailRoom) / bs) : 0;
    if (newBlocks > this.freeCount - freeHits) throw new Error('KV cache full');

    if (s.tokens.length < len + n) {
      let cap = s.tokens.length * 2;
      while (cap < len + n) cap *= 2;
      const grown = new Int32Array(cap);
      grown.set(s.tokens.subarray(0, len));
      s.tokens = grown;
    }
    s.tokens.set(tokens, len);
    s.length = len + n;
    for (let i = 0; i < hits.length; i++) {
      const b = hits[i];
      this.#retain(b);
      s.blocks.push(b);
      s.hashes.push(hitHashes[i]);
      s.canon.push(b);
      s.canonGen.push(this.gen[b]);
    }
    for (let i = 0; i < newBlocks; i++) s.blocks.push(this.#allocate());
    if (newBlocks > 0) s.missed = true;
    if (lookup) {
      this.queriedTokens += n;
      this.cachedTokens += hitTokens;
      s.committed += hitTokens;
    }
    return { cachedTokens: hitTokens, newBlocks };
  }

  /** @param {number} seq */
  commit(seq) {
    const s = this.#get(seq);
    s.committed = s.length;
    const bs = this.blockSize;
    const full = Math.floor(s.committed / bs);
    while (s.canon.length < full) {
      const i = s.canon.length;
      const parent = i === 0 ? -1 : s.canon[i - 1];
      if (parent >= 0 && !(this.registered[parent] === 1 && this.gen[parent] === s.canonGen[i - 1])) return;
      const own = s.blocks[i];
      let canon;
      let h;
      if (this.registered[own] === 1) {
        canon = own;
        h = this.hash[own];
      } else {
        h = hashBlock(i === 0 ? ROOT_HASH : s.hashes[i - 1], s.tokens, i * bs, bs);
        canon = this.#lookup(h, s.tokens, i * bs, parent);
        if (canon < 0) {
          if (this.index.has(h)) return; // hash collision: leave this prefix uncached
          this.#register(own, h, s.tokens, i * bs, parent);
          canon = own;
        }
      }
      s.hashes.push(h);
      s.canon.push(canon);
      s.canonGen.push(this.gen[canon]);
    }
  }

  /**
   * A new sequence with seq's tokens: full blocks shared, the partial tail block copied (new block).
   * @param {number} seq
   * @returns {number}
   */
  fork(seq) {
    const s = this.#get(seq);
    const bs = this.blockSize;
    const full = Math.floor(s.length / bs);
    const tail = s.length % bs;
    if (tail > 0 && this.freeCount === 0) throw new Error('KV cache full');
    const id = this.nextSeq++;
    const blocks = s.blocks.slice(0, full);
    for (const b of blocks) this.#retain(b);
    if (tail > 0) blocks.push(this.#allocate());
    this.seqs.set(id, {
      tokens: s.tokens.slice(),
      length: s.length,
      blocks,
      hashes: s.hashes.slice(),
      canon: s.canon.slice(),
      canonGen: s.canonGen.slice(),
      committed: s.committed,
      missed: s.missed,
    });
    return id;
  }

  /** @param {number} seq */
  free(seq) {
    const s = this.#get(seq);
    for (let i = s.blocks.length - 1; i >= 0; i--) this.#release(s.blocks[i]);
    this.seqs.delete(seq);
  }

  /** @param {number} seq */
  length(seq) {
    return this.#get(seq).length;
  }

  /** @param {number} seq */
  blockTable(seq) {
    return Int32Array.from(this.#get(seq).blocks);
  }

  stats() {
    return {
      numBlocks: this.numBlocks,
      freeBlocks: this.freeCount,
      cachedBlocks: this.cachedFree,
      activeBlocks: this.numBlocks - this.freeCount,
      queriedTokens: this.queriedTokens,
      cachedTokens: this.cachedTokens,
      evictions: this.evictions,
    };
  }

  /**
   * @param {number} seq
   * @returns {JsSequence}
   */
  #get(seq) {
    const s = this.seqs.get(seq);
    if (!s) throw new Error(`sequence ${seq} does not exist`);
    return s;
  }

  /**
   * The registered block for hash with exactly these tokens and this parent link, or -1.
   * @param {number} h
   * @param {Int32Array} tokens
   * @param {number} off
   * @param {number} parent
   */
  #lookup(h, tokens, off, parent) {
    const b = this.index.get(h);
    if (b === undefined) return -1;
    if (this.registered[b] !== 1 || this.parent[b] !== parent) return -1;
    if (parent >= 0 && (this.registered[parent] !== 1 || this.gen[parent] !== this.parentGen[b])) return -1;
    const bs = this.blockSize;
    const base = b * bs;
    for (let i = 0; i < bs; i++) if (this.blockTokens[base + i] !== tokens[off + i]) return -1;
    return b;
  }

  /**
   * @param {number} b
   * @param {number} h
   * @param {Int32Array} tokens
   * @param {number} off
   * @param {number} parent
   */
  #register(b, h, tokens, off, parent) {
    this.index.set(h, b);
    this.registered[b] = 1;
    this.gen[b]++;
    this.hash[b] = h;
    this.parent[b] = parent;
    this.parentGen[b] = parent >= 0 ? this.gen[parent] : 0;
    this.blockTokens.set(tokens.subarray(off, off + this.blockSize), b * this.blockSize);
  }

  /** @returns {number} the front free block, its registration evicted */
  #allocate() {
    const b = this.next[this.head];
    this.#unlink(b);
    this.freeCount--;
    if (this.registered[b] === 1) {
      this.cachedFree--;
      this.evictions++;
      this.index.delete(this.hash[b]);
      this.registered[b] = 0;
      this.gen[b]++;
    }
    this.ref[b] = 1;
    return b;
  }

  /** @param {number} b */
  #retain(b) {
    if (this.ref[b]++ === 0) {
      this.#unlink(b);
      this.freeCount--;
      if (this.registered[b] === 1) this.cachedFree--;
    }
  }

  /** @param {number} b */
  #release(b) {
    if (--this.ref[b] > 0) return;
    this.freeCount++;
    if (this.registered[b] === 1) {
      this.cachedFree++;
      this.#linkBack(b);
    } else {
      this.#linkFront(b);
    }
  }

  /** @param {number} b */
  #linkBack(b) {
    const last = this.prev[this.tail];
    this.prev[b] = last;
    this.next[b] = this.tail;
    this.next[last] = b;
    this.prev[this.tail] = b;
  }

  /** @param {number} b */
  #linkFront(b) {
    const first = this.next[this.head];
    this.prev[b] = this.head;
    this.next[b] = first;
    this.prev[first] = b;
    this.next[this.head] = b;
  }

  /** @param {number} b */
  #unlink(b) {
    const p = this.prev[b];
    const q = this.next[b];
    this.next[p] = q;
    this.prev[q] = p;
    this.prev[b] = -1;
    this.next[b] = -1;
  }
}

/**
 * f32 KV write baseline: row i of k and v goes to page row slots[i], one Float32Array.set per row.
 * @param {Float32Array} kPages
 * @param {Float32Array} vPages
 * @param {Int32Array} slots
 * @param {Float32Array} k [slots.length, rowElems]
 * @param {Float32Array} v
 * @param {number} rowElems numKvHeads * headDim
 */
export function jsScatterF32(kPages, vPages, slots, k, v, rowElems) {
  for (let i = 0; i < slots.length; i++) {
    const src = i * rowElems;
    const dst = slots[i] * rowElems;
    kPages.set(k.subarray(src, src + rowElems), dst);
    vPages.set(v.subarray(src, src + rowElems), dst);
  }
}

/**
 * bf16 KV write baseline: the same scatter, rounding each f32 to bf16 (nearest even; NaN stays NaN).
 * @param {Uint16Array} kPages
 * @param {Uint16Array} vPages
 * @param {Int32Array} slots
 * @param {Uint32Array} kBits the f32 K rows as bits
 * @param {Uint32Array} vBits
 * @param {number} rowElems
 */
export function jsScatterBf16(kPages, vPages, slots, kBits, vBits, rowElems) {
  for (let i = 0; i < slots.length; i++) {
    const src = i * rowElems;
    const dst = slots[i] * rowElems;
    for (let j = 0; j < rowElems; j++) {
      kPages[dst + j] = toBf16(kBits[src + j]);
      vPages[dst + j] = toBf16(vBits[src + j]);
    }
  }
}

/**
 * @param {number} x f32 bits
 * @returns {number} bf16 bits
 */
function toBf16(x) {
  if ((x & 0x7fffffff) >>> 0 > 0x7f800000) return (x >>> 16) | 0x40;
  return (x + 0x7fff + ((x >>> 16) & 1)) >>> 16;
}

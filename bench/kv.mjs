/**
 * The KV suite: the paged KV cache's bookkeeping rate, its prefix-cache hit rate and memory
 * utilization on a multi-turn agent workload, and the KV write kernel's bandwidth. Each figure
 * comes with a baseline (plain JS, bench/kv-baseline.mjs, or a contiguous allocator) and, where
 * one applies, its limit (machine.stream_gbps).
 */
import { PagedKvCache } from '../dist/index.js';
import { JsPagedKvCache, jsScatterBf16, jsScatterF32 } from './kv-baseline.mjs';
import { measure, mulberry32, now, progress, randomTokens, uniformInt } from './lib.mjs';

const VOCAB = 150000;

/**
 * @typedef {object} SuiteContext
 * @property {boolean} quick
 * @property {import('./lib.mjs').Report} report
 * @property {Record<string, unknown>} meta
 * @property {import('./machine.mjs').MachineLimits} limits
 */

/**
 * The cache interface both implementations share for the bookkeeping workloads.
 * @typedef {{ createSequence(): number, append(seq: number, tokens: Int32Array): unknown, commit(seq: number): void, free(seq: number): void }} BookkeepingCache
 */

/**
 * Runs the KV suite.
 * @param {SuiteContext} ctx
 */
export async function kvSuite(ctx) {
  /** @type {Record<string, unknown>} */
  const meta = {};
  ctx.meta.kv = meta;
  const steps = [
    ['cross-check', () => crossCheck(meta)],
    ['kv.bookkeeping', () => bookkeeping(ctx, meta, 'chunked')],
    ['kv.bookkeeping.decode', () => bookkeeping(ctx, meta, 'decode')],
    ['kv.bookkeeping.decode_batch', () => decodeBatch(ctx, meta)],
    ['kv.multiturn', () => multiturn(ctx, meta)],
    ['kv.write', () => writeBench(ctx, meta, 'f32')],
    ['kv.write.bf16', () => writeBench(ctx, meta, 'bf16')],
  ];
  for (let i = 0; i < steps.length; i++) {
    const [name, run] = /** @type {[string, () => Promise<void>]} */ (steps[i]);
    progress(`kv ${i + 1}/${steps.length}: ${name}`);
    await run();
  }
}

/** Bookkeeping cache geometry: the KV data is never touched, so one 1-element head. */
const BOOK = { numBlocks: 4096, blockSize: 16, numLayers: 1, numKvHeads: 1, headDim: 1 };
const BOOK_SEQ_TOKENS = 2048;
const BOOK_CHUNK = 256;

/**
 * kv.bookkeeping (chunked prefill: 256 tokens per append, commit after each) and
 * kv.bookkeeping.decode (1 token per append, commit every 16): tokens/s of append + commit + free
 * on the JS thread, native vs the plain-JS baseline. Every iteration's first token is new, so
 * with chained hashes every block is a miss and, once the pool has cycled, every allocation
 * evicts a cached block: the steady state of a busy cache.
 * @param {SuiteContext} ctx
 * @param {Record<string, unknown>} meta
 * @param {'chunked' | 'decode'} mode
 */
async function bookkeeping(ctx, meta, mode) {
  const name = mode === 'chunked' ? 'kv.bookkeeping' : 'kv.bookkeeping.decode';
  const tokens = randomTokens(mulberry32(1), BOOK_SEQ_TOKENS, VOCAB);
  const step = mode === 'chunked' ? BOOK_CHUNK : 1;
  const commitEvery = mode === 'chunked' ? BOOK_CHUNK : BOOK.blockSize;
  /** @type {Int32Array[]} */
  const pieces = [];
  for (let i = 0; i < BOOK_SEQ_TOKENS; i += step) pieces.push(tokens.subarray(i, i + step));
  const perCommit = commitEvery / step;
  let iter = 0;

  /**
   * @param {BookkeepingCache} cache
   * @returns {() => void}
   */
  const workload = (cache) => () => {
    tokens[0] = VOCAB + (iter++ % 0x40000000); // fresh content: every block misses
    const seq = cache.createSequence();
    for (let i = 0; i < pieces.length; i++) {
      cache.append(seq, /** @type {Int32Array} */ (pieces[i]));
      if ((i + 1) % perCommit === 0) cache.commit(seq);
    }
    cache.free(seq);
  };

  const opts = ctx.quick ? { time: 150, warmupTime: 50 } : { time: 2500, warmupTime: 500 };
  progress(`${name}: native (${step} token(s) per append)`);
  const nat = new PagedKvCache(BOOK);
  const mNative = await measure(`${name} native`, workload(nat), opts);
  progress(`${name}: plain-JS baseline`);
  const js = new JsPagedKvCache(BOOK);
  const mJs = await measure(`${name} js`, workload(js), opts);

  const rate = (/** @type {import('./lib.mjs').Measurement} */ m) => (BOOK_SEQ_TOKENS * 1000) / m.periodMs;
  ctx.report.add({
    name,
    value: rate(mNative),
    unit: 'tokens/s',
    baseline: { name: 'plain-JS bookkeeping (bench/kv-baseline.mjs)', value: rate(mJs) },
    roofline: { value: (ctx.limits.streamGbps * 1e9) / 8, unit: 'tokens/s' },
  });
  meta[name] = {
    tokensPerAppend: step,
    commitEvery,
    native: { ...mNative, evictions: nat.stats().evictions },
    baseline: { ...mJs, evictions: js.stats().evictions },
    goalTokensPerSecond: mode === 'chunked' ? 20e6 : undefined,
  };
}

const DECODE_SEQS = 64;
const DECODE_STEPS = 128;

/**
 * kv.bookkeeping.decode_batch: an engine's decode steps. 64 sequences each get one token per
 * step through one appendBatch call and one commitBatch call (the KV of the step is written),
 * for 128 steps; then all are freed. The plain-JS baseline does the same with per-sequence calls
 * (which cost it nothing: there is no native boundary to cross).
 * @param {SuiteContext} ctx
 * @param {Record<string, unknown>} meta
 */
async function decodeBatch(ctx, meta) {
  const name = 'kv.bookkeeping.decode_batch';
  const steps = randomTokens(mulberry32(5), DECODE_SEQS * DECODE_STEPS, VOCAB);
  const stepTokens = Array.from({ length: DECODE_STEPS }, (_, i) =>
    steps.subarray(i * DECODE_SEQS, (i + 1) * DECODE_SEQS),
  );
  const geo = { ...BOOK, numBlocks: (DECODE_SEQS * DECODE_STEPS) / BOOK.blockSize + DECODE_SEQS };
  let iter = 0;

  const nat = new PagedKvCache(geo);
  const seqIds = new Float64Array(DECODE_SEQS);
  const native = () => {
    for (let i = 0; i < DECODE_SEQS; i++) seqIds[i] = nat.createSequence();
    for (let t = 0; t < DECODE_STEPS; t++) {
      nat.appendBatch(seqIds, /** @type {Int32Array} */ (stepTokens[t]));
      nat.commitBatch(seqIds);
    }
    for (let i = 0; i < DECODE_SEQS; i++) nat.free(/** @type {number} */ (seqIds[i]));
  };

  const js = new JsPagedKvCache(geo);
  /** @type {number[]} */
  const jsSeqs = new Array(DECODE_SEQS).fill(0);
  const one = new Int32Array(1);
  const baseline = () => {
    for (let i = 0; i < DECODE_SEQS; i++) jsSeqs[i] = js.createSequence();
    for (let t = 0; t < DECODE_STEPS; t++) {
      const toks = /** @type {Int32Array} */ (stepTokens[t]);
      for (let i = 0; i < DECODE_SEQS; i++) {
        one[0] = /** @type {number} */ (toks[i]) + (iter & 1);
        js.append(/** @type {number} */ (jsSeqs[i]), one);
        js.commit(/** @type {number} */ (jsSeqs[i]));
      }
    }
    iter++;
    for (let i = 0; i < DECODE_SEQS; i++) js.free(/** @type {number} */ (jsSeqs[i]));
  };

  const opts = ctx.quick ? { time: 150, warmupTime: 50 } : { time: 2500, warmupTime: 500 };
  progress(`${name}: native (${DECODE_SEQS} sequences per appendBatch)`);
  const mNative = await measure(`${name} native`, native, opts);
  progress(`${name}: plain-JS baseline`);
  const mJs = await measure(`${name} js`, baseline, opts);
  const rate = (/** @type {import('./lib.mjs').Measurement} */ m) => (DECODE_SEQS * DECODE_STEPS * 1000) / m.periodMs;
  ctx.report.add({
    name,
    value: rate(mNative),
    unit: 'tokens/s',
    baseline: { name: 'plain-JS bookkeeping, one call per sequence', value: rate(mJs) },
    roofline: { value: (ctx.limits.streamGbps * 1e9) / 8, unit: 'tokens/s' },
  });
  meta[name] = { sequences: DECODE_SEQS, steps: DECODE_STEPS, native: mNative, baseline: mJs };
}

/**
 * Checks that the JS baseline and the native cache agree (cached tokens, block counts,
 * evictions) on a small multi-turn workload with forks, so the baseline does the same work.
 * @param {Record<string, unknown>} meta
 */
async function crossCheck(meta) {
  const wl = makeMultiturn({ tasks: 2, group: 3, turns: 6, seed: 7 });
  const geo = { numBlocks: Math.ceil(wl.liveBlocksMax * 1.1), blockSize: 16 };
  const nat = new PagedKvCache({ ...geo, numLayers: 1, numKvHeads: 1, headDim: 1 });
  const js = new JsPagedKvCache(geo);
  const a = runMultiturn(nat, wl, () => {});
  const b = runMultiturn(js, wl, () => {});
  const sn = nat.stats();
  const sj = js.stats();
  const same =
    a.cached === b.cached &&
    sn.activeBlocks === sj.activeBlocks &&
    sn.cachedBlocks === sj.cachedBlocks &&
    sn.evictions === sj.evictions &&
    sn.cachedTokens === sj.cachedTokens;
  meta.crossCheck = { ok: same, native: sn, baseline: sj };
  if (!same) {
    process.stderr.write(
      `WARNING: the JS baseline and the native cache disagree:\n  native ${JSON.stringify(sn)}\n  js     ${JSON.stringify(sj)}\n`,
    );
  }
}

/**
 * @typedef {object} Session
 * @property {Int32Array} tokens the session's whole final history (prompt first)
 * @property {number[]} ends history length after each turn (ends[0] = prompt length)
 */

/**
 * @typedef {object} MultiturnWorkload
 * @property {{ prompt: Int32Array, sessions: Session[] }[]} tasks
 * @property {number} turns
 * @property {number} blockSize
 * @property {number} liveBlocksMax blocks live at the end (shared prompt blocks counted once)
 * @property {number} maxLen the longest a session can get under the workload's bounds
 */

const MT = { prompt: [500, 3000], action: [20, 300], observation: [50, 2000] };

/**
 * Generates the multi-turn agent workload: `tasks` task prompts, each forked into `group`
 * sessions that run `turns` turns of (model action, tool observation).
 * @param {{ tasks: number, group: number, turns: number, seed: number, blockSize?: number }} o
 * @returns {MultiturnWorkload}
 */
function makeMultiturn(o) {
  const bs = o.blockSize ?? 16;
  const rng = mulberry32(o.seed);
  const tasks = [];
  let liveBlocksMax = 0;
  for (let t = 0; t < o.tasks; t++) {
    const promptLen = uniformInt(rng, MT.prompt[0], MT.prompt[1]);
    const prompt = randomTokens(rng, promptLen, VOCAB);
    const sharedFull = Math.floor(promptLen / bs);
    liveBlocksMax += sharedFull;
    /** @type {Session[]} */
    const sessions = [];
    for (let g = 0; g < o.group; g++) {
      const ends = [promptLen];
      let len = promptLen;
      for (let turn = 0; turn < o.turns; turn++) {
        len += uniformInt(rng, MT.action[0], MT.action[1]) + uniformInt(rng, MT.observation[0], MT.observation[1]);
        ends.push(len);
      }
      const tokens = new Int32Array(len);
      tokens.set(prompt);
      tokens.set(randomTokens(rng, len - promptLen, VOCAB), promptLen);
      sessions.push({ tokens, ends });
      liveBlocksMax += Math.ceil(len / bs) - sharedFull;
    }
    tasks.push({ prompt, sessions });
  }
  const maxLen = MT.prompt[1] + o.turns * (MT.action[1] + MT.observation[1]);
  return { tasks, turns: o.turns, blockSize: bs, liveBlocksMax, maxLen };
}

/**
 * Replays the workload on a cache as a stateless (OpenAI-compatible) server sees it: every turn,
 * each session's request resends its whole history, so the server frees the session's previous
 * sequence, appends the history (hitting the prefix cache), commits, then appends the new action
 * and observation and commits. `afterTurn(turn, seqs)` runs after each turn with all sessions live.
 * @param {{ createSequence(): number, append(seq: number, t: Int32Array): { cachedTokens: number }, commit(seq: number): void, fork(seq: number): number, free(seq: number): void }} cache
 * @param {MultiturnWorkload} wl
 * @param {(turn: number, seqs: { seq: number, length: number }[]) => void} afterTurn
 * @returns {{ cached: number, reusable: number, appended: number }}
 */
function runMultiturn(cache, wl, afterTurn) {
  /** @type {{ seq: number, session: Session }[]} */
  const live = [];
  for (const task of wl.tasks) {
    const root = cache.createSequence();
    cache.append(root, task.prompt);
    cache.commit(root);
    for (const session of task.sessions) live.push({ seq: cache.fork(root), session });
    cache.free(root);
  }
  const bs = wl.blockSize;
  let cached = 0;
  let reusable = 0;
  let appended = 0;
  for (let turn = 1; turn <= wl.turns; turn++) {
    for (const s of live) {
      const prev = /** @type {number} */ (s.session.ends[turn - 1]);
      const end = /** @type {number} */ (s.session.ends[turn]);
      cache.free(s.seq);
      s.seq = cache.createSequence();
      cached += cache.append(s.seq, s.session.tokens.subarray(0, prev)).cachedTokens;
      reusable += Math.floor(prev / bs) * bs;
      cache.commit(s.seq);
      cache.append(s.seq, s.session.tokens.subarray(prev, end));
      cache.commit(s.seq);
      appended += end;
    }
    afterTurn(
      turn,
      live.map((s) => ({ seq: s.seq, length: /** @type {number} */ (s.session.ends[turn]) })),
    );
  }
  for (const s of live) cache.free(s.seq);
  return { cached, reusable, appended };
}

/**
 * kv.multiturn.hit_rate and kv.multiturn.memory_utilization on 8 tasks x 8 forked sessions x 20
 * turns (fewer turns with --quick), against a contiguous max-length allocator.
 * @param {SuiteContext} ctx
 * @param {Record<string, unknown>} meta
 */
async function multiturn(ctx, meta) {
  const o = { tasks: 8, group: 8, turns: ctx.quick ? 6 : 20, seed: 42 };
  const wl = makeMultiturn(o);
  const bs = wl.blockSize;
  const numBlocks = Math.ceil(wl.liveBlocksMax * 1.25);
  const cache = new PagedKvCache({ numBlocks, blockSize: bs, numLayers: 1, numKvHeads: 1, headDim: 1 });
  const held = new Int32Array(numBlocks);
  /** @type {number[]} */
  const utilization = [];
  /** @type {number[]} */
  const contiguous = [];
  let mismatchedActive = 0;
  progress(
    `kv.multiturn: ${o.tasks} tasks x ${o.group} sessions x ${o.turns} turns, ${numBlocks} blocks (live max ${wl.liveBlocksMax})`,
  );
  const t0 = now();
  const r = runMultiturn(cache, wl, (_turn, seqs) => {
    held.fill(0);
    let liveTokens = 0;
    let distinct = 0;
    let sumLen = 0;
    for (const { seq, length } of seqs) {
      const table = cache.blockTable(seq);
      const full = Math.floor(length / bs);
      for (let i = 0; i < table.length; i++) {
        const b = /** @type {number} */ (table[i]);
        const h = i < full ? bs : length - full * bs;
        if (held[b] === 0) distinct++;
        if (h > held[b]) {
          liveTokens += h - held[b];
          held[b] = h;
        }
      }
      sumLen += length;
    }
    const st = cache.stats();
    if (st.activeBlocks !== distinct) mismatchedActive++;
    utilization.push(liveTokens / (st.activeBlocks * bs));
    contiguous.push(sumLen / (seqs.length * wl.maxLen));
  });
  const seconds = (now() - t0) / 1000;
  const st = cache.stats();
  const mean = (/** @type {number[]} */ xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

  ctx.report.add({
    name: 'kv.multiturn.hit_rate',
    value: r.reusable > 0 ? r.cached / r.reusable : 0,
    unit: 'fraction',
    baseline: { name: 'contiguous max-length (no prefix cache)', value: 0 },
    roofline: { value: 1, unit: 'fraction' },
  });
  ctx.report.add({
    name: 'kv.multiturn.memory_utilization',
    value: mean(utilization),
    unit: 'fraction',
    baseline: { name: 'contiguous max-length allocation', value: mean(contiguous) },
    roofline: { value: 1, unit: 'fraction' },
  });
  meta.multiturn = {
    ...o,
    blockSize: bs,
    bounds: MT,
    numBlocks,
    liveBlocksMax: wl.liveBlocksMax,
    maxLen: wl.maxLen,
    evictions: st.evictions,
    cachedTokens: r.cached,
    reusableTokens: r.reusable,
    historyTokensResent: r.appended,
    utilizationPerTurn: utilization,
    contiguousUtilizationPerTurn: contiguous,
    minUtilization: Math.min(...utilization),
    turnsWhereActiveBlocksDifferFromTables: mismatchedActive,
    seconds,
    goals: { hitRate: 1, memoryUtilization: 0.96 },
  };
}

/** KV write geometry: a 4096-token prefill chunk, 8 KV heads of 128. */
const WRITE = { tokens: 4096, numKvHeads: 8, headDim: 128, blockSize: 16 };
/**
 * Regions the write benchmark rotates through, for both the source rows and the pages, so that
 * its working set (hundreds of MiB) is far beyond the CPU caches and the figure is comparable to
 * machine.stream_gbps (measured on 256 MiB buffers).
 */
const WRITE_REGIONS = 4;

/**
 * kv.write / kv.write.bf16: GB/s of writeKv for a 4096-token prefill chunk into fresh slots,
 * counting bytes read + bytes written for K and V; baseline: the same scatter in plain JS.
 * @param {SuiteContext} ctx
 * @param {Record<string, unknown>} meta
 * @param {'f32' | 'bf16'} dtype
 */
async function writeBench(ctx, meta, dtype) {
  const name = dtype === 'f32' ? 'kv.write' : 'kv.write.bf16';
  const n = WRITE.tokens;
  const rowElems = WRITE.numKvHeads * WRITE.headDim;
  const elems = n * rowElems;
  const bytes = 2 * elems * (4 + (dtype === 'f32' ? 4 : 2)); // K and V: f32 read + page write
  const numBlocks = ((WRITE_REGIONS + 1) * n) / WRITE.blockSize;
  const cache = new PagedKvCache({
    numBlocks,
    blockSize: WRITE.blockSize,
    numLayers: 1,
    numKvHeads: WRITE.numKvHeads,
    headDim: WRITE.headDim,
    dtype,
  });
  const rng = mulberry32(3);
  /** @type {{ k: Float32Array, v: Float32Array }[]} */
  const sources = [];
  for (let r = 0; r < WRITE_REGIONS; r++) {
    const k = new Float32Array(elems);
    const v = new Float32Array(elems);
    for (let i = 0; i < elems; i++) {
      k[i] = rng() * 2 - 1;
      v[i] = rng() * 2 - 1;
    }
    sources.push({ k, v });
  }
  const { k, v } = /** @type {{ k: Float32Array, v: Float32Array }} */ (sources[0]);
  const tokens = randomTokens(rng, n, VOCAB);

  // Slot mapping the baseline scatters through, and a correctness check of the native write.
  const probe = cache.createSequence();
  cache.append(probe, tokens);
  const slots = cache.slotMapping(probe, 0, n);
  if (Math.max(...slots) >= n) throw new Error('kv.write: the first sequence of a new cache must use slots [0, n)');
  cache.writeKv(probe, 0, 0, k, v);
  const back = cache.readKv(probe, 0, 0, 16);
  let maxErr = 0;
  for (let i = 0; i < back.k.length; i++)
    maxErr = Math.max(maxErr, Math.abs(/** @type {number} */ (back.k[i]) - /** @type {number} */ (k[i])));
  cache.free(probe);

  // A ring of live sequences: each call writes a new one and frees the oldest, whose (uncommitted,
  // so uncached) blocks go to the front of the free queue: the pages written rotate over all regions.
  /** @type {number[]} */
  const ring = [];
  let call = 0;
  const opts = ctx.quick ? { time: 150, warmupTime: 30 } : { time: 2000, warmupTime: 300 };
  progress(`${name}: native writeKv (${(bytes / 2 ** 20).toFixed(0)} MiB moved per call)`);
  const mNative = await measure(
    `${name} native`,
    () => {
      const t = now();
      if (ring.length === WRITE_REGIONS) cache.free(/** @type {number} */ (ring.shift()));
      const seq = cache.createSequence();
      cache.append(seq, tokens);
      ring.push(seq);
      const src = /** @type {{ k: Float32Array, v: Float32Array }} */ (sources[call++ % WRITE_REGIONS]);
      const t0 = now();
      cache.writeKv(seq, 0, 0, src.k, src.v);
      const dt = now() - t0;
      return { overriddenDuration: dt, overriddenIterationCost: now() - t };
    },
    opts,
  );
  for (const seq of ring) cache.free(seq);

  progress(`${name}: plain-JS scatter baseline`);
  const regionElems = n * rowElems;
  const slotsTotal = WRITE_REGIONS * regionElems;
  let jsCall = 0;
  /** @type {() => void} */
  let scatter;
  if (dtype === 'f32') {
    const kp = new Float32Array(slotsTotal);
    const vp = new Float32Array(slotsTotal);
    scatter = () => {
      const r = jsCall++ % WRITE_REGIONS;
      const src = /** @type {{ k: Float32Array, v: Float32Array }} */ (sources[r]);
      jsScatterF32(kp.subarray(r * regionElems), vp.subarray(r * regionElems), slots, src.k, src.v, rowElems);
    };
  } else {
    const kp = new Uint16Array(slotsTotal);
    const vp = new Uint16Array(slotsTotal);
    const bits = sources.map((src) => ({ k: new Uint32Array(src.k.buffer), v: new Uint32Array(src.v.buffer) }));
    scatter = () => {
      const r = jsCall++ % WRITE_REGIONS;
      const src = /** @type {{ k: Uint32Array, v: Uint32Array }} */ (bits[r]);
      jsScatterBf16(kp.subarray(r * regionElems), vp.subarray(r * regionElems), slots, src.k, src.v, rowElems);
    };
  }
  const mJs = await measure(`${name} js`, scatter, opts);

  const gbps = (/** @type {import('./lib.mjs').Measurement} */ m) => bytes / (m.periodMs / 1000) / 1e9;
  ctx.report.add({
    name,
    value: gbps(mNative),
    unit: 'GB/s',
    baseline: {
      name: dtype === 'f32' ? 'plain-JS Float32Array.set per row' : 'plain-JS loop, f32->bf16 per element',
      value: gbps(mJs),
    },
    roofline: { value: ctx.limits.streamGbps, unit: 'GB/s' },
  });
  meta[name] = { bytesPerCall: bytes, native: mNative, baseline: mJs, readBackMaxAbsErr: maxErr };
}

/**
 * The loss suite: GB/s of logits read by `policyLoss()` and `sftLoss()` (forward and gradient;
 * T × vocab × 4 bytes read per call, and as many written to gradLogits, in meta) at T = 4096
 * (T = 64 with --quick), against machine.stream_gbps. Baselines, run side by side: NumPy written
 * the eager PyTorch way (bench/numpy_baselines.py: verl's loss math and autograd's backward, a
 * [T, V] temporary per op; at T = 1024, as its temporaries would not fit at 4096; the record's
 * baseline) and a plain per-row JS loop (in meta).
 *
 * The logits are allocated once: rows of a pool of LM-like rows (bench/sample.mjs lmRows), each
 * with one more +8 spike (the sampled token, the target 70% of the time). oldLogprobs are the
 * exact logprobs plus N(0, 0.15²) noise (ratios near 1, a few clipped), advantages ±1, 90% of
 * the mask set.
 */
import { policyLoss, sftLoss, sftLossFused } from '../dist/index.js';
import { measure, mulberry32, progress } from './lib.mjs';
import { lmRows, runNumpy, SPIKE, VOCAB } from './sample.mjs';

const CLIP_LOW = 0.2;
const CLIP_HIGH = 0.28;

/**
 * @typedef {object} LossInputs
 * @property {Float32Array} logits
 * @property {number} vocab
 * @property {Int32Array} targets
 * @property {Float32Array} oldLogprobs
 * @property {Float32Array} advantages
 * @property {Float32Array} mask
 */

/**
 * Runs the loss suite.
 * @param {import('./sample.mjs').SuiteContext} ctx
 */
export async function lossSuite(ctx) {
  /** @type {Record<string, unknown>} */
  const meta = {};
  ctx.meta.loss = meta;
  const T = ctx.quick ? 64 : 4096;
  const npT = ctx.quick ? 64 : 1024;
  const jsT = ctx.quick ? 4 : 16;
  const poolRows = ctx.quick ? 64 : 256;
  const bytes = T * VOCAB * 4;

  // NumPy first, before this process holds the [T, V] logits.
  progress(`loss: NumPy baselines (T = ${npT})`);
  const t0 = performance.now();
  const np = runNumpy(
    { seed: 0, warmup: 1, reps: ctx.quick ? 1 : 3, loss: [{ T: npT, V: VOCAB, kinds: ['policy', 'sft'] }] },
    240_000,
  );
  meta.numpy =
    'error' in np
      ? { error: np.error }
      : {
          version: np.numpy,
          madviseHugepage: np.hugepage,
          T: npT,
          seconds: np.seconds,
          wallSeconds: (performance.now() - t0) / 1000,
          note: 'eager PyTorch-style NumPy: log_softmax [T, V], gather, ratio, clip, token-mean, entropy from exp(log_softmax), gradient (softmax - onehot) * coefficient, each a materialised [T, V] float32 temporary; one thread; GB/s normalises by size, so T = 1024 compares with T = 4096',
        };
  if ('error' in np) process.stderr.write(`WARNING: loss: NumPy baseline unavailable: ${np.error}\n`);

  progress(
    `loss: generating T = ${T} rows of ${VOCAB} (${(bytes / 2 ** 30).toFixed(2)} GiB) from ${poolRows} LM-like rows`,
  );
  const inputs = makeInputs(T, poolRows, 777);

  /** @type {string[]} */
  const missed = [];
  meta.goalsMissed = missed;
  meta.data = {
    T,
    pool: `${poolRows} rows of N(0, 2^2) + 5 spikes of +${SPIKE}, tiled; one more +${SPIKE} spike per row (the target in 70% of rows)`,
    oldLogprobs: 'exact logprob + N(0, 0.15^2)',
    advantages: '±1',
    mask: '90% ones',
    config: { clipLow: CLIP_LOW, clipHigh: CLIP_HIGH, agg: 'token-mean' },
  };

  // gradLogits is a new [T, V] Float32Array every call, whose pages (4 KiB: V8's allocations are
  // not madvised for transparent huge pages, unlike NumPy's) the kernel faults in. What that
  // costs here, on one thread: allocate a fresh array of up to 256 rows and fill it.
  const floorElems = Math.min(T, 256) * VOCAB;
  let floorMs = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 2; i++) {
    const t = performance.now();
    new Float32Array(floorElems).fill(1);
    floorMs = Math.min(floorMs, performance.now() - t);
  }
  const firstTouchGbps = (floorElems * 4) / (floorMs / 1000) / 1e9;
  meta.freshArray = {
    bytes: floorElems * 4,
    firstTouchGbps,
    note: 'new Float32Array(n).fill(1), one thread, best of 2: the cost of fresh 4 KiB pages a call would pay for a new gradLogits (the benchmark reuses one)',
  };

  // The gradient goes into one buffer reused by every call, as a trainer does (out.gradLogits);
  // a fresh array per call would measure the page faults above instead of the kernel.
  const grad = new Float32Array(T * VOCAB);
  const kinds = /** @type {const} */ (['policy', 'sft']);
  for (const kind of kinds) {
    const name = `loss.${kind}.T${T}.V${VOCAB}`;
    const call =
      kind === 'policy'
        ? () => {
            policyLoss(inputs, { clipLow: CLIP_LOW, clipHigh: CLIP_HIGH }, { gradLogits: grad });
          }
        : () => {
            sftLoss(inputs, { gradLogits: grad });
          };
    progress(`${name}: native (${(bytes / 1e9).toFixed(2)} GB read + as much gradLogits written per call)`);
    const opts = ctx.quick
      ? { time: 60, warmupTime: 10, iterations: 3 }
      : { time: 1, warmupTime: 1, iterations: T >= 2048 ? 2 : 5 };
    const m = await measure(name, call, opts);
    const gbps = bytes / (m.periodMs / 1000) / 1e9;

    progress(`${name}: plain JS (T=${jsT})`);
    const jsIn = sliceInputs(inputs, jsT);
    const mJs = await measure(
      `${name} js`,
      () => jsLoss(kind, jsIn),
      ctx.quick ? { time: 30, warmupTime: 0, iterations: 2 } : { time: 300, warmupTime: 0, iterations: 3 },
    );
    const jsGbps = (jsT * VOCAB * 4) / (mJs.periodMs / 1000) / 1e9;
    const check = crossCheck(kind, jsIn);

    const npName = `loss.${kind}.T${npT}.V${VOCAB}`;
    const npSeconds = 'error' in np ? undefined : np.seconds[npName];
    const baseline =
      npSeconds !== undefined
        ? {
            name: `NumPy eager, ${kind === 'policy' ? 'verl PPO-clip' : 'cross-entropy'} + backward (T=${npT})`,
            value: (npT * VOCAB * 4) / npSeconds / 1e9,
          }
        : { name: `plain JS per-row loop (T=${jsT})`, value: jsGbps };
    const rec = ctx.report.add({
      name,
      value: gbps,
      unit: 'GB/s',
      baseline,
      roofline: { value: ctx.limits.streamGbps, unit: 'GB/s' },
    });
    const fraction = rec.roofline?.fraction ?? 0;
    const vsNumpy = npSeconds !== undefined ? rec.ratio : undefined;
    /** @type {{ fractionOfStream: number, ratioVsNumpy: number } | undefined} */
    const goal = kind === 'policy' ? { fractionOfStream: 0.5, ratioVsNumpy: 5 } : undefined;
    const met = goal
      ? {
          fractionOfStream: fraction >= goal.fractionOfStream,
          ratioVsNumpy: vsNumpy === undefined || vsNumpy >= goal.ratioVsNumpy,
        }
      : undefined;
    if (met && (!met.fractionOfStream || !met.ratioVsNumpy)) missed.push(name);
    meta[name] = {
      T,
      bytesReadPerCall: bytes,
      bytesWrittenPerCall: bytes,
      note: 'GB/s counts the logits read once; gradLogits (same size) is written too, into a buffer reused across calls',
      native: m,
      freshGradLogitsEstimateMs: (bytes / firstTouchGbps / 1e9) * 1000,
      fractionOfStream: fraction,
      ratioVsNumpy: vsNumpy,
      plainJs: { T: jsT, gbps: jsGbps, ...mJs, crossCheck: check },
      ratioVsPlainJs: gbps / jsGbps,
      goal,
      met,
    };
  }
  if (missed.length > 0) progress(`loss: goals missed by ${missed.join(', ')} (see meta.loss)`);

  // The compute ceiling: the policy loss on 8 rows (4.9 MB, and as much gradient) that stay in
  // the last-level cache between calls.
  const CT = 8;
  const cachedName = `loss.policy.cached.T${CT}.V${VOCAB}`;
  const cachedIn = sliceInputs(inputs, CT);
  const cachedGrad = new Float32Array(CT * VOCAB);
  progress(`${cachedName}: native, rows resident in cache`);
  const mc = await measure(
    cachedName,
    () => policyLoss(cachedIn, { clipLow: CLIP_LOW, clipHigh: CLIP_HIGH }, { gradLogits: cachedGrad }),
    ctx.quick ? { time: 60, warmupTime: 10 } : { time: 1000, warmupTime: 200 },
  );
  const cachedGbps = (CT * VOCAB * 4) / (mc.periodMs / 1000) / 1e9;
  ctx.report.add({
    name: cachedName,
    value: cachedGbps,
    unit: 'GB/s',
    roofline: { value: ctx.limits.streamGbps, unit: 'GB/s' },
  });
  const fromMemory = /** @type {{ native: { periodMs: number } }} */ (meta[`loss.policy.T${T}.V${VOCAB}`]);
  meta[cachedName] = {
    T: CT,
    native: mc,
    memoryOverCached: bytes / (fromMemory.native.periodMs / 1000) / 1e9 / cachedGbps,
    note: 'the same kernel with logits and gradient resident in cache: the compute ceiling (two exps per element: statistics, then gradient). memoryOverCached near 1 means the kernel is compute-bound',
  };
  await fusedLmHead(ctx, meta);
}

/**
 * Builds the loss inputs: T rows tiled from `poolRows` LM-like rows, each with one more spike.
 * @param {number} T
 * @param {number} poolRows
 * @param {number} seed
 * @returns {LossInputs}
 */
function makeInputs(T, poolRows, seed) {
  const V = VOCAB;
  const pool = lmRows(poolRows, V, seed);
  const poolMax = new Float64Array(poolRows);
  const poolSum = new Float64Array(poolRows);
  for (let r = 0; r < poolRows; r++) {
    const row = pool.subarray(r * V, (r + 1) * V);
    let max = Number.NEGATIVE_INFINITY;
    for (let j = 0; j < V; j++) max = Math.max(max, /** @type {number} */ (row[j]));
    let s = 0;
    for (let j = 0; j < V; j++) s += Math.exp(/** @type {number} */ (row[j]) - max);
    poolMax[r] = max;
    poolSum[r] = s;
  }
  const rng = mulberry32(seed + 1);
  const normal = () => Math.sqrt(-2 * Math.log(1 - rng())) * Math.cos(2 * Math.PI * rng());
  const logits = new Float32Array(T * V);
  const targets = new Int32Array(T);
  const oldLogprobs = new Float32Array(T);
  const advantages = new Float32Array(T);
  const mask = new Float32Array(T);
  for (let t = 0; t < T; t++) {
    const r = t % poolRows;
    const off = t * V;
    logits.set(pool.subarray(r * V, (r + 1) * V), off);
    // One more spike: the sampled token; the sum of exps follows exactly.
    const s = Math.floor(rng() * V);
    const max = /** @type {number} */ (poolMax[r]);
    const before = /** @type {number} */ (logits[off + s]);
    logits[off + s] = before + SPIKE;
    const after = /** @type {number} */ (logits[off + s]);
    const lse = max + Math.log(/** @type {number} */ (poolSum[r]) - Math.exp(before - max) + Math.exp(after - max));
    const target = rng() < 0.7 ? s : Math.floor(rng() * V);
    targets[t] = target;
    oldLogprobs[t] = /** @type {number} */ (logits[off + target]) - lse + 0.15 * normal();
    advantages[t] = rng() < 0.5 ? 1 : -1;
    mask[t] = rng() < 0.9 ? 1 : 0;
  }
  return { logits, vocab: V, targets, oldLogprobs, advantages, mask };
}

/**
 * The first n tokens of the inputs (views, no copy).
 * @param {LossInputs} a
 * @param {number} n
 * @returns {LossInputs}
 */
function sliceInputs(a, n) {
  return {
    logits: a.logits.subarray(0, n * a.vocab),
    vocab: a.vocab,
    targets: a.targets.subarray(0, n),
    oldLogprobs: a.oldLogprobs.subarray(0, n),
    advantages: a.advantages.subarray(0, n),
    mask: a.mask.subarray(0, n),
  };
}

/**
 * Plain-JS loss over rows, as a user would write it: per row max, Σ exp, Σ exp·x (entropy),
 * logp; the PPO-clip (token-mean) or cross-entropy coefficient; then the gradient row
 * p_j·(−c) with c added at the target, into a new [T, V] array (as the native call returns).
 * @param {'policy' | 'sft'} kind
 * @param {LossInputs} a
 * @returns {{ loss: number, entropy: number, gradLogits: Float32Array, logprobs: Float32Array }}
 */
export function jsLoss(kind, a) {
  const V = a.vocab;
  const T = a.targets.length;
  const grad = new Float32Array(T * V);
  const logprobs = new Float32Array(T);
  const lses = new Float64Array(T);
  let maskSum = 0;
  for (let t = 0; t < T; t++) maskSum += /** @type {number} */ (a.mask[t]);
  let loss = 0;
  let entropy = 0;
  for (let t = 0; t < T; t++) {
    const off = t * V;
    let max = Number.NEGATIVE_INFINITY;
    for (let j = 0; j < V; j++) max = Math.max(max, /** @type {number} */ (a.logits[off + j]));
    let s = 0;
    let sx = 0;
    for (let j = 0; j < V; j++) {
      const d = /** @type {number} */ (a.logits[off + j]) - max;
      const e = Math.exp(d);
      s += e;
      sx += e * d;
    }
    const lse = max + Math.log(s);
    lses[t] = lse;
    const tgt = /** @type {number} */ (a.targets[t]);
    const logp = /** @type {number} */ (a.logits[off + tgt]) - lse;
    logprobs[t] = logp;
    const m = /** @type {number} */ (a.mask[t]);
    const w = maskSum > 0 ? m / maskSum : 0;
    entropy += w * (Math.log(s) - sx / s);
    let c = 0;
    if (kind === 'sft') {
      loss -= w * logp;
      c = -w;
    } else {
      const A = /** @type {number} */ (a.advantages[t]);
      const diff = logp - /** @type {number} */ (a.oldLogprobs[t]);
      const r = Math.exp(Math.min(20, Math.max(-20, diff)));
      const l1 = -A * r;
      const l2 = -A * Math.min(1 + CLIP_HIGH, Math.max(1 - CLIP_LOW, r));
      loss += w * Math.max(l1, l2);
      c = w * (l1 >= l2 ? -A : 0) * (diff > -20 && diff < 20 ? r : 0);
    }
    if (c === 0) continue;
    for (let j = 0; j < V; j++) grad[off + j] = -c * Math.exp(/** @type {number} */ (a.logits[off + j]) - lse);
    grad[off + tgt] = /** @type {number} */ (grad[off + tgt]) + c;
  }
  return { loss, entropy, gradLogits: grad, logprobs };
}

/**
 * Checks that the plain-JS baseline computes what the native call does on the same rows.
 * @param {'policy' | 'sft'} kind
 * @param {LossInputs} a
 * @returns {{ lossAbsDiff: number, maxLogprobDiff: number, maxGradDiff: number }}
 */
function crossCheck(kind, a) {
  const nat = kind === 'policy' ? policyLoss(a, { clipLow: CLIP_LOW, clipHigh: CLIP_HIGH }) : sftLoss(a);
  const js = jsLoss(kind, a);
  let maxLogprobDiff = 0;
  for (let t = 0; t < js.logprobs.length; t++)
    maxLogprobDiff = Math.max(
      maxLogprobDiff,
      Math.abs(/** @type {number} */ (js.logprobs[t]) - /** @type {number} */ (nat.logprobs[t])),
    );
  let maxGradDiff = 0;
  for (let i = 0; i < js.gradLogits.length; i++)
    maxGradDiff = Math.max(
      maxGradDiff,
      Math.abs(/** @type {number} */ (js.gradLogits[i]) - /** @type {number} */ (nat.gradLogits[i])),
    );
  return { lossAbsDiff: Math.abs(js.loss - nat.loss), maxLogprobDiff, maxGradDiff };
}

const HIDDEN = 896;

/**
 * loss.fused_lmhead.T<T>.H896.V151936: sftLossFused (LM head + loss + both gradients, in token
 * chunks) as GFLOP/s (6·T·H·V per call) against machine.peak_fma_gflops, beside NumPy computing
 * the same unfused (BLAS for the three products, eager loss in between, at T = 256). T = 4096 (64
 * quick): a call is 3.3 TFLOP, so it is timed once, after a warm-up call on the first 64 tokens.
 * @param {import('./sample.mjs').SuiteContext} ctx
 * @param {Record<string, unknown>} meta
 */
async function fusedLmHead(ctx, meta) {
  const T = ctx.quick ? 64 : 4096;
  const npT = ctx.quick ? 32 : 256;
  const name = `loss.fused_lmhead.T${T}.H${HIDDEN}.V${VOCAB}`;
  progress(`${name}: NumPy unfused baseline (T = ${npT})`);
  const np = runNumpy({ seed: 0, warmup: 1, reps: 1, fused: [{ T: npT, H: HIDDEN, V: VOCAB }] }, 240_000);
  let seed = 99;
  const rand = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 4294967296 - 0.5;
  };
  const hidden = Float32Array.from({ length: T * HIDDEN }, () => rand() * 2);
  const weight = new Float32Array(VOCAB * HIDDEN);
  for (let i = 0; i < weight.length; i++) weight[i] = rand() * 0.1;
  const targets = Int32Array.from({ length: T }, (_, t) => (t * 7919) % VOCAB);
  const mask = new Float32Array(T).fill(1);
  const gradHidden = new Float32Array(T * HIDDEN);
  const gradWeight = new Float32Array(VOCAB * HIDDEN);
  const inputs = { hidden, weight, hiddenSize: HIDDEN, vocab: VOCAB, targets, mask };
  progress(`${name}: native (${((6 * T * HIDDEN * VOCAB) / 1e12).toFixed(2)} TFLOP per call)`);
  const W = 64;
  sftLossFused(
    { ...inputs, hidden: hidden.subarray(0, W * HIDDEN), targets: targets.subarray(0, W), mask: mask.subarray(0, W) },
    { gradHidden: gradHidden.subarray(0, W * HIDDEN), gradWeight },
  );
  const t0 = performance.now();
  sftLossFused(inputs, { gradHidden, gradWeight });
  const m = { periodMs: performance.now() - t0, samples: 1 };
  const flops = 6 * T * HIDDEN * VOCAB;
  const gflops = flops / (m.periodMs / 1000) / 1e9;
  const npSeconds = 'error' in np ? undefined : np.seconds[`loss.fused_lmhead.T${npT}.H${HIDDEN}.V${VOCAB}`];
  // As the other loss records: GB/s of the [T, vocab] logits it stands for (never materialised
  // whole), against stream bandwidth; and, as `<name>.gflops`, against peak FMA.
  const logitsGbps = (t, seconds) => (t * VOCAB * 4) / seconds / 1e9;
  const npName = `NumPy unfused, OpenBLAS products (T=${npT})`;
  ctx.report.add({
    name,
    value: logitsGbps(T, m.periodMs / 1000),
    unit: 'GB/s',
    ...(npSeconds !== undefined ? { baseline: { name: npName, value: logitsGbps(npT, npSeconds) } } : {}),
    roofline: { value: ctx.limits.streamGbps, unit: 'GB/s' },
  });
  const rec = ctx.report.add({
    name: `${name}.gflops`,
    value: gflops,
    unit: 'GFLOP/s',
    ...(npSeconds !== undefined
      ? { baseline: { name: npName, value: (6 * npT * HIDDEN * VOCAB) / npSeconds / 1e9 } }
      : {}),
    roofline: { value: ctx.limits.peakGflops, unit: 'GFLOP/s' },
  });
  meta[name] = {
    T,
    flopsPerCall: flops,
    peakExtraBytes: 256 * VOCAB * 4,
    note: 'chunks of 256 tokens; gradHidden and gradWeight reused (gradWeight accumulates)',
    native: m,
    numpy: 'error' in np ? { error: np.error } : { T: npT, seconds: npSeconds },
    fractionOfPeak: rec.roofline?.fraction,
  };
}

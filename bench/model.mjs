/**
 * The model suite:
 * - gemm.f32.M512.N4864.K896 and gemm.f32.M1.N4864.K896 (x·Wᵀ, Qwen2.5-0.5B's MLP up-projection
 *   for a 512-token prefill and for one decode token) as GFLOP/s against machine.peak_fma_gflops,
 *   beside NumPy's matmul (OpenBLAS, the same thread count) run side by side;
 * - model.forward.tokens_per_s and model.train.tokens_per_s (SFT forward + backward through the
 *   fused LM head), with model.train.mfu (training FLOPs per second over peak), for the
 *   Qwen2.5-0.5B shape with random weights (the unsuffixed names) and for the embedded model
 *   (`.embedded`). FLOPs per token: 2 per matmul parameter (LM head included) plus causal
 *   attention's 2·2·qDim·(T+1)/2 per layer; training counts 3 forwards;
 * - attention.scores.hd{32,64}: the attention kernels' q·k scores (one query against 4,096 keys,
 *   in tiles of 16) as GFLOP/s, beside one dot product per row (the AVX2 level's former tile
 *   routine, bitwise equal) and the one-thread FMA peak. Scores are most of the attention work of
 *   the warm start's backward and of long-context decoding;
 * - model.train.lanes.{copy,sft,uneven}.embedded: Trainer steps per second
 *   of the embedded model with two sample lanes (the default) beside one lane, on the pipeline's
 *   two SFT workloads (copy pretraining: 16 samples of 20-50 tokens; the warm start: 4 samples
 *   of 450 tokens), and on 4 samples of uneven lengths (1,800, 300, 1,400 and 700 tokens), where a
 *   lane left alone takes the kernel pool's help.
 */

import { embeddedModelConfig } from '../dist/embedded/model.js';
import { AdamW, EMBEDDED_MODEL_CONFIG, Model, QWEN2_5_0_5B_CONFIG, resolveConfig, Trainer } from '../dist/index.js';
import { native } from '../dist/native.js';
import { mulberry32 } from '../dist/random.js';
import { measure, progress } from './lib.mjs';
import { runNumpy } from './sample.mjs';

/**
 * @param {import('./sample.mjs').SuiteContext} ctx
 */
export async function modelSuite(ctx) {
  /** @type {Record<string, unknown>} */
  const meta = {};
  ctx.meta.model = meta;
  await gemmRecords(ctx, meta);
  await attentionRecords(ctx, meta);
  const shapes = ctx.quick
    ? [{ suffix: '.embedded', config: EMBEDDED_MODEL_CONFIG, forwardT: 64, trainT: 64 }]
    : [
        { suffix: '', config: QWEN2_5_0_5B_CONFIG, forwardT: 512, trainT: 256 },
        { suffix: '.embedded', config: EMBEDDED_MODEL_CONFIG, forwardT: 512, trainT: 512 },
      ];
  for (const s of shapes) await modelRecords(ctx, meta, s);
  await laneRecords(ctx, meta);
}

/**
 * attention.scores.hd{32,64}: the tile routine beside one dot per row (see the file's header);
 * attention.gradients.embedded: causal attention's forward and backward at the default's shape.
 * @param {import('./sample.mjs').SuiteContext} ctx
 * @param {Record<string, unknown>} meta
 */
async function attentionRecords(ctx, meta) {
  const rnd = mulberry32(11);
  const n = 4096;
  meta.attention = {};
  for (const hd of [32, 64]) {
    const name = `attention.scores.hd${hd}`;
    const q = Float32Array.from({ length: hd }, () => rnd() - 0.5);
    const keys = Float32Array.from({ length: n * hd }, () => rnd() - 0.5);
    const opts = ctx.quick ? { time: 100, warmupTime: 20 } : { time: 1000, warmupTime: 200 };
    progress(`${name}: ${n} keys, tiled against one dot per row`);
    const tiled = await measure(name, () => native().attentionScores(q, keys, false), opts);
    const perRow = await measure(`${name}.per_row`, () => native().attentionScores(q, keys, true), opts);
    const gflops = (ms) => (2 * n * hd) / (ms / 1000) / 1e9;
    ctx.report.add({
      name,
      value: gflops(tiled.periodMs),
      unit: 'GFLOP/s',
      baseline: { name: 'one dot product per row', value: gflops(perRow.periodMs) },
      roofline: { value: ctx.limits.peakGflops1, unit: 'GFLOP/s' },
    });
    meta.attention[name] = {
      tiled,
      perRow,
      keys: n,
      note: 'one thread; the keys are 512 KiB at hd 32 and 1 MiB at hd 64',
    };
  }
  // The forward and backward of one dense sequence at the default model's attention shape
  // (4 heads sharing 2 K/V heads, hd 32) and a warm-start demonstration's length.
  const T = ctx.quick ? 512 : 1024;
  const [heads, kvHeads, hd] = [4, 2, 32];
  const name = 'attention.gradients.embedded';
  const qkv = Float32Array.from({ length: T * (heads + 2 * kvHeads) * hd }, () => rnd() - 0.5);
  const dO = Float32Array.from({ length: T * heads * hd }, () => rnd() - 0.5);
  progress(`${name}: forward and backward of ${T} tokens, ${heads} heads, head dim ${hd}`);
  const opts = ctx.quick ? { time: 200, warmupTime: 50 } : { time: 2000, warmupTime: 300 };
  const run = await measure(name, () => native().attentionGradients(qkv, dO, heads, kvHeads, hd), opts);
  // Per (query, key, head): the forward's score dot and value axpy, the backward's two dots
  // (score, dO·v) and three axpys (dq, dk, dv); 2·hd FLOPs each.
  const flops = ((T * (T + 1)) / 2) * heads * 7 * 2 * hd;
  ctx.report.add({
    name,
    value: flops / (run.periodMs / 1000) / 1e9,
    unit: 'GFLOP/s',
    roofline: { value: ctx.limits.peakGflops, unit: 'GFLOP/s' },
  });
  meta.attention[name] = {
    run,
    tokens: T,
    heads,
    kvHeads,
    headDim: hd,
    note: 'all kernel threads; FLOPs counted as 7 dot/axpy of 2·hd per (query, key, head)',
  };
}

/**
 * Trainer steps per second with 2 sample lanes against 1, same samples, interleaved runs.
 * @param {import('./sample.mjs').SuiteContext} ctx
 * @param {Record<string, unknown>} meta
 */
async function laneRecords(ctx, meta) {
  // The default preset's model as its run builds it, with the 905-token vocabulary it trains.
  const config = embeddedModelConfig(resolveConfig({}), 905);
  const rnd = mulberry32(7);
  const int = (n) => Math.floor(rnd() * n);
  const sample = (len) => {
    const tokens = Int32Array.from({ length: len }, () => 256 + int(640));
    return { tokens, lossMask: new Uint8Array(len).fill(1) };
  };
  const workloads = [
    {
      name: 'copy',
      batch: () => Array.from({ length: 16 }, () => sample(20 + int(31))),
      steps: ctx.quick ? 10 : 40,
    },
    { name: 'sft', batch: () => Array.from({ length: 4 }, () => sample(450)), steps: ctx.quick ? 3 : 12 },
    // Lengths as uneven as the warm start's: one lane ends early and the other, left alone,
    // takes the kernel pool's help (InlineRuns, native/common/thread_pool.h).
    {
      name: 'uneven',
      batch: () => [1800, 300, 1400, 700].map((n) => sample(n)),
      steps: ctx.quick ? 2 : 6,
    },
  ];
  meta.lanes = {};
  for (const w of workloads) {
    progress(`model.train.lanes.${w.name}.embedded: ${w.steps} steps, 2 lanes against 1`);
    const batches = Array.from({ length: w.steps }, w.batch);
    const rate = { 1: 0, 2: 0 };
    for (const round of [0, 1])
      for (const lanes of round ? [2, 1] : [1, 2]) {
        const m = Model.random(config, 1);
        const t = new Trainer(m, { optimizer: new AdamW(m, { lr: 1e-3 }), sampleLanes: lanes });
        await t.sftStep(batches[0]); // warm-up
        const t0 = performance.now();
        for (const b of batches) await t.sftStep(b);
        rate[lanes] = Math.max(rate[lanes], w.steps / ((performance.now() - t0) / 1000));
      }
    ctx.report.add({
      name: `model.train.lanes.${w.name}.embedded`,
      value: rate[2],
      unit: 'steps/s',
      baseline: { name: 'the same Trainer with one sample lane', value: rate[1] },
    });
    meta.lanes[w.name] = { stepsPerSecond: rate, note: 'best of two interleaved runs per lane count' };
  }
}

/**
 * @param {import('./sample.mjs').SuiteContext} ctx
 * @param {Record<string, unknown>} meta
 */
async function gemmRecords(ctx, meta) {
  const N = 4864;
  const K = 896;
  const Ms = [512, 1];
  progress('gemm: NumPy matmul baselines');
  const np = runNumpy(
    {
      seed: 0,
      warmup: 2,
      reps: ctx.quick ? 3 : 10,
      gemm: Ms.map((M) => ({ M, N, K, reps: M === 1 ? 200 : undefined })),
    },
    120_000,
  );
  meta.gemmNumpy = 'error' in np ? { error: np.error } : { version: np.numpy, seconds: np.seconds };
  let seed = 7;
  const rand = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 4294967296 - 0.5;
  };
  const w = Float32Array.from({ length: N * K }, rand);
  for (const M of Ms) {
    const name = `gemm.f32.M${M}.N${N}.K${K}`;
    const a = Float32Array.from({ length: M * K }, rand);
    const out = new Float32Array(M * N);
    const opts = ctx.quick ? { time: 100, warmupTime: 20 } : { time: 1500, warmupTime: 300 };
    // The model multiplies by weights packed once (per weight version); the unpacked call packs
    // them every time and is kept for reference in meta.
    const packed = native().packMatrix(w, N, K);
    progress(`${name}: native, packed weights`);
    const m = await measure(name, () => native().gemmPacked(a, packed, M, out), opts);
    progress(`${name}: native, packing per call`);
    const mu = await measure(`${name}.unpacked`, () => native().gemm(a, w, M, N, K, true, out), opts);
    const gflops = (2 * M * N * K) / (m.periodMs / 1000) / 1e9;
    const npSeconds = 'error' in np ? undefined : np.seconds[name];
    ctx.report.add({
      name,
      value: gflops,
      unit: 'GFLOP/s',
      ...(npSeconds !== undefined
        ? { baseline: { name: 'NumPy matmul (OpenBLAS, same threads)', value: (2 * M * N * K) / npSeconds / 1e9 } }
        : {}),
      roofline: { value: ctx.limits.peakGflops, unit: 'GFLOP/s' },
    });
    meta[name] = {
      native: m,
      packingPerCall: { ...mu, gflops: (2 * M * N * K) / (mu.periodMs / 1000) / 1e9 },
      numpySeconds: npSeconds,
      note: 'x·Wᵀ with W [N, K] as Hugging Face stores it; the record times W packed once (as the model does), NumPy times a @ w.T with w resident',
    };
  }
}

/** Matmul parameters (the embedding lookup excluded; a tied LM head counted once). */
function flopsPerToken(c, T) {
  const H = c.hidden_size;
  const hd = c.head_dim ?? H / c.num_attention_heads;
  const q = c.num_attention_heads * hd;
  const kv = (c.num_key_value_heads ?? c.num_attention_heads) * hd;
  const perLayer = H * (q + 2 * kv) + q * H + 3 * H * c.intermediate_size;
  const matmul = c.num_hidden_layers * perLayer + c.vocab_size * H;
  const attention = c.num_hidden_layers * 2 * 2 * q * ((T + 1) / 2);
  return 2 * matmul + attention;
}

/**
 * @param {import('./sample.mjs').SuiteContext} ctx
 * @param {Record<string, unknown>} meta
 * @param {{ suffix: string, config: object, forwardT: number, trainT: number }} s
 */
async function modelRecords(ctx, meta, s) {
  const label = s.suffix === '' ? 'Qwen2.5-0.5B shape' : 'embedded model';
  progress(`model${s.suffix}: ${label}, random weights`);
  const m = Model.random(s.config, 1);
  const V = m.config.vocab_size;
  const tokens = (T) => Int32Array.from({ length: T }, (_, i) => (i * 7919 + 13) % V);
  const fTokens = tokens(s.forwardT);
  progress(`model.forward${s.suffix}: ${s.forwardT} tokens per call`);
  await m.forward(fTokens.subarray(0, 16));
  const reps = s.suffix === '' && !ctx.quick ? 2 : 3;
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    await m.forward(fTokens);
    best = Math.min(best, performance.now() - t0);
  }
  const fwdTps = s.forwardT / (best / 1000);
  ctx.report.add({ name: `model.forward.tokens_per_s${s.suffix}`, value: fwdTps, unit: 'tokens/s' });
  const fwdFlops = flopsPerToken(m.config, s.forwardT) * fwdTps;

  const tTokens = tokens(s.trainT);
  const targets = Int32Array.from(tTokens, (x) => (x + 1) % V);
  progress(`model.train${s.suffix}: forward + backward, ${s.trainT} tokens per call`);
  m.zeroGrad();
  await m.sftBackward({ tokens: tTokens.subarray(0, 16), targets: targets.subarray(0, 16) });
  let bestTrain = Number.POSITIVE_INFINITY;
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    await m.sftBackward({ tokens: tTokens, targets });
    bestTrain = Math.min(bestTrain, performance.now() - t0);
  }
  const trainTps = s.trainT / (bestTrain / 1000);
  const trainFlops = 3 * flopsPerToken(m.config, s.trainT) * trainTps;
  ctx.report.add({ name: `model.train.tokens_per_s${s.suffix}`, value: trainTps, unit: 'tokens/s' });
  ctx.report.add({
    name: `model.train.mfu${s.suffix}`,
    value: trainFlops / 1e9 / ctx.limits.peakGflops,
    unit: 'fraction',
    roofline: { value: 1, unit: 'fraction' },
  });
  meta[`model${s.suffix}`] = {
    shape: label,
    parameters: m.numParameters,
    forward: {
      tokens: s.forwardT,
      bestMs: best,
      gflops: fwdFlops / 1e9,
      fractionOfPeak: fwdFlops / 1e9 / ctx.limits.peakGflops,
    },
    train: { tokens: s.trainT, bestMs: bestTrain, gflops: trainFlops / 1e9 },
    note: 'best of the timed calls, after a warm-up call; SFT loss through the fused LM head (chunks of 256 tokens); no optimizer step',
  };
}

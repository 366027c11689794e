/**
 * The CUDA suite (`npm run bench -- --suite cuda`): swerl's CUDA kernels on device memory, each
 * figure as a fraction of a limit measured in the same run.
 * - `cuda.copy_gbps`: the device's copy bandwidth (read + write), from device-to-device copies
 *   timed by CUDA events (measureDeviceCopy): the memory limit of the figures below.
 * - `sample.cuda.*.B64.V151936`: GB/s of logits read by `sample()` on a DeviceTensor, for
 *   temperature 0.7 (goal >= 0.5 of copy) and top-p 0.95 (goal >= 0.3).
 * - `loss.cuda.policy.T4096.V151936`: GB/s of logits read by `policyLoss()` on a DeviceTensor,
 *   forward and gradient (the gradient written in place; goal >= 0.6 of copy).
 * - `loss.cuda.fused_lmhead.T4096.H896.V151936.gflops`: GFLOP/s of `policyLossFused()` on
 *   DeviceTensors (LM head, loss and both gradients, 6·T·H·V flops per call; chunks of 1024
 *   tokens), against cuBLAS's bf16 rate on the same three products measured in the same run
 *   (`gemmBf16Device`, which rounds its f32 operands to bf16 in scratch on each call, that included;
 *   goal >= 0.6 of it).
 *
 * Timings are wall-clock medians of synchronous calls (each call ends with its results on the
 * host). On a machine without a device the suite records nothing and says why; in
 * the CPU simulation (swerl_cudasim.node) it runs only with --quick, on small shapes, to check that
 * the code runs: the simulation's times mean nothing.
 */
import { DeviceTensor, nativeInfo, policyLoss, policyLossFused, sample } from '../dist/index.js';
import { native } from '../dist/native.js';
import { measure, mulberry32, progress } from './lib.mjs';
import { lmRows, SPIKE, VOCAB } from './sample.mjs';

/**
 * Runs the CUDA suite.
 * @param {import('./sample.mjs').SuiteContext} ctx
 */
export async function cudaSuite(ctx) {
  const info = nativeInfo();
  /** @type {Record<string, unknown>} */
  const meta = { simulated: info.cudaSimulated, devices: info.cudaDevices };
  ctx.meta.cuda = meta;
  if (info.cudaDevices === 0) {
    meta.skipped = 'no CUDA device (build with nvcc on a GPU machine; see docs/cuda.md)';
    progress(`  cuda: skipped, ${meta.skipped}`);
    return;
  }
  if (info.cudaSimulated && !ctx.quick) {
    meta.skipped = 'the CPU simulation of CUDA: its times mean nothing (run with --quick to check the suite runs)';
    progress(`  cuda: skipped, ${meta.skipped}`);
    return;
  }
  const small = ctx.quick;
  const opts = { time: small ? 20 : 2000, warmupTime: small ? 5 : 200, iterations: small ? 2 : 20 };
  /** Median seconds per call of fn. */
  const seconds = async (/** @type {string} */ name, /** @type {() => unknown} */ fn) =>
    (await measure(name, fn, opts)).p50Ms / 1000;

  const copyBytes = small ? 1 << 22 : 1 << 30;
  const copyGbps = native().measureDeviceCopy(copyBytes, small ? 2 : 10);
  ctx.report.add({ name: 'cuda.copy_gbps', value: copyGbps, unit: 'GB/s' });
  progress(`  device copy: ${copyGbps.toFixed(1)} GB/s`);
  const limit = { value: copyGbps, unit: 'GB/s' };

  // Sampling: B rows of LM-like logits resident on the device.
  const B = small ? 4 : 64;
  const V = small ? 4096 : VOCAB;
  const logits = DeviceTensor.from(lmRows(B, V, 17), [B, V]);
  /** @type {Record<string, number>} */
  const fractions = {};
  for (const [mode, params, goal] of /** @type {const} */ ([
    ['temperature', { temperature: 0.7 }, 0.5],
    ['topp', { temperature: 1, topP: 0.95 }, 0.3],
  ])) {
    const rows = Array.from({ length: B }, (_, i) => ({ ...params, seed: 1000 + i }));
    const s = await seconds(`sample.cuda.${mode}`, () => sample(logits, V, rows));
    const gbps = (B * V * 4) / s / 1e9;
    const name = `sample.cuda.${mode}.B${B}.V${V}`;
    ctx.report.add({ name, value: gbps, unit: 'GB/s', roofline: limit });
    fractions[name] = gbps / copyGbps;
    meta[name] = { seconds: s, goalFractionOfCopy: goal, met: gbps / copyGbps >= goal };
    progress(`  ${name}: ${gbps.toFixed(1)} GB/s (${((100 * gbps) / copyGbps).toFixed(0)}% of copy)`);
  }
  logits.dispose();

  // The policy loss: T tokens of LM-like rows with a spiked target, gradient in place.
  const T = small ? 16 : 4096;
  const rng = mulberry32(5);
  const host = lmRows(T, V, 23);
  const targets = new Int32Array(T);
  for (let t = 0; t < T; t++) {
    targets[t] = Math.floor(rng() * V);
    host[t * V + (targets[t] ?? 0)] += SPIKE;
  }
  const device = DeviceTensor.from(host, [T, V]);
  const inputs = {
    logits: device,
    vocab: V,
    targets,
    oldLogprobs: Float32Array.from({ length: T }, () => -1 - rng()),
    advantages: Float32Array.from({ length: T }, () => (rng() < 0.5 ? -1 : 1)),
    mask: Float32Array.from({ length: T }, () => (rng() < 0.9 ? 1 : 0)),
  };
  const s = await seconds('loss.cuda.policy', () => policyLoss(inputs, {}, { gradLogits: device }));
  const gbps = (T * V * 4) / s / 1e9;
  const name = `loss.cuda.policy.T${T}.V${V}`;
  ctx.report.add({ name, value: gbps, unit: 'GB/s', roofline: limit });
  fractions[name] = gbps / copyGbps;
  meta[name] = { seconds: s, goalFractionOfCopy: 0.6, met: gbps / copyGbps >= 0.6 };
  progress(`  ${name}: ${gbps.toFixed(1)} GB/s (${((100 * gbps) / copyGbps).toFixed(0)}% of copy)`);
  device.dispose();

  await fusedLmHead(ctx, seconds, meta, fractions);
  meta.fractions = fractions;
}

/**
 * The fused LM-head policy loss on DeviceTensors (`loss.cuda.fused_lmhead.*.gflops`) and, as its
 * roofline, cuBLAS's rate on the same three products (logits = X·Wᵀ, dX = G·W, dW += Gᵀ·X) over
 * all T tokens at once through `gemmBf16Device`.
 * @param {import('./sample.mjs').SuiteContext} ctx
 * @param {(name: string, fn: () => unknown) => Promise<number>} seconds
 * @param {Record<string, unknown>} meta
 * @param {Record<string, number>} fractions
 */
async function fusedLmHead(ctx, seconds, meta, fractions) {
  const small = ctx.quick;
  const [T, H, V] = small ? [64, 64, 4096] : [4096, 896, VOCAB];
  const chunkTokens = small ? 16 : 1024;
  const rng = mulberry32(31);
  // X of unit variance, W scaled so that the logits' standard deviation is about 2.
  const hostHidden = Float32Array.from({ length: T * H }, () => Math.sqrt(3) * (2 * rng() - 1));
  const w = (2 / Math.sqrt(H)) * Math.sqrt(3);
  const hostWeight = new Float32Array(V * H);
  for (let i = 0; i < hostWeight.length; i++) hostWeight[i] = w * (2 * rng() - 1);
  const hidden = DeviceTensor.from(hostHidden, [T, H]);
  const weight = DeviceTensor.from(hostWeight, [V, H]);
  const gradHidden = DeviceTensor.zeros([T, H]);
  const gradWeight = DeviceTensor.zeros([V, H]);
  const inputs = {
    hidden,
    weight,
    hiddenSize: H,
    vocab: V,
    targets: Int32Array.from({ length: T }, () => Math.floor(rng() * V)),
    oldLogprobs: Float32Array.from({ length: T }, () => -8 - rng()),
    advantages: Float32Array.from({ length: T }, () => (rng() < 0.5 ? -1 : 1)),
    mask: Float32Array.from({ length: T }, () => (rng() < 0.9 ? 1 : 0)),
  };
  const flops = 6 * T * H * V;
  const fusedSeconds = await seconds('loss.cuda.fused_lmhead', () =>
    policyLossFused(inputs, {}, { chunkTokens, gradHidden, gradWeight }),
  );
  // cuBLAS alone: the three products on the same shapes, G stood in for by the logits [T, V].
  const logits = DeviceTensor.zeros([T, V]);
  const n = native();
  const cublasSeconds = await seconds('gemm.cuda.lmhead', () => {
    n.gemmBf16Device(hidden.buffer, weight.buffer, T, V, H, false, true, logits.buffer, 0); // logits = X·Wᵀ
    n.gemmBf16Device(logits.buffer, weight.buffer, T, H, V, false, false, gradHidden.buffer, 0); // dX = G·W
    n.gemmBf16Device(logits.buffer, hidden.buffer, V, H, T, true, false, gradWeight.buffer, 1); // dW += Gᵀ·X
  });
  for (const t of [hidden, weight, gradHidden, gradWeight, logits]) t.dispose();
  const gflops = flops / fusedSeconds / 1e9;
  const cublasGflops = flops / cublasSeconds / 1e9;
  const name = `loss.cuda.fused_lmhead.T${T}.H${H}.V${V}.gflops`;
  ctx.report.add({ name, value: gflops, unit: 'GFLOP/s', roofline: { value: cublasGflops, unit: 'GFLOP/s' } });
  const fraction = gflops / cublasGflops;
  fractions[name] = fraction;
  meta[name] = {
    seconds: fusedSeconds,
    cublasSeconds,
    chunkTokens,
    goalFractionOfCublas: 0.6,
    met: fraction >= 0.6,
  };
  const fmt = (/** @type {number} */ x) => (x >= 100 ? x.toFixed(0) : x.toPrecision(3));
  progress(`  ${name}: ${fmt(gflops)} GFLOP/s (${(100 * fraction).toFixed(0)}% of cuBLAS's ${fmt(cublasGflops)})`);
}

/**
 * The CUDA suite (`npm run bench -- --suite cuda`): swerl's CUDA kernels on device memory, each
 * figure as a fraction of a limit measured in the same run.
 * - `cuda.copy_gbps`: the device's copy bandwidth (read + write), from device-to-device copies
 *   timed by CUDA events (measureDeviceCopy): the memory limit of the figures below.
 * - `sample.cuda.*.B64.V151936`: GB/s of logits read by `sample()` on a DeviceTensor, for
 *   temperature 0.7 (goal >= 0.5 of copy) and top-p 0.95 (goal >= 0.3).
 * - `loss.cuda.policy.T4096.V151936`: GB/s of logits read by `policyLoss()` on a DeviceTensor,
 *   forward and gradient (the gradient written in place; goal >= 0.6 of copy).
 *
 * Timings are wall-clock medians of synchronous calls (each call ends with its results on the
 * host). On a machine without a device the suite records nothing and says why; in
 * the CPU simulation (swerl_cudasim.node) it runs only with --quick, on small shapes, to check that
 * the code runs: the simulation's times mean nothing.
 */
import { DeviceTensor, nativeInfo, policyLoss, sample } from '../dist/index.js';
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
  meta.fractions = fractions;
}

/**
 * AdamW and global-norm clipping over parameters in GPU memory ({@link DeviceTensor}s): the CUDA
 * twins of what `AdamW` (train/adamw.ts) runs on the CPU, with the same arithmetic. An update is bitwise
 * equal to the CPU's for the same inputs; the gradient norm is reduced in float64 in an order
 * fixed by the element count alone (bitwise reproducible), agreeing with the CPU's to about 1e-15
 * relative. Without a CUDA build or a GPU, the tensors cannot be made (CUDA_UNAVAILABLE).
 */
import type { DeviceTensor } from '../device-tensor.js';
import { invalidArgument } from '../errors.js';
import { native } from '../native.js';

/** The four same-sized f32 tensors of one AdamW update. */
export interface AdamWDeviceTensors {
  /** The weights, updated in place. */
  params: DeviceTensor;
  /** Their gradient (read only). */
  grads: DeviceTensor;
  /** The first moment (torch's `exp_avg`), updated in place; zeros before the first step. */
  m: DeviceTensor;
  /** The second moment (`exp_avg_sq`), updated in place; zeros before the first step. */
  v: DeviceTensor;
}

/** AdamW's settings for {@link adamwStepDevice}; the defaults are `AdamWOptions`'. */
export interface AdamWDeviceConfig {
  /** The learning rate of this step. */
  lr: number;
  /** β1, β2 (default [0.9, 0.999]). */
  betas?: [number, number];
  /** Added to the denominator (default 1e-8). */
  eps?: number;
  /** Decoupled weight decay (default 0.01), applied when the step's `decay` is true. */
  weightDecay?: number;
}

/**
 * One AdamW step (torch.optim.AdamW's arithmetic: bias corrections, decoupled weight decay) on
 * device tensors: `step` (≥ 1) is the step being taken, counting this one; `decay` says whether
 * this tensor takes weight decay (the CPU optimizer gives it to linear and embedding weights only).
 */
export function adamwStepDevice(t: AdamWDeviceTensors, cfg: AdamWDeviceConfig, step: number, decay = true): void {
  const n = checkF32(t.params, 'params');
  for (const k of ['grads', 'm', 'v'] as const) {
    if (checkF32(t[k], k) !== n) throw invalidArgument(k, `${n} elements (as params)`, t[k].size);
  }
  if (new Set([t.params, t.grads, t.m, t.v]).size !== 4)
    throw invalidArgument('tensors', 'four different DeviceTensors', 'the same tensor twice');
  const [beta1, beta2] = cfg.betas ?? [0.9, 0.999];
  const eps = cfg.eps ?? 1e-8;
  const weightDecay = cfg.weightDecay ?? 0.01;
  if (!(typeof cfg.lr === 'number' && Number.isFinite(cfg.lr) && cfg.lr >= 0))
    throw invalidArgument('lr', 'a finite number >= 0', cfg.lr);
  for (const [name, b] of [
    ['betas[0]', beta1],
    ['betas[1]', beta2],
  ] as const)
    if (!(typeof b === 'number' && b >= 0 && b < 1)) throw invalidArgument(name, 'a number in [0, 1)', b);
  if (!(typeof eps === 'number' && eps > 0)) throw invalidArgument('eps', 'a number > 0', eps);
  if (!(typeof weightDecay === 'number' && Number.isFinite(weightDecay) && weightDecay >= 0))
    throw invalidArgument('weightDecay', 'a finite number >= 0', weightDecay);
  if (!(Number.isSafeInteger(step) && step >= 1)) throw invalidArgument('step', 'an integer >= 1', step);
  native().adamwDevice(
    t.params.buffer,
    t.grads.buffer,
    t.m.buffer,
    t.v.buffer,
    n,
    { lr: cfg.lr, beta1, beta2, eps, weightDecay },
    step,
    decay,
  );
}

/** The L2 norm of a device gradient (float64 accumulation, in an order fixed by its size). */
export function gradNormDevice(grads: DeviceTensor): number {
  return native().globalNormDevice(grads.buffer, checkF32(grads, 'grads'));
}

/**
 * torch.nn.utils.clip_grad_norm_ on a device gradient: when its norm exceeds `maxNorm` (> 0),
 * scales it by maxNorm / (norm + 1e-6), as the CPU optimizer does. Returns the norm before
 * clipping (NaN or Infinity when a gradient is not finite; nothing is scaled then); with
 * maxNorm 0 it only measures.
 */
export function clipGradNormDevice(grads: DeviceTensor, maxNorm: number): number {
  if (!(typeof maxNorm === 'number' && Number.isFinite(maxNorm) && maxNorm >= 0))
    throw invalidArgument('maxNorm', 'a finite number >= 0', maxNorm);
  const n = checkF32(grads, 'grads');
  const norm = native().globalNormDevice(grads.buffer, n);
  if (maxNorm > 0 && Number.isFinite(norm) && norm > maxNorm)
    native().scaleDevice(grads.buffer, n, maxNorm / (norm + 1e-6));
  return norm;
}

/**
 * Folds a gradient slot into a gradient on the device: `into += from`, then `from = 0`,
 * elementwise (the CPU optimizer's fold of its slots, e.g. to accumulate micro-batches).
 */
export function accumulateGradDevice(into: DeviceTensor, from: DeviceTensor): void {
  const n = checkF32(into, 'into');
  if (checkF32(from, 'from') !== n) throw invalidArgument('from', `${n} elements, as into`, from.size);
  if (into === from) throw invalidArgument('from', 'a tensor other than into', 'the same tensor');
  native().accumulateDevice(into.buffer, from.buffer, n);
}

/** Sets every element of an f32 device tensor to 0 (zeroing a gradient between steps). */
export function zeroGradDevice(grads: DeviceTensor): void {
  native().zeroDevice(grads.buffer, checkF32(grads, 'grads'));
}

function checkF32(t: DeviceTensor, name: string): number {
  if (t?.dtype !== 'f32') throw invalidArgument(name, 'an f32 DeviceTensor', t?.dtype ?? t);
  return t.size;
}

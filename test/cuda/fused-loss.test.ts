/**
 * policyLossFused / sftLossFused on DeviceTensors (native/kernels/cuda/fused_loss.cu: cuBLAS bf16
 * products around the CUDA loss rows; in the simulation addon the products run on the CPU GEMM)
 * against the CPU fused loss (Float32Arrays) and a float64 reference, for chunk sizes 1, 3, T and
 * > T with T = 13 (not a multiple of 3), vocab 1000 and 4097, hiddenSize 64, every option.
 *
 * The GPU path rounds hidden X, weight W and the logits' gradient G to bf16 (8 significant bits:
 * relative error ≤ 2^-8 each) before its products. The references therefore run on X and W rounded
 * to bf16 (the CPU fused loss on the rounded Float32Arrays, and float64 logits Z = bf16(X)·bf16(W)ᵀ
 * fed to test/helpers/loss-reference.ts, whose gradient G gives dX = G·bf16(W), dW = Gᵀ·bf16(X)), so
 * that only G's rounding and f32 arithmetic separate them. Tolerances, against both (s = 1 /
 * temperature; `top` is the largest scale of the tensor compared):
 *   loss, entropy   |a − b| ≤ 1e-5·max(1, |b|, Σ|w_t·ℓ_t|)
 *   logprobs        |a − b| ≤ 1e-5·max(1, s)·max(1, |b|)
 *   dX[t, h]        |a − b| ≤ 5e-3·Σ_v |G_tv·bf16(W)_vh| + 1e-6·top
 *   dW[v, h]        |a − b| ≤ 5e-3·Σ_t |G_tv·bf16(X)_th| + 1e-6·top
 *   clip fractions  equal to the CPU's (the cases keep every ratio away from the clip bounds)
 * 5e-3 is bf16(G)'s 2^-8 = 3.9e-3 plus f32; the floor covers rows nearly one-hot at a low
 * temperature, where f32 logits move the small 1 − p (and so the row's whole tiny gradient)
 * relatively much, on the CPU as on the device. Against the CPU on the unrounded inputs the logits
 * also differ by the inputs' rounding, at most (2^-7 + 2^-16)·Σ_h |X_th·W_vh| each, so the logprobs
 * by at most twice s times the row's largest such bound. Results for different chunk sizes agree
 * within the tolerances above. The largest errors seen are printed after the file; in the
 * simulation, at the time of writing, relative to their scales: vs float64 loss 7.9e-7, logprobs
 * 4.3e-7, dX 2.9e-3, dW 3.8e-3 (G's rounding at its worst: one dominant term), floor unused; vs the
 * CPU loss 6.6e-8, logprobs 2.0e-7, floor use at most 3.9e-8·top; vs the CPU on unrounded inputs
 * 4% of the logprob bound; across chunk sizes the logits and dX bitwise equal, dW within 2.8e-7.
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  DeviceTensor,
  nativeInfo,
  type PolicyLossConfig,
  policyLossFused,
  type SwerlError,
  sftLossFused,
} from '../../src/index.js';
import { native } from '../../src/native.js';
import { expectSwerlError } from '../helpers/errors.js';
import { roundBf16 } from '../helpers/float16.js';
import { logRatio } from '../helpers/loss-cases.js';
import {
  type LossAgg,
  type PolicyLossRefConfig,
  policyLossRef,
  rowStats,
  sftLossRef,
} from '../helpers/loss-reference.js';
import { normal, rng } from '../helpers/random.js';

const noDevice = nativeInfo().cudaDevices === 0;
if (noDevice) console.log('test/cuda/fused-loss.test.ts: skipped, no CUDA device (nativeInfo().cudaDevices === 0)');

const H = 64;
const T = 13;
const AGGS: LossAgg[] = ['token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum', 'seq-mean-token-sum-norm'];
const TOL = { loss: 1e-5, logprobs: 1e-5, grad: 5e-3, floor: 1e-6 };

// ---- comparisons ---------------------------------------------------------------------------------

/** The largest differences seen, relative to each check's scale (printed after the file). */
const worst: Record<string, number> = {};
function note(kind: string, v: number): void {
  worst[kind] = Math.max(worst[kind] ?? 0, v);
}
afterAll(() => {
  if (!noDevice) console.log('largest |difference| / scale:', JSON.stringify(worst, null, 1));
});

function expectClose(name: string, kind: string, actual: number, expected: number, scale: number, tol: number): void {
  const d = Math.abs(actual - expected) / scale;
  note(kind, d);
  if (!(d <= tol)) expect.fail(`${name}: got ${actual}, expected ${expected} (|diff| / ${scale} = ${d} > ${tol})`);
}

function expectLogprobs(name: string, kind: string, actual: Float32Array, expected: ArrayLike<number>, s: number) {
  expect(actual.length, `${name} length`).toBe(expected.length);
  for (let t = 0; t < expected.length; t++) {
    const b = expected[t] as number;
    expectClose(`${name}[${t}]`, kind, actual[t] as number, b, Math.max(1, s) * Math.max(1, Math.abs(b)), TOL.logprobs);
  }
}

/**
 * Every |actual − expected| ≤ tol·scale + FLOOR·max(scale) (element-wise scales, and a floor relative
 * to the tensor's largest); notes the largest ratio to the scale and the largest use of the floor.
 */
function expectGrad(
  name: string,
  kind: string,
  actual: ArrayLike<number>,
  expected: ArrayLike<number>,
  scale: ArrayLike<number>,
  tol = TOL.grad,
) {
  expect(actual.length, `${name} length`).toBe(expected.length);
  let top = 0;
  for (let i = 0; i < scale.length; i++) top = Math.max(top, scale[i] as number);
  let w = 0;
  let floor = 0;
  for (let i = 0; i < expected.length; i++) {
    const d = Math.abs((actual[i] as number) - (expected[i] as number));
    const sc = scale[i] as number;
    if (!(d <= tol * sc + TOL.floor * top))
      expect.fail(`${name}[${i}]: got ${actual[i]}, expected ${expected[i]} (|diff| ${d} > ${tol} × ${sc} + floor)`);
    if (sc > 0) w = Math.max(w, d / sc);
    if (top > 0) floor = Math.max(floor, (d - tol * sc) / top);
  }
  note(kind, w);
  note(`${kind}: floor used`, floor);
}

// ---- cases and references ------------------------------------------------------------------------

interface FusedCase {
  hidden: Float32Array; // [T, H]
  weight: Float32Array; // [V, H]
  hiddenR: Float32Array; // bf16-rounded
  weightR: Float32Array;
  hiddenSize: number;
  vocab: number;
  targets: Int32Array;
  mask: Float32Array;
  oldLogprobs: Float32Array;
  advantages: Float32Array;
  seqIds?: Int32Array;
  refLogprobs?: Float32Array;
  rolloutLogprobs?: Float32Array;
}

const round = (a: Float32Array) => Float32Array.from(a, roundBf16);

/** C [M, N] = A [M, K] · B in float64, B [K, N] or [N, K] when bt; abs: of |A|·|B|. */
function matmul64(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  M: number,
  N: number,
  K: number,
  bt: boolean,
  abs = false,
) {
  const c = new Float64Array(M * N);
  for (let i = 0; i < M; i++)
    for (let j = 0; j < N; j++) {
      let s = 0;
      for (let k = 0; k < K; k++) {
        const x = a[i * K + k] as number;
        const y = (bt ? b[j * K + k] : b[k * N + j]) as number;
        s += abs ? Math.abs(x * y) : x * y;
      }
      c[i * N + j] = s;
    }
  return c;
}

/** Aᵀ of A [rows, cols]. */
function transpose(a: ArrayLike<number>, rows: number, cols: number): Float64Array {
  const t = new Float64Array(rows * cols);
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) t[j * rows + i] = a[i * cols + j] as number;
  return t;
}

/**
 * A random case: X ~ N(0, 1), W ~ N(0, 0.25²) (logits of standard deviation ≈ 2), 20% of the
 * tokens pulled toward their target; the per-token inputs placed as test/helpers/loss-cases.ts does,
 * relative to the float64 logprobs at `temperature` on the rounded inputs.
 */
function makeCase(o: { V: number; seed: number; temperature?: number; seqs?: boolean; kl?: boolean; tis?: boolean }) {
  const r = rng(o.seed);
  const V = o.V;
  const weight = Float32Array.from({ length: V * H }, () => 0.25 * normal(r));
  const hidden = Float32Array.from({ length: T * H }, () => normal(r));
  const targets = Int32Array.from({ length: T }, () => Math.floor(r() * V));
  for (let t = 0; t < T; t++) {
    if (r() >= 0.2) continue;
    const target = targets[t] as number;
    for (let h = 0; h < H; h++)
      hidden[t * H + h] = (hidden[t * H + h] as number) + 1.5 * (weight[target * H + h] as number);
  }
  const hiddenR = round(hidden);
  const weightR = round(weight);
  const z = matmul64(hiddenR, weightR, T, V, H, true);
  const temperature = o.temperature ?? 1;
  const { logp } = rowStats(
    z.map((x) => x / temperature),
    V,
    targets,
  );
  const mask = Float32Array.from({ length: T }, () => (r() < 0.8 ? 1 : 0));
  const advantages = Float32Array.from({ length: T }, () => (r() < 0.05 ? 0 : normal(r)));
  const oldLogprobs = Float32Array.from({ length: T }, (_, t) => (logp[t] as number) - logRatio(r));
  const c: FusedCase = {
    hidden,
    weight,
    hiddenR,
    weightR,
    hiddenSize: H,
    vocab: V,
    targets,
    mask,
    oldLogprobs,
    advantages,
  };
  if (o.seqs) c.seqIds = Int32Array.from({ length: T }, (_, t) => 5 + 3 * Math.floor(t / 4));
  if (o.kl) c.refLogprobs = Float32Array.from({ length: T }, (_, t) => (logp[t] as number) + 3 * r() - 1.5);
  if (o.tis) c.rolloutLogprobs = Float32Array.from({ length: T }, (_, t) => (oldLogprobs[t] as number) + 2 * r() - 1);
  return { c, z };
}

interface Ref {
  loss: number;
  lossScale: number;
  entropy: number;
  logprobs: Float64Array;
  dX: Float64Array;
  dW: Float64Array;
  dXScale: Float64Array;
  dWScale: Float64Array;
}

/** The float64 reference on the rounded inputs, from the logits z = bf16(X)·bf16(W)ᵀ. */
function reference(c: FusedCase, z: Float64Array, cfg: PolicyLossRefConfig | null, temperature?: number): Ref {
  const V = c.vocab;
  const r = cfg
    ? policyLossRef({ ...c, logits: z }, cfg)
    : { ...sftLossRef({ logits: z, vocab: V, targets: c.targets, mask: c.mask, temperature }), entropy: 0 };
  const G = r.gradLogits; // [T, V], d loss / d z
  const Gt = transpose(G, T, V);
  return {
    loss: r.loss,
    lossScale: r.lossScale,
    entropy: r.entropy,
    logprobs: r.logprobs,
    dX: matmul64(G, c.weightR, T, H, V, false),
    dW: matmul64(Gt, c.hiddenR, V, H, T, false),
    dXScale: matmul64(G, c.weightR, T, H, V, false, true),
    dWScale: matmul64(Gt, c.hiddenR, V, H, T, false, true),
  };
}

interface Out {
  loss: number;
  entropy: number;
  clipFracLow: number;
  clipFracHigh: number;
  logprobs: Float32Array;
  gradHidden: Float32Array;
  gradWeight: Float32Array;
}

/** Runs fn on device copies of the case's unrounded X and W; brings the gradients back, disposes every tensor. */
function onDevice(
  c: FusedCase,
  fn: (
    hidden: DeviceTensor,
    weight: DeviceTensor,
  ) => { gradHidden: DeviceTensor; gradWeight: DeviceTensor; loss: number; logprobs: Float32Array },
): Out {
  const hidden = DeviceTensor.from(c.hidden, [T, H]);
  const weight = DeviceTensor.from(c.weight, [c.vocab, H]);
  try {
    const r = fn(hidden, weight);
    expect(r.gradHidden).toBeInstanceOf(DeviceTensor);
    expect(r.gradHidden.shape).toEqual([T, H]);
    expect(r.gradWeight.shape).toEqual([c.vocab, H]);
    const out = {
      entropy: 0,
      clipFracLow: 0,
      clipFracHigh: 0,
      ...r,
      gradHidden: r.gradHidden.toArray() as Float32Array,
      gradWeight: r.gradWeight.toArray() as Float32Array,
    };
    r.gradHidden.dispose();
    r.gradWeight.dispose();
    return out;
  } finally {
    hidden.dispose();
    weight.dispose();
  }
}

const devicePolicy = (c: FusedCase, cfg: PolicyLossConfig, chunkTokens: number) =>
  onDevice(c, (hidden, weight) => policyLossFused({ ...c, hidden, weight }, cfg, { chunkTokens }));
const deviceSft = (c: FusedCase, chunkTokens: number, temperature?: number) =>
  onDevice(c, (hidden, weight) => sftLossFused({ ...c, hidden, weight, temperature }, { chunkTokens }));

/** Every output of a device run against the reference (and against the CPU on the rounded inputs). */
function checkOut(label: string, dev: Out, ref: Ref, cpu: Out | null, s: number, policy: boolean): void {
  const lossScale = Math.max(1, Math.abs(ref.loss), ref.lossScale);
  expectClose(`${label} loss vs f64`, 'loss vs f64', dev.loss, ref.loss, lossScale, TOL.loss);
  expectLogprobs(`${label} logprobs vs f64`, 'logprobs vs f64', dev.logprobs, ref.logprobs, s);
  expectGrad(`${label} gradHidden vs f64`, 'gradHidden vs f64', dev.gradHidden, ref.dX, ref.dXScale);
  expectGrad(`${label} gradWeight vs f64`, 'gradWeight vs f64', dev.gradWeight, ref.dW, ref.dWScale);
  if (policy) {
    const es = Math.max(1, ref.entropy);
    expectClose(`${label} entropy vs f64`, 'entropy vs f64', dev.entropy, ref.entropy, es, TOL.loss);
  }
  if (!cpu) return;
  expectClose(`${label} loss vs CPU`, 'loss vs CPU', dev.loss, cpu.loss, lossScale, TOL.loss);
  expectLogprobs(`${label} logprobs vs CPU`, 'logprobs vs CPU', dev.logprobs, cpu.logprobs, s);
  expectGrad(`${label} gradHidden vs CPU`, 'gradHidden vs CPU', dev.gradHidden, cpu.gradHidden, ref.dXScale);
  expectGrad(`${label} gradWeight vs CPU`, 'gradWeight vs CPU', dev.gradWeight, cpu.gradWeight, ref.dWScale);
  if (policy) {
    const es = Math.max(1, ref.entropy);
    expectClose(`${label} entropy vs CPU`, 'entropy vs CPU', dev.entropy, cpu.entropy, es, TOL.loss);
    expect(dev.clipFracLow, `${label} clipFracLow`).toBe(cpu.clipFracLow);
    expect(dev.clipFracHigh, `${label} clipFracHigh`).toBe(cpu.clipFracHigh);
  }
}

/** The CPU fused loss on the rounded inputs. */
function cpuPolicy(c: FusedCase, cfg: PolicyLossConfig, chunkTokens: number): Out {
  return policyLossFused({ ...c, hidden: c.hiddenR, weight: c.weightR }, cfg, { chunkTokens });
}
function cpuSft(c: FusedCase, chunkTokens: number, temperature?: number): Out {
  const r = sftLossFused({ ...c, hidden: c.hiddenR, weight: c.weightR, temperature }, { chunkTokens });
  return { ...r, entropy: 0, clipFracLow: 0, clipFracHigh: 0 };
}

const CHUNKS = [1, 3, T, T + 7];

// ---- the tests -----------------------------------------------------------------------------------

describe.skipIf(noDevice)('policyLossFused on DeviceTensors matches the CPU and the float64 reference', () => {
  it('in every aggregation mode, plain and with dual clip, KL, entropy bonus and TIS, at vocab 1000 and 4097', () => {
    let seed = 10;
    for (const [i, agg] of AGGS.entries())
      for (const full of [false, true]) {
        const V = (i + (full ? 1 : 0)) % 2 ? 4097 : 1000;
        const { c, z } = makeCase({ V, seed: seed++, seqs: true, kl: true, tis: true });
        const cfg: PolicyLossRefConfig = full
          ? { agg, normLength: 24, dualClip: 3, klCoef: 0.2, entropyCoef: 0.01, tisCap: 1.6 }
          : { agg, normLength: 24 };
        const ref = reference(c, z, cfg);
        const chunk = CHUNKS[(2 * i + (full ? 1 : 0)) % CHUNKS.length] as number;
        const label = `${agg} full=${full} V ${V} chunk ${chunk}`;
        checkOut(label, devicePolicy(c, cfg as PolicyLossConfig, chunk), ref, cpuPolicy(c, cfg, chunk), 1, true);
      }
  });

  it('for chunk sizes 1, 3, T and > T, the results agreeing across them', () => {
    const { c, z } = makeCase({ V: 4097, seed: 3, seqs: true, kl: true, tis: true });
    const cfg: PolicyLossRefConfig = { agg: 'seq-mean-token-mean', dualClip: 3, klCoef: 0.1, entropyCoef: 0.02 };
    const ref = reference(c, z, cfg);
    const runs = CHUNKS.map((chunk) => {
      const dev = devicePolicy(c, cfg as PolicyLossConfig, chunk);
      checkOut(`chunk ${chunk}`, dev, ref, cpuPolicy(c, cfg, chunk), 1, true);
      return dev;
    });
    const first = runs[0] as Out;
    const lossScale = Math.max(1, Math.abs(ref.loss), ref.lossScale);
    for (const [k, r] of runs.entries()) {
      const label = `chunk ${CHUNKS[k]} vs chunk 1`;
      expectClose(`${label} loss`, 'loss across chunks', r.loss, first.loss, lossScale, TOL.loss);
      expectLogprobs(`${label} logprobs`, 'logprobs across chunks', r.logprobs, first.logprobs, 1);
      expectGrad(`${label} gradHidden`, 'gradHidden across chunks', r.gradHidden, first.gradHidden, ref.dXScale);
      expectGrad(`${label} gradWeight`, 'gradWeight across chunks', r.gradWeight, first.gradWeight, ref.dWScale);
    }
  });

  it('with custom clip bounds', () => {
    const { c, z } = makeCase({ V: 1000, seed: 21 });
    const cfg: PolicyLossRefConfig = { clipLow: 0.22, clipHigh: 0.2, dualClip: 3 };
    checkOut('custom clip', devicePolicy(c, cfg, 3), reference(c, z, cfg), cpuPolicy(c, cfg, 3), 1, true);
  });

  it('at temperatures 0.2, 0.7, 1.5 and 5, with KL and an entropy bonus', () => {
    let seed = 40;
    for (const temperature of [0.2, 0.7, 1.5, 5]) {
      const { c, z } = makeCase({ V: 1000, seed: seed++, temperature, seqs: true, kl: true, tis: true });
      const cfg: PolicyLossRefConfig = { agg: 'seq-mean-token-sum', klCoef: 0.1, entropyCoef: 0.02, temperature };
      const ref = reference(c, z, cfg);
      const dev = devicePolicy(c, cfg as PolicyLossConfig, 3);
      checkOut(`temperature ${temperature}`, dev, ref, cpuPolicy(c, cfg, 3), 1 / temperature, true);
    }
  });

  it('differs from the CPU on the unrounded f32 inputs only by their rounding to bf16', () => {
    for (const temperature of [1, 0.7]) {
      const { c } = makeCase({ V: 4097, seed: 60, temperature, kl: true });
      const cfg = { klCoef: 0.1, entropyCoef: 0.01, temperature };
      const dev = devicePolicy(c, cfg, 5);
      const cpu = policyLossFused(c, cfg, { chunkTokens: 5 });
      // |Δ logits[t, v]| ≤ 2^-8·Σ_h |X_th·W_vh| (each product's factors rounded by ≤ 2^-9), so
      // |Δ logp_t| ≤ 2·s·max_v of that.
      const absZ = matmul64(c.hidden, c.weight, T, c.vocab, H, true, true);
      const s = 1 / temperature;
      for (let t = 0; t < T; t++) {
        let m = 0;
        for (let v = 0; v < c.vocab; v++) m = Math.max(m, absZ[t * c.vocab + v] as number);
        const bound = 2 * s * (2 ** -7 + 2 ** -16) * m * 1.01 + 1e-5;
        const d = Math.abs((dev.logprobs[t] as number) - (cpu.logprobs[t] as number));
        note('logprobs vs CPU unrounded / bound', d / bound);
        expect(d, `logprob ${t}`).toBeLessThanOrEqual(bound);
      }
    }
  });

  it('for one token, and for masked tokens (an all-zero mask gives loss 0 and zero gradients)', () => {
    const { c, z } = makeCase({ V: 1000, seed: 70, kl: true });
    c.mask.fill(0);
    const cfg: PolicyLossRefConfig = { agg: 'seq-mean-token-mean', klCoef: 0.1, entropyCoef: 0.1 };
    const dev = devicePolicy(c, cfg as PolicyLossConfig, 4);
    checkOut('no mask', dev, reference(c, z, cfg), cpuPolicy(c, cfg, 4), 1, true);
    expect(dev.loss).toBe(0);
    expect(dev.gradHidden.every((v) => v === 0)).toBe(true);
    expect(dev.gradWeight.every((v) => v === 0)).toBe(true);
  });
});

describe.skipIf(noDevice)('sftLossFused on DeviceTensors matches the CPU and the float64 reference', () => {
  it('at vocab 1000 and 4097, temperatures 1, 0.7 and 1.5, chunk sizes 1, 3, T and > T', () => {
    let seed = 80;
    let k = 0;
    for (const V of [1000, 4097])
      for (const temperature of [1, 0.7, 1.5]) {
        const { c, z } = makeCase({ V, seed: seed++ });
        const chunk = CHUNKS[k++ % CHUNKS.length] as number;
        const ref = reference(c, z, null, temperature);
        const dev = deviceSft(c, chunk, temperature);
        checkOut(
          `sft V ${V} T ${temperature} chunk ${chunk}`,
          dev,
          ref,
          cpuSft(c, chunk, temperature),
          1 / temperature,
          false,
        );
      }
  });
});

describe.skipIf(noDevice)('gradient tensors', () => {
  it('accumulates into a given gradWeight (a non-zero one is added to) and overwrites a given gradHidden', () => {
    const { c } = makeCase({ V: 1000, seed: 90, kl: true });
    const cfg = { klCoef: 0.1, entropyCoef: 0.01, temperature: 0.7 };
    const fresh = devicePolicy(c, cfg, 3);
    const r = rng(91);
    const init = Float32Array.from({ length: c.vocab * H }, () => normal(r) * 1e-3);
    const hidden = DeviceTensor.from(c.hidden, [T, H]);
    const weight = DeviceTensor.from(c.weight, [c.vocab, H]);
    const gradWeight = DeviceTensor.from(init, [c.vocab, H]);
    const gradHidden = DeviceTensor.from(new Float32Array(T * H).fill(7), [T, H]);
    for (let i = 1; i <= 2; i++) {
      const out = policyLossFused({ ...c, hidden, weight }, cfg, { chunkTokens: 3, gradHidden, gradWeight });
      expect(out.gradHidden).toBe(gradHidden);
      expect(out.gradWeight).toBe(gradWeight);
      expect(out.loss).toBe(fresh.loss);
      const got = gradWeight.toArray() as Float32Array;
      const want = Float64Array.from(init, (x, j) => x + i * (fresh.gradWeight[j] as number));
      const scale = Float64Array.from(
        init,
        (x, j) => Math.abs(x) + i * Math.abs(fresh.gradWeight[j] as number) + 1e-30,
      );
      expectGrad(`gradWeight after ${i} calls`, 'gradWeight accumulated', got, want, scale, 1e-5);
      const gh = gradHidden.toArray() as Float32Array;
      const ghScale = Float64Array.from(fresh.gradHidden, (x) => Math.abs(x));
      expectGrad('gradHidden overwritten', 'gradHidden given', gh, fresh.gradHidden, ghScale, 1e-6);
    }
    for (const t of [hidden, weight, gradWeight, gradHidden]) t.dispose();
  });

  it('handles an empty batch (T = 0): loss 0, gradWeight left as it was', () => {
    const hidden = DeviceTensor.zeros([0, H]);
    const weight = DeviceTensor.from(new Float32Array(50 * H).fill(0.5), [50, H]);
    const gradWeight = DeviceTensor.from(new Float32Array(50 * H).fill(3), [50, H]);
    const empty = new Float32Array(0);
    const args = { hidden, weight, hiddenSize: H, vocab: 50, targets: new Int32Array(0), mask: empty };
    const r = policyLossFused({ ...args, oldLogprobs: empty, advantages: empty }, {}, { gradWeight });
    expect([r.loss, r.entropy, r.logprobs.length, r.gradHidden.size]).toEqual([0, 0, 0, 0]);
    expect((gradWeight.toArray() as Float32Array).every((v) => v === 3)).toBe(true);
    const s = sftLossFused(args);
    expect(s.loss).toBe(0);
    expect((s.gradWeight.toArray() as Float32Array).every((v) => v === 0)).toBe(true);
    for (const t of [hidden, weight, gradWeight, r.gradHidden, s.gradHidden, s.gradWeight]) t.dispose();
  });
});

describe.skipIf(noDevice)('errors', () => {
  /**
   * Runs fn on device copies of the case's X and W and gradient tensors filled with 5; fn must throw
   * `code` and every tensor be unchanged after.
   */
  function expectRefused(
    c: FusedCase,
    code: string,
    fn: (hidden: DeviceTensor, weight: DeviceTensor, gh: DeviceTensor, gw: DeviceTensor) => unknown,
  ): SwerlError {
    const hidden = DeviceTensor.from(c.hidden, [T, H]);
    const weight = DeviceTensor.from(c.weight, [c.vocab, H]);
    const gh = DeviceTensor.from(new Float32Array(T * H).fill(5), [T, H]);
    const gw = DeviceTensor.from(new Float32Array(c.vocab * H).fill(5), [c.vocab, H]);
    const e = expectSwerlError(() => fn(hidden, weight, gh, gw), code);
    const same = (t: DeviceTensor, a: Float32Array) =>
      Buffer.from((t.toArray() as Float32Array).buffer).equals(Buffer.from(a.buffer, a.byteOffset, a.byteLength));
    expect(same(hidden, c.hidden), 'hidden unchanged').toBe(true);
    expect(same(weight, c.weight), 'weight unchanged').toBe(true);
    expect(
      (gh.toArray() as Float32Array).every((v) => v === 5),
      'gradHidden unchanged',
    ).toBe(true);
    expect(
      (gw.toArray() as Float32Array).every((v) => v === 5),
      'gradWeight unchanged',
    ).toBe(true);
    for (const t of [hidden, weight, gh, gw]) t.dispose();
    return e;
  }

  for (const [name, where, value] of [
    ['a NaN weight', 'weight', Number.NaN],
    ['an Inf weight', 'weight', Number.POSITIVE_INFINITY],
    ['a NaN hidden value in the last chunk', 'hidden', Number.NaN],
    ['a -Inf hidden value in the last chunk', 'hidden', Number.NEGATIVE_INFINITY],
  ] as const) {
    it(`refuses ${name} with NON_FINITE_LOGITS as the CPU does, writing nothing`, () => {
      const { c } = makeCase({ V: 1000, seed: 100 });
      const i = where === 'weight' ? 5 * H + 7 : (T - 1) * H + 3;
      c[where][i] = value;
      if (where === 'weight') {
        c.weightR = round(c.weight);
        expectSwerlError(() => sftLossFused({ ...c, hidden: c.hidden, weight: c.weight }), 'NON_FINITE_LOGITS');
      } else {
        c.hiddenR = round(c.hidden);
        expectSwerlError(() => sftLossFused({ ...c }, { chunkTokens: 3 }), 'NON_FINITE_LOGITS');
      }
      for (const chunkTokens of [3, T]) {
        expectRefused(c, 'NON_FINITE_LOGITS', (hidden, weight, gradHidden, gradWeight) =>
          policyLossFused({ ...c, hidden, weight }, { entropyCoef: 0.01 }, { chunkTokens, gradHidden, gradWeight }),
        );
        expectRefused(c, 'NON_FINITE_LOGITS', (hidden, weight, gradHidden, gradWeight) =>
          sftLossFused({ ...c, hidden, weight }, { chunkTokens, gradHidden, gradWeight }),
        );
      }
    });
  }

  it('refuses bad shapes, dtypes, gradient tensors and options with INVALID_ARGUMENT, writing nothing', () => {
    const { c } = makeCase({ V: 100, seed: 110 });
    type Call = (h: DeviceTensor, w: DeviceTensor, gh: DeviceTensor, gw: DeviceTensor) => unknown;
    const bad: [string, Call][] = [
      [
        'a short hidden tensor',
        (_h, w, gh, gw) =>
          sftLossFused({ ...c, hidden: DeviceTensor.zeros([T, H - 1]), weight: w }, { gradHidden: gh, gradWeight: gw }),
      ],
      [
        'a short weight tensor',
        (h, _w, gh, gw) =>
          sftLossFused({ ...c, hidden: h, weight: DeviceTensor.zeros([99, H]) }, { gradHidden: gh, gradWeight: gw }),
      ],
      [
        'a wrong hiddenSize',
        (h, w, gh, gw) =>
          sftLossFused({ ...c, hidden: h, weight: w, hiddenSize: H / 2 }, { gradHidden: gh, gradWeight: gw }),
      ],
      [
        'an i32 hidden tensor',
        (_h, w, gh, gw) =>
          sftLossFused(
            { ...c, hidden: DeviceTensor.zeros([T, H], 'i32'), weight: w },
            { gradHidden: gh, gradWeight: gw },
          ),
      ],
      [
        'a host weight with a device hidden',
        (h, _w, gh, gw) =>
          sftLossFused({ ...c, hidden: h, weight: c.weight as never }, { gradHidden: gh, gradWeight: gw }),
      ],
      [
        'chunkTokens 0',
        (h, w, gh, gw) =>
          sftLossFused({ ...c, hidden: h, weight: w }, { chunkTokens: 0, gradHidden: gh, gradWeight: gw }),
      ],
      [
        'a short gradHidden',
        (h, w, _gh, gw) =>
          sftLossFused({ ...c, hidden: h, weight: w }, { gradHidden: DeviceTensor.zeros([T - 1, H]), gradWeight: gw }),
      ],
      [
        'a host gradWeight',
        (h, w, gh) =>
          sftLossFused(
            { ...c, hidden: h, weight: w },
            { gradHidden: gh, gradWeight: new Float32Array(100 * H) as never },
          ),
      ],
      [
        'gradWeight = weight',
        (h, w, gh) => sftLossFused({ ...c, hidden: h, weight: w }, { gradHidden: gh, gradWeight: w }),
      ],
      [
        'gradHidden = hidden',
        (h, w, _gh, gw) => policyLossFused({ ...c, hidden: h, weight: w }, {}, { gradHidden: h, gradWeight: gw }),
      ],
      [
        'gradHidden = gradWeight',
        (h, w, gh) => sftLossFused({ ...c, hidden: h, weight: w }, { gradHidden: gh, gradWeight: gh }),
      ],
      [
        'a target out of range',
        (h, w, gh, gw) =>
          sftLossFused(
            { ...c, hidden: h, weight: w, targets: c.targets.map((t, i) => (i === 4 ? 100 : t)) },
            { gradHidden: gh, gradWeight: gw },
          ),
      ],
      [
        'a bad policy option',
        (h, w, gh, gw) =>
          policyLossFused({ ...c, hidden: h, weight: w }, { dualClip: 0.5 }, { gradHidden: gh, gradWeight: gw }),
      ],
      [
        'a temperature of 0',
        (h, w, gh, gw) =>
          sftLossFused({ ...c, hidden: h, weight: w, temperature: 0 }, { gradHidden: gh, gradWeight: gw }),
      ],
      // Past the wrapper: the binding's own checks.
      [
        '(native) a short gradWeight buffer',
        (h, w, gh) =>
          native().sftLossFusedDevice(
            h.buffer,
            w.buffer,
            H,
            100,
            c.targets,
            c.mask,
            4,
            gh.buffer,
            DeviceTensor.zeros([10]).buffer,
          ),
      ],
      [
        '(native) aliased gradients',
        (h, w, gh) =>
          native().sftLossFusedDevice(h.buffer, w.buffer, H, 100, c.targets, c.mask, 4, gh.buffer, gh.buffer),
      ],
      [
        '(native) chunkTokens 0',
        (h, w, gh, gw) =>
          native().sftLossFusedDevice(h.buffer, w.buffer, H, 100, c.targets, c.mask, 0, gh.buffer, gw.buffer),
      ],
    ];
    for (const [name, fn] of bad) {
      const e = expectRefused(c, 'INVALID_ARGUMENT', fn);
      expect(e.message, name).toBeTruthy();
    }
  });
});

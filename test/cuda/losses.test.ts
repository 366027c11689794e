/**
 * policyLoss / sftLoss on a DeviceTensor (the CUDA kernels of native/kernels/cuda/losses.cu, run by
 * the CPU simulation in swerl_cudasim.node, or on a GPU with SWERL_CUDA_TESTS_ADDON) against the
 * CPU losses on the same logits and against the float64 references of test/helpers/loss-reference.ts.
 *
 * Tolerances, against both the CPU and the float64 reference:
 *   loss, entropy   |a − b| ≤ 1e-5·max(1, |b|, Σ|w_t·ℓ_t|)  (the loss's terms bound its rounding)
 *   logprobs        |a − b| ≤ 1e-5·max(1, |b|)
 *   gradients       |a − b| ≤ 1e-6·max(1, s)               absolute, per element; s = 1 / temperature,
 *                                                          the chain-rule factor every element carries
 *   clip fractions  equal to the CPU's (the cases keep every ratio away from the clip bounds)
 * The largest differences seen are printed at the end. A row's logprob and gradient are compared
 * bit for bit between the row alone and the row inside a batch.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { DeviceTensor, nativeInfo, type PolicyLossConfig, policyLoss, sftLoss } from '../../src/index.js';
import { expectSwerlError } from '../helpers/errors.js';
import { atTemperature, makePolicyCase, makeSftCase, type PolicyArgs, type SftArgs } from '../helpers/loss-cases.js';
import {
  type LossAgg,
  type PolicyLossRefConfig,
  type PolicyLossRefInput,
  policyLossRef,
  type SftLossRefInput,
  sftLossRef,
} from '../helpers/loss-reference.js';
import { rng } from '../helpers/random.js';

const noDevice = nativeInfo().cudaDevices === 0;
if (noDevice) console.log('test/cuda/losses.test.ts: skipped, no CUDA device (nativeInfo().cudaDevices === 0)');

const AGGS: LossAgg[] = ['token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum', 'seq-mean-token-sum-norm'];

// ---- comparisons ---------------------------------------------------------------------------------

/** The largest differences seen, relative to each check's scale (printed after the file). */
const worst: Record<string, number> = {};
function note(name: string, v: number): void {
  worst[name] = Math.max(worst[name] ?? 0, v);
}
afterAll(() => {
  if (!noDevice) console.log('largest |difference| / scale:', JSON.stringify(worst, null, 1));
});

function expectClose(name: string, kind: string, actual: number, expected: number, scale: number, tol: number): void {
  const d = Math.abs(actual - expected) / scale;
  note(kind, d);
  if (!(d <= tol)) expect.fail(`${name}: got ${actual}, expected ${expected} (|diff| / ${scale} = ${d} > ${tol})`);
}

function expectLogprobs(name: string, actual: Float32Array, expected: ArrayLike<number>, kind: string): void {
  expect(actual.length, `${name} length`).toBe(expected.length);
  for (let t = 0; t < expected.length; t++) {
    const b = expected[t] as number;
    expectClose(`${name}[${t}]`, kind, actual[t] as number, b, Math.max(1, Math.abs(b)), 1e-5);
  }
}

function expectGradClose(name: string, actual: Float32Array, expected: ArrayLike<number>, s: number, kind: string) {
  expect(actual.length, `${name} length`).toBe(expected.length);
  const scale = Math.max(1, s);
  let d = 0;
  let at = 0;
  for (let i = 0; i < expected.length; i++) {
    const e = Math.abs((actual[i] as number) - (expected[i] as number));
    if (!(e <= d)) {
      d = e;
      at = i;
    }
  }
  note(kind, d / scale);
  if (!(d <= 1e-6 * scale)) expect.fail(`${name}[${at}]: got ${actual[at]}, expected ${expected[at]} (|diff| ${d})`);
}

function sameBytes(a: Float32Array, b: Float32Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}

// ---- running on the device -----------------------------------------------------------------------

interface DevicePolicyOut {
  loss: number;
  gradLogits: Float32Array;
  logprobs: Float32Array;
  entropy: number;
  clipFracLow: number;
  clipFracHigh: number;
}

/** policyLoss on a DeviceTensor copy of args.logits, the gradient brought back (tensors disposed). */
function devicePolicy(args: PolicyArgs, cfg: PolicyLossConfig): DevicePolicyOut {
  const logits = DeviceTensor.from(args.logits, [args.targets.length, args.vocab]);
  try {
    const r = policyLoss({ ...args, logits }, cfg);
    expect(r.gradLogits).toBeInstanceOf(DeviceTensor);
    expect(r.gradLogits.shape).toEqual([args.targets.length, args.vocab]);
    const grad = r.gradLogits.toArray() as Float32Array;
    r.gradLogits.dispose();
    return { ...r, gradLogits: grad };
  } finally {
    logits.dispose();
  }
}

function deviceSft(args: SftArgs): { loss: number; gradLogits: Float32Array; logprobs: Float32Array } {
  const logits = DeviceTensor.from(args.logits, [args.targets.length, args.vocab]);
  try {
    const r = sftLoss({ ...args, logits });
    const grad = r.gradLogits.toArray() as Float32Array;
    r.gradLogits.dispose();
    return { ...r, gradLogits: grad };
  } finally {
    logits.dispose();
  }
}

/** The device policy loss against the CPU's and the float64 reference's, every output. */
function checkPolicy(args: PolicyArgs, cfg: PolicyLossRefConfig, label: string): DevicePolicyOut {
  const dev = devicePolicy(args, cfg as PolicyLossConfig);
  const cpu = policyLoss(args, cfg as PolicyLossConfig);
  const ref = policyLossRef(args as PolicyLossRefInput, cfg);
  const s = 1 / (cfg.temperature ?? 1);
  const lossScale = Math.max(1, Math.abs(ref.loss), ref.lossScale);
  expectClose(`${label} loss vs CPU`, 'loss vs CPU', dev.loss, cpu.loss, lossScale, 1e-5);
  expectClose(`${label} loss vs f64`, 'loss vs f64', dev.loss, ref.loss, lossScale, 1e-5);
  expectClose(`${label} entropy vs CPU`, 'entropy vs CPU', dev.entropy, cpu.entropy, Math.max(1, ref.entropy), 1e-5);
  expectClose(`${label} entropy vs f64`, 'entropy vs f64', dev.entropy, ref.entropy, Math.max(1, ref.entropy), 1e-5);
  expectLogprobs(`${label} logprobs vs CPU`, dev.logprobs, cpu.logprobs, 'logprobs vs CPU');
  expectLogprobs(`${label} logprobs vs f64`, dev.logprobs, ref.logprobs, 'logprobs vs f64');
  expect(dev.clipFracLow, `${label} clipFracLow`).toBe(cpu.clipFracLow);
  expect(dev.clipFracHigh, `${label} clipFracHigh`).toBe(cpu.clipFracHigh);
  expectGradClose(`${label} gradLogits vs CPU`, dev.gradLogits, cpu.gradLogits, s, 'gradLogits vs CPU');
  expectGradClose(`${label} gradLogits vs f64`, dev.gradLogits, ref.gradLogits, s, 'gradLogits vs f64');
  return dev;
}

function checkSft(args: SftArgs, label: string): void {
  const dev = deviceSft(args);
  const cpu = sftLoss(args);
  const ref = sftLossRef(args as SftLossRefInput);
  const s = 1 / (args.temperature ?? 1);
  const lossScale = Math.max(1, Math.abs(ref.loss), ref.lossScale);
  expectClose(`${label} loss vs CPU`, 'sft loss vs CPU', dev.loss, cpu.loss, lossScale, 1e-5);
  expectClose(`${label} loss vs f64`, 'sft loss vs f64', dev.loss, ref.loss, lossScale, 1e-5);
  expectLogprobs(`${label} logprobs vs CPU`, dev.logprobs, cpu.logprobs, 'logprobs vs CPU');
  expectLogprobs(`${label} logprobs vs f64`, dev.logprobs, ref.logprobs, 'logprobs vs f64');
  expectGradClose(`${label} gradLogits vs CPU`, dev.gradLogits, cpu.gradLogits, s, 'gradLogits vs CPU');
  expectGradClose(`${label} gradLogits vs f64`, dev.gradLogits, ref.gradLogits, s, 'gradLogits vs f64');
}

// ---- the tests -----------------------------------------------------------------------------------

describe.skipIf(noDevice)('policyLoss on a DeviceTensor matches the CPU and the float64 reference', () => {
  it('in every aggregation mode, plain and with dual clip, KL, entropy bonus and TIS, at vocab 1, 7, 1000, 4097', () => {
    const vocabs = [1, 7, 1000, 4097];
    let seed = 100;
    for (const [i, agg] of AGGS.entries())
      for (const full of [false, true]) {
        const vocab = vocabs[(2 * i + (full ? 1 : 0)) % vocabs.length] as number;
        const args = makePolicyCase({ T: vocab > 1000 ? 6 : 14, vocab, seed: seed++, seqs: true, kl: true, tis: true });
        const cfg: PolicyLossRefConfig = full
          ? { agg, normLength: 24, dualClip: 3, klCoef: 0.2, entropyCoef: 0.01, tisCap: 1.6 }
          : { agg, normLength: 24 };
        checkPolicy(args, cfg, `${agg} full=${full} vocab ${vocab}`);
      }
  });

  it('with custom clip bounds, clip fractions of both advantage signs and fractional masks', () => {
    const args = makePolicyCase({ T: 30, vocab: 33, seed: 7, seqs: true });
    const r = rng(8);
    for (let t = 0; t < 30; t++) args.mask[t] = t % 5 === 4 ? 0 : 0.25 + 0.75 * r();
    // Every other token whose ratio is out of range gets the advantage sign that counts it as clipped.
    const { logprobs } = policyLoss(args);
    for (let t = 0; t < 30; t += 2) {
      const logRatio = (logprobs[t] as number) - (args.oldLogprobs[t] as number);
      const a = Math.abs(args.advantages[t] as number) + 0.1;
      if (logRatio < -0.3) args.advantages[t] = -a;
      if (logRatio > 0.3) args.advantages[t] = a;
    }
    const dev = checkPolicy(args, { agg: 'seq-mean-token-mean', dualClip: 3 }, 'fractional mask');
    expect(dev.clipFracLow).toBeGreaterThan(0);
    expect(dev.clipFracHigh).toBeGreaterThan(0);
    // Bounds whose logs (−0.25, 0.18) lie in the gaps the generator's log-ratios keep clear.
    const custom = makePolicyCase({ T: 24, vocab: 40, seed: 9 });
    checkPolicy(custom, { clipLow: 0.22, clipHigh: 0.2, dualClip: 3 }, 'custom clip');
  });

  it('for one token, and for masked tokens (an all-zero mask gives loss 0 and a zero gradient)', () => {
    for (const vocab of [1, 7, 4097]) {
      const one = makePolicyCase({ T: 1, vocab, seed: vocab, maskProb: 1, kl: true });
      checkPolicy(one, { klCoef: 0.1, entropyCoef: 0.05 }, `one token, vocab ${vocab}`);
    }
    for (const agg of AGGS) {
      const args = makePolicyCase({ T: 9, vocab: 50, seed: 3, seqs: true, kl: true, tis: true });
      args.mask.fill(0);
      const dev = checkPolicy(args, { agg, normLength: 4, klCoef: 0.1, entropyCoef: 0.1, tisCap: 2 }, `${agg} no mask`);
      expect(dev.loss).toBe(0);
      expect(dev.entropy).toBe(0);
      expect(dev.gradLogits.every((v) => v === 0)).toBe(true);
    }
  });

  it('at extreme temperatures (0.05, 0.2, 5, 50), with KL and an entropy bonus', () => {
    let seed = 300;
    for (const temperature of [0.05, 0.2, 5, 50]) {
      const args = atTemperature(
        makePolicyCase({ T: 8, vocab: 1000, seed: seed++, scale: 1, seqs: true, kl: true, tis: true }),
        temperature,
      );
      const cfg: PolicyLossRefConfig = { agg: 'seq-mean-token-sum', klCoef: 0.1, entropyCoef: 0.02, temperature };
      checkPolicy(args, cfg, `temperature ${temperature}`);
    }
  });

  it('with large logits (±80), a target with p ≈ e^-160 among them', () => {
    const args = makePolicyCase({ T: 6, vocab: 300, seed: 4, maskProb: 1 });
    const r = rng(44);
    for (let i = 0; i < args.logits.length; i++) args.logits[i] = r() < 0.5 ? 80 * r() : -80 * r();
    args.logits[0] = 80;
    args.logits[2 * 300 + (args.targets[2] as number)] = -80;
    const cpu = policyLoss(args, {});
    for (let t = 0; t < 6; t++) args.oldLogprobs[t] = (cpu.logprobs[t] as number) - (t % 2 ? 0.5 : -0.02);
    checkPolicy(args, { entropyCoef: 0.01 }, '±80');
  });

  it('on a Qwen-sized vocabulary (T = 3, vocab = 151936) at temperature 0.7, also in place', () => {
    const args = atTemperature(
      makePolicyCase({ T: 3, vocab: 151936, seed: 4, maskProb: 1, kl: true, tis: true, seqs: true }),
      0.7,
    );
    const cfg: PolicyLossRefConfig = {
      agg: 'seq-mean-token-mean',
      klCoef: 0.05,
      entropyCoef: 0.01,
      tisCap: 2,
      dualClip: 3,
      temperature: 0.7,
    };
    const dev = checkPolicy(args, cfg, 'Qwen vocabulary');
    const logits = DeviceTensor.from(args.logits, [3, 151936]);
    const r = policyLoss({ ...args, logits }, cfg as PolicyLossConfig, { gradLogits: logits });
    expect(r.gradLogits).toBe(logits);
    expect(r.loss).toBe(dev.loss);
    expect(sameBytes(r.logprobs, dev.logprobs)).toBe(true);
    expect(sameBytes(logits.toArray() as Float32Array, dev.gradLogits)).toBe(true);
    logits.dispose();
  });
});

describe.skipIf(noDevice)('sftLoss on a DeviceTensor matches the CPU and the float64 reference', () => {
  it('at vocab 1, 7, 1000, 4097 and temperatures 1, 0.7, 1.5', () => {
    let seed = 200;
    for (const vocab of [1, 7, 1000, 4097])
      for (const temperature of [1, 0.7, 1.5]) {
        const args = { ...makeSftCase(vocab > 1000 ? 5 : 12, vocab, seed++), temperature };
        checkSft(args, `vocab ${vocab} T ${temperature}`);
      }
  });

  it('for one token, an all-zero mask and extreme temperatures (0.05, 50)', () => {
    checkSft(makeSftCase(1, 513, 1), 'one token');
    const none = makeSftCase(6, 70, 2);
    none.mask.fill(0);
    checkSft(none, 'no mask');
    expect(deviceSft(none).gradLogits.every((v) => v === 0)).toBe(true);
    for (const temperature of [0.05, 50]) checkSft({ ...makeSftCase(5, 900, 3, 1), temperature }, `T ${temperature}`);
  });
});

describe.skipIf(noDevice)('a row does not depend on its batch', () => {
  // The row alone, then at index 3 of 7 rows whose others are masked out (so that its aggregation
  // weight, and hence its gradient coefficients, are the same): its logprob and gradient row are
  // bitwise equal. With the other rows masked in, its logprob still is.
  for (const vocab of [1000, 4097]) {
    it(`policyLoss and sftLoss, vocab ${vocab}, at temperatures 1 and 0.7`, () => {
      const batch = makePolicyCase({ T: 7, vocab, seed: vocab + 1, maskProb: 1, kl: true });
      const t = 3;
      const row = (a: Float32Array) => a.slice(t * vocab, (t + 1) * vocab);
      const alone: PolicyArgs = {
        logits: row(batch.logits),
        vocab,
        targets: batch.targets.slice(t, t + 1),
        oldLogprobs: batch.oldLogprobs.slice(t, t + 1),
        advantages: batch.advantages.slice(t, t + 1),
        mask: Float32Array.of(1),
        refLogprobs: (batch.refLogprobs as Float32Array).slice(t, t + 1),
      };
      const masked: PolicyArgs = { ...batch, mask: new Float32Array(7) };
      masked.mask[t] = 1;
      for (const temperature of [1, 0.7]) {
        const cfg = { klCoef: 0.1, entropyCoef: 0.02, temperature };
        const a = devicePolicy(alone, cfg);
        const b = devicePolicy(masked, cfg);
        const c = devicePolicy(batch, cfg);
        expect(sameBytes(a.logprobs, b.logprobs.subarray(t, t + 1)), 'logprob, others masked out').toBe(true);
        expect(sameBytes(a.logprobs, c.logprobs.subarray(t, t + 1)), 'logprob, others masked in').toBe(true);
        expect(sameBytes(a.gradLogits, row(b.gradLogits)), 'gradient row').toBe(true);
        expect(a.loss).toBe(b.loss);
        const sa = deviceSft({ ...alone, temperature });
        const sb = deviceSft({ ...masked, temperature });
        expect(sameBytes(sa.logprobs, sb.logprobs.subarray(t, t + 1)), 'sft logprob').toBe(true);
        expect(sameBytes(sa.gradLogits, row(sb.gradLogits)), 'sft gradient row').toBe(true);
      }
    });
  }
});

describe.skipIf(noDevice)('gradient buffers', () => {
  it('writes into out.gradLogits, or in place into the logits, with the same bits as a new tensor', () => {
    const args = atTemperature(makePolicyCase({ T: 5, vocab: 777, seed: 21, kl: true }), 0.7);
    const cfg = { klCoef: 0.1, entropyCoef: 0.03, temperature: 0.7 };
    const fresh = devicePolicy(args, cfg);
    const logits = DeviceTensor.from(args.logits, [5, 777]);
    const out = DeviceTensor.from(new Float32Array(5 * 777).fill(7), [5, 777]);
    const r = policyLoss({ ...args, logits }, cfg, { gradLogits: out });
    expect(r.gradLogits).toBe(out);
    expect(sameBytes(out.toArray() as Float32Array, fresh.gradLogits)).toBe(true);
    expect(sameBytes(logits.toArray() as Float32Array, args.logits), 'the logits are left alone').toBe(true);
    const inPlace = policyLoss({ ...args, logits }, cfg, { gradLogits: logits });
    expect(inPlace.gradLogits).toBe(logits);
    expect(inPlace.loss).toBe(fresh.loss);
    expect(sameBytes(logits.toArray() as Float32Array, fresh.gradLogits)).toBe(true);
    const sftFresh = deviceSft({ ...args, temperature: 0.7 });
    logits.copyFrom(args.logits);
    sftLoss({ ...args, logits, temperature: 0.7 }, { gradLogits: logits });
    expect(sameBytes(logits.toArray() as Float32Array, sftFresh.gradLogits)).toBe(true);
    logits.dispose();
    out.dispose();
  });

  it('handles an empty batch (T = 0)', () => {
    const logits = DeviceTensor.zeros([0, 32]);
    const empty = new Float32Array(0);
    const r = policyLoss({
      logits,
      vocab: 32,
      targets: new Int32Array(0),
      oldLogprobs: empty,
      advantages: empty,
      mask: empty,
    });
    expect([r.loss, r.entropy, r.clipFracLow, r.clipFracHigh]).toEqual([0, 0, 0, 0]);
    expect(r.logprobs.length).toBe(0);
    expect(r.gradLogits.size).toBe(0);
    const s = sftLoss({ logits, vocab: 32, targets: new Int32Array(0), mask: empty });
    expect(s.loss).toBe(0);
    logits.dispose();
  });
});

describe.skipIf(noDevice)('errors', () => {
  /** Runs fn on device copies of args.logits and a gradient tensor filled with 5; both must be unchanged after. */
  function expectRefused(args: PolicyArgs, code: string, fn: (logits: DeviceTensor, out: DeviceTensor) => unknown) {
    const logits = DeviceTensor.from(args.logits, [args.targets.length, args.vocab]);
    const out = DeviceTensor.from(new Float32Array(args.logits.length).fill(5), [args.targets.length, args.vocab]);
    expectSwerlError(() => fn(logits, out), code);
    expect(sameBytes(logits.toArray() as Float32Array, args.logits), 'logits unchanged').toBe(true);
    expect(
      (out.toArray() as Float32Array).every((v) => v === 5),
      'gradient unchanged',
    ).toBe(true);
    logits.dispose();
    out.dispose();
  }

  for (const [name, value] of [
    ['NaN', Number.NaN],
    ['+Inf', Number.POSITIVE_INFINITY],
    ['-Inf (not a target)', Number.NEGATIVE_INFINITY],
  ] as const) {
    it(`refuses ${name} logits with NON_FINITE_LOGITS as the CPU does, writing no gradient (also in place)`, () => {
      const args = makePolicyCase({ T: 4, vocab: 1000, seed: 12, kl: true });
      args.mask.set([1, 1, 0, 1]);
      // In row 2 (masked out) and in row 1, away from their targets.
      for (const t of [1, 2]) args.logits[t * 1000 + (((args.targets[t] as number) + 17) % 1000)] = value;
      expectSwerlError(() => policyLoss(args, {}), 'NON_FINITE_LOGITS');
      expectSwerlError(() => sftLoss(args), 'NON_FINITE_LOGITS');
      const cfg = { klCoef: 0.1, entropyCoef: 0.01, temperature: 0.7 };
      expectRefused(args, 'NON_FINITE_LOGITS', (logits, out) =>
        policyLoss({ ...args, logits }, cfg, { gradLogits: out }),
      );
      expectRefused(args, 'NON_FINITE_LOGITS', (logits) =>
        policyLoss({ ...args, logits }, cfg, { gradLogits: logits }),
      );
      expectRefused(args, 'NON_FINITE_LOGITS', (logits, out) => sftLoss({ ...args, logits }, { gradLogits: out }));
      expectRefused(args, 'NON_FINITE_LOGITS', (logits) => sftLoss({ ...args, logits }, { gradLogits: logits }));
    });
  }

  it('refuses bad shapes, dtypes, gradient buffers and options with INVALID_ARGUMENT, writing nothing', () => {
    const args = makePolicyCase({ T: 4, vocab: 6, seed: 13 });
    const bad: [string, (l: DeviceTensor, o: DeviceTensor) => unknown][] = [
      [
        'a short logits tensor',
        (_l, o) => policyLoss({ ...args, logits: DeviceTensor.zeros([4, 5]) }, {}, { gradLogits: o }),
      ],
      [
        'an i32 logits tensor',
        (_l, o) => sftLoss({ ...args, logits: DeviceTensor.zeros([4, 6], 'i32') }, { gradLogits: o }),
      ],
      ['a host gradient', (l) => policyLoss({ ...args, logits: l }, {}, { gradLogits: new Float32Array(24) } as never)],
      ['a short gradient', (l) => sftLoss({ ...args, logits: l }, { gradLogits: DeviceTensor.zeros([4, 5]) })],
      [
        'target = vocab',
        (l, o) => policyLoss({ ...args, logits: l, targets: Int32Array.of(0, 1, 6, 2) }, {}, { gradLogits: o }),
      ],
      ['a bad temperature', (l, o) => sftLoss({ ...args, logits: l, temperature: 0 }, { gradLogits: o })],
      [
        'normLength missing',
        (l, o) => policyLoss({ ...args, logits: l }, { agg: 'seq-mean-token-sum-norm' }, { gradLogits: o }),
      ],
      ['a short mask', (l, o) => policyLoss({ ...args, logits: l, mask: new Float32Array(3) }, {}, { gradLogits: o })],
    ];
    for (const [name, fn] of bad) {
      try {
        expectRefused(args, 'INVALID_ARGUMENT', fn);
      } catch (e) {
        throw new Error(`${name}: ${(e as Error).message}`);
      }
    }
  });

  it('refuses a disposed tensor with DISPOSED', () => {
    const args = makePolicyCase({ T: 2, vocab: 9, seed: 14 });
    const logits = DeviceTensor.from(args.logits, [2, 9]);
    logits.dispose();
    expectSwerlError(() => policyLoss({ ...args, logits }), 'DISPOSED');
    expectSwerlError(() => sftLoss({ ...args, logits }), 'DISPOSED');
  });
});

/**
 * policyLoss / sftLoss against the float64 references in test/helpers/loss-reference.ts (written from
 * the spec, independent of native/): values, gradients, finite differences, edge cases and errors.
 *
 * Tolerances: values |a − b| ≤ 1e-5·max(1, |b|) (the loss also scales with Σ|w_t ℓ_t|, the size of
 * the terms it sums); gradients |g − gref| ≤ 1e-4·(max|gref| + |gref_j|) per element.
 * Ratios exp(logp − old) are built away from the kinks (clip bounds, dual clip, the ±20 and k3 clamps)
 * so that float32 and float64 always take the same branch. A temperature T scales the logits by 1 / T:
 * against the reference as above, and bitwise against the sampler's logprobs at T.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { policyLoss, sample, sftLoss } from '../../src/index.js';
import { expectSwerlError } from '../helpers/errors.js';
import { atTemperature, makePolicyCase, makeSftCase, type PolicyArgs, type SftArgs } from '../helpers/loss-cases.js';
import {
  type LossAgg,
  type PolicyLossRefConfig,
  type PolicyLossRefInput,
  policyLossRef,
  rowStats,
  type SftLossRefInput,
  sftLossRef,
} from '../helpers/loss-reference.js';
import { normal, rng } from '../helpers/random.js';

// ---- inputs --------------------------------------------------------------------------------------

const AGGS: LossAgg[] = ['token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum', 'seq-mean-token-sum-norm'];

// ---- comparisons ---------------------------------------------------------------------------------

function expectValue(name: string, actual: number, expected: number, tol = 1e-5, scale = 1): void {
  const bound = tol * Math.max(1, Math.abs(expected), scale);
  if (!(Math.abs(actual - expected) <= bound)) {
    expect.fail(`${name}: got ${actual}, reference ${expected} (|diff| ${Math.abs(actual - expected)} > ${bound})`);
  }
}

function expectArray(name: string, actual: ArrayLike<number>, expected: ArrayLike<number>, tol = 1e-5): void {
  expect(actual.length, `${name} length`).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i] as number;
    const b = expected[i] as number;
    if (!(Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)))) {
      expect.fail(`${name}[${i}]: got ${a}, reference ${b}`);
    }
  }
}

function expectGrad(name: string, actual: Float32Array, expected: Float64Array, vocab: number, tol = 1e-4): void {
  expect(actual).toBeInstanceOf(Float32Array);
  expect(actual.length, `${name} length`).toBe(expected.length);
  let gmax = 0;
  for (const g of expected) gmax = Math.max(gmax, Math.abs(g));
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i] as number;
    const b = expected[i] as number;
    if (!(Math.abs(a - b) <= tol * (gmax + Math.abs(b)))) {
      const t = Math.floor(i / vocab);
      expect.fail(`${name}[t=${t}, j=${i - t * vocab}]: got ${a}, reference ${b} (max|gref| ${gmax})`);
    }
  }
}

function expectAllZero(name: string, a: ArrayLike<number>): void {
  for (let i = 0; i < a.length; i++) {
    if ((a[i] as number) !== 0) expect.fail(`${name}[${i}] = ${a[i]}, expected 0`);
  }
}

type Typed = Float32Array | Int32Array | Float64Array | Uint8Array;

function copyArgs<A extends object>(args: A): A {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(args)) out[k] = ArrayBuffer.isView(v) ? (v as Typed).slice() : v;
  return out as A;
}

function sameBytes(a: Typed, b: Typed): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}

function expectUnchanged(before: object, after: object): void {
  for (const [k, v] of Object.entries(before)) {
    const w = (after as Record<string, unknown>)[k];
    if (ArrayBuffer.isView(v)) expect(sameBytes(v as Typed, w as Typed), `${k} was modified`).toBe(true);
  }
}

type PolicyConfig = NonNullable<Parameters<typeof policyLoss>[1]>;

/** Runs the real policyLoss and the reference on the same input and compares every output. */
function checkPolicy(args: PolicyArgs, cfg: PolicyLossRefConfig = {}, label = ''): ReturnType<typeof policyLossRef> {
  const before = copyArgs(args);
  const out = policyLoss(args, cfg as PolicyConfig);
  expectUnchanged(before, args);
  const ref = policyLossRef(args as PolicyLossRefInput, cfg);
  const T = args.targets.length;
  expect(out.logprobs).toBeInstanceOf(Float32Array);
  expectValue(`${label} loss`, out.loss, ref.loss, 1e-5, ref.lossScale);
  expectArray(`${label} logprobs`, out.logprobs, ref.logprobs);
  expect(out.logprobs.length).toBe(T);
  expectValue(`${label} entropy`, out.entropy, ref.entropy);
  expectValue(`${label} clipFracLow`, out.clipFracLow, ref.clipFracLow, 1e-6);
  expectValue(`${label} clipFracHigh`, out.clipFracHigh, ref.clipFracHigh, 1e-6);
  expectGrad(`${label} gradLogits`, out.gradLogits, ref.gradLogits, args.vocab);
  return ref;
}

function checkSft(args: SftArgs, label = ''): void {
  const before = copyArgs(args);
  const out = sftLoss(args);
  expectUnchanged(before, args);
  const ref = sftLossRef(args as SftLossRefInput);
  expect(out.logprobs).toBeInstanceOf(Float32Array);
  expectValue(`${label} loss`, out.loss, ref.loss, 1e-5, ref.lossScale);
  expectArray(`${label} logprobs`, out.logprobs, ref.logprobs);
  expectGrad(`${label} gradLogits`, out.gradLogits, ref.gradLogits, args.vocab);
}

// ---- the reference itself ------------------------------------------------------------------------

describe('float64 reference', () => {
  /** Central differences of the reference loss in float64, every element of a small tensor. */
  function fdReference(args: PolicyArgs, cfg: PolicyLossRefConfig): void {
    const x = Float64Array.from(args.logits);
    const ref = policyLossRef({ ...args, logits: x }, cfg);
    let gmax = 0;
    for (const g of ref.gradLogits) gmax = Math.max(gmax, Math.abs(g));
    const h = 1e-5;
    for (let i = 0; i < x.length; i++) {
      const x0 = x[i] as number;
      x[i] = x0 + h;
      const lp = policyLossRef({ ...args, logits: x }, cfg).loss;
      x[i] = x0 - h;
      const lm = policyLossRef({ ...args, logits: x }, cfg).loss;
      x[i] = x0;
      const fd = (lp - lm) / (2 * h);
      const g = ref.gradLogits[i] as number;
      if (!(Math.abs(fd - g) <= 1e-6 * (gmax + Math.abs(g)) + 1e-9)) {
        expect.fail(`element ${i}: analytic ${g}, finite difference ${fd}`);
      }
    }
  }

  it('matches hand-computed clipped surrogate values', () => {
    // vocab 2, equal logits: logp = −log 2 and p = (1/2, 1/2).
    const base = {
      logits: new Float32Array([0, 0]),
      vocab: 2,
      targets: new Int32Array([0]),
      mask: new Float32Array([1]),
    };
    const lp = -Math.log(2);
    const old = (ratio: number) => new Float32Array([lp - Math.log(ratio)]);
    const run = (ratio: number, A: number, cfg: PolicyLossRefConfig = {}) =>
      policyLossRef({ ...base, oldLogprobs: old(ratio), advantages: new Float32Array([A]) }, cfg);
    // Float32 rounding of old moves r by ~1e-7.
    expect(run(1.5, 1).loss).toBeCloseTo(-1.28, 6);
    expect(run(1.5, 1).clipFracHigh).toBe(1);
    expect(run(1.5, 1).gradLogits[0]).toBe(0);
    expect(run(1.5, -1).loss).toBeCloseTo(1.5, 6);
    expect(run(1.5, -1, { dualClip: 1.4 }).loss).toBeCloseTo(1.4, 6);
    expect(run(0.5, -1).loss).toBeCloseTo(0.8, 6);
    expect(run(0.5, -1).clipFracLow).toBe(1);
    expect(run(0.5, 1).loss).toBeCloseTo(-0.5, 6);
    // ℓ = −A·r, dℓ/dlogp = −A·r, dlogp/dx0 = 1 − 1/2.
    expect(run(0.5, 1).gradLogits[0]).toBeCloseTo(-0.25, 6);
    expect(run(0.5, 1).gradLogits[1]).toBeCloseTo(0.25, 6);
    expect(run(1, 2).entropy).toBeCloseTo(Math.log(2), 12);
    // k3 at ref − logp = 1: e − 2.
    const kl = policyLossRef(
      { ...base, oldLogprobs: old(1), advantages: new Float32Array([0]), refLogprobs: new Float32Array([lp + 1]) },
      { klCoef: 0.5 },
    );
    expect(kl.loss).toBeCloseTo(0.5 * (Math.E - 2), 6);
    const tis = policyLossRef(
      { ...base, oldLogprobs: old(1), advantages: new Float32Array([1]), rolloutLogprobs: old(3) },
      { tisCap: 2 },
    );
    expect(tis.loss).toBeCloseTo(-2, 6);
  });

  it('aggregates as specified', () => {
    // r = 1 everywhere so ℓ = −A.
    const T = 6;
    const logits = new Float32Array(T * 3).fill(0);
    const targets = new Int32Array(T);
    const lp = new Float32Array(T).fill(-Math.log(3));
    const args = {
      logits,
      vocab: 3,
      targets,
      oldLogprobs: lp,
      advantages: new Float32Array([1, 2, 3, 4, 8, 6]),
      mask: new Float32Array([1, 1, 1, 1, 1, 0]),
      seqIds: new Int32Array([0, 0, 0, 1, 1, 2]),
    };
    const loss = (agg: LossAgg, withSeqs = true) =>
      policyLossRef(withSeqs ? args : { ...args, seqIds: undefined }, { agg, normLength: 4 }).loss;
    expect(loss('token-mean')).toBeCloseTo(-3.6, 6);
    expect(loss('seq-mean-token-mean')).toBeCloseTo(-4, 6);
    expect(loss('seq-mean-token-sum')).toBeCloseTo(-9, 6);
    expect(loss('seq-mean-token-sum-norm')).toBeCloseTo(-2.25, 6);
    expect(loss('seq-mean-token-mean', false)).toBeCloseTo(-3.6, 6);
    expect(loss('seq-mean-token-sum', false)).toBeCloseTo(-18, 6);
    expect(loss('seq-mean-token-sum-norm', false)).toBeCloseTo(-4.5, 6);
  });

  it('has gradients that match float64 finite differences', () => {
    let seed = 11;
    for (const agg of AGGS) {
      for (const variant of [0, 1, 2]) {
        const args = makePolicyCase({ T: 5, vocab: 7, seed: seed++, scale: 1.5, seqs: true, kl: true, tis: true });
        const cfg: PolicyLossRefConfig = {
          agg,
          normLength: 6,
          dualClip: variant === 1 ? 3 : 0,
          klCoef: variant >= 1 ? 0.3 : 0,
          entropyCoef: variant === 2 ? 0.05 : 0,
          tisCap: variant === 2 ? 1.5 : 0,
        };
        fdReference(args, cfg);
      }
    }
  });

  it('sft gradient matches float64 finite differences', () => {
    const args = makeSftCase(4, 6, 5);
    const x = Float64Array.from(args.logits);
    const ref = sftLossRef({ ...args, logits: x });
    const h = 1e-5;
    for (let i = 0; i < x.length; i++) {
      const x0 = x[i] as number;
      x[i] = x0 + h;
      const lp = sftLossRef({ ...args, logits: x }).loss;
      x[i] = x0 - h;
      const lm = sftLossRef({ ...args, logits: x }).loss;
      x[i] = x0;
      expect(Math.abs((lp - lm) / (2 * h) - (ref.gradLogits[i] as number))).toBeLessThan(1e-8);
    }
  });
});

// ---- policyLoss against the reference ------------------------------------------------------------

describe('policyLoss matches the reference', () => {
  it('in every aggregation mode, with and without seqIds, dual clip, KL, entropy and TIS', () => {
    let seed = 1000;
    for (const agg of AGGS) {
      for (const seqs of [false, true]) {
        for (const variant of [0, 1, 2, 3]) {
          const args = makePolicyCase({ T: 24, vocab: 50, seed: seed++, seqs, kl: true, tis: true });
          const cfg: PolicyLossRefConfig = {
            agg,
            normLength: 32,
            dualClip: variant === 1 || variant === 3 ? 3 : 0,
            klCoef: variant >= 2 ? 0.2 : 0,
            entropyCoef: variant === 3 ? 0.01 : 0,
            tisCap: variant === 3 ? 1.6 : 0,
          };
          checkPolicy(args, cfg, `${agg} seqs=${seqs} variant=${variant} seed=${seed - 1}`);
        }
      }
    }
  });

  it('with custom clip bounds', () => {
    const args = makePolicyCase({ T: 30, vocab: 40, seed: 77 });
    // Log-ratios avoid log(1 − clipLow) and log(1 + clipHigh): with these bounds they are −0.69 and 0.34
    // (the logRatio classes sit in [−0.07, 0.09], [−1.5, −0.4], [0.4, 0.9], [1.3, 2.5]); keep away from −0.69.
    const { logp } = rowStats(args.logits, args.vocab, args.targets);
    for (let t = 0; t < 30; t++) {
      const d = (logp[t] as number) - (args.oldLogprobs[t] as number);
      if (d > -0.9 && d < -0.5) args.oldLogprobs[t] = (logp[t] as number) + 1.2;
    }
    checkPolicy(args, { clipLow: 0.5, clipHigh: 0.4 });
  });

  it('reports clip fractions for both advantage signs', () => {
    const vocab = 8;
    const T = 8;
    const args = makePolicyCase({ T, vocab, seed: 5, maskProb: 1 });
    const { logp } = rowStats(args.logits, vocab, args.targets);
    // [log-ratio, advantage]: high-clipped with A > 0 (2 tokens), low-clipped with A < 0 (3 tokens),
    // plus ratios outside the range with the other sign (not clipped) and inside it.
    const plan: [number, number][] = [
      [0.6, 1],
      [1.0, 0.5],
      [-0.6, -1],
      [-1.0, -2],
      [-0.5, -0.3],
      [0.6, -1],
      [-0.6, 1],
      [0.0, 1],
    ];
    plan.forEach(([d, A], t) => {
      args.oldLogprobs[t] = (logp[t] as number) - d;
      args.advantages[t] = A;
    });
    const ref = checkPolicy(args);
    expect(ref.clipFracHigh).toBeCloseTo(2 / 8, 12);
    expect(ref.clipFracLow).toBeCloseTo(3 / 8, 12);
    // Masking the last 4 tokens: the clip fractions are over the masked-in tokens only.
    args.mask.set([1, 1, 1, 1, 0, 0, 0, 0]);
    const ref2 = checkPolicy(args);
    expect(ref2.clipFracHigh).toBeCloseTo(2 / 4, 12);
    expect(ref2.clipFracLow).toBeCloseTo(2 / 4, 12);
  });

  it('clamps the log-ratio at ±20 and k3 at 10 (zero gradient there)', () => {
    const T = 6;
    const vocab = 5;
    const args = makePolicyCase({ T, vocab, seed: 9, maskProb: 1, kl: true });
    const { logp } = rowStats(args.logits, vocab, args.targets);
    const ratios = [25, -25, 25, -25, 0.05, 0.05];
    const adv = [-1, 1, 1, -1, 0.5, -0.5];
    const klArg = [0.3, -0.3, 3, -12, -25, 25]; // ref − logp: k3 clamped at 10 for 3, −12, ±25
    for (let t = 0; t < T; t++) {
      args.oldLogprobs[t] = (logp[t] as number) - (ratios[t] as number);
      args.advantages[t] = adv[t] as number;
      (args.refLogprobs as Float32Array)[t] = (logp[t] as number) + (klArg[t] as number);
    }
    for (const agg of AGGS) checkPolicy(args, { agg, normLength: 10, klCoef: 0.1 }, agg);
    checkPolicy(args, { klCoef: 0.1, dualClip: 3 }, 'dual');
  });

  it('on random shapes (fast-check)', () => {
    fc.assert(
      fc.property(
        fc.record({
          T: fc.integer({ min: 1, max: 40 }),
          vocab: fc.integer({ min: 1, max: 3000 }),
          seed: fc.integer({ min: 0, max: 0x7fffffff }),
          agg: fc.constantFrom(...AGGS),
          seqs: fc.boolean(),
          dualClip: fc.constantFrom(0, 3),
          klCoef: fc.constantFrom(0, 0.05),
          entropyCoef: fc.constantFrom(0, 0.02),
          tisCap: fc.constantFrom(0, 2),
          scale: fc.constantFrom(0.5, 2, 6),
          maskProb: fc.constantFrom(0.3, 0.9, 1),
        }),
        (c) => {
          const args = makePolicyCase({ ...c, kl: c.klCoef > 0, tis: c.tisCap > 0 });
          const cfg: PolicyLossRefConfig = {
            agg: c.agg,
            normLength: 64,
            dualClip: c.dualClip,
            klCoef: c.klCoef,
            entropyCoef: c.entropyCoef,
            tisCap: c.tisCap,
          };
          checkPolicy(args, cfg);
        },
      ),
      { numRuns: 200, seed: 20240611 },
    );
  });

  it('on a Qwen-sized vocabulary (T = 4, vocab = 151936)', () => {
    const args = makePolicyCase({ T: 4, vocab: 151936, seed: 3, maskProb: 1, kl: true, tis: true, seqs: true });
    checkPolicy(args, { agg: 'seq-mean-token-mean', klCoef: 0.05, entropyCoef: 0.01, tisCap: 2, dualClip: 3 });
  });

  it('with fractional mask weights', () => {
    const args = makePolicyCase({ T: 20, vocab: 30, seed: 41, seqs: true });
    const r = rng(42);
    for (let t = 0; t < 20; t++) if (args.mask[t] !== 0) args.mask[t] = 0.25 + 0.75 * r();
    for (const agg of AGGS) checkPolicy(args, { agg, normLength: 16, entropyCoef: 0.01 }, agg);
  });

  it('groups by seqIds value, not by runs (interleaved, sparse, negative ids)', () => {
    const args = makePolicyCase({ T: 12, vocab: 20, seed: 8, maskProb: 1 });
    args.seqIds = new Int32Array([5, -1, 5, 1000, -1, 5, 1000, 5, -1, 1000, 5, 5]);
    for (const agg of AGGS) checkPolicy(args, { agg, normLength: 8 }, agg);
  });
});

describe('policyLoss gradient vs finite differences of the real function', () => {
  it('agrees on random elements (float32, step 1e-2)', () => {
    let seed = 500;
    const r = rng(501);
    for (const agg of AGGS) {
      const args = makePolicyCase({ T: 4, vocab: 6, seed: seed++, scale: 1, seqs: true, kl: true, tis: true });
      const cfg = {
        agg,
        normLength: 5,
        dualClip: 3,
        klCoef: 0.2,
        entropyCoef: 0.05,
        tisCap: 1.5,
      } satisfies PolicyLossRefConfig;
      const base = policyLoss(args, cfg);
      const g = base.gradLogits;
      let gmax = 0;
      for (const v of g) gmax = Math.max(gmax, Math.abs(v));
      // The largest element, every target column, and a few random ones.
      const picks = new Set<number>();
      picks.add(g.reduce((best, v, i) => (Math.abs(v) > Math.abs(g[best] as number) ? i : best), 0));
      for (let t = 0; t < 4; t++) picks.add(t * 6 + (args.targets[t] as number));
      for (let k = 0; k < 6; k++) picks.add(Math.floor(r() * g.length));
      for (const i of picks) {
        const x0 = args.logits[i] as number;
        const xp = Math.fround(x0 + 1e-2);
        const xm = Math.fround(x0 - 1e-2);
        const logits = args.logits.slice();
        logits[i] = xp;
        const lp = policyLoss({ ...args, logits }, cfg).loss;
        logits[i] = xm;
        const lm = policyLoss({ ...args, logits }, cfg).loss;
        const fd = (lp - lm) / (xp - xm);
        const gi = g[i] as number;
        if (!(Math.abs(fd - gi) <= 2e-2 * Math.abs(gi) + 2e-3 * gmax + 1e-5)) {
          expect.fail(`${agg} element ${i}: gradLogits ${gi}, finite difference ${fd}`);
        }
      }
    }
  });
});

// ---- edge cases ----------------------------------------------------------------------------------

describe('policyLoss edge cases', () => {
  it('vocab = 1: logp = 0 and zero gradient', () => {
    const args = makePolicyCase({ T: 5, vocab: 1, seed: 1, maskProb: 1, kl: true });
    const out = policyLoss(args, { klCoef: 0.1, entropyCoef: 0.1 });
    expectArray('logprobs', out.logprobs, new Float64Array(5));
    expect(Math.abs(out.entropy)).toBeLessThan(1e-6);
    for (const v of out.gradLogits) expect(Math.abs(v)).toBeLessThan(1e-7);
    checkPolicy(args, { klCoef: 0.1, entropyCoef: 0.1 });
  });

  it('all-equal logits', () => {
    const args = makePolicyCase({ T: 6, vocab: 1000, seed: 2, kl: true });
    args.logits.fill(3.25);
    const { logp } = rowStats(args.logits, 1000, args.targets);
    for (let t = 0; t < 6; t++) args.oldLogprobs[t] = (logp[t] as number) - (t % 2 ? 0.6 : -0.6);
    const ref = checkPolicy(args, { klCoef: 0.1, entropyCoef: 0.1 });
    expectValue('entropy', ref.entropy, Math.log(1000), 1e-12);
  });

  it('all-zero mask: loss 0, zero gradients, no NaN', () => {
    for (const agg of AGGS) {
      const args = makePolicyCase({ T: 7, vocab: 9, seed: 3, seqs: true, kl: true, tis: true });
      args.mask.fill(0);
      const out = policyLoss(args, { agg, normLength: 4, klCoef: 0.1, entropyCoef: 0.1, tisCap: 2, dualClip: 3 });
      expect(out.loss).toBe(0);
      expect(out.entropy).toBe(0);
      expect(out.clipFracLow).toBe(0);
      expect(out.clipFracHigh).toBe(0);
      expectAllZero('gradLogits', out.gradLogits);
      expect(out.gradLogits.length).toBe(63);
      const ref = rowStats(args.logits, 9, args.targets);
      expectArray('logprobs', out.logprobs, ref.logp);
    }
  });

  it('empty batch (T = 0): loss 0 and empty arrays', () => {
    for (const agg of AGGS) {
      const empty = {
        logits: new Float32Array(0),
        vocab: 32,
        targets: new Int32Array(0),
        oldLogprobs: new Float32Array(0),
        advantages: new Float32Array(0),
        mask: new Float32Array(0),
      };
      const out = policyLoss(empty, { agg, normLength: 4 });
      expect(out.loss).toBe(0);
      expect(out.entropy).toBe(0);
      expect(out.clipFracLow).toBe(0);
      expect(out.clipFracHigh).toBe(0);
      expect(out.gradLogits).toBeInstanceOf(Float32Array);
      expect(out.gradLogits.length).toBe(0);
      expect(out.logprobs.length).toBe(0);
    }
  });

  it('huge and tiny logits (±80) do not overflow', () => {
    const args = makePolicyCase({ T: 8, vocab: 300, seed: 4, maskProb: 1, kl: true });
    const r = rng(44);
    for (let i = 0; i < args.logits.length; i++) args.logits[i] = r() < 0.5 ? 80 * r() : -80 * r();
    args.logits[0] = 80;
    args.logits[1] = -80;
    args.logits[2 * 300 + (args.targets[2] as number)] = -80; // a target with p ≈ e^−160
    const { logp } = rowStats(args.logits, 300, args.targets);
    for (let t = 0; t < 8; t++) {
      args.oldLogprobs[t] = (logp[t] as number) - (t % 3 === 0 ? 0.5 : t % 3 === 1 ? -0.6 : 0.02);
      (args.refLogprobs as Float32Array)[t] = (logp[t] as number) + 0.5;
    }
    const out = policyLoss(args, { klCoef: 0.1, entropyCoef: 0.01 });
    expect(Number.isFinite(out.loss)).toBe(true);
    for (const v of out.gradLogits) expect(Number.isFinite(v)).toBe(true);
    checkPolicy(args, { klCoef: 0.1, entropyCoef: 0.01 });
  });
});

// ---- errors --------------------------------------------------------------------------------------

describe('policyLoss errors', () => {
  const good = () => makePolicyCase({ T: 4, vocab: 6, seed: 12, seqs: true, kl: true, tis: true });

  function expectFailsUnchanged(args: Record<string, unknown>, cfg: Record<string, unknown>, code: string): void {
    const before = copyArgs(args);
    expectSwerlError(() => policyLoss(args as never, cfg as never), code);
    expectUnchanged(before, args);
  }

  const invalid: [string, (a: PolicyArgs) => Record<string, unknown>, Record<string, unknown>?][] = [
    ['logits too short', (a) => ({ ...a, logits: a.logits.subarray(1) })],
    ['logits too long', (a) => ({ ...a, logits: new Float32Array(a.logits.length + 6) })],
    ['logits as Float64Array', (a) => ({ ...a, logits: Float64Array.from(a.logits) })],
    ['logits as a plain array', (a) => ({ ...a, logits: Array.from(a.logits) })],
    ['targets as Float32Array', (a) => ({ ...a, targets: Float32Array.from(a.targets) })],
    ['targets −1', (a) => ({ ...a, targets: Int32Array.from([0, -1, 2, 3]) })],
    ['targets = vocab', (a) => ({ ...a, targets: Int32Array.from([0, 1, 6, 3]) })],
    ['vocab 0', (a) => ({ ...a, vocab: 0, logits: new Float32Array(0) })],
    ['vocab negative', (a) => ({ ...a, vocab: -6 })],
    [
      'vocab fractional',
      (a) => ({ ...a, vocab: 2.5, logits: new Float32Array(10), targets: Int32Array.from([0, 1, 1, 0]) }),
    ],
    ['vocab NaN', (a) => ({ ...a, vocab: Number.NaN })],
    ['oldLogprobs wrong length', (a) => ({ ...a, oldLogprobs: new Float32Array(3) })],
    ['advantages wrong length', (a) => ({ ...a, advantages: new Float32Array(5) })],
    ['mask wrong length', (a) => ({ ...a, mask: new Float32Array(3) })],
    ['mask as Uint8Array', (a) => ({ ...a, mask: new Uint8Array(4).fill(1) })],
    ['oldLogprobs missing', (a) => ({ ...a, oldLogprobs: undefined })],
    ['seqIds wrong length', (a) => ({ ...a, seqIds: new Int32Array(3) })],
    ['seqIds as Float32Array', (a) => ({ ...a, seqIds: new Float32Array(4) })],
    ['refLogprobs wrong length', (a) => ({ ...a, refLogprobs: new Float32Array(5) }), { klCoef: 0.1 }],
    ['rolloutLogprobs wrong length', (a) => ({ ...a, rolloutLogprobs: new Float32Array(3) }), { tisCap: 2 }],
    ['a bad agg name', (a) => ({ ...a }), { agg: 'token-sum' }],
    ['seq-mean-token-sum-norm without normLength', (a) => ({ ...a }), { agg: 'seq-mean-token-sum-norm' }],
    ['normLength 0', (a) => ({ ...a }), { agg: 'seq-mean-token-sum-norm', normLength: 0 }],
    ['normLength negative', (a) => ({ ...a }), { agg: 'seq-mean-token-sum-norm', normLength: -3 }],
  ];
  for (const [name, make, cfg] of invalid) {
    it(`rejects ${name} with INVALID_ARGUMENT`, () => {
      expectFailsUnchanged(make(good()), cfg ?? {}, 'INVALID_ARGUMENT');
    });
  }

  it('rejects non-object arguments', () => {
    expectSwerlError(() => policyLoss(undefined as never), 'INVALID_ARGUMENT');
    expectSwerlError(() => policyLoss(7 as never), 'INVALID_ARGUMENT');
  });

  for (const [name, value] of [
    ['NaN', Number.NaN],
    ['+Inf', Number.POSITIVE_INFINITY],
    ['-Inf', Number.NEGATIVE_INFINITY],
  ] as const) {
    it(`rejects ${name} logits with NON_FINITE_LOGITS`, () => {
      const a = good();
      a.mask.fill(1);
      a.logits[2 * 6 + 3] = value;
      expectFailsUnchanged({ ...a }, {}, 'NON_FINITE_LOGITS');
      const b = good();
      b.mask.fill(1);
      b.logits[b.logits.length - 1] = value;
      expectFailsUnchanged(
        { ...b },
        { agg: 'seq-mean-token-sum-norm', normLength: 3, klCoef: 0.1 },
        'NON_FINITE_LOGITS',
      );
    });
  }

  it('rejects non-finite logits in a masked-out row too', () => {
    const a = good();
    a.mask.set([1, 1, 1, 0]);
    a.logits[3 * 6] = Number.NaN;
    expectFailsUnchanged({ ...a }, {}, 'NON_FINITE_LOGITS');
  });
});

// ---- sftLoss -------------------------------------------------------------------------------------

describe('sftLoss', () => {
  it('matches the reference on random shapes (fast-check)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 3000 }),
        fc.integer({ min: 0, max: 0x7fffffff }),
        fc.constantFrom(0.5, 2, 6),
        (T, vocab, seed, scale) => checkSft(makeSftCase(T, vocab, seed, scale)),
      ),
      { numRuns: 100, seed: 20240612 },
    );
  });

  it('matches the reference on a Qwen-sized vocabulary', () => {
    checkSft(makeSftCase(4, 151936, 6));
  });

  it('has hand-computed values', () => {
    // Equal logits over 4: logp = −log 4, gradient −(1/M)(δ − 1/4).
    const out = sftLoss({
      logits: new Float32Array(8),
      vocab: 4,
      targets: Int32Array.from([1, 2]),
      mask: Float32Array.from([1, 0]),
    });
    expectValue('loss', out.loss, Math.log(4));
    expectArray('grad', out.gradLogits, [0.25, -0.75, 0.25, 0.25, 0, 0, 0, 0], 1e-6);
    expectArray('logprobs', out.logprobs, [-Math.log(4), -Math.log(4)]);
  });

  it('agrees with finite differences of itself', () => {
    const args = makeSftCase(3, 5, 77, 1);
    const g = sftLoss(args).gradLogits;
    for (let i = 0; i < args.logits.length; i++) {
      const x0 = args.logits[i] as number;
      const xp = Math.fround(x0 + 1e-2);
      const xm = Math.fround(x0 - 1e-2);
      const logits = args.logits.slice();
      logits[i] = xp;
      const lp = sftLoss({ ...args, logits }).loss;
      logits[i] = xm;
      const lm = sftLoss({ ...args, logits }).loss;
      const fd = (lp - lm) / (xp - xm);
      expect(Math.abs(fd - (g[i] as number))).toBeLessThan(2e-2 * Math.abs(g[i] as number) + 1e-3);
    }
  });

  it('edge cases: vocab 1, zero mask, ±80 logits', () => {
    const v1 = sftLoss({
      logits: Float32Array.from([3, -2]),
      vocab: 1,
      targets: new Int32Array(2),
      mask: Float32Array.from([1, 1]),
    });
    expect(Math.abs(v1.loss)).toBeLessThan(1e-7);
    for (const v of v1.gradLogits) expect(Math.abs(v)).toBeLessThan(1e-7);
    const zero = makeSftCase(5, 7, 1);
    zero.mask.fill(0);
    const z = sftLoss(zero);
    expect(z.loss).toBe(0);
    expectAllZero('gradLogits', z.gradLogits);
    const big = makeSftCase(6, 200, 2);
    const r = rng(3);
    for (let i = 0; i < big.logits.length; i++) big.logits[i] = 160 * r() - 80;
    big.logits[big.targets[0] as number] = -80;
    checkSft(big);
  });

  it('empty batch (T = 0): loss 0 and empty arrays', () => {
    const e = sftLoss({
      logits: new Float32Array(0),
      vocab: 10,
      targets: new Int32Array(0),
      mask: new Float32Array(0),
    });
    expect(e.loss).toBe(0);
    expect(e.gradLogits.length).toBe(0);
    expect(e.logprobs.length).toBe(0);
  });

  const good = () => makeSftCase(4, 6, 12);
  const invalid: [string, (a: SftArgs) => Record<string, unknown>][] = [
    ['logits wrong length', (a) => ({ ...a, logits: a.logits.subarray(2) })],
    ['logits as Float64Array', (a) => ({ ...a, logits: Float64Array.from(a.logits) })],
    ['targets out of range', (a) => ({ ...a, targets: Int32Array.from([0, 6, 1, 1]) })],
    ['targets negative', (a) => ({ ...a, targets: Int32Array.from([0, -3, 1, 1]) })],
    ['targets as Float32Array', (a) => ({ ...a, targets: Float32Array.from(a.targets) })],
    ['mask wrong length', (a) => ({ ...a, mask: new Float32Array(5) })],
    ['vocab 0', (a) => ({ ...a, vocab: 0, logits: new Float32Array(0) })],
  ];
  for (const [name, make] of invalid) {
    it(`rejects ${name} with INVALID_ARGUMENT`, () => {
      const args = make(good());
      const before = copyArgs(args);
      expectSwerlError(() => sftLoss(args as never), 'INVALID_ARGUMENT');
      expectUnchanged(before, args);
    });
  }

  for (const value of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
    it(`rejects ${value} logits with NON_FINITE_LOGITS`, () => {
      const args = good();
      args.logits[7] = value;
      const before = copyArgs(args);
      expectSwerlError(() => sftLoss(args), 'NON_FINITE_LOGITS');
      expectUnchanged(before, args);
    });
  }
});

// ---- temperature (a logit scale 1 / T) -----------------------------------------------------------

describe('losses at a temperature', () => {
  it('the float64 reference at a temperature has finite-difference gradients', () => {
    let seed = 900;
    for (const temperature of [0.7, 1.5]) {
      for (const variant of [0, 1]) {
        const args = atTemperature(
          makePolicyCase({ T: 5, vocab: 7, seed: seed++, scale: 1.5, maskProb: 1, seqs: true, kl: true, tis: true }),
          temperature,
        );
        args.mask.fill(1);
        const cfg: PolicyLossRefConfig = {
          agg: variant ? 'seq-mean-token-mean' : 'token-mean',
          dualClip: 3,
          klCoef: 0.3,
          entropyCoef: variant ? 0.05 : 0,
          tisCap: variant ? 1.5 : 0,
          temperature,
        };
        const x = Float64Array.from(args.logits);
        const ref = policyLossRef({ ...args, logits: x }, cfg);
        let gmax = 0;
        for (const g of ref.gradLogits) gmax = Math.max(gmax, Math.abs(g));
        const h = 1e-5;
        for (let i = 0; i < x.length; i++) {
          const x0 = x[i] as number;
          x[i] = x0 + h;
          const lp = policyLossRef({ ...args, logits: x }, cfg).loss;
          x[i] = x0 - h;
          const lm = policyLossRef({ ...args, logits: x }, cfg).loss;
          x[i] = x0;
          const fd = (lp - lm) / (2 * h);
          const g = ref.gradLogits[i] as number;
          if (!(Math.abs(fd - g) <= 1e-6 * (gmax + Math.abs(g)) + 1e-9))
            expect.fail(`T ${temperature} element ${i}: analytic ${g}, finite difference ${fd}`);
        }
        // The scale matters: the temperature-1 reference differs.
        expect(policyLossRef(args, { ...cfg, temperature: 1 }).loss).not.toBeCloseTo(ref.loss, 6);
      }
    }
  });

  it('policyLoss matches the reference at temperatures 0.5, 0.7 and 1.5, in every aggregation mode', () => {
    let seed = 3000;
    for (const temperature of [0.5, 0.7, 1.5])
      for (const agg of AGGS)
        for (const variant of [0, 1]) {
          const args = atTemperature(
            makePolicyCase({ T: 24, vocab: 50, seed: seed++, seqs: true, kl: true, tis: true }),
            temperature,
          );
          const cfg: PolicyLossRefConfig = {
            agg,
            normLength: 32,
            dualClip: 3,
            klCoef: variant ? 0.2 : 0,
            entropyCoef: variant ? 0.01 : 0,
            tisCap: variant ? 1.6 : 0,
            temperature,
          };
          checkPolicy(args, cfg, `T ${temperature} ${agg} variant=${variant}`);
        }
  });

  it('policyLoss at a temperature on a Qwen-sized vocabulary (several row chunks), also in place with an entropy bonus', () => {
    const args = atTemperature(
      makePolicyCase({ T: 3, vocab: 151936, seed: 4, maskProb: 1, kl: true, seqs: true }),
      0.7,
    );
    const cfg: PolicyLossRefConfig = { agg: 'seq-mean-token-mean', klCoef: 0.05, entropyCoef: 0.01, temperature: 0.7 };
    const ref = checkPolicy(args, cfg);
    const fresh = policyLoss(args, cfg as PolicyConfig);
    const inPlace = args.logits.slice();
    const r = policyLoss({ ...args, logits: inPlace }, cfg as PolicyConfig, { gradLogits: inPlace });
    expect(r.loss).toBe(fresh.loss);
    expect(sameBytes(r.logprobs, fresh.logprobs)).toBe(true);
    expect(r.entropy).toBe(fresh.entropy);
    expectGrad('in-place gradLogits', inPlace, ref.gradLogits, args.vocab);
  });

  it('sftLoss matches the reference at a temperature (fast-check)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 9000 }),
        fc.integer({ min: 0, max: 0x7fffffff }),
        fc.constantFrom(0.5, 2, 6),
        fc.constantFrom(0.3, 0.7, 1.5, 4),
        (T, vocab, seed, scale, temperature) => checkSft({ ...makeSftCase(T, vocab, seed, scale), temperature }),
      ),
      { numRuns: 60, seed: 20240613 },
    );
  });

  it('the gradient at a temperature agrees with finite differences of the real function (float32, step 1e-2)', () => {
    const args = atTemperature(makePolicyCase({ T: 4, vocab: 6, seed: 71, scale: 1, seqs: true, kl: true }), 0.7);
    const cfg = { agg: 'seq-mean-token-mean', dualClip: 3, klCoef: 0.2, entropyCoef: 0.05, temperature: 0.7 } as const;
    const g = policyLoss(args, cfg).gradLogits;
    let gmax = 0;
    for (const v of g) gmax = Math.max(gmax, Math.abs(v));
    for (let i = 0; i < g.length; i++) {
      const x0 = args.logits[i] as number;
      const xp = Math.fround(x0 + 1e-2);
      const xm = Math.fround(x0 - 1e-2);
      const logits = args.logits.slice();
      logits[i] = xp;
      const lp = policyLoss({ ...args, logits }, cfg).loss;
      logits[i] = xm;
      const lm = policyLoss({ ...args, logits }, cfg).loss;
      const fd = (lp - lm) / (xp - xm);
      const gi = g[i] as number;
      if (!(Math.abs(fd - gi) <= 2e-2 * Math.abs(gi) + 2e-3 * gmax + 1e-5))
        expect.fail(`element ${i}: gradLogits ${gi}, finite difference ${fd}`);
    }
  });

  for (const vocab of [61, 5000, 151936]) {
    it(`logprobs equal the sampler's at the same temperature bit for bit (vocab ${vocab})`, () => {
      const rows = 6;
      const r = rng(vocab);
      const logits = Float32Array.from({ length: rows * vocab }, () => 3 * normal(r));
      for (const temperature of [0.3, 0.7, 1, 1.5, 2.5]) {
        const s = sample(
          logits,
          vocab,
          Array.from({ length: rows }, (_, i) => ({ temperature, seed: 17 + i })),
        );
        const mask = new Float32Array(rows).fill(1);
        const sft = sftLoss({ logits, vocab, targets: s.tokens, mask, temperature });
        expect(sameBytes(sft.logprobs, s.logprobs), `sftLoss at T ${temperature}`).toBe(true);
        const pol = policyLoss(
          { logits, vocab, targets: s.tokens, mask, oldLogprobs: s.logprobs, advantages: mask },
          { temperature },
        );
        expect(sameBytes(pol.logprobs, s.logprobs), `policyLoss at T ${temperature}`).toBe(true);
        // Without the scale they are the raw ones, which differ unless T = 1.
        expect(sameBytes(sftLoss({ logits, vocab, targets: s.tokens, mask }).logprobs, s.logprobs)).toBe(
          temperature === 1,
        );
      }
    });
  }

  it('temperature 1 given explicitly is bitwise the default', () => {
    const args = makePolicyCase({ T: 10, vocab: 300, seed: 5, kl: true });
    const cfg = { klCoef: 0.1, entropyCoef: 0.01 };
    const a = policyLoss(args, cfg);
    const b = policyLoss(args, { ...cfg, temperature: 1 });
    expect(b.loss).toBe(a.loss);
    expect(b.entropy).toBe(a.entropy);
    expect(sameBytes(b.logprobs, a.logprobs)).toBe(true);
    expect(sameBytes(b.gradLogits, a.gradLogits)).toBe(true);
    const sa = makeSftCase(10, 300, 6);
    const x = sftLoss(sa);
    const y = sftLoss({ ...sa, temperature: 1 });
    expect(y.loss).toBe(x.loss);
    expect(sameBytes(y.gradLogits, x.gradLogits)).toBe(true);
  });

  for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1e-46, '1']) {
    it(`refuses temperature ${typeof bad === 'string' ? `'${bad}'` : bad} with INVALID_ARGUMENT, changing nothing`, () => {
      const args = makePolicyCase({ T: 4, vocab: 6, seed: 13 });
      const before = copyArgs(args);
      const out = new Float32Array(args.logits.length).fill(5);
      expectSwerlError(() => policyLoss(args, { temperature: bad as number }, { gradLogits: out }), 'INVALID_ARGUMENT');
      expectSwerlError(() => sftLoss({ ...args, temperature: bad as number }, { gradLogits: out }), 'INVALID_ARGUMENT');
      expectUnchanged(before, args);
      expect(out.every((v) => v === 5)).toBe(true);
    });
  }
});

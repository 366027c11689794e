// The GEMM and the losses fused with the LM head: same values as the unfused path on the same
// logits, gradients against float64 references and finite differences, batch invariance; at a
// temperature T (logits scaled by 1 / T) the same, the gradients carrying the factor 1 / T.
import { describe, expect, it } from 'vitest';
import { policyLoss, policyLossFused, sftLoss, sftLossFused } from '../../src/index.js';
import { native } from '../../src/native.js';
import { errorCode } from '../helpers/errors.js';
import { rng } from '../helpers/random.js';

function randomArray(n: number, r: () => number, scale = 1): Float32Array {
  return Float32Array.from({ length: n }, () => (r() * 2 - 1) * scale);
}

/** C = A·B in float64; B is [K, N], or [N, K] when bt. */
function matmul64(a: ArrayLike<number>, b: ArrayLike<number>, M: number, N: number, K: number, bt: boolean) {
  const c = new Float64Array(M * N);
  for (let i = 0; i < M; i++)
    for (let j = 0; j < N; j++) {
      let s = 0;
      for (let k = 0; k < K; k++)
        s += (a[i * K + k] as number) * (bt ? (b[j * K + k] as number) : (b[k * N + j] as number));
      c[i * N + j] = s;
    }
  return c;
}

function maxRelErr(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let scale = 0;
  for (let i = 0; i < want.length; i++) scale = Math.max(scale, Math.abs(want[i] as number));
  let err = 0;
  for (let i = 0; i < want.length; i++) err = Math.max(err, Math.abs((got[i] as number) - (want[i] as number)));
  return err / Math.max(scale, 1e-30);
}

describe('gemm', () => {
  const shapes: [number, number, number][] = [
    [1, 1, 1],
    [5, 7, 3],
    [6, 16, 256],
    [7, 17, 257],
    [13, 35, 600],
    [72, 48, 100],
    [80, 200, 513],
  ];
  for (const [M, N, K] of shapes) {
    for (const bt of [false, true]) {
      it(`matches float64 for M=${M} N=${N} K=${K}${bt ? ' (B transposed)' : ''}`, () => {
        const r = rng(M * 1000 + N * 10 + K);
        const a = randomArray(M * K, r);
        const b = randomArray(K * N, r);
        const c = native().gemm(a, b, M, N, K, bt);
        expect(maxRelErr(c, matmul64(a, b, M, N, K, bt))).toBeLessThan(1e-5 * Math.sqrt(K));
      });
    }
  }

  it('gives each row the same bits whatever M is (batch invariance)', () => {
    const r = rng(9);
    const [M, N, K] = [37, 300, 700];
    const a = randomArray(M * K, r);
    const b = randomArray(N * K, r);
    const all = native().gemm(a, b, M, N, K, true);
    for (const i of [0, 5, 36]) {
      const one = native().gemm(a.slice(i * K, (i + 1) * K), b, 1, N, K, true);
      expect(Buffer.from(one.buffer).equals(Buffer.from(all.slice(i * N, (i + 1) * N).buffer))).toBe(true);
    }
  });
});

describe('gradient buffers', () => {
  for (const entropyCoef of [0, 0.01]) {
    it(`policyLoss writes the same gradient in place, into a reused buffer and into a new one (entropyCoef ${entropyCoef})`, () => {
      const r = rng(5);
      const [T, V] = [9, 700];
      const logits = randomArray(T * V, r, 4);
      const targets = Int32Array.from({ length: T }, (_, t) => (t * 37) % V);
      const a = {
        vocab: V,
        targets,
        mask: new Float32Array(T).fill(1),
        advantages: Float32Array.from({ length: T }, (_, t) => (t % 2 ? 1 : -1)),
        oldLogprobs: new Float32Array(T).fill(-Math.log(V)),
      };
      const cfg = { entropyCoef };
      const fresh = policyLoss({ ...a, logits }, cfg);
      const reused = new Float32Array(T * V).fill(123);
      const intoReused = policyLoss({ ...a, logits }, cfg, { gradLogits: reused });
      expect(intoReused.gradLogits).toBe(reused);
      expect(Buffer.from(reused.buffer).equals(Buffer.from(fresh.gradLogits.buffer))).toBe(true);
      const inPlace = logits.slice();
      const r2 = policyLoss({ ...a, logits: inPlace }, cfg, { gradLogits: inPlace });
      expect(r2.loss).toBe(fresh.loss);
      expect(Buffer.from(r2.logprobs.buffer).equals(Buffer.from(fresh.logprobs.buffer))).toBe(true);
      expect(maxRelErr(inPlace, fresh.gradLogits)).toBeLessThan(1e-6);
    });
  }
});

describe('fused LM-head losses', () => {
  function setup(T: number, H: number, V: number, seed: number) {
    const r = rng(seed);
    const hidden = randomArray(T * H, r, 1);
    const weight = randomArray(V * H, r, 0.5);
    const targets = Int32Array.from({ length: T }, () => Math.floor(r() * V));
    const mask = Float32Array.from({ length: T }, (_, t) => (t % 5 === 3 ? 0 : 1));
    const advantages = Float32Array.from({ length: T }, () => r() * 2 - 1);
    const oldLogprobs = Float32Array.from({ length: T }, () => -Math.log(V) + (r() - 0.5) * 0.6);
    const seqIds = Int32Array.from({ length: T }, (_, t) => Math.floor(t / 4));
    const logits = native().gemm(hidden, weight, T, V, H, true);
    return { hidden, weight, targets, mask, advantages, oldLogprobs, seqIds, logits, T, H, V };
  }

  const cfg = { agg: 'seq-mean-token-mean' as const, entropyCoef: 0.01, klCoef: 0, dualClip: 3 };

  for (const chunkTokens of [1, 3, 64]) {
    it(`policyLossFused equals the unfused loss on the same logits (chunk ${chunkTokens})`, () => {
      const s = setup(11, 24, 300, 1 + chunkTokens);
      const unfused = policyLoss({ ...s, logits: s.logits, vocab: s.V }, cfg);
      const fused = policyLossFused({ ...s, hiddenSize: s.H, vocab: s.V }, cfg, { chunkTokens });
      expect(fused.loss).toBe(unfused.loss);
      expect(Buffer.from(fused.logprobs.buffer).equals(Buffer.from(unfused.logprobs.buffer))).toBe(true);
      expect(fused.entropy).toBe(unfused.entropy);
      expect(fused.clipFracHigh).toBe(unfused.clipFracHigh);
      // dX = G·W and dW = Gᵀ·X from the unfused gradient, in float64.
      expect(maxRelErr(fused.gradHidden, matmul64(unfused.gradLogits, s.weight, s.T, s.H, s.V, false))).toBeLessThan(
        1e-4,
      );
      const gT = new Float64Array(s.V * s.T);
      for (let t = 0; t < s.T; t++)
        for (let v = 0; v < s.V; v++) gT[v * s.T + t] = unfused.gradLogits[t * s.V + v] as number;
      expect(maxRelErr(fused.gradWeight, matmul64(gT, s.hidden, s.V, s.H, s.T, false))).toBeLessThan(1e-4);
    });
  }

  it('sftLossFused equals sftLoss and has finite-difference gradients', () => {
    const s = setup(6, 8, 50, 42);
    const unfused = sftLoss({ logits: s.logits, vocab: s.V, targets: s.targets, mask: s.mask });
    const fused = sftLossFused({ ...s, hiddenSize: s.H, vocab: s.V }, { chunkTokens: 4 });
    expect(fused.loss).toBe(unfused.loss);
    const f = (hidden: Float32Array, weight: Float32Array) =>
      sftLossFused({ ...s, hidden, weight, hiddenSize: s.H, vocab: s.V }).loss;
    const h = 1e-2;
    for (const i of [0, 7, 20, 47]) {
      const plus = s.hidden.slice();
      const minus = s.hidden.slice();
      plus[i] = (plus[i] as number) + h;
      minus[i] = (minus[i] as number) - h;
      const fd = (f(plus, s.weight) - f(minus, s.weight)) / (2 * h);
      expect(Math.abs(fd - (fused.gradHidden[i] as number))).toBeLessThan(2e-3 + 2e-2 * Math.abs(fd));
    }
    for (const i of [0, 33, 200, 399]) {
      const plus = s.weight.slice();
      const minus = s.weight.slice();
      plus[i] = (plus[i] as number) + h;
      minus[i] = (minus[i] as number) - h;
      const fd = (f(s.hidden, plus) - f(s.hidden, minus)) / (2 * h);
      expect(Math.abs(fd - (fused.gradWeight[i] as number))).toBeLessThan(2e-3 + 2e-2 * Math.abs(fd));
    }
  });

  for (const temperature of [0.7, 1.5]) {
    for (const entropyCoef of [0, 0.01]) {
      it(`policyLossFused at temperature ${temperature} equals the unfused loss at it (entropyCoef ${entropyCoef})`, () => {
        const s = setup(11, 24, 300, 5);
        const c = { ...cfg, entropyCoef, temperature };
        const unfused = policyLoss({ ...s, logits: s.logits, vocab: s.V }, c);
        const fused = policyLossFused({ ...s, hiddenSize: s.H, vocab: s.V }, c, { chunkTokens: 4 });
        expect(fused.loss).toBe(unfused.loss);
        expect(Buffer.from(fused.logprobs.buffer).equals(Buffer.from(unfused.logprobs.buffer))).toBe(true);
        expect(fused.entropy).toBe(unfused.entropy);
        // The scale is applied: the temperature-1 logprobs differ.
        const plain = policyLossFused({ ...s, hiddenSize: s.H, vocab: s.V }, { ...cfg, entropyCoef });
        expect(Buffer.from(plain.logprobs.buffer).equals(Buffer.from(fused.logprobs.buffer))).toBe(false);
        expect(maxRelErr(fused.gradHidden, matmul64(unfused.gradLogits, s.weight, s.T, s.H, s.V, false))).toBeLessThan(
          1e-4,
        );
        const gT = new Float64Array(s.V * s.T);
        for (let t = 0; t < s.T; t++)
          for (let v = 0; v < s.V; v++) gT[v * s.T + t] = unfused.gradLogits[t * s.V + v] as number;
        expect(maxRelErr(fused.gradWeight, matmul64(gT, s.hidden, s.V, s.H, s.T, false))).toBeLessThan(1e-4);
      });
    }
  }

  it('sftLossFused at a temperature equals sftLoss at it and has finite-difference gradients', () => {
    const s = setup(6, 8, 50, 43);
    const temperature = 0.6;
    const unfused = sftLoss({ logits: s.logits, vocab: s.V, targets: s.targets, mask: s.mask, temperature });
    const fused = sftLossFused({ ...s, hiddenSize: s.H, vocab: s.V, temperature }, { chunkTokens: 4 });
    expect(fused.loss).toBe(unfused.loss);
    expect(Buffer.from(fused.logprobs.buffer).equals(Buffer.from(unfused.logprobs.buffer))).toBe(true);
    const f = (hidden: Float32Array, weight: Float32Array) =>
      sftLossFused({ ...s, hidden, weight, hiddenSize: s.H, vocab: s.V, temperature }).loss;
    const h = 1e-2;
    for (const i of [0, 7, 20, 47]) {
      const plus = s.hidden.slice();
      const minus = s.hidden.slice();
      plus[i] = (plus[i] as number) + h;
      minus[i] = (minus[i] as number) - h;
      const fd = (f(plus, s.weight) - f(minus, s.weight)) / (2 * h);
      expect(Math.abs(fd - (fused.gradHidden[i] as number))).toBeLessThan(2e-3 + 2e-2 * Math.abs(fd));
    }
    for (const i of [0, 33, 200, 399]) {
      const plus = s.weight.slice();
      const minus = s.weight.slice();
      plus[i] = (plus[i] as number) + h;
      minus[i] = (minus[i] as number) - h;
      const fd = (f(s.hidden, plus) - f(s.hidden, minus)) / (2 * h);
      expect(Math.abs(fd - (fused.gradWeight[i] as number))).toBeLessThan(2e-3 + 2e-2 * Math.abs(fd));
    }
    expect(errorCode(() => sftLossFused({ ...s, hiddenSize: s.H, vocab: s.V, temperature: 0 }))).toBe(
      'INVALID_ARGUMENT',
    );
  });

  it('accumulates into a given gradWeight and writes a given gradHidden', () => {
    const s = setup(5, 8, 40, 11);
    const once = sftLossFused({ ...s, hiddenSize: s.H, vocab: s.V });
    const gradWeight = new Float32Array(s.V * s.H);
    const gradHidden = new Float32Array(s.T * s.H).fill(7);
    for (let i = 0; i < 2; i++) sftLossFused({ ...s, hiddenSize: s.H, vocab: s.V }, { gradWeight, gradHidden });
    expect(
      maxRelErr(
        gradWeight,
        once.gradWeight.map((x) => 2 * x),
      ),
    ).toBeLessThan(1e-6);
    expect(Array.from(gradHidden)).toEqual(Array.from(once.gradHidden));
  });

  it('rejects bad shapes with INVALID_ARGUMENT and non-finite weights with NON_FINITE_LOGITS', () => {
    const s = setup(4, 8, 20, 3);
    expect(errorCode(() => sftLossFused({ ...s, hiddenSize: 7, vocab: s.V }))).toBe('INVALID_ARGUMENT');
    expect(errorCode(() => sftLossFused({ ...s, hiddenSize: s.H, vocab: s.V }, { chunkTokens: 0 }))).toBe(
      'INVALID_ARGUMENT',
    );
    const bad = s.weight.slice();
    bad[5] = Number.NaN;
    expect(errorCode(() => sftLossFused({ ...s, weight: bad, hiddenSize: s.H, vocab: s.V }))).toBe('NON_FINITE_LOGITS');
  });
});

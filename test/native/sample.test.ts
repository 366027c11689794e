/**
 * sample() against the float64 reference of the processed distribution in
 * test/helpers/sampling-reference.ts (written from the spec, independent of native/).
 *
 * - Distributions: one sample() call per case, a batch of identical rows at positions 0..N−1 with a
 *   fixed seed (deterministic), then Pearson's chi-square goodness of fit against the reference
 *   (cells merged so that each expects ≥ 5; the test fails when p < 1e-4), plus: no token outside the
 *   kept set ever appears, and each reported logprob / rawLogprob matches the reference to 1e-5.
 *   Filter decisions are kept well away from their thresholds (the reference reports the margins) so
 *   that float32 and float64 agree on the kept set.
 * - Reproducibility: a row's token depends only on (logits row, params, seed, position), so rows
 *   are compared bitwise alone and inside batches of 1, 7 and 64 at different indices.
 * - Greedy rows, edge cases, errors (inputs unchanged after a failed call) and a Qwen-sized case.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type SampleResult, type SamplingParams, sample, sftLoss } from '../../src/index.js';
import { addonCandidates } from '../../src/native.js';
import { expectSwerlError } from '../helpers/errors.js';
import { normal, rng } from '../helpers/random.js';
import {
  chiSquareGof,
  chiSquareSf,
  logSoftmax,
  type ProcessedDistribution,
  processedDistribution,
  referenceLogprob,
  tokenCounts,
} from '../helpers/sampling-reference.js';

// ---- helpers -------------------------------------------------------------------------------------

function normalRow(vocab: number, seed: number, scale: number): Float32Array {
  const r = rng(seed);
  return Float32Array.from({ length: vocab }, () => scale * normal(r));
}

/**
 * A peaked row: a handful of large logits at scattered indices over a long N(0, 1) tail; most of the
 * mass sits on a few tokens while hundreds of tokens keep a small probability each.
 */
function peakedRow(vocab: number, seed: number): Float32Array {
  const r = rng(seed);
  const row = Float32Array.from({ length: vocab }, () => normal(r) - 1);
  const peaks = [6, 5.2, 4.9, 4.1, 3.5, 3.3, 2.8, 2.2];
  for (const v of peaks) row[Math.floor(r() * vocab)] = v;
  return row;
}

/** n copies of `row`, back to back. */
function repeatRow(row: Float32Array, n: number): Float32Array {
  const out = new Float32Array(row.length * n);
  for (let i = 0; i < n; i++) out.set(row, i * row.length);
  return out;
}

function positionsUpTo(n: number): Int32Array {
  return Int32Array.from({ length: n }, (_, i) => i);
}

/** Samples `row` n times in one call: identical rows and params, positions 0..n−1. */
function sampleMany(row: Float32Array, params: SamplingParams, n: number): SampleResult {
  return sample(repeatRow(row, n), row.length, new Array<SamplingParams>(n).fill(params), positionsUpTo(n));
}

interface Checked {
  d: ProcessedDistribution;
  out: SampleResult;
  counts: Float64Array;
  pValue: number;
}

/**
 * Samples and checks: kept-set membership, logprobs and rawLogprobs against the reference, and the
 * chi-square fit. Returns what it computed for further checks.
 */
function checkDistribution(row: Float32Array, params: SamplingParams, n: number): Checked {
  const d = processedDistribution(row, params);
  // The case is built away from the filters' thresholds, so float32 and float64 keep the same set.
  expect(d.minPMargin).toBeGreaterThan(1e-4);
  expect(d.topPMargin).toBeGreaterThan(1e-4);
  const out = sampleMany(row, params, n);
  expect(out.tokens.length).toBe(n);
  const raw = logSoftmax(row);
  const outside = new Set<number>();
  let lpErr = 0;
  let rawErr = 0;
  for (let i = 0; i < n; i++) {
    const t = out.tokens[i] as number;
    if (!((d.probs[t] ?? 0) > 0)) {
      outside.add(t);
      continue;
    }
    lpErr = Math.max(lpErr, Math.abs((out.logprobs[i] as number) - referenceLogprob(d, t)));
    rawErr = Math.max(rawErr, Math.abs((out.rawLogprobs[i] as number) - (raw[t] as number)));
  }
  expect([...outside], 'tokens outside the kept set').toEqual([]);
  expect(lpErr).toBeLessThan(1e-5);
  expect(rawErr).toBeLessThan(1e-5);
  const counts = tokenCounts(out.tokens, row.length);
  const fit = chiSquareGof(counts, d.probs);
  expect(fit.cells).toBeGreaterThan(1);
  expect(fit.pValue, `chi-square ${fit.stat.toFixed(1)} on ${fit.dof} dof`).toBeGreaterThan(1e-4);
  return { d, out, counts, pValue: fit.pValue };
}

// ---- the statistics helpers themselves -------------------------------------------------------------

describe('chi-square helpers', () => {
  it('chiSquareSf matches known quantiles', () => {
    expect(chiSquareSf(3.841458820694124, 1)).toBeCloseTo(0.05, 10);
    expect(chiSquareSf(18.307038053275146, 10)).toBeCloseTo(0.05, 10);
    expect(chiSquareSf(6.634896601021214, 1)).toBeCloseTo(0.01, 10);
    for (const x of [0.1, 1, 5, 30, 100]) expect(chiSquareSf(x, 2)).toBeCloseTo(Math.exp(-x / 2), 12);
    // Large dof: Wilson–Hilferty is accurate to ~1e-3 here.
    const k = 1000;
    for (const x of [900, 1000, 1100, 1200]) {
      const z = ((x / k) ** (1 / 3) - (1 - 2 / (9 * k))) / Math.sqrt(2 / (9 * k));
      const erfcApprox = 0.5 * erfc(z / Math.SQRT2);
      expect(Math.abs(chiSquareSf(x, k) - erfcApprox)).toBeLessThan(2e-3);
    }
  });

  it('chiSquareGof rejects a wrong distribution and accepts the right one', () => {
    const r = rng(5);
    const p = [0.5, 0.3, 0.15, 0.05];
    const n = 20000;
    const counts = new Float64Array(4);
    for (let i = 0; i < n; i++) {
      let u = r();
      let j = 0;
      while (j < 3 && u >= (p[j] as number)) u -= p[j++] as number;
      counts[j] = (counts[j] as number) + 1;
    }
    expect(chiSquareGof(counts, p).pValue).toBeGreaterThan(1e-4);
    expect(chiSquareGof(counts, [0.46, 0.34, 0.15, 0.05]).pValue).toBeLessThan(1e-6);
    expect(chiSquareGof([1, 0, 0, 5], [0.5, 0.5, 0, 0]).stat).toBe(Number.POSITIVE_INFINITY);
  });
});

/** erfc by Abramowitz–Stegun 7.1.26 (absolute error < 1.5e-7), for the Wilson–Hilferty check. */
function erfc(x: number): number {
  const s = Math.sign(x);
  const a = Math.abs(x);
  const t = 1 / (1 + 0.3275911 * a);
  const y = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  const erf = 1 - y * Math.exp(-a * a);
  return 1 - s * erf;
}

// ---- distributions -------------------------------------------------------------------------------

const N_SMALL = 40000;
const N_LARGE = 20000;
const SEED = 20240601;

describe('sampled frequencies match the processed distribution', () => {
  const row10 = normalRow(10, 11, 1.5);

  it.each([1, 0.7, 1.5])('temperature %s (vocab 10)', (T) => {
    const { d } = checkDistribution(row10, { temperature: T, seed: SEED }, N_SMALL);
    expect(d.keptCount).toBe(10);
  });

  it('the test has power: temperature-0.7 samples do not fit the temperature-1 distribution', () => {
    const out = sampleMany(row10, { temperature: 0.7, seed: SEED + 1 }, N_SMALL);
    const wrong = processedDistribution(row10, { temperature: 1 });
    expect(chiSquareGof(tokenCounts(out.tokens, 10), wrong.probs).pValue).toBeLessThan(1e-8);
  });

  it('independent seeds at one position also sample the distribution', () => {
    const n = N_SMALL;
    const params = Array.from({ length: n }, (_, i) => ({ temperature: 1.2, seed: 7_000_000 + 3 * i }));
    const out = sample(repeatRow(row10, n), 10, params, new Int32Array(n).fill(17));
    const d = processedDistribution(row10, { temperature: 1.2 });
    expect(chiSquareGof(tokenCounts(out.tokens, 10), d.probs).pValue).toBeGreaterThan(1e-4);
  });

  it('draws at consecutive positions, and at consecutive seeds, are independent (pairs test)', () => {
    const row = Float32Array.from([0.4, -0.3, 0.9, 0, -1]);
    const d = processedDistribution(row, {});
    const pairProbs = new Float64Array(25);
    for (let a = 0; a < 5; a++)
      for (let b = 0; b < 5; b++) pairProbs[a * 5 + b] = (d.probs[a] ?? 0) * (d.probs[b] ?? 0);
    const n = N_SMALL;
    const byPos = sampleMany(row, { seed: SEED }, n).tokens;
    const seeds = Array.from({ length: n }, (_, i) => ({ seed: 123_456 + i }));
    const bySeed = sample(repeatRow(row, n), 5, seeds, new Int32Array(n).fill(3)).tokens;
    for (const tokens of [byPos, bySeed]) {
      const pairs = new Float64Array(25);
      for (let i = 0; i + 1 < n; i += 2) {
        const k = (tokens[i] as number) * 5 + (tokens[i + 1] as number);
        pairs[k] = (pairs[k] as number) + 1;
      }
      expect(chiSquareGof(pairs, pairProbs).pValue).toBeGreaterThan(1e-4);
    }
  });

  it('top-k alone (vocab 20, k = 4)', () => {
    const row = normalRow(20, 21, 1.2);
    const { d } = checkDistribution(row, { topK: 4, seed: SEED }, N_SMALL);
    expect(d.keptCount).toBe(4);
  });

  it('top-p alone (vocab 20, p = 0.8)', () => {
    const row = normalRow(20, 22, 1.2);
    const { d } = checkDistribution(row, { topP: 0.8, seed: SEED }, N_SMALL);
    expect(d.keptCount).toBeGreaterThan(1);
    expect(d.keptCount).toBeLessThan(20);
  });

  it('min-p alone (vocab 20, minP = 0.1)', () => {
    const row = normalRow(20, 23, 1.2);
    const { d } = checkDistribution(row, { minP: 0.1, seed: SEED }, N_SMALL);
    expect(d.keptCount).toBeGreaterThan(1);
    expect(d.keptCount).toBeLessThan(20);
  });

  it('top-k + top-p (vocab 30, T = 0.9, k = 6, p = 0.7)', () => {
    const row = normalRow(30, 24, 1);
    const params = { temperature: 0.9, topK: 6, topP: 0.7, seed: SEED };
    const { d } = checkDistribution(row, params, N_SMALL);
    // Both filters bind: top-p cuts inside the top 6.
    expect(processedDistribution(row, { temperature: 0.9, topP: 0.7 }).keptCount).toBeGreaterThan(6);
    expect(d.keptCount).toBeLessThan(6);
    expect(d.keptCount).toBeGreaterThan(1);
  });

  it('min-p + top-k + top-p (vocab 50, T = 1.2)', () => {
    const row = normalRow(50, 25, 1.5);
    const params = { temperature: 1.2, minP: 0.05, topK: 14, topP: 0.9, seed: SEED };
    const { d } = checkDistribution(row, params, N_SMALL);
    // Each filter binds: min-p alone keeps more than 14, top-k 14 then top-p cuts inside it.
    const minpOnly = processedDistribution(row, { temperature: 1.2, minP: 0.05 }).keptCount;
    expect(minpOnly).toBeGreaterThan(14);
    expect(minpOnly).toBeLessThan(50);
    expect(d.keptCount).toBeLessThan(14);
    expect(d.keptCount).toBeGreaterThan(1);
  });

  it('min-p binding before top-k (min-p keeps fewer than k)', () => {
    const row = normalRow(50, 26, 1.5);
    const params = { temperature: 0.8, minP: 0.2, topK: 30, seed: SEED };
    const { d } = checkDistribution(row, params, N_SMALL);
    expect(d.keptCount).toBeLessThan(30);
    expect(d.keptCount).toBeGreaterThan(1);
  });

  // Penalties: logits with both signs among the penalised tokens.
  const penRow = Float32Array.from([1.2, -0.4, 0.8, -1.1, 0.3, 1.5, -0.2, 0.6, -0.9, 0.1, 1.0, -0.6]);

  it('repetition penalty (prompt and output tokens, both signs)', () => {
    const params = {
      repetitionPenalty: 1.6,
      promptTokens: Int32Array.from([0, 3, 3, 7]),
      outputTokens: Int32Array.from([5, 8, 0]),
      seed: SEED,
    };
    const { d } = checkDistribution(penRow, params, N_SMALL);
    expect(d.y[0]).toBeCloseTo(1.2 / 1.6, 6);
    expect(d.y[3]).toBeCloseTo(-1.1 * 1.6, 6);
    expect(d.y[1]).toBeCloseTo(-0.4, 6);
  });

  it('presence penalty (output tokens only; prompt tokens are not penalised)', () => {
    const params = {
      presencePenalty: 1.0,
      promptTokens: Int32Array.from([2, 10]),
      outputTokens: Int32Array.from([0, 5, 5, 4]),
      seed: SEED,
    };
    const { d } = checkDistribution(penRow, params, N_SMALL);
    expect(d.y[5]).toBeCloseTo(0.5, 6);
    expect(d.y[2]).toBeCloseTo(0.8, 6);
  });

  it('frequency penalty (per occurrence)', () => {
    const params = { frequencyPenalty: 0.5, outputTokens: Int32Array.from([5, 5, 5, 0, 2, 2]), seed: SEED };
    const { d } = checkDistribution(penRow, params, N_SMALL);
    expect(d.y[5]).toBeCloseTo(0, 6);
  });

  it('negative presence / frequency penalties raise logits', () => {
    const params = {
      presencePenalty: -0.5,
      frequencyPenalty: -0.25,
      outputTokens: Int32Array.from([3, 3, 8]),
      seed: SEED,
    };
    checkDistribution(penRow, params, N_SMALL);
  });

  it('all penalties with temperature and top-k', () => {
    const params = {
      temperature: 0.8,
      topK: 8,
      repetitionPenalty: 1.3,
      presencePenalty: 0.4,
      frequencyPenalty: 0.3,
      promptTokens: Int32Array.from([1, 2, 11]),
      outputTokens: Int32Array.from([0, 0, 5, 9, 5, 5]),
      seed: SEED,
    };
    const { d } = checkDistribution(penRow, params, N_SMALL);
    expect(d.keptCount).toBe(8);
  });

  it('ties at the top-k and top-p cuts are broken by lower index', () => {
    const r = rng(31);
    const levels = [1, 0.5, 0, -1];
    const row = Float32Array.from({ length: 40 }, () => levels[Math.floor(r() * 4)] as number);
    const n1 = row.filter((v) => v === 1).length;
    const k = n1 + 2; // cuts inside the group of 0.5s
    const { d } = checkDistribution(row, { topK: k, seed: SEED }, N_SMALL);
    const halves = [...row.keys()].filter((j) => row[j] === 0.5);
    expect(halves.length).toBeGreaterThan(2);
    expect(d.kept[halves[0] as number]).toBe(1);
    expect(d.kept[halves[1] as number]).toBe(1);
    expect(d.kept[halves[2] as number]).toBe(0);
    // Top-p whose cut lands inside the 0.5 group, halfway through its second member: the kept 0.5s
    // are the two lowest indices.
    let total = 0;
    for (const v of row) total += Math.exp(v - 1);
    const topP = (n1 + 1.5 * Math.exp(-0.5)) / total;
    const dp = processedDistribution(row, { topP });
    expect(dp.keptCount).toBe(n1 + 2);
    expect(halves.filter((j) => dp.kept[j] === 1)).toEqual(halves.slice(0, 2));
    checkDistribution(row, { topP, seed: SEED }, N_SMALL);
  });

  it('−Inf logits are never sampled, also when top-k reaches into them', () => {
    const r = rng(41);
    const row = Float32Array.from({ length: 16 }, (_, j) => (j % 3 === 1 ? normal(r) : Number.NEGATIVE_INFINITY));
    const finite = row.filter((v) => v > Number.NEGATIVE_INFINITY).length;
    expect(finite).toBe(5);
    checkDistribution(row, { topK: 9, seed: SEED }, N_SMALL);
    checkDistribution(row, { topP: 0.75, temperature: 0.9, seed: SEED }, N_SMALL);
    checkDistribution(row, { minP: 0.05, seed: SEED }, N_SMALL);
    checkDistribution(row, { seed: SEED }, N_SMALL);
  });

  it('large vocabulary (1000, peaked), temperature 1', () => {
    checkDistribution(peakedRow(1000, 51), { seed: SEED }, N_LARGE);
  });

  it('large vocabulary (1000, peaked), T = 0.8, top-k 50 + top-p 0.9', () => {
    const row = peakedRow(1000, 52);
    const { d } = checkDistribution(row, { temperature: 0.8, topK: 50, topP: 0.9, seed: SEED }, N_LARGE);
    expect(d.keptCount).toBeLessThan(50);
  });

  it('large vocabulary (1000, peaked), T = 1.3, min-p 0.02', () => {
    const row = peakedRow(1000, 53);
    const { d } = checkDistribution(row, { temperature: 1.3, minP: 0.02, seed: SEED }, N_LARGE);
    expect(d.keptCount).toBeGreaterThan(8);
    expect(d.keptCount).toBeLessThan(1000);
  });

  it('vocabulary 4096 (more tokens than histogram bins), top-k 300 + top-p 0.8', () => {
    const row = normalRow(4096, 54, 1.3);
    const { d } = checkDistribution(row, { topK: 300, topP: 0.8, seed: SEED }, 6000);
    expect(d.keptCount).toBeLessThan(300);
    expect(d.keptCount).toBeGreaterThan(50);
  });
});

describe('logprobs', () => {
  it('with temperature 1 and no filter or penalty, logprobs equal rawLogprobs', () => {
    for (const [vocab, seed] of [
      [7, 1],
      [1000, 2],
      [151936, 3],
    ] as const) {
      const rows = 8;
      const logits = new Float32Array(rows * vocab);
      for (let i = 0; i < rows; i++) logits.set(normalRow(vocab, seed * 100 + i, 2), i * vocab);
      const params = Array.from({ length: rows }, (_, i) => ({ seed: 99 + i }));
      const out = sample(logits, vocab, params, positionsUpTo(rows));
      for (let i = 0; i < rows; i++) {
        const raw = out.rawLogprobs[i] as number;
        expect(Math.abs((out.logprobs[i] as number) - raw)).toBeLessThanOrEqual(1e-6 * Math.max(1, Math.abs(raw)));
      }
    }
  });

  it('rawLogprobs are bitwise equal to sftLoss logprobs of the same row', () => {
    for (const vocab of [3, 50, 5000, 151936]) {
      const rows = 4;
      const logits = new Float32Array(rows * vocab);
      for (let i = 0; i < rows; i++) logits.set(normalRow(vocab, vocab + i, 3), i * vocab);
      const kinds: SamplingParams[] = [
        { seed: 1 },
        { temperature: 0.6, topK: 10, topP: 0.9, seed: 2 },
        { temperature: 0, seed: 3 },
        { repetitionPenalty: 1.4, outputTokens: [0, 1, 2], minP: 0.1, seed: 4 },
      ];
      const out = sample(logits, vocab, kinds, positionsUpTo(rows));
      for (let i = 0; i < rows; i++) {
        const row = logits.subarray(i * vocab, (i + 1) * vocab);
        const t = out.tokens[i] as number;
        const ref = sftLoss({ logits: row.slice(), vocab, targets: Int32Array.of(t), mask: Float32Array.of(1) });
        expect(out.rawLogprobs[i]).toBe(ref.logprobs[0]);
        expect(Math.abs((out.rawLogprobs[i] as number) - (logSoftmax(row)[t] as number))).toBeLessThan(1e-5);
      }
    }
  });
});

// ---- reproducibility ------------------------------------------------------------------------------

describe('batch invariance and determinism', () => {
  const kinds: SamplingParams[] = [
    {},
    { temperature: 0.7, topK: 5 },
    { topP: 0.8 },
    { temperature: 1.3, minP: 0.1 },
    { temperature: 0.9, topK: 20, topP: 0.9, minP: 0.02 },
    { temperature: 0 },
    {
      temperature: 0.9,
      topK: 10,
      repetitionPenalty: 1.3,
      presencePenalty: 0.5,
      frequencyPenalty: 0.2,
      promptTokens: [1, 2, 3, 50],
      outputTokens: Int32Array.from([4, 4, 7, 1, 60]),
    },
  ];

  function randomRow(r: () => number, vocab: number): Float32Array {
    const s = 0.5 + 3 * r();
    return Float32Array.from({ length: vocab }, () => s * normal(r));
  }

  for (const vocab of [1000, 151936]) {
    it(`a row gives the same token and logprobs alone and at any index of batches of 1, 7 and 64 (vocab ${vocab})`, () => {
      const r = rng(vocab);
      const sizes = vocab > 100000 ? [1, 7, 24] : [1, 7, 64];
      // Filler rows come from a pool (generating 151936-wide rows dominates the run time otherwise).
      const pool = Array.from({ length: 12 }, () => randomRow(r, vocab));
      for (const [ki, kind] of kinds.entries()) {
        // Four targets: (row, params with a seed, position).
        const targets = Array.from({ length: 4 }, (_, t) => ({
          row: randomRow(r, vocab),
          params: { ...kind, seed: 1000 * ki + 17 * t + Math.floor(r() * 1e9) },
          position: Math.floor(r() * 100000),
        }));
        const alone = targets.map((t) => sample(t.row, vocab, [t.params], Int32Array.of(t.position)));
        for (const size of sizes) {
          const count = Math.min(size, targets.length);
          const logits = new Float32Array(size * vocab);
          const params: SamplingParams[] = [];
          const positions = new Int32Array(size);
          for (let i = 0; i < size; i++) {
            logits.set(pool[Math.floor(r() * pool.length)] as Float32Array, i * vocab);
            params.push({
              ...(kinds[Math.floor(r() * kinds.length)] as SamplingParams),
              seed: Math.floor(r() * 2 ** 40),
            });
            positions[i] = Math.floor(r() * 1000);
          }
          // Targets at distinct indices: first, last, and in between.
          const slots = [0, size - 1, Math.floor(size / 2), Math.floor(size / 3)];
          const placed: number[] = [];
          for (let t = 0; t < count; t++) {
            const slot = slots.find((s) => !placed.includes(s)) as number;
            placed.push(slot);
            const tg = targets[t] as (typeof targets)[number];
            logits.set(tg.row, slot * vocab);
            params[slot] = tg.params;
            positions[slot] = tg.position;
          }
          const out = sample(logits, vocab, params, positions);
          const again = sample(logits, vocab, params, positions);
          expect(again.tokens).toEqual(out.tokens);
          expect(again.logprobs).toEqual(out.logprobs);
          expect(again.rawLogprobs).toEqual(out.rawLogprobs);
          for (let t = 0; t < count; t++) {
            const slot = placed[t] as number;
            const a = alone[t] as SampleResult;
            expect(out.tokens[slot], `kind ${ki}, batch ${size}, index ${slot}`).toBe(a.tokens[0]);
            expect(out.logprobs[slot]).toBe(a.logprobs[0]);
            expect(out.rawLogprobs[slot]).toBe(a.rawLogprobs[0]);
          }
        }
      }
    });
  }

  it('positions default to 0; different positions and seeds change the draw', () => {
    const row = normalRow(64, 8, 0.5);
    const p = { seed: 42 };
    const a = sample(row, 64, [p]);
    const b = sample(row, 64, [p], Int32Array.of(0));
    expect(a.tokens[0]).toBe(b.tokens[0]);
    expect(a.logprobs[0]).toBe(b.logprobs[0]);
    // Over 200 positions of a near-uniform 64-token row, many tokens appear.
    const many = sampleMany(row, p, 200);
    expect(new Set(many.tokens).size).toBeGreaterThan(40);
    const seeds = Array.from({ length: 200 }, (_, i) => ({ seed: i }));
    const bySeed = sample(repeatRow(row, 200), 64, seeds);
    expect(new Set(bySeed.tokens).size).toBeGreaterThan(40);
  });

  it('an absent seed still samples (a random seed), from the kept set', () => {
    const row = normalRow(30, 9, 1);
    const d = processedDistribution(row, { topK: 3 });
    const out = sampleMany(row, { topK: 3 }, 100);
    for (const t of out.tokens) expect(d.kept[t]).toBe(1);
  });

  it('seeds up to 2^53 − 1 are accepted', () => {
    const row = normalRow(10, 10, 1);
    const out = sample(repeatRow(row, 2), 10, [{ seed: 2 ** 53 - 1 }, { seed: 0 }]);
    expect(out.tokens.length).toBe(2);
  });
});

// ---- greedy -----------------------------------------------------------------------------------------

describe('greedy (temperature 0)', () => {
  function lse(x: ArrayLike<number>): number {
    const ls = logSoftmax(x);
    return (x[0] as number) - (ls[0] as number);
  }

  it('takes the first maximum on ties; logprob is log_softmax of the logits', () => {
    const row = Float32Array.from([1, 3, 3, 2, -1]);
    const n = 50;
    const out = sample(repeatRow(row, n), 5, new Array(n).fill({ temperature: 0, seed: 5 }), positionsUpTo(n));
    for (let i = 0; i < n; i++) {
      expect(out.tokens[i]).toBe(1);
      expect(out.logprobs[i]).toBeCloseTo(3 - lse(row), 5);
      expect(out.rawLogprobs[i]).toBeCloseTo(3 - lse(row), 5);
    }
  });

  it('ignores filters; the logprob does not use the temperature or filters', () => {
    const row = normalRow(100, 12, 2);
    const d = processedDistribution(row, { temperature: 0 });
    const out = sample(row, 100, [{ temperature: 0, topK: 3, topP: 0.1, minP: 0.5, seed: 1 }]);
    expect(out.tokens[0]).toBe(d.greedyToken);
    expect(Math.abs((out.logprobs[0] as number) - d.greedyLogprob)).toBeLessThan(1e-5);
    expect(d.greedyLogprob).toBeLessThan(-0.01);
  });

  it('applies penalties first; logprob under log_softmax of the penalised logits', () => {
    const row = Float32Array.from([1, 3, 2.9, 2, -0.5]);
    const params = {
      temperature: 0,
      repetitionPenalty: 1.5,
      promptTokens: [1],
      outputTokens: [4],
      seed: 0,
    };
    const d = processedDistribution(row, params);
    expect(d.greedyToken).toBe(2);
    const out = sample(row, 5, [params]);
    expect(out.tokens[0]).toBe(2);
    const y = [1, 2, 2.9, 2, -0.75];
    expect(Math.abs((out.logprobs[0] as number) - (2.9 - lse(y)))).toBeLessThan(1e-5);
    expect(Math.abs((out.rawLogprobs[0] as number) - (logSoftmax(row)[2] as number))).toBeLessThan(1e-5);
    // Presence / frequency penalties can move the maximum too, onto a tie broken by index.
    const p2 = { temperature: 0, presencePenalty: 0.5, frequencyPenalty: 0.5, outputTokens: [1, 2, 2], seed: 0 };
    // y = [1, 2, 1.4, 2, -0.5]: the first maximum is token 1.
    expect(sample(row, 5, [p2]).tokens[0]).toBe(1);
    expect(processedDistribution(row, p2).greedyToken).toBe(1);
  });

  it('with −Inf logits and negative maxima', () => {
    const ninf = Number.NEGATIVE_INFINITY;
    const row = Float32Array.from([ninf, -5, -2, ninf, -2]);
    const out = sample(row, 5, [{ temperature: 0, seed: 3 }]);
    expect(out.tokens[0]).toBe(2);
    expect(Math.abs((out.logprobs[0] as number) - (logSoftmax(row)[2] as number))).toBeLessThan(1e-5);
  });
});

// ---- edge cases ---------------------------------------------------------------------------------------

describe('edge cases', () => {
  it('vocab 1: always token 0 with logprob 0', () => {
    const n = 20;
    for (const p of [{}, { temperature: 0 }, { topK: 1 }, { topP: 0.1 }, { minP: 1 }, { temperature: 3 }]) {
      const out = sampleMany(Float32Array.of(-7.5), { ...p, seed: 1 }, n);
      for (let i = 0; i < n; i++) {
        expect(out.tokens[i]).toBe(0);
        expect(out.logprobs[i]).toBe(0);
        expect(out.rawLogprobs[i]).toBe(0);
      }
    }
  });

  it('all-equal logits: uniform; top-k 3 keeps tokens 0, 1, 2; top-p 0.5 of 4 keeps 0, 1', () => {
    const row = new Float32Array(8).fill(0.25);
    const u = checkDistribution(row, { seed: SEED }, 16000);
    expect(new Set(u.out.tokens).size).toBe(8);
    const k3 = checkDistribution(row, { topK: 3, seed: SEED }, 9000);
    expect([...new Set(k3.out.tokens)].sort()).toEqual([0, 1, 2]);
    for (const lp of k3.out.logprobs) expect(lp).toBeCloseTo(Math.log(1 / 3), 6);
    const four = new Float32Array(4).fill(-1);
    const out = sampleMany(four, { topP: 0.5, seed: SEED }, 4000);
    expect([...new Set(out.tokens)].sort()).toEqual([0, 1]);
    const c = tokenCounts(out.tokens, 4);
    expect(chiSquareGof(c, [0.5, 0.5, 0, 0]).pValue).toBeGreaterThan(1e-4);
    for (const lp of out.logprobs) expect(lp).toBeCloseTo(Math.log(0.5), 6);
    // min-p 1 keeps every tied maximum.
    const m1 = sampleMany(four, { minP: 1, seed: SEED }, 4000);
    expect(new Set(m1.tokens).size).toBe(4);
  });

  it('−Inf: all but one −Inf → that token with logprob 0', () => {
    const ninf = Number.NEGATIVE_INFINITY;
    const row = Float32Array.from([ninf, ninf, 0.3, ninf, ninf]);
    for (const p of [{}, { temperature: 0.5 }, { topK: 4 }, { topP: 0.3 }, { minP: 0.5 }, { temperature: 0 }]) {
      const out = sampleMany(row, { ...p, seed: 2 }, 200);
      for (let i = 0; i < 200; i++) {
        expect(out.tokens[i]).toBe(2);
        expect(out.logprobs[i]).toBe(0);
        expect(out.rawLogprobs[i]).toBe(0);
      }
    }
  });

  it('topK ≥ vocab is a no-op', () => {
    const row = normalRow(12, 13, 1);
    const a = sampleMany(row, { seed: 77 }, 500);
    for (const k of [12, 13, 1000, 2 ** 31 - 1]) {
      const b = sampleMany(row, { topK: k, seed: 77 }, 500);
      expect(b.tokens).toEqual(a.tokens);
      for (let i = 0; i < 500; i++)
        expect(Math.abs((b.logprobs[i] as number) - (a.logprobs[i] as number))).toBeLessThan(1e-6);
    }
  });

  it('an empty batch returns empty arrays', () => {
    const out = sample(new Float32Array(0), 10, []);
    expect(out.tokens).toBeInstanceOf(Int32Array);
    expect(out.logprobs).toBeInstanceOf(Float32Array);
    expect(out.rawLogprobs).toBeInstanceOf(Float32Array);
    expect(out.tokens.length).toBe(0);
    expect(out.logprobs.length).toBe(0);
    expect(out.rawLogprobs.length).toBe(0);
    expect(sample(new Float32Array(0), 10, [], new Int32Array(0)).tokens.length).toBe(0);
  });
});

// ---- errors -----------------------------------------------------------------------------------------

describe('errors (inputs unchanged after a failed call)', () => {
  const vocab = 6;
  const good = (): Float32Array => Float32Array.from([0.1, -0.2, 0.3, 1, -1, 0]);

  /** Calls sample() expecting `code`, then checks that logits, params and positions are unchanged. */
  function expectFailure(
    code: string,
    logits: Float32Array,
    params: SamplingParams[],
    positions?: Int32Array,
    v = vocab,
  ): void {
    const logitsBefore = logits.slice();
    const paramsBefore = structuredClone(params);
    const positionsBefore = positions?.slice();
    expectSwerlError(() => sample(logits, v, params, positions), code);
    expect(logits).toEqual(logitsBefore);
    expect(params).toEqual(paramsBefore);
    if (positions) expect(positions).toEqual(positionsBefore);
  }

  it('NaN or +Inf logits, or a row of only −Inf → NON_FINITE_LOGITS, whichever row it is in', () => {
    const bad = [Number.NaN, Number.POSITIVE_INFINITY];
    for (const v of bad) {
      for (const rowIdx of [0, 2]) {
        const logits = repeatRow(good(), 3);
        logits[rowIdx * vocab + 4] = v;
        for (const kind of [
          {},
          { temperature: 0 },
          { topK: 2, topP: 0.5 },
          { repetitionPenalty: 1.2, outputTokens: [4] },
        ]) {
          expectFailure(
            'NON_FINITE_LOGITS',
            logits,
            [0, 1, 2].map((s) => ({ ...kind, seed: s })),
          );
        }
      }
    }
    const allNinf = repeatRow(good(), 2);
    allNinf.fill(Number.NEGATIVE_INFINITY, vocab);
    for (const kind of [{}, { temperature: 0 }, { topK: 2 }]) {
      expectFailure('NON_FINITE_LOGITS', allNinf, [
        { ...kind, seed: 1 },
        { ...kind, seed: 2 },
      ]);
    }
  });

  it('out-of-range parameters → INVALID_ARGUMENT', () => {
    const bad: SamplingParams[] = [
      { topP: 0 },
      { topP: -0.5 },
      { topP: 1.01 },
      { topP: Number.NaN },
      { minP: -0.01 },
      { minP: 1.5 },
      { minP: Number.NaN },
      { temperature: -0.1 },
      { temperature: Number.NaN },
      { temperature: Number.POSITIVE_INFINITY },
      { topK: -1 },
      { topK: 2.5 },
      { repetitionPenalty: 0 },
      { repetitionPenalty: -1 },
      { presencePenalty: Number.NaN },
      { frequencyPenalty: Number.POSITIVE_INFINITY },
      { seed: -1 },
      { seed: 1.5 },
      { seed: 2 ** 53 },
      { seed: Number.NaN },
    ];
    for (const p of bad) {
      expectFailure('INVALID_ARGUMENT', repeatRow(good(), 2), [{ seed: 1 }, { ...p }]);
    }
  });

  it('history tokens outside the vocabulary → INVALID_ARGUMENT (arrays and Int32Arrays)', () => {
    for (const field of ['promptTokens', 'outputTokens'] as const) {
      for (const tokens of [[vocab], [0, -1], Int32Array.of(vocab), Int32Array.of(2, -3), [1.5], [2 ** 31]]) {
        const p = { repetitionPenalty: 1.1, presencePenalty: 0.1, [field]: tokens, seed: 1 };
        expectFailure('INVALID_ARGUMENT', good(), [p]);
      }
    }
    // Rejected even when no penalty would read them.
    expectFailure('INVALID_ARGUMENT', good(), [{ outputTokens: [vocab + 5], seed: 1 }]);
  });

  it('wrong logits length, positions of the wrong length or type, bad vocab, bad params → INVALID_ARGUMENT', () => {
    expectFailure('INVALID_ARGUMENT', new Float32Array(vocab * 2 - 1), [{ seed: 1 }, { seed: 2 }]);
    expectFailure('INVALID_ARGUMENT', new Float32Array(vocab * 2 + 1), [{ seed: 1 }, { seed: 2 }]);
    expectFailure('INVALID_ARGUMENT', new Float32Array(vocab), []);
    expectFailure('INVALID_ARGUMENT', repeatRow(good(), 2), [{ seed: 1 }, { seed: 2 }], Int32Array.of(0));
    expectFailure('INVALID_ARGUMENT', repeatRow(good(), 2), [{ seed: 1 }, { seed: 2 }], Int32Array.of(0, 1, 2));
    expectSwerlError(
      () => sample(good(), vocab, [{ seed: 1 }], Float32Array.of(0) as unknown as Int32Array),
      'INVALID_ARGUMENT',
    );
    expectSwerlError(() => sample(good(), 0, []), 'INVALID_ARGUMENT');
    expectSwerlError(() => sample(good(), 1.5, [{}]), 'INVALID_ARGUMENT');
    expectSwerlError(() => sample(Array.from(good()) as unknown as Float32Array, vocab, [{}]), 'INVALID_ARGUMENT');
    expectSwerlError(() => sample(good(), vocab, {} as unknown as SamplingParams[]), 'INVALID_ARGUMENT');
    expectSwerlError(() => sample(good(), vocab, [5 as unknown as SamplingParams]), 'INVALID_ARGUMENT');
  });
});

// ---- Qwen-sized -------------------------------------------------------------------------------------

describe('Qwen-sized vocabulary (151936)', () => {
  it('8 rows, top-k 50 + top-p 0.95: kept-set membership and logprobs against the reference', () => {
    const vocab = 151936;
    const rows = 8;
    const logits = new Float32Array(rows * vocab);
    const params: SamplingParams[] = [];
    const refs: ProcessedDistribution[] = [];
    for (let i = 0; i < rows; i++) {
      const r = rng(900 + i);
      const row = logits.subarray(i * vocab, (i + 1) * vocab);
      for (let j = 0; j < vocab; j++) row[j] = (i < 4 ? 1 : 2.5) * normal(r);
      // A few confident tokens on some rows; rows 0-3 are flatter (top-k binds), 4-7 peaked (top-p binds).
      if (i >= 4) for (let t = 0; t < 6; t++) row[Math.floor(r() * vocab)] = 14 - t * 0.7 - i * 0.1;
      const p = { temperature: i % 2 === 0 ? 1 : 0.7, topK: 50, topP: 0.95, seed: 31337 + i };
      params.push(p);
      refs.push(processedDistribution(row, p));
    }
    for (const d of refs) expect(d.topPMargin).toBeGreaterThan(1e-4);
    // Top-p cuts inside the top 50 (it always does at p = 0.95 unless the 50th token holds > 5%), and
    // top-k matters: on the flat rows top-p alone would keep more than 50 tokens.
    for (const d of refs) expect(d.keptCount).toBeLessThan(50);
    expect(new Set(refs.map((d) => d.keptCount)).size).toBeGreaterThan(2);
    for (let i = 0; i < 4; i += 3) {
      const row = logits.subarray(i * vocab, (i + 1) * vocab);
      const p = params[i] as SamplingParams;
      expect(processedDistribution(row, { temperature: p.temperature, topP: 0.95 }).keptCount).toBeGreaterThan(50);
    }
    for (let rep = 0; rep < 3; rep++) {
      const out = sample(
        logits,
        vocab,
        params,
        Int32Array.from({ length: rows }, (_, i) => rep * 1000 + i),
      );
      for (let i = 0; i < rows; i++) {
        const t = out.tokens[i] as number;
        const d = refs[i] as ProcessedDistribution;
        expect(d.kept[t], `row ${i} token ${t}`).toBe(1);
        expect(Math.abs((out.logprobs[i] as number) - referenceLogprob(d, t))).toBeLessThan(1e-5);
        const row = logits.subarray(i * vocab, (i + 1) * vocab);
        expect(Math.abs((out.rawLogprobs[i] as number) - (logSoftmax(row)[t] as number))).toBeLessThan(1e-5);
        const sft = sftLoss({ logits: row.slice(), vocab, targets: Int32Array.of(t), mask: Float32Array.of(1) });
        expect(out.rawLogprobs[i]).toBe(sft.logprobs[0]);
      }
    }
  });
});

// ---- known defects (run in a child process: they crash or read out of bounds) ------------------------

/**
 * Runs the native sampler on one row in a fresh Node process (a segfault must not take down the
 * test worker) and returns its result, or the signal / status it died with.
 */
function sampleInChild(logits: number[], params: Record<string, number>): { token: number; logprob: number } | string {
  const addon = addonCandidates().find((p) => existsSync(p));
  const full = {
    temperature: 1,
    topK: 0,
    topP: 1,
    minP: 0,
    seed: 1,
    repetitionPenalty: 1,
    presencePenalty: 0,
    frequencyPenalty: 0,
    ...params,
  };
  const script = `
    const b = require(${JSON.stringify(addon)});
    const [t, lp] = b.sample(new Float32Array(${JSON.stringify(logits)}), ${logits.length}, [${JSON.stringify(full)}], null);
    process.stdout.write(JSON.stringify({ token: t[0], logprob: lp[0] }));`;
  const res = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30000 });
  if (res.status !== 0) return `exited with status ${res.status}, signal ${res.signal}: ${res.stderr.slice(0, 200)}`;
  return JSON.parse(res.stdout) as { token: number; logprob: number };
}

describe('extreme inputs (run in a child process: a crash must fail the test, not the worker)', () => {
  // These once crashed (a NaN histogram bin index) or returned token −1 (1/T overflowing).
  it('a row whose logits span more than FLT_MAX, with a filter, samples normally', () => {
    expect(sampleInChild([3e38, -3e38], { topK: 1 })).toEqual({ token: 0, logprob: 0 });
  });

  it('a row whose logits span less than ~6e-36, with a filter, samples normally', () => {
    expect(sampleInChild([1e-37, 0, 0], { topK: 1 })).toEqual({ token: 0, logprob: 0 });
  });

  it('a temperature below 1e-5 samples greedily, as vLLM (1/T would overflow)', () => {
    const r = sampleInChild([1, 3, 2], { temperature: 1e-39 });
    expect(r).toMatchObject({ token: 1 });
    const lse = Math.log(Math.exp(1) + Math.exp(3) + Math.exp(2));
    expect((r as { logprob: number }).logprob).toBeCloseTo(3 - lse, 5);
  });
});

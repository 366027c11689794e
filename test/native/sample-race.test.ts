/**
 * The draw itself: sample() picks exactly the winner of the exponential race keyed by (seed,
 * position, vocabulary index) that test/helpers/race-reference.ts writes from the specification,
 * and the race's coupling properties hold: a filter that keeps the unfiltered winner does not
 * change the token, and lowering another token's logit never changes it.
 */
import { describe, expect, it } from 'vitest';
import { type SamplingParams, sample, sampleAsync } from '../../src/index.js';
import { raceKey, raceV, raceWinner } from '../helpers/race-reference.js';
import { normal, rng } from '../helpers/random.js';
import { chiSquareGof, processedDistribution } from '../helpers/sampling-reference.js';

function normalRow(vocab: number, seed: number, scale: number): Float32Array {
  const r = rng(seed);
  return Float32Array.from({ length: vocab }, () => scale * normal(r));
}

/** The reference token for one row, or null when the best two scores are too close to call. */
function referenceToken(row: Float32Array, p: SamplingParams, position: number): number | null {
  const d = processedDistribution(row, p);
  const invT = Math.fround(1 / (p.temperature ?? 1));
  const z = Float64Array.from(d.y, (v) => Math.fround(v) * invT);
  const { token, gap } = raceWinner(z, d.kept, raceKey(p.seed ?? 0, position));
  return gap > 1e-4 ? token : null;
}

describe('sample() draws the exponential race keyed by (seed, position, vocabulary index)', () => {
  it('the per-token uniforms are uniform, and independent across positions', () => {
    const n = 200_000;
    const k1 = raceKey(42, 7);
    const k2 = raceKey(42, 8);
    const bins = new Float64Array(64);
    let sxy = 0;
    for (let j = 0; j < n; j++) {
      const a = raceV(k1, j);
      const b = raceV(k2, j);
      const bin = Math.min(63, Math.floor(a * 64));
      bins[bin] = (bins[bin] as number) + 1;
      sxy += (a - 0.5) * (b - 0.5);
    }
    const probs = new Float64Array(64).fill(1 / 64);
    expect(chiSquareGof(bins, probs).pValue).toBeGreaterThan(1e-4);
    expect(Math.abs(sxy / n / (1 / 12))).toBeLessThan(0.015); // correlation of the two positions' uniforms
  });

  const cases: [string, SamplingParams][] = [
    ['temperature 1', { temperature: 1 }],
    ['temperature 0.7', { temperature: 0.7 }],
    ['temperature 1.6', { temperature: 1.6 }],
    ['top-k 20', { topK: 20 }],
    ['top-p 0.9, T 0.8', { topP: 0.9, temperature: 0.8 }],
    ['min-p 0.05', { minP: 0.05 }],
    ['top-k 50 + top-p 0.95', { topK: 50, topP: 0.95 }],
    ['penalties', { repetitionPenalty: 1.3, frequencyPenalty: 0.4, outputTokens: [1, 2, 2, 3], promptTokens: [5] }],
  ];
  for (const [name, params] of cases) {
    it(`picks the reference winner: ${name} (vocab 3000, 96 rows, seeds up to 2^53)`, () => {
      const vocab = 3000;
      const rows = 96;
      const logits = new Float32Array(rows * vocab);
      for (let i = 0; i < rows; i++) logits.set(normalRow(vocab, 500 + i, 2.5), i * vocab);
      const r = rng(99);
      const ps = Array.from({ length: rows }, (_, i) => ({
        ...params,
        seed: i < 4 ? [0, 1, 2 ** 32, 2 ** 53 - 1][i] : Math.floor(r() * 2 ** 53),
      }));
      const positions = Int32Array.from({ length: rows }, (_, i) => (i % 3 === 0 ? -i * 1000 : i * 77_777));
      const out = sample(logits, vocab, ps, positions);
      let called = 0;
      for (let i = 0; i < rows; i++) {
        const want = referenceToken(
          logits.subarray(i * vocab, (i + 1) * vocab),
          ps[i] as SamplingParams,
          positions[i] as number,
        );
        if (want === null) continue;
        called++;
        expect(out.tokens[i], `row ${i}`).toBe(want);
      }
      expect(called).toBeGreaterThan(rows * 0.95);
    });
  }

  it('picks the reference winner on Qwen-sized rows, alone (split over the vocabulary) and batched', () => {
    const vocab = 151_936;
    const rows = 6;
    const logits = new Float32Array(rows * vocab);
    for (let i = 0; i < rows; i++) logits.set(normalRow(vocab, 900 + i, 3), i * vocab);
    const ps = Array.from({ length: rows }, (_, i) => ({ temperature: 0.6 + 0.2 * i, seed: 31 + i }));
    const positions = Int32Array.from({ length: rows }, (_, i) => 1000 + i);
    const batched = sample(logits, vocab, ps, positions);
    for (let i = 0; i < rows; i++) {
      const row = logits.subarray(i * vocab, (i + 1) * vocab);
      const alone = sample(row, vocab, [ps[i] as SamplingParams], positions.subarray(i, i + 1));
      expect(alone.tokens[0]).toBe(batched.tokens[i]);
      const want = referenceToken(row, ps[i] as SamplingParams, positions[i] as number);
      if (want !== null) expect(batched.tokens[i]).toBe(want);
    }
  });
});

describe('coupling: the race keys each token, not the draw', () => {
  const vocab = 500;
  const n = 400;
  const row = normalRow(vocab, 77, 1.5);
  const rows = new Float32Array(n * vocab);
  for (let i = 0; i < n; i++) rows.set(row, i * vocab);
  const positions = Int32Array.from({ length: n }, (_, i) => i);
  const run = (p: SamplingParams) =>
    sample(
      rows,
      vocab,
      Array.from({ length: n }, () => ({ ...p, seed: 2024 })),
      positions,
    ).tokens;

  for (const [name, filter] of [
    ['top-k 10', { topK: 10 }],
    ['top-p 0.5', { topP: 0.5 }],
    ['min-p 0.2', { minP: 0.2 }],
  ] as [string, SamplingParams][]) {
    it(`${name} keeps the token whenever it keeps the unfiltered winner`, () => {
      const free = run({ temperature: 0.9 });
      const filtered = run({ temperature: 0.9, ...filter });
      const kept = processedDistribution(row, { temperature: 0.9, ...filter }).kept;
      let inside = 0;
      let moved = 0;
      for (let i = 0; i < n; i++) {
        if (kept[free[i] as number]) {
          inside++;
          expect(filtered[i]).toBe(free[i]);
        } else {
          moved++;
          expect(kept[filtered[i] as number]).toBe(1);
        }
      }
      expect(inside).toBeGreaterThan(20); // the property was exercised both ways
      expect(moved).toBeGreaterThan(20);
    });
  }

  it('lowering the logit of a token that did not win never changes the winner', () => {
    const before = run({ temperature: 1.1 });
    let changed = 0;
    for (let i = 0; i < n; i++) {
      const lowered = Float32Array.from(row);
      const victim = ((before[i] as number) + 1 + (i % (vocab - 1))) % vocab;
      lowered[victim] = (lowered[victim] as number) - 3;
      const after = sample(lowered, vocab, [{ temperature: 1.1, seed: 2024 }], positions.subarray(i, i + 1));
      expect(after.tokens[0]).toBe(before[i]);
      if (lowered[victim] !== row[victim]) changed++;
    }
    expect(changed).toBe(n);
  });
});

describe('sampleAsync', () => {
  it('gives the same bits as sample() and the same errors, off the JS thread', async () => {
    const vocab = 2000;
    const rows = 12;
    const logits = new Float32Array(rows * vocab);
    for (let i = 0; i < rows; i++) logits.set(normalRow(vocab, 300 + i, 2), i * vocab);
    const params: SamplingParams[] = Array.from({ length: rows }, (_, i) => ({
      seed: i,
      temperature: 0.5 + 0.1 * i,
      ...(i % 3 === 0 ? { topP: 0.9 } : {}),
      ...(i % 4 === 1 ? { repetitionPenalty: 1.2, outputTokens: [1, 2, 3], promptTokens: [4] } : {}),
    }));
    const positions = Int32Array.from({ length: rows }, (_, i) => 10 * i);
    const a = sample(logits, vocab, params, positions);
    const b = await sampleAsync(logits, vocab, params, positions);
    expect(Array.from(b.tokens)).toEqual(Array.from(a.tokens));
    expect(Array.from(b.logprobs)).toEqual(Array.from(a.logprobs));
    expect(Array.from(b.rawLogprobs)).toEqual(Array.from(a.rawLogprobs));
    const bad = logits.slice();
    bad[5] = Number.NaN;
    await expect(sampleAsync(bad, vocab, params, positions)).rejects.toMatchObject({ code: 'NON_FINITE_LOGITS' });
  });
});

// Sampling a long row alone (its vocabulary split over the thread pool) and inside a batch
// (rows split over the pool) gives the same bits.
import { describe, expect, it } from 'vitest';
import { sample } from '../../src/index.js';

function randomRow(n: number, seed: number): Float32Array {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return (s / 4294967296 - 0.5) * 12;
  });
}

describe('sampling rows split over the thread pool', () => {
  it('gives the same bits for a long row alone (split over the vocabulary) and in a batch (split over rows)', () => {
    const V = (1 << 20) + 37;
    const rows = 3;
    const logits = randomRow(rows * V, 77);
    const params = [{ seed: 5 }, { temperature: 0.8, topP: 0.9, seed: 6 }, { temperature: 0 }];
    const batch = sample(logits, V, params, Int32Array.of(1, 2, 3));
    for (let i = 0; i < rows; i++) {
      const alone = sample(logits.subarray(i * V, (i + 1) * V), V, [params[i] as object], Int32Array.of(i + 1));
      expect(alone.tokens[0]).toBe(batch.tokens[i]);
      expect(Object.is(alone.logprobs[0], batch.logprobs[i])).toBe(true);
      expect(Object.is(alone.rawLogprobs[0], batch.rawLogprobs[i])).toBe(true);
    }
  });
});

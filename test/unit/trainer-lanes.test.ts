/**
 * The trainer's lane assignment (src/train/lanes.ts): every sample on exactly one lane, each
 * lane in index order, the lanes' costs balanced, and the result a function of the costs alone.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assignLanes, sampleCost } from '../../src/train/lanes.js';

const QWEN_TINY = {
  vocab_size: 1193,
  hidden_size: 128,
  intermediate_size: 344,
  num_hidden_layers: 4,
  num_attention_heads: 4,
  num_key_value_heads: 2,
};

describe('assignLanes', () => {
  it('puts one long sample on each lane where a fixed interleave put both on lane 0', () => {
    // Lengths 2000/400/2000/400: the interleave gave lane 0 samples 0 and 2 (both long).
    const costs = [2000, 400, 2000, 400].map((n) => sampleCost(QWEN_TINY, n));
    expect(assignLanes(costs, 2)).toEqual([
      [0, 1],
      [2, 3],
    ]);
  });

  it('is a partition in index order, a function of the costs, balanced within one sample', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 5000 }), { minLength: 0, maxLength: 40 }),
        fc.integer({ min: 1, max: 8 }),
        (costs, lanes) => {
          const out = assignLanes(costs, lanes);
          expect(out).toHaveLength(lanes);
          expect(out.flat().sort((a, b) => a - b)).toEqual(costs.map((_, k) => k));
          for (const list of out) expect(list).toEqual([...list].sort((a, b) => a - b));
          expect(assignLanes([...costs], lanes)).toEqual(out);
          // Greedy longest-first: a lane's load exceeds the lightest by at most one sample.
          const loads = out.map((list) => list.reduce((s, k) => s + (costs[k] as number), 0));
          const biggest = Math.max(0, ...costs);
          expect(Math.max(...loads) - Math.min(...loads)).toBeLessThanOrEqual(biggest);
        },
      ),
    );
  });

  it('grows faster than the length once attention dominates', () => {
    const c1 = sampleCost(QWEN_TINY, 1000);
    const c2 = sampleCost(QWEN_TINY, 2000);
    expect(c2).toBeGreaterThan(2 * c1);
    expect(c2).toBeLessThan(4 * c1);
  });
});

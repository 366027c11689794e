/**
 * warmStart.copyMix: the warm start rehearses copy pretraining, adding copy sequences (drawn
 * afresh each epoch, reproducibly by seed) to every epoch's demonstrations; absent or 0, the
 * demonstrations alone. Real demonstrations from real sandboxes, a small real model.
 */
import { describe, expect, it } from 'vitest';
import { copySequence } from '../../src/embedded/copy-pretrain.js';
import { expertDemos } from '../../src/embedded/demonstrations.js';
import { warmStartOn } from '../../src/embedded/warm-start.js';
import { generateMiniSweTasks } from '../../src/env/mini-swe/generate.js';
import { resolveConfig } from '../../src/pipeline/config.js';
import { mulberry32 } from '../../src/random.js';
import { SLIP_TASKS, smallWarmStartConfig } from '../helpers/warm-start-config.js';

const config = smallWarmStartConfig;

describe('copySequence', () => {
  it('is <s> <sep> span <sep> span of merged tokens, trained on the repeat after its first token', () => {
    const rnd = mulberry32(9);
    for (let k = 0; k < 50; k++) {
      const { tokens, lossMask } = copySequence(rnd, 400);
      const n = (tokens.length - 3) / 2;
      expect(Number.isInteger(n) && n >= 8 && n <= 23).toBe(true);
      expect([tokens[0], tokens[1], tokens[n + 2]]).toEqual([0, 1, 1]);
      const first = Array.from(tokens.subarray(2, n + 2));
      expect(Array.from(tokens.subarray(n + 3))).toEqual(first);
      for (const t of first) expect(t >= 256 && t < 397).toBe(true);
      expect(Array.from(lossMask)).toEqual(Array.from(tokens, (_, i) => (i > n + 3 ? 1 : 0)));
    }
  });
});

describe('warmStart.copyMix', () => {
  it('adds round(copyMix x demonstrations) copy sequences to each epoch, drawn afresh and reproducibly; none when absent', async () => {
    const tasks = await generateMiniSweTasks({ count: 2, seed: 3, ...SLIP_TASKS });
    const demos = await expertDemos(tasks, config({}), { log() {} });
    const run = async (warmStart: Record<string, unknown>) => {
      const steps: Record<string, unknown>[] = [];
      const hooks = {
        log: (e: Record<string, unknown>) => void (e.stage === 'warmstart' && e.event === 'step' && steps.push(e)),
      };
      await warmStartOn(config(warmStart), tasks, demos, hooks);
      return steps;
    };
    const off = await run({});
    expect(off.length).toBe(2); // 2 demonstrations in batches of 2, 2 epochs
    // copyMix 1: 2 copy sequences beside the 2 demonstrations, 2 steps an epoch.
    const mixed = await run({ copyMix: 1 });
    expect(mixed.length).toBe(4);
    const tokens = (s: Record<string, unknown>[]) => s.map((e) => e.tokens as number);
    // Each epoch trains the demonstrations' tokens and the copy sequences' (7 to 22 trained tokens each).
    const perEpoch = (s: Record<string, unknown>[], e: number) =>
      s.filter((x) => x.epoch === e).reduce((a, x) => a + (x.tokens as number), 0);
    for (const e of [0, 1]) {
      const extra = perEpoch(mixed, e) - perEpoch(off, e);
      expect(extra).toBeGreaterThanOrEqual(2 * 7);
      expect(extra).toBeLessThanOrEqual(2 * 22);
    }
    // Drawn afresh per epoch (for this seed the two epochs' copy sequences differ in length) and by seed.
    expect(perEpoch(mixed, 0) - perEpoch(off, 0)).not.toBe(perEpoch(mixed, 1) - perEpoch(off, 1));
    expect(tokens(await run({ copyMix: 1 }))).toEqual(tokens(mixed));
    expect((await run({ copyMix: 0 })).map((e) => e.loss)).toEqual(off.map((e) => e.loss));
    expect(() => resolveConfig({ warmStart: { copyMix: -0.5 } })).toThrow(/warmStart\.copyMix/);
  }, 120_000);
});

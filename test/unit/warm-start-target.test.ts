/**
 * warmStart.targetNameLoss: the warm start measures the loss on the fix's names (nameLoss) after
 * its epochs and trains blocks of more epochs while it is above the target, up to a cap; with no
 * target it trains `epochs` only. Real demonstrations from real sandboxes, a small real model.
 */
import { describe, expect, it } from 'vitest';
import { expertDemos } from '../../src/embedded/demonstrations.js';
import { nameLoss, nameLossStream } from '../../src/embedded/name-loss.js';
import { warmStartOn } from '../../src/embedded/warm-start.js';
import { generateMiniSweTasks } from '../../src/env/mini-swe/generate.js';
import { resolveConfig } from '../../src/pipeline/config.js';
import { mulberry32 } from '../../src/random.js';
import { SLIP_TASKS, smallWarmStartConfig } from '../helpers/warm-start-config.js';

const config = smallWarmStartConfig;

describe('warmStart.targetNameLoss', () => {
  it("trains blocks of extendEpochs while the loss on the fix's names is above the target, at most maxExtraEpochs; none when it is met or off", async () => {
    const tasks = await generateMiniSweTasks({ count: 2, seed: 3, ...SLIP_TASKS });
    const quiet = { log() {} };
    const demos = await expertDemos(tasks, config({}), quiet);
    const run = async (warmStart: Record<string, unknown>) => {
      const events: Record<string, unknown>[] = [];
      const hooks = { log: (e: Record<string, unknown>) => void events.push(e) };
      const policy = await warmStartOn(config(warmStart), tasks, demos, hooks);
      const steps = events.filter((e) => e.stage === 'warmstart' && e.event === 'step').length;
      const measures = events.filter((e) => e.event === 'name-loss');
      return { policy, steps, measures };
    };
    const off = await run({});
    expect(off.steps).toBe(2); // 2 demonstrations in batches of 2, 2 epochs
    expect(off.measures).toEqual([]);
    // A target no model meets: blocks of 2 epochs until 3 extra epochs are spent (2, then 1).
    const unmet = await run({ targetNameLoss: 1e-9, extendEpochs: 2, maxExtraEpochs: 3 });
    expect(unmet.steps).toBe(5);
    expect(unmet.measures.map((m) => [m.epochs, m.extend])).toEqual([
      [2, 2],
      [4, 1],
      [5, 0],
    ]);
    for (const m of unmet.measures) expect(m.nameLoss).toBeGreaterThan(0);
    // The first two epochs are the same run with or without a target.
    expect(unmet.measures[0]?.nameLoss).toBe(
      (await nameLoss(off.policy.model, off.policy.tokenizer, demos, nameLossStream(3))).nameLoss,
    );
    // A target already met: measured once, no more steps.
    const met = await run({ targetNameLoss: 1e6 });
    expect(met.steps).toBe(2);
    expect(met.measures.map((m) => m.extend)).toEqual([0]);
    expect(() => resolveConfig({ warmStart: { targetNameLoss: 0 } })).toThrow(/warmStart\.targetNameLoss/);
    expect(() => resolveConfig({ warmStart: { extendEpochs: 0 } })).toThrow(/warmStart\.extendEpochs/);
  }, 120_000);

  it('nameLoss measures without training: the same stream gives the same figures, and it counts name tokens', async () => {
    const tasks = await generateMiniSweTasks({ count: 1, seed: 5, ...SLIP_TASKS });
    const quiet = { log() {} };
    const demos = await expertDemos(tasks, config({}), quiet);
    const { model, tokenizer } = await warmStartOn(config({ epochs: 1 }), tasks, demos, quiet);
    const version = model.weightVersion;
    const a = await nameLoss(model, tokenizer, demos, mulberry32(11));
    const b = await nameLoss(model, tokenizer, demos, mulberry32(11));
    expect(b).toEqual(a);
    expect(model.weightVersion).toBe(version);
    expect(a.nameTokens).toBeGreaterThan(0);
    expect(a.otherTokens).toBeGreaterThan(a.nameTokens);
    expect(Number.isFinite(a.nameLoss) && a.nameLoss > 0).toBe(true);
  }, 120_000);
});

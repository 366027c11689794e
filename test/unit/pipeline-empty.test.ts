/**
 * Stages with nothing to train: with a random model that solves nothing, RFT keeps no trajectory
 * and DAPO's groups are all flat; the stage functions skip the optimizer step (the weights stay as
 * they were), say so in their result and log it, and do not throw. SFT over samples without a
 * trained token does the same, while the Trainer itself refuses such a step (INVALID_ARGUMENT),
 * as documented. Real model, engine, sandboxes and mini-SWE tasks.
 */
import { describe, expect, it } from 'vitest';
import {
  AdamW,
  dapoIteration,
  generateMiniSweTasks,
  isolationAvailable,
  type Model,
  resolveConfig,
  rft,
  SYSTEM_PROMPT,
  sftEpochs,
  Trainer,
} from '../../src/index.js';
import type { DapoStageConfig } from '../../src/pipeline/config.js';
import type { Policy } from '../../src/pipeline/stages.js';
import { tinyPolicy } from '../helpers/tiny-policy.js';

const canSandbox = isolationAvailable('bwrap') || isolationAvailable('unshare');

/** A small random policy: it writes noise, so it resolves nothing. */
function policy(): Policy {
  const corpus = [SYSTEM_PROMPT, 'DISCUSSION\nLet me look.\n\n```command\nls\n```'];
  return tinyPolicy({ corpus, vocabSize: 320, kvBlocks: 1024 });
}

const config = resolveConfig(
  {
    episode: { maxTurns: 2, maxTokensPerTurn: 12, maxContextTokens: 3072, concurrency: 4 },
    rft: { samplesPerTask: 2 },
    dapo: { samplesPerTask: 2, refillRounds: 0 },
  },
  'smoke',
);

/** The model's weights, as one array (to see that a skipped step changed nothing). */
function weights(m: Model): Float32Array[] {
  return m.parameters().map((p) => m.getParameter(p.name));
}

describe('empty stages', () => {
  it('SFT over samples without a trained token skips the step and logs it; the Trainer throws INVALID_ARGUMENT', async () => {
    const p = policy();
    const before = weights(p.model);
    const untrained = { tokens: Int32Array.from([1, 2, 3, 4]), lossMask: new Uint8Array(4) };
    const events: Record<string, unknown>[] = [];
    const o = { epochs: 2, batchSize: 1, lr: 1e-3, warmupRatio: 0, seed: 1, stage: 'rft' };
    expect(await sftEpochs(p, [untrained, untrained], o, { log: (e) => events.push(e) })).toEqual([]);
    expect(events).toEqual([{ stage: 'rft', event: 'skipped', reason: 'no sample with a trained token', samples: 2 }]);
    events.length = 0;
    expect(await sftEpochs(p, [], o, { log: (e) => events.push(e) })).toEqual([]);
    expect(events[0]).toMatchObject({ event: 'skipped', reason: 'no samples', samples: 0 });
    expect(weights(p.model)).toEqual(before);
    // A batch of only untrained samples beside a trained one: that batch skipped, the other trained.
    events.length = 0;
    const trained = { tokens: Int32Array.from([1, 2, 3, 4]), lossMask: Uint8Array.from([0, 1, 1, 1]) };
    const steps = await sftEpochs(p, [untrained, trained], { ...o, epochs: 1 }, { log: (e) => events.push(e) });
    expect(steps).toHaveLength(1);
    expect(events.map((e) => e.event).sort()).toEqual(['skipped', 'step']);
    // The Trainer's own contract: no trained token is a caller's error, and it changes nothing.
    const opt = new AdamW(p.model, { lr: 1e-3 });
    const trainer = new Trainer(p.model, { optimizer: opt });
    const mid = weights(p.model);
    await expect(trainer.sftStep([untrained])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(trainer.sftStep([])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(opt.stepCount).toBe(0);
    expect(weights(p.model)).toEqual(mid);
  });

  it.skipIf(!canSandbox)(
    'a model that solves nothing: RFT and a DAPO iteration skip their step, report it, and do not throw',
    async () => {
      const p = policy();
      const tasks = await generateMiniSweTasks({ count: 2, seed: 9, difficulty: 0 });
      const before = weights(p.model);
      const events: Record<string, unknown>[] = [];
      const hooks = { log: (e: Record<string, unknown>) => events.push(e) };
      const r = await rft(p, tasks, config, hooks);
      expect(r.episodes).toBe(4);
      expect(r.resolved).toBe(0);
      expect(r).toMatchObject({ kept: 0, steps: 0, skipped: 1 });
      expect(events.map((e) => [e.stage, e.event])).toEqual([
        ['rft', 'rollouts'],
        ['rft', 'skipped'],
      ]);
      // DAPO: every group's rewards are equal (all 0), so every group is dropped and nothing trains.
      events.length = 0;
      const optimizer = new AdamW(p.model, { lr: 1e-3 });
      // The config's stage (G = 2 from the dapo section), with these limits.
      const stage = {
        ...(config.dapo.stages[0] as DapoStageConfig),
        iterations: 1,
        maxTurns: 2,
        maxContextTokens: 3072,
        tasksPerIteration: 2,
      };
      const { metrics, records } = await dapoIteration(p, tasks, config, stage, 1, optimizer, hooks);
      expect(records).toHaveLength(4);
      expect(metrics).toMatchObject({ trainedSamples: 0, steps: 0, skipped: 1, droppedGroups: 2 });
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ stage: 'dapo', event: 'iteration', phase: 'dapo-s1-i001', skipped: 1 });
      expect(optimizer.stepCount).toBe(0);
      expect(weights(p.model)).toEqual(before);
    },
    120_000,
  );
});

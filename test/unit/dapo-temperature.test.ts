/**
 * DAPO at a rollout temperature other than 1: the iteration passes the temperature to the
 * trainer and to the KL reference, so at the first step (the policy is still the reference) the
 * k3 KL is exactly 0 and the ratios are exactly 1. With the reference's logprobs at temperature 1
 * the KL would be far from 0 before any update.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  AdamW,
  dapoIteration,
  generateMiniSweTasks,
  isolationAvailable,
  Model,
  resolveConfig,
} from '../../src/index.js';
import { tinyPolicy } from '../helpers/tiny-policy.js';

describe.skipIf(!isolationAvailable('bwrap') && !isolationAvailable('unshare'))('DAPO at temperature 0.7', () => {
  it('trains against a reference at the same temperature: KL 0 and ratio 1 at the first step', async () => {
    const { tokenizer, model, engine } = tinyPolicy();
    const dir = await mkdtemp(join(tmpdir(), 'swerl-ref-'));
    try {
      await model.save(dir);
      const reference = await Model.load(dir);
      const tasks = await generateMiniSweTasks({ count: 1, seed: 5, difficulty: 0 });
      // Flat groups kept (advantage 0) so that a random policy still takes a step with a KL term.
      const c = resolveConfig(
        {
          dapo: { klCoef: 0.1, temperature: 0.7, dropZeroAdvantage: false, samplesPerTask: 2, stepsPerIteration: 1 },
          episode: { maxTokensPerTurn: 8 },
        },
        'smoke',
      );
      const stage = { ...(c.dapo.stages[0] as (typeof c.dapo.stages)[0]), maxTurns: 1 };
      const { metrics, records } = await dapoIteration(
        { model, engine, tokenizer },
        tasks,
        c,
        stage,
        1,
        new AdamW(model, { lr: 1e-3 }),
        { log: () => {} },
        { reference },
      );
      expect(records.length).toBe(2);
      expect(metrics.steps).toBe(1);
      expect(metrics.kl).toBe(0);
      expect(metrics.ratioDeviation).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

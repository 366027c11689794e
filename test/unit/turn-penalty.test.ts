/**
 * The turn penalty is defined for every threshold: at threshold = maxTurns the paper's formula is
 * 0/0 on the last turn (a NaN reward that crashed the trainer), and a threshold at or above
 * maxTurns now means no penalty. resolveConfig refuses a DAPO stage whose maxTurns equals the
 * threshold, and accepts one below it (the default preset: the penalty is off there); runRollouts
 * checks the threshold before any episode runs and gives finite rewards at the equality.
 */
import { describe, expect, it } from 'vitest';
import {
  episodeReward,
  generateMiniSweTasks,
  isolationAvailable,
  resolveConfig,
  runRollouts,
  SwerlError,
  turnPenalty,
} from '../../src/index.js';
import { tinyPolicy as setup } from '../helpers/tiny-policy.js';

const canSandbox = isolationAvailable('bwrap') || isolationAvailable('unshare');

describe('turnPenalty at and above maxTurns', () => {
  it('is 0, not NaN, when the threshold equals maxTurns, and 0 when it is above', () => {
    for (let t = 0; t <= 7; t++) {
      expect(Object.is(turnPenalty(t, 7, 7), 0)).toBe(true);
      expect(Object.is(turnPenalty(t, 7, 10), 0)).toBe(true);
    }
    expect(episodeReward(false, 7, 7, 7)).toBe(0);
    expect(episodeReward(true, 7, 7, 7)).toBe(1);
  });

  it('keeps the paper formula, bit for bit, below maxTurns', () => {
    for (const [maxTurns, threshold] of [
      [40, 10],
      [12, 10],
      [80, 10],
      [7, 0],
    ] as const)
      for (let t = 0; t <= maxTurns; t++) {
        const paper = t < threshold ? 0 : (threshold - t) / (maxTurns - threshold);
        expect(Object.is(turnPenalty(t, maxTurns, threshold), paper)).toBe(true);
      }
    expect(turnPenalty(12, 12, 10)).toBe(-1);
  });

  it('refuses turns past maxTurns and non-numbers with INVALID_ARGUMENT', () => {
    for (const args of [
      [8, 7, 7],
      [41, 40, 10],
      [Number.NaN, 40, 10],
      [5, Number.NaN, 10],
      [5, 40, Number.NaN],
      [5, 40, -1],
    ] as [number, number, number][]) {
      expect(() => turnPenalty(...args)).toThrow(SwerlError);
      expect(() => turnPenalty(...args)).toThrow(/must be/);
    }
  });
});

describe('resolveConfig and the turn penalty', () => {
  const code = (f: () => unknown) => {
    try {
      f();
      return 'ok';
    } catch (e) {
      return `${(e as SwerlError).code}: ${(e as Error).message}`;
    }
  };

  it('accepts a threshold above every stage (the default preset: off) or below it (on)', () => {
    const d = resolveConfig();
    expect([d.dapo.turnPenaltyThreshold, d.dapo.stages[0]?.maxTurns]).toEqual([10, 7]);
    expect(code(() => resolveConfig({ dapo: { turnPenaltyThreshold: 6 } }))).toBe('ok');
    expect(code(() => resolveConfig({ dapo: { turnPenaltyThreshold: 8 } }))).toBe('ok');
    expect(code(() => resolveConfig({}, 'smoke'))).toBe('ok');
  });

  it('refuses a threshold equal to a DAPO stage maxTurns, naming the field and the stage', () => {
    expect(code(() => resolveConfig({ dapo: { turnPenaltyThreshold: 7 } }))).toMatch(
      /^INVALID_CONFIG: config field dapo\.turnPenaltyThreshold must be below dapo\.stages\[0\]\.maxTurns \(7\)/,
    );
    const stages = [
      { iterations: 1, maxTurns: 12, maxContextTokens: 3072, tasksPerIteration: 4 },
      { iterations: 1, maxTurns: 10, maxContextTokens: 3072, tasksPerIteration: 4 },
    ];
    expect(code(() => resolveConfig({ dapo: { stages } }))).toMatch(/dapo\.stages\[1\]\.maxTurns \(10\)/);
    // DAPO off: its stages never run, so nothing to refuse.
    expect(code(() => resolveConfig({ dapo: { enabled: false, turnPenaltyThreshold: 7 } }))).toBe('ok');
  });
});

describe('runRollouts and the turn penalty', () => {
  it('refuses a bad threshold before any episode runs', async () => {
    const { tokenizer, engine } = setup();
    let opened = 0;
    const counting = {
      openSession: () => {
        opened++;
        return engine.openSession();
      },
    };
    const tasks = await generateMiniSweTasks({ count: 1, seed: 4, difficulty: 0 });
    for (const bad of [Number.NaN, -1, '10'])
      await expect(
        runRollouts({ engine: counting, tokenizer, tasks, turnPenaltyThreshold: bad as number }),
      ).rejects.toThrow(/turnPenaltyThreshold must be a number >= 0/);
    expect(opened).toBe(0);
  });

  it.skipIf(!canSandbox)('gives finite rewards when the threshold equals maxTurns', async () => {
    const { tokenizer, engine } = setup();
    const tasks = await generateMiniSweTasks({ count: 1, seed: 4, difficulty: 0 });
    const o = { engine, tokenizer, tasks, samplesPerTask: 2, maxTurns: 2, maxTokensPerTurn: 8, seed: 3 };
    const records = await runRollouts({ ...o, turnPenaltyThreshold: 2 });
    // The random model never submits: every episode runs its 2 turns (old formula: (2-2)/(2-2)).
    expect(records.map((r) => [r.finishReason, r.turns.length, r.reward])).toEqual([
      ['max_turns', 2, 0],
      ['max_turns', 2, 0],
    ]);
    // Below maxTurns the penalty acts: −1 at the last turn.
    const penalised = await runRollouts({ ...o, turnPenaltyThreshold: 1 });
    expect(penalised.map((r) => r.reward)).toEqual([-1, -1]);
  });
});

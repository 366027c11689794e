/**
 * The turn penalty is defined for every threshold: at threshold = maxTurns the paper's formula is
 * 0/0 on the last turn (a NaN reward that crashed the trainer), and a threshold at or above
 * maxTurns means no penalty. With dapo.turnPenalty on (the schema's and the paper preset's default;
 * the embedded default preset turns it off), resolveConfig refuses a
 * DAPO stage whose threshold (its own, else the dapo section's) is not below its maxTurns, and
 * with dapo.turnPenalty false it accepts any threshold; runRollouts checks the threshold before
 * any episode runs and gives finite rewards at the equality.
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

  it('accepts a threshold below every stage maxTurns, and any threshold with dapo.turnPenalty false', () => {
    // The embedded default runs without it (src/embedded/presets.ts); on, at 5 of its 7 turns.
    expect(resolveConfig().dapo).toMatchObject({ turnPenalty: false, turnPenaltyThreshold: 10 });
    const d = resolveConfig({ dapo: { turnPenalty: true, turnPenaltyThreshold: 5 } });
    expect([d.dapo.turnPenalty, d.dapo.turnPenaltyThreshold, d.dapo.stages[0]?.maxTurns]).toEqual([true, 5, 7]);
    expect(d.dapo.stages[0]?.turnPenaltyThreshold).toBe(5);
    expect(code(() => resolveConfig({ dapo: { turnPenalty: true, turnPenaltyThreshold: 6 } }))).toBe('ok');
    // Off: the threshold is not used, so none is refused (the smoke preset: 10 with 6 turns).
    for (const t of [7, 8, 100])
      expect(code(() => resolveConfig({ dapo: { turnPenalty: false, turnPenaltyThreshold: t } }))).toBe('ok');
    expect(resolveConfig({}, 'smoke').dapo).toMatchObject({ turnPenalty: false, turnPenaltyThreshold: 10 });
    // A stage's own threshold below its maxTurns, the section's above it: each stage is checked with its own.
    const stages = [
      { iterations: 1, maxTurns: 12, maxContextTokens: 3072, tasksPerIteration: 4, turnPenaltyThreshold: 6 },
    ];
    expect(code(() => resolveConfig({ dapo: { turnPenalty: true, turnPenaltyThreshold: 20, stages } }))).toBe('ok');
  });

  it('refuses a threshold at or above a DAPO stage maxTurns while the penalty is on, naming the field and the stage', () => {
    for (const t of [7, 8])
      expect(code(() => resolveConfig({ dapo: { turnPenalty: true, turnPenaltyThreshold: t } }))).toBe(
        `INVALID_CONFIG: config field dapo.turnPenaltyThreshold must be below dapo.stages[0].maxTurns (7) with dapo.turnPenalty (set dapo.turnPenalty false for none), got ${t}; see docs/training.md, "Configs"`,
      );
    // The section's threshold (10) applies to both stages; the second has only 10 turns.
    const stages = [
      { iterations: 1, maxTurns: 12, maxContextTokens: 3072, tasksPerIteration: 4 },
      { iterations: 1, maxTurns: 10, maxContextTokens: 3072, tasksPerIteration: 4 },
    ];
    expect(code(() => resolveConfig({ dapo: { turnPenalty: true, turnPenaltyThreshold: 10, stages } }))).toMatch(
      /^INVALID_CONFIG: config field dapo\.turnPenaltyThreshold must be below dapo\.stages\[1\]\.maxTurns \(10\)/,
    );
    // A stage's own threshold is named as the stage's.
    const own = [stages[0], { ...stages[1], turnPenaltyThreshold: 11 }];
    expect(code(() => resolveConfig({ dapo: { turnPenalty: true, turnPenaltyThreshold: 4, stages: own } }))).toMatch(
      /^INVALID_CONFIG: config field dapo\.stages\[1\]\.turnPenaltyThreshold must be below dapo\.stages\[1\]\.maxTurns \(10\).*got 11/,
    );
    // The paper preset turns it on at 10: a stage of 10 turns is refused.
    expect(
      code(() =>
        resolveConfig(
          { modelDir: 'm', tasksFile: 't.jsonl', dapo: { stages: [{ ...stages[1], turnPenaltyThreshold: 10 }] } },
          'paper',
        ),
      ),
    ).toMatch(/dapo\.stages\[0\]\.turnPenaltyThreshold must be below dapo\.stages\[0\]\.maxTurns \(10\)/);
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

/**
 * The pipeline's bookkeeping without a run: phase names (one scheme, sorting in run order), which
 * checkpoints each `checkpoints.keep` policy keeps, the refusal of run folders with the old
 * names, the progress lines written when stderr is not a terminal (on a fake clock), and the
 * shared wording (Pass@1 once when k is 1, singular counts).
 */
import { describe, expect, it } from 'vitest';
import { progressLines } from '../../src/cli/progress-lines.js';
import { resolveConfig } from '../../src/pipeline/config.js';
import {
  checkpointName,
  dapoPhase,
  parseDapoPhase,
  refuseOldNames,
  validationPhase,
} from '../../src/pipeline/phases.js';
import { keptCheckpoints } from '../../src/pipeline/run.js';
import { count, duration, passFigures } from '../../src/pipeline/wording.js';

describe('phase names', () => {
  it('name stage and iteration one way, and sort in the order they ran', () => {
    expect(dapoPhase(1, 3)).toBe('dapo-s1-i003');
    expect(validationPhase(2, 12)).toBe('val-dapo-s2-i012');
    expect(checkpointName('warmstart')).toBe('base');
    expect(checkpointName('rft')).toBe('rft');
    expect(checkpointName('dapo-s1-i003')).toBe('dapo-s1-i003');
    expect(parseDapoPhase('dapo-s2-i012')).toEqual({ stage: 2, iteration: 12 });
    expect(parseDapoPhase('dapo-0-1')).toBeNull();
    // Two stages of 6 iterations: the names sort as the iterations ran (no 'i10' before 'i2').
    const ran = [1, 2, 3, 4, 5, 6]
      .map((i) => dapoPhase(1, i))
      .concat([7, 8, 9, 10, 11, 12].map((i) => dapoPhase(2, i)));
    expect([...ran].sort()).toEqual(ran);
  });

  it('a run folder with the old names is refused with CANNOT_RESUME, a new one is not', () => {
    const refused = (done: string[], ckpt: string | null) => {
      try {
        refuseOldNames('/runs/x', done, ckpt);
        return null;
      } catch (e) {
        return e as { code: string; message: string };
      }
    };
    expect(
      refused(['warmstart', 'eval-base', 'rft', 'eval-rft', 'dapo-0-0'], '/runs/x/checkpoints/dapo-0-0')?.code,
    ).toBe('CANNOT_RESUME');
    expect(refused(['warmstart'], '/runs/x/checkpoints/warmstart')?.message).toMatch(/older swerl.*--force/);
    expect(refused(['warmstart', 'eval-base', 'val-dapo-1'], 'checkpoints/base')?.code).toBe('CANNOT_RESUME');
    expect(
      refused(['warmstart', 'eval-base', 'dapo-s1-i001', 'val-dapo-s1-i001'], 'checkpoints/dapo-s1-i001'),
    ).toBeNull();
    expect(refused([], null)).toBeNull();
  });
});

describe('checkpoints.keep', () => {
  // Two DAPO stages of 2 iterations each, run to the end.
  const config = (keep: 'stages' | 'all' | 'last') =>
    resolveConfig(
      {
        checkpoints: { keep },
        dapo: {
          stages: [
            { iterations: 2, maxTurns: 8, maxContextTokens: 3072, tasksPerIteration: 3 },
            { iterations: 2, maxTurns: 8, maxContextTokens: 3072, tasksPerIteration: 3 },
          ],
        },
      },
      'smoke',
    );
  const done = ['warmstart', 'eval-base', 'rft', 'eval-rft', 'dapo-s1-i001', 'dapo-s1-i002', 'dapo-s2-i003'];
  const kept = (keep: 'stages' | 'all' | 'last', latest: string) =>
    [...keptCheckpoints(config(keep), done, latest)].sort();

  it("'stages' keeps base, RFT, each DAPO stage's last iteration and the latest", () => {
    expect(kept('stages', 'dapo-s2-i003')).toEqual(['base', 'dapo-s1-i002', 'dapo-s2-i003', 'rft']);
    // At the end the latest is the final DAPO iteration: no iteration in between survives.
    expect([...keptCheckpoints(config('stages'), [...done, 'dapo-s2-i004'], 'dapo-s2-i004')].sort()).toEqual([
      'base',
      'dapo-s1-i002',
      'dapo-s2-i004',
      'rft',
    ]);
  });

  it("'all' keeps every finished phase's, 'last' only the latest; a phase not done is never kept", () => {
    expect(kept('all', 'dapo-s2-i003')).toEqual(['base', 'dapo-s1-i001', 'dapo-s1-i002', 'dapo-s2-i003', 'rft']);
    expect(kept('last', 'dapo-s2-i003')).toEqual(['dapo-s2-i003']);
    // A killed run's folder of an unfinished iteration (dapo-s2-i004 is not in done) goes.
    expect(kept('all', 'dapo-s2-i003')).not.toContain('dapo-s2-i004');
  });
});

describe('progress lines without a terminal', () => {
  it('write a line when work starts, every tenth or every 20 s with rate and time left, and at the end', () => {
    const lines: string[] = [];
    let t = 0;
    const p = progressLines({ write: (l) => lines.push(l), now: () => t });
    // 900 steps at 10 steps/s: a tenth every 9 s.
    for (let s = 1; s <= 900; s++) {
      t = s * 100;
      p('warm start', s, 900, 'step');
    }
    expect(lines[0]).toBe('warm start: step 1/900 (0%)');
    expect(lines[1]).toBe('warm start: step 90/900 (10%), 10 steps/s, ~1m21s left');
    expect(lines.at(-1)).toBe('warm start: step 900/900 (100%), 10 steps/s, took 1m30s');
    expect(lines).toHaveLength(11); // the start, 9 tenths, the end
    // Slow work: a line every 20 s even without a tenth passed; a rate under 0.1/s as time per unit.
    lines.length = 0;
    for (let e = 1; e <= 3; e++) {
      t = 1_000_000 + e * 30_000;
      p('eval-base', e, 100, 'episode');
    }
    expect(lines).toEqual([
      'eval-base: episode 1/100 (1%)',
      'eval-base: episode 2/100 (2%), 30s per episode, ~49m00s left',
      'eval-base: episode 3/100 (3%), 30s per episode, ~48m30s left',
    ]);
    // Fast work: tenths closer than 2 s apart make no line; one unit of work done at once, one line.
    lines.length = 0;
    for (let e = 1; e <= 10; e++) {
      t = 2_000_000 + e * 10;
      p('rft rollouts', e, 10, 'episode');
    }
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(/^rft rollouts: episode 10\/10 \(100%\), \d+ episodes\/s, took 0s$/);
    lines.length = 0;
    p('copy pretraining', 1, 1, 'step');
    p('copy pretraining', 1, 1, 'step');
    expect(lines).toEqual(['copy pretraining: 1 step done']);
  });
});

describe('wording', () => {
  it('prints Pass@1 once when k is 1, singular counts, and short durations', () => {
    expect(passFigures(0.125, 0.25, 4)).toBe('Pass@1 12.5%  Pass@4 25.0%');
    expect(passFigures(0, 0, 1)).toBe('Pass@1 0.0%');
    expect(count(1, 'point')).toBe('1 point');
    expect(count(2, 'point')).toBe('2 points');
    expect(count(1, 'trajectory', 'trajectories')).toBe('1 trajectory');
    expect(duration(45)).toBe('45s');
    expect(duration(190)).toBe('3m10s');
    expect(duration(7500)).toBe('2h05m');
  });
});

/**
 * A rollout batch grades each distinct (task, patch) once: repeated patches take the first
 * grading's verdict, finished or in flight; a grading that failed for the grader's reasons or hit
 * the test timeout is never shared;
 * the same patch on another task object is graded on its own. Checked on GradeMemo alone and on
 * runRollouts with scripted responses that all make the task's reference fix (the real grader
 * runs, counted through a pass-through spy on the evaluation pool).
 */
import { describe, expect, it, vi } from 'vitest';
import type { Evaluation } from '../../src/env/evaluate.js';
import { generateMiniSweTasks, isolationAvailable, runRollouts, type SweTask } from '../../src/index.js';
import { GradeMemo } from '../../src/rollout/grade-memo.js';
import { scriptedSessions } from '../helpers/scripted-sessions.js';
import { tinyPolicy } from '../helpers/tiny-policy.js';

const graded = vi.hoisted(() => ({ patches: [] as string[] }));
vi.mock('../../src/env/evaluate-pool.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../src/env/evaluate-pool.js')>();
  return {
    ...actual,
    evaluatePatches: (
      jobs: Parameters<typeof actual.evaluatePatches>[0],
      o?: Parameters<typeof actual.evaluatePatches>[1],
    ) => {
      graded.patches.push(...jobs.map((j) => j.patch));
      return actual.evaluatePatches(jobs, o);
    },
  };
});

const canSandbox = isolationAvailable('bwrap') || isolationAvailable('unshare');

function evaluation(outcome: Evaluation['outcome']): Evaluation {
  return { resolved: outcome === 'resolved', outcome, timedOut: false, tests: {}, log: outcome };
}

describe('GradeMemo', () => {
  const task = { instance_id: 't' } as SweTask;

  it('grades a repeated (task, patch) once, finished or in flight; other patches and tasks apart', async () => {
    const memo = new GradeMemo();
    let runs = 0;
    let release = () => {};
    const slow = () =>
      new Promise<Evaluation>((resolve) => {
        runs++;
        release = () => resolve(evaluation('resolved'));
      });
    const first = memo.evaluate(task, 'p', slow);
    const second = memo.evaluate(task, 'p', slow); // in flight: waits on the first
    release();
    expect(await first).toEqual(evaluation('resolved'));
    // The verdict is shared, without the first grading's log.
    const verdict = { ...evaluation('resolved'), log: '' };
    expect(await second).toEqual(verdict);
    expect(await memo.evaluate(task, 'p', slow)).toEqual(verdict); // finished
    expect(runs).toBe(1);
    const other = { instance_id: 't' } as SweTask; // the same id, another task object
    const quick = async () => {
      runs++;
      return evaluation('unresolved');
    };
    expect((await memo.evaluate(task, 'q', quick)).outcome).toBe('unresolved');
    expect((await memo.evaluate(other, 'p', quick)).outcome).toBe('unresolved');
    expect(runs).toBe(3);
  });

  it("never shares a grader's failure: the waiting sample and later ones grade their own", async () => {
    const memo = new GradeMemo();
    const outcomes: Evaluation['outcome'][] = ['error', 'resolved', 'resolved'];
    let runs = 0;
    const grade = async () => evaluation(outcomes[runs++] as Evaluation['outcome']);
    const [a, b] = await Promise.all([memo.evaluate(task, 'p', grade), memo.evaluate(task, 'p', grade)]);
    expect([a.outcome, b.outcome]).toEqual(['error', 'resolved']);
    expect((await memo.evaluate(task, 'p', grade)).outcome).toBe('resolved');
    expect(runs).toBe(3);
    // Nor a test run that hit the timeout (the machine's load can cause it): the next sample grades again.
    const memo3 = new GradeMemo();
    let slowRuns = 0;
    const timedOut = async () => ({
      ...evaluation(slowRuns++ === 0 ? 'unresolved' : 'resolved'),
      timedOut: slowRuns === 1,
    });
    const [c, d] = await Promise.all([memo3.evaluate(task, 'p', timedOut), memo3.evaluate(task, 'p', timedOut)]);
    expect([c.timedOut, c.outcome, d.timedOut, d.outcome]).toEqual([true, 'unresolved', false, 'resolved']);
    expect(slowRuns).toBe(2);
    // A grading that throws is not kept either.
    const memo2 = new GradeMemo();
    await expect(memo2.evaluate(task, 'p', () => Promise.reject(new Error('pool gone')))).rejects.toThrow('pool gone');
    expect((await memo2.evaluate(task, 'p', async () => evaluation('unresolved'))).outcome).toBe('unresolved');
  });
});

describe.skipIf(!canSandbox)('runRollouts', () => {
  it('grades the samples of a task that make the same fix once, with the same reward for each', async () => {
    const { tokenizer, engine } = tinyPolicy();
    const [task] = await generateMiniSweTasks({ count: 1, seed: 4, kinds: ['misspelled-name'], issue: 'error' });
    if (!task) throw new Error('no task');
    const twin: SweTask = { ...task }; // the same repository and tests, another task of the batch
    const imEnd = tokenizer.tokenToId('<|im_end|>') as number;
    const script = [
      `\`\`\`command\ngit apply <<'SWERL_EOF'\n${task.patch}SWERL_EOF\n\`\`\``,
      '```command\nsubmit\n```',
    ];
    graded.patches.length = 0;
    const records = await runRollouts({
      engine: scriptedSessions(engine, (turn) => [
        ...tokenizer.encode(script[turn] ?? 'submit', { specials: false }),
        imEnd,
      ]),
      tokenizer,
      tasks: [task, twin],
      samplesPerTask: 4,
      maxTurns: 3,
      maxTokensPerTurn: 512,
      maxContextTokens: 8000,
      concurrency: 4,
      textWorkers: false,
    });
    expect(records.map((r) => r.finishReason)).toEqual(Array(8).fill('submit'));
    expect(new Set(records.map((r) => r.patch)).size).toBe(1);
    expect(records.map((r) => r.resolved)).toEqual(Array(8).fill(true));
    // Eight episodes, one fix, two task objects: two gradings.
    expect(graded.patches).toHaveLength(2);
  }, 120_000);
});

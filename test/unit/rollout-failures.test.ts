/**
 * Failures that are not the policy's are never a reward, and one episode's failure never rejects a
 * rollout phase:
 * - an episode whose sandbox cannot be made becomes a record with `error`; its siblings finish;
 * - records with `error` are left out of groups, advantages, RFT data and episode means;
 * - a failure of the engine itself is fatal: runRollouts rejects with it, after every session it
 *   opened (forks and prompt sessions included) has been closed.
 */
import { describe, expect, it } from 'vitest';
import {
  type Engine,
  episodeStats,
  generateMiniSweTasks,
  isolationAvailable,
  policySamples,
  type RolloutRecord,
  rftSamples,
  runRollouts,
  type SweTask,
} from '../../src/index.js';
import { allFailedOrThrow } from '../../src/pipeline/stages.js';
import { tinyPolicy as setup } from '../helpers/tiny-policy.js';

const canSandbox = isolationAvailable('bwrap') || isolationAvailable('unshare');

const options = { maxTurns: 2, maxTokensPerTurn: 8, maxContextTokens: 6000, seed: 3, concurrency: 3 };

describe.skipIf(!canSandbox)('rollout failures', () => {
  it("an episode whose sandbox fails is an error record; its siblings' records are unchanged", async () => {
    const { tokenizer, engine } = setup();
    const tasks = await generateMiniSweTasks({ count: 2, seed: 4, difficulty: 0 });
    const broken: SweTask = {
      ...(tasks[0] as SweTask),
      instance_id: 'broken-task',
      files: { '../outside.js': 'x' },
    };
    const clean = await runRollouts({ engine, tokenizer, tasks, samplesPerTask: 2, ...options });
    const records = await runRollouts({
      engine,
      tokenizer,
      tasks: [tasks[0] as SweTask, broken, tasks[1] as SweTask],
      samplesPerTask: 2,
      ...options,
      seed: options.seed,
    });
    const bad = records.filter((r) => r.instance_id === 'broken-task');
    expect(bad).toHaveLength(2);
    for (const r of bad) {
      expect(r.error?.code).toBe('PATH_ESCAPE');
      expect([r.resolved, r.reward, r.tokens.length, r.finishReason]).toEqual([false, 0, 0, 'error']);
    }
    // The first task's samples have the same seeds in both calls, so the same records.
    const first = (rs: RolloutRecord[]) => rs.filter((r) => r.instance_id === tasks[0]?.instance_id);
    expect(first(records).map((r) => Array.from(r.tokens))).toEqual(first(clean).map((r) => Array.from(r.tokens)));
    expect(records.filter((r) => r.error === undefined)).toHaveLength(4);
    expect(episodeStats(records).errors).toBe(2);
    // A phase in which every episode failed stops, naming the failure, instead of training on nothing.
    expect(() => allFailedOrThrow(bad, 'rft rollouts')).toThrow(/every episode of rft rollouts failed/);
    expect(() => allFailedOrThrow(records, 'rft rollouts')).not.toThrow();
    await expect(runRollouts({ engine, tokenizer, tasks, ...options, evaluationRetries: -1 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });

  it('a failing engine rejects the call with its error, after every session has been closed', async () => {
    const { tokenizer, engine } = setup();
    const tasks = await generateMiniSweTasks({ count: 3, seed: 5, difficulty: 0 });
    let open = 0;
    let calls = 0;
    type S = ReturnType<Engine['openSession']>;
    const wrap = (s: S): S => {
      open++;
      let closed = false;
      return new Proxy(s, {
        get(target, key) {
          if (key === 'generate')
            return (r: Parameters<S['generate']>[0]) => {
              if (++calls === 9) return Promise.reject(new Error('engine crashed (injected)'));
              return target.generate(r);
            };
          if (key === 'fork') return () => wrap(target.fork());
          if (key === 'close')
            return () => {
              if (!closed) open--;
              closed = true;
              target.close();
            };
          const v = Reflect.get(target, key);
          return typeof v === 'function' ? v.bind(target) : v;
        },
      });
    };
    const failing = { openSession: () => wrap(engine.openSession()) };
    const seen: RolloutRecord[] = [];
    await expect(
      runRollouts({
        engine: failing,
        tokenizer,
        tasks,
        samplesPerTask: 2,
        ...options,
        onRecord: (r) => seen.push(r),
      }),
    ).rejects.toThrow('engine crashed (injected)');
    expect(calls).toBeGreaterThanOrEqual(9);
    expect(open).toBe(0);
  });
});

describe('records with an error carry no reward signal', () => {
  const rec = (id: string, reward: number, resolved: boolean, error?: RolloutRecord['error']): RolloutRecord => ({
    instance_id: id,
    sample: 0,
    tokens: Int32Array.of(1, 2, 3),
    assistantMask: Uint8Array.of(0, 1, 1),
    logprobs: new Float32Array(3),
    turns: [{ start: 1, end: 3, formatError: null, command: 'submit', exitCode: 0 }],
    patch: 'x',
    finishReason: 'submit',
    resolved,
    reward,
    ...(error ? { error } : {}),
    timings: { wallMs: 0, generateMs: 0, toolMs: 0, evaluateMs: 0 },
  });
  const err = { code: 'SANDBOX_UNAVAILABLE', message: 'no Docker engine' };

  it('are left out of groups, advantages, RFT data and means', () => {
    const judged = [rec('a', 1, true), rec('a', 0, false)];
    const withErrors = [...judged, rec('a', 0, false, err), rec('b', 0, false, err), rec('b', 0, false, err)];
    const a = policySamples(judged);
    const b = policySamples(withErrors);
    expect(b.droppedErrors).toBe(3);
    expect(b.groups).toBe(1); // b had no judged sample: no group
    expect(b.samples.map((s) => s.advantage)).toEqual(a.samples.map((s) => s.advantage));
    expect(rftSamples([rec('c', 1, true, err)])).toHaveLength(0);
    const stats = episodeStats(withErrors);
    expect([stats.resolved, stats.reward, stats.episodes, stats.errors]).toEqual([0.5, 0.5, 5, 3]);
  });
});

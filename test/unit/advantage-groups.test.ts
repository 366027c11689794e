/**
 * Advantage groups are tasks, not instance_id strings: two tasks that share an instance_id (a
 * tasks file listing one twice, or two files merged) are two groups, each with its own mean and
 * std, because runRollouts records each task's group (`<seed>:<position>`) and policySamples
 * groups by it. With unique ids the samples are bit for bit what grouping by instance_id gave.
 */
import { describe, expect, it } from 'vitest';
import {
  generateMiniSweTasks,
  groupAdvantages,
  isolationAvailable,
  policySamples,
  type RolloutRecord,
  runRollouts,
  type SweTask,
} from '../../src/index.js';
import { tinyPolicy as setup } from '../helpers/tiny-policy.js';

const canSandbox = isolationAvailable('bwrap') || isolationAvailable('unshare');

const rec = (id: string, group: string | undefined, sample: number, reward: number): RolloutRecord => ({
  instance_id: id,
  ...(group === undefined ? {} : { group }),
  sample,
  tokens: Int32Array.of(1, 2, 3 + sample),
  assistantMask: Uint8Array.of(0, 1, 1),
  logprobs: Float32Array.of(0, -0.5, -0.25 * (sample + 1)),
  turns: [{ start: 1, end: 3, formatError: null, command: 'submit', exitCode: 0 }],
  patch: 'x',
  finishReason: 'submit',
  resolved: reward > 0,
  reward,
  timings: { wallMs: 0, generateMs: 0, toolMs: 0, evaluateMs: 0 },
});

const withoutGroup = (rs: RolloutRecord[]) =>
  rs.map((r) => {
    const { group: _g, ...rest } = r;
    return rest as RolloutRecord;
  });

describe('policySamples groups by task, not by instance_id', () => {
  it('two tasks sharing an instance_id are two groups, each with its own advantages', () => {
    // Task 0 (group 3:0) solves once in 3; task 1 (3:1), the same id, solves twice in 3.
    const records = [
      rec('dup', '3:0', 0, 1),
      rec('dup', '3:0', 1, 0),
      rec('dup', '3:0', 2, 0),
      rec('dup', '3:1', 0, 1),
      rec('dup', '3:1', 1, 1),
      rec('dup', '3:1', 2, 0),
    ];
    const batch = policySamples(records);
    expect([batch.groups, batch.droppedGroups, batch.samples.length]).toEqual([2, 0, 6]);
    const expected = [...groupAdvantages([1, 0, 0]), ...groupAdvantages([1, 1, 0])];
    expect(batch.samples.map((s) => s.advantage)).toEqual(expected);
    expect(batch.records).toEqual(records);
    // A flat duplicate is dropped alone (merged with the other, it would have carried signal).
    const flat = policySamples([...records.slice(0, 3), rec('dup', '3:1', 0, 0), rec('dup', '3:1', 1, 0)]);
    expect([flat.groups, flat.droppedGroups, flat.samples.length]).toEqual([2, 1, 3]);
  });

  it('gives, with unique ids, bit for bit the samples grouping by instance_id gave', () => {
    // Interleaved and with a refill round's seed: the order of groups is their first record's.
    const records = [
      rec('a', '3:0', 0, 1),
      rec('b', '3:1', 0, 0),
      rec('a', '3:0', 1, 0),
      rec('b', '3:1', 1, 1),
      rec('a', '3:0', 2, 0),
      rec('b', '3:1', 2, 1),
      rec('c', '10:0', 0, 0.25),
      rec('c', '10:0', 1, -0.5),
    ];
    for (const o of [{}, { estimator: 'drgrpo' as const }, { estimator: 'rloo' as const }]) {
      const grouped = policySamples(records, o);
      const byId = policySamples(withoutGroup(records), o);
      expect(grouped.groups).toBe(3);
      expect(grouped.samples.length).toBe(byId.samples.length);
      grouped.samples.forEach((s, k) => {
        const t = byId.samples[k];
        expect(Object.is(s.advantage, t?.advantage)).toBe(true);
        expect(s.tokens).toBe(t?.tokens);
        expect(s.oldLogprobs).toBe(t?.oldLogprobs);
        expect(Array.from(s.lossMask)).toEqual(Array.from(t?.lossMask ?? []));
      });
      expect(grouped.records.map((r) => [r.instance_id, r.sample])).toEqual(
        byId.records.map((r) => [r.instance_id, r.sample]),
      );
    }
  });
});

describe.skipIf(!canSandbox)('runRollouts records each task its group', () => {
  it('a task listed twice is two groups; distinct tasks are grouped as by instance_id', async () => {
    const { tokenizer, engine } = setup();
    const [t0, t1] = (await generateMiniSweTasks({ count: 2, seed: 4, difficulty: 0 })) as [SweTask, SweTask];
    const o = { engine, tokenizer, samplesPerTask: 2, maxTurns: 1, maxTokensPerTurn: 8, seed: 3 };
    const twice = await runRollouts({ ...o, tasks: [t0, { ...t0 }] });
    expect(twice.map((r) => [r.instance_id, r.group, r.sample])).toEqual([
      [t0.instance_id, '3:0', 0],
      [t0.instance_id, '3:0', 1],
      [t0.instance_id, '3:1', 0],
      [t0.instance_id, '3:1', 1],
    ]);
    expect(policySamples(twice, { dropZeroAdvantage: false }).groups).toBe(2);
    const distinct = await runRollouts({ ...o, tasks: [t0, t1] });
    const a = policySamples(distinct, { dropZeroAdvantage: false });
    const b = policySamples(withoutGroup(distinct), { dropZeroAdvantage: false });
    expect(a.groups).toBe(2);
    expect(a.samples.map((s) => s.advantage)).toEqual(b.samples.map((s) => s.advantage));
  });
});

/**
 * DAPO's refill target with `filterOverlong`: a group whose every member ended on a limit is
 * emptied by the filter and must not count as kept, so the iteration refills for it. Real
 * policySamples over hand-built records (the grouping and filtering under test are pure).
 */
import { describe, expect, it } from 'vitest';
import { policySamples } from '../../src/index.js';
import { keptGroups } from '../../src/rl/group-filters.js';
import type { RolloutRecord } from '../../src/rollout/record.js';

function record(
  id: string,
  sample: number,
  reward: number,
  finishReason: RolloutRecord['finishReason'],
): RolloutRecord {
  return {
    instance_id: id,
    sample,
    tokens: Int32Array.from([1, 2, 3, 4]),
    assistantMask: Uint8Array.from([0, 0, 1, 1]),
    logprobs: new Float32Array(4),
    turns: [],
    patch: '',
    finishReason,
    resolved: reward > 0,
    reward,
    timings: { wallMs: 0, generateMs: 0, toolMs: 0, evaluateMs: 0 },
  } as unknown as RolloutRecord;
}

describe('keptGroups (the refill target)', () => {
  // Task a: both members hit the turn limit (rewards differ, so not a flat group); task b: mixed
  // rewards, submitted; task c: flat.
  const records = [
    record('a', 0, 0, 'max_turns'),
    record('a', 1, 1, 'max_context'),
    record('b', 0, 1, 'submit'),
    record('b', 1, 0, 'submit'),
    record('c', 0, 0, 'submit'),
    record('c', 1, 0, 'submit'),
  ];

  it('does not count a group emptied by filterOverlong as kept', () => {
    const batch = policySamples(records, { filterOverlong: true });
    // Only b trains: a is emptied by the filter, c is flat.
    expect(new Set(batch.records.map((r) => r.instance_id))).toEqual(new Set(['b']));
    expect(keptGroups(batch)).toBe(1);
  });

  it('is groups − flat groups without the filter (the default path, unchanged)', () => {
    const batch = policySamples(records, {});
    expect(keptGroups(batch)).toBe(batch.groups - batch.droppedGroups);
    expect(keptGroups(batch)).toBe(2);
  });

  it('ignores errored records when deciding whether a group was emptied', () => {
    const withError = [
      ...records,
      { ...record('d', 0, 0, 'error'), error: { code: 'SANDBOX', message: 'x' } } as RolloutRecord,
      record('d', 1, 1, 'max_turns'),
      record('d', 2, 0, 'submit'),
    ];
    const batch = policySamples(withError, { filterOverlong: true });
    // d keeps one submitted member: a flat group of one, dropped as flat, not as emptied.
    expect(keptGroups(batch)).toBe(batch.groups - batch.droppedGroups - 1);
  });

  it("follows policySamples' grouping: two groups of one instance_id, one emptied", () => {
    const g = (r: RolloutRecord, group: string) => ({ ...r, group }) as RolloutRecord;
    const twin = [
      g(record('x', 0, 0, 'max_turns'), '1:0'),
      g(record('x', 1, 1, 'max_turns'), '1:0'),
      g(record('x', 0, 0, 'submit'), '1:1'),
      g(record('x', 1, 1, 'submit'), '1:1'),
    ];
    const batch = policySamples(twin, { filterOverlong: true });
    // Two groups when policySamples keys by `group` (one emptied, one kept), else one (kept).
    expect(keptGroups(batch)).toBe(1);
  });
});

/**
 * recordDivergence: where two records of one episode part, and who made the difference (the
 * environment at an observation token, the engine at a generated one, or the grader).
 */
import { describe, expect, it } from 'vitest';
import { type RolloutRecord, recordDivergence } from '../../src/index.js';

/** A record from (token, generated?, logprob) triples. */
function rec(spec: [number, 0 | 1, number][], reward = 0): RolloutRecord {
  return {
    instance_id: 't',
    sample: 0,
    tokens: Int32Array.from(spec.map((s) => s[0])),
    assistantMask: Uint8Array.from(spec.map((s) => s[1])),
    logprobs: Float32Array.from(spec.map((s) => s[2])),
    turns: [],
    patch: '',
    finishReason: 'max_turns',
    resolved: false,
    reward,
    timings: { wallMs: 0, generateMs: 0, toolMs: 0, evaluateMs: 0 },
  };
}

// prompt (2 tokens), response (2), observation (2), response (1)
const base: [number, 0 | 1, number][] = [
  [1, 0, 0],
  [2, 0, 0],
  [10, 1, -0.5],
  [11, 1, -1.25],
  [20, 0, 0],
  [21, 0, 0],
  [12, 1, -0.75],
];

describe('recordDivergence', () => {
  it('identical records', () => {
    expect(recordDivergence(rec(base), rec(base))).toEqual({ kind: 'identical', at: 7 });
  });

  it('an observation token that differs is the environment', () => {
    const b = base.map((s, i): [number, 0 | 1, number] => (i === 5 ? [22, 0, 0] : s));
    expect(recordDivergence(rec(base), rec(b))).toEqual({ kind: 'observation', at: 5 });
    // the episodes may go their own ways after it: still the observation's doing
    const c = [...b.slice(0, 6), [13, 1, -2] as [number, 0 | 1, number]];
    expect(recordDivergence(rec(base), rec(c))).toEqual({ kind: 'observation', at: 5 });
  });

  it('a generated token that differs after the same context is the engine', () => {
    const b = base.map((s, i): [number, 0 | 1, number] => (i === 3 ? [14, 1, -1.25] : s));
    expect(recordDivergence(rec(base), rec(b))).toEqual({ kind: 'generated', at: 3 });
  });

  it('a logprob two ulps off on a shared token is the engine', () => {
    const lp = Math.fround(-1.25) + 2 ** -22; // two f32 ulps of 1.25 (one is 2^-23)
    const b = base.map((s, i): [number, 0 | 1, number] => (i === 3 ? [11, 1, lp] : s));
    expect(recordDivergence(rec(base), rec(b))).toEqual({ kind: 'logprobs', at: 3 });
  });

  it('one record a prefix of the other: the longer one says who went on', () => {
    // b ends after the observation; a's next token is generated: the engine (a stop decision)
    expect(recordDivergence(rec(base), rec(base.slice(0, 6)))).toEqual({ kind: 'generated', at: 6 });
    // b ends after the first response; a goes on with an observation
    expect(recordDivergence(rec(base), rec(base.slice(0, 4)))).toEqual({ kind: 'observation', at: 4 });
  });

  it('the same tokens with another reward is the grader', () => {
    expect(recordDivergence(rec(base, 0), rec(base, 1))).toEqual({ kind: 'reward', at: 7 });
  });
});

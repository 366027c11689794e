// A loss call refused for non-finite logits changes nothing the caller holds: in place, the logits
// (which are also the gradient buffer) keep every bit, whichever row is bad and at any temperature;
// the fused path's own chunk buffer is exempt (it is the loss's scratch).
import { describe, expect, it } from 'vitest';
import { policyLoss, sftLoss } from '../../src/index.js';
import { expectSwerlError } from '../helpers/errors.js';
import { rng } from '../helpers/random.js';

const T = 6;
const V = 3000; // more than one row chunk of the CPU kernels

function inputs(seed: number) {
  const rand = rng(seed);
  const logits = Float32Array.from({ length: T * V }, () => (rand() - 0.5) * 8);
  const targets = Int32Array.from({ length: T }, () => Math.floor(rand() * V));
  return {
    logits,
    vocab: V,
    targets,
    oldLogprobs: Float32Array.from({ length: T }, () => -2 - rand()),
    advantages: Float32Array.from({ length: T }, () => (rand() < 0.5 ? -1 : 1)),
    mask: new Float32Array(T).fill(1),
  };
}

describe('a refused loss call leaves in-place logits intact', () => {
  for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
    for (const row of [0, T - 1]) {
      for (const temperature of [1, 0.7]) {
        it(`${bad} in row ${row}, temperature ${temperature}`, () => {
          const a = inputs(row * 10 + (temperature === 1 ? 1 : 2));
          a.logits[row * V + 1234] = bad;
          const before = new Uint32Array(a.logits.slice().buffer);
          expectSwerlError(() => policyLoss(a, { temperature }, { gradLogits: a.logits }), 'NON_FINITE_LOGITS');
          expect(new Uint32Array(a.logits.buffer)).toEqual(before);
          expectSwerlError(
            () =>
              sftLoss(
                { logits: a.logits, vocab: V, targets: a.targets, mask: a.mask, temperature },
                { gradLogits: a.logits },
              ),
            'NON_FINITE_LOGITS',
          );
          expect(new Uint32Array(a.logits.buffer)).toEqual(before);
        });
      }
    }
  }

  it('in place still gives the out-of-place gradient and logprobs', () => {
    const a = inputs(99);
    const ref = policyLoss(a, {});
    const inPlace = a.logits.slice();
    const r = policyLoss({ ...a, logits: inPlace }, {}, { gradLogits: inPlace });
    expect(r.loss).toBe(ref.loss);
    expect(Array.from(r.logprobs)).toEqual(Array.from(ref.logprobs));
    for (let i = 0; i < inPlace.length; i++)
      expect(Math.abs((inPlace[i] as number) - (ref.gradLogits[i] as number))).toBeLessThanOrEqual(1e-7);
  });
});

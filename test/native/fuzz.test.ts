// Nothing a caller sends may crash the process: every public entry point, fed arbitrary values
// (fast-check's anything(), typed arrays of every kind, huge and negative numbers), either works
// or throws a SwerlError.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  PagedKvCache,
  policyLoss,
  policyLossFused,
  SwerlError,
  sample,
  sftLoss,
  sftLossFused,
} from '../../src/index.js';

const weird = fc.oneof(
  fc.anything(),
  fc.constantFrom(-1, 0, 1, 2 ** 31, 2 ** 53, -(2 ** 53), Number.NaN, Number.POSITIVE_INFINITY, 1e300, 0.5),
  fc.constantFrom(
    new Float32Array(3),
    new Int32Array(4).fill(-1),
    new Float64Array(2),
    new Uint8Array(5),
    new Int32Array(0),
  ),
  fc.array(fc.oneof(fc.integer(), fc.double(), fc.string()), { maxLength: 6 }),
);

function survives(fn: () => unknown): void {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(SwerlError);
  }
}

describe('arbitrary input', () => {
  it('never crashes the KV cache', () => {
    const kv = new PagedKvCache({ numBlocks: 8, blockSize: 4, numLayers: 1, numKvHeads: 1, headDim: 2 });
    const s = kv.createSequence();
    kv.append(s, [1, 2, 3]);
    fc.assert(
      fc.property(weird, weird, weird, weird, (a, b, c, d) => {
        survives(() => new PagedKvCache(a as never));
        survives(() => kv.append(a as never, b as never));
        survives(() => kv.append(s, b as never));
        survives(() => kv.appendBatch(a as never, b as never, c as never, d as never));
        survives(() => kv.commitBatch(a as never));
        survives(() => kv.fork(a as never));
        survives(() => kv.blockTable(a as never));
        survives(() => kv.slotMapping(s, a as never, b as never));
        survives(() => kv.writeKv(s, a as never, b as never, c as never, d as never));
        survives(() => kv.readKv(s, a as never, b as never, c as never));
        survives(() => kv.setWeightVersion(a as never));
      }),
      { numRuns: 300 },
    );
    expect(kv.length(s)).toBeGreaterThanOrEqual(3);
  });

  it('never crashes the sampler or the losses', () => {
    fc.assert(
      fc.property(weird, weird, weird, weird, (a, b, c, d) => {
        survives(() => sample(a as never, b as never, c as never, d as never));
        survives(() => sample(new Float32Array(6), 3, [a, b] as never));
        survives(() => sftLoss(a as never));
        survives(() => sftLoss({ logits: new Float32Array(6), vocab: 3, targets: a, mask: b } as never, c as never));
        survives(() => policyLoss(a as never, b as never, c as never));
        survives(() =>
          policyLoss(
            {
              logits: new Float32Array(6),
              vocab: 3,
              targets: Int32Array.of(0, 1),
              oldLogprobs: a,
              advantages: b,
              mask: c,
            } as never,
            d as never,
          ),
        );
        survives(() => sftLossFused(a as never, b as never));
        survives(() =>
          sftLossFused(
            {
              hidden: new Float32Array(4),
              weight: new Float32Array(6),
              hiddenSize: 2,
              vocab: 3,
              targets: a,
              mask: b,
            } as never,
            c as never,
          ),
        );
        survives(() => policyLossFused(a as never, b as never, c as never));
      }),
      { numRuns: 300 },
    );
  });
});

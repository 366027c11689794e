// Bad input to PagedKvCache: always a SwerlError with a stable code, and the cache unchanged.
import { describe, expect, it } from 'vitest';
import { PagedKvCache, type SwerlError } from '../../src/index.js';
import { native } from '../../src/native.js';
import { expectSwerlError } from '../helpers/errors.js';
import { range, snapshot } from '../helpers/kv-snapshot.js';

function expectCode(fn: () => unknown, code: string): SwerlError {
  const err = expectSwerlError(fn, code);
  expect(err.message.length).toBeGreaterThan(10);
  return err;
}

const base = { numBlocks: 8, blockSize: 4, numLayers: 1, numKvHeads: 1, headDim: 2 };

describe('constructor', () => {
  const bad: [string, Record<string, unknown>][] = [
    ['numBlocks 0', { ...base, numBlocks: 0 }],
    ['numBlocks negative', { ...base, numBlocks: -3 }],
    ['numBlocks fractional', { ...base, numBlocks: 2.5 }],
    ['numBlocks NaN', { ...base, numBlocks: Number.NaN }],
    ['numBlocks string', { ...base, numBlocks: '8' }],
    ['numBlocks missing', { ...base, numBlocks: undefined }],
    ['blockSize 0', { ...base, blockSize: 0 }],
    ['blockSize huge', { ...base, blockSize: 1 << 20 }],
    ['numLayers 0', { ...base, numLayers: 0 }],
    ['numKvHeads Infinity', { ...base, numKvHeads: Number.POSITIVE_INFINITY }],
    ['headDim null', { ...base, headDim: null }],
    ['dtype unknown', { ...base, dtype: 'f64' }],
    ['device unknown', { ...base, device: 'tpu' }],
    ['prefixCaching not boolean', { ...base, prefixCaching: 1 }],
    ['too many slots', { ...base, numBlocks: 1 << 28, blockSize: 16 }],
  ];
  for (const [name, opts] of bad) {
    it(`rejects ${name}`, () => {
      expectCode(() => new PagedKvCache(opts as never), 'INVALID_ARGUMENT');
    });
  }

  it('rejects a non-object', () => {
    expectCode(() => new PagedKvCache(undefined as never), 'INVALID_ARGUMENT');
    expectCode(() => new PagedKvCache(5 as never), 'INVALID_ARGUMENT');
  });

  it('reports an impossible allocation as OUT_OF_MEMORY', () => {
    expectCode(
      () => new PagedKvCache({ numBlocks: 1 << 26, blockSize: 16, numLayers: 8, numKvHeads: 64, headDim: 128 }),
      'OUT_OF_MEMORY',
    );
  });

  it('re-checks arguments in the native binding when the wrapper is bypassed', () => {
    const Native = native().NativePagedKvCache;
    const out = new Float64Array(8);
    const good = { ...base, dtype: 'f32', device: 'cpu', prefixCaching: true } as const;
    expectCode(() => new Native({ ...good, numBlocks: 'x' } as never, out), 'INVALID_ARGUMENT');
    expectCode(() => new Native({ ...good, dtype: 'f8' } as never, out), 'INVALID_ARGUMENT');
    expectCode(() => new Native(good, new Float64Array(2)), 'INVALID_ARGUMENT');
    const kv = new Native(good, out);
    const s = kv.createSequence();
    expectCode(() => kv.append(s, [1, 2] as never), 'INVALID_ARGUMENT');
    expectCode(() => kv.append(s, new Int32Array([1, -5])), 'INVALID_ARGUMENT');
    expectCode(() => kv.append('1' as never, new Int32Array([1])), 'INVALID_ARGUMENT');
    expectCode(() => kv.free(1.5), 'INVALID_ARGUMENT');
    expectCode(() => kv.writeKv(s, 0, 0, new Float32Array(3), new Float32Array(3)), 'INVALID_ARGUMENT');
    expectCode(() => kv.readKv(s, 0, 0, 1), 'INVALID_ARGUMENT');
    expectCode(() => kv.readKv(s, -1, 0, 0), 'INVALID_ARGUMENT');
    expectCode(() => (kv.append as (...a: unknown[]) => number)(), 'INVALID_ARGUMENT');
  });
});

describe('every method on bad input', () => {
  function setup() {
    const kv = new PagedKvCache(base);
    const a = kv.createSequence();
    kv.append(a, range(6));
    kv.commit(a);
    const b = kv.createSequence();
    kv.append(b, range(3, 9));
    const freed = kv.createSequence();
    kv.free(freed);
    return { kv, a, b, freed, snap: snapshot(kv, [a, b]) };
  }

  const cases: [string, string, (c: ReturnType<typeof setup>) => unknown][] = [
    ['append to an unknown id', 'UNKNOWN_SEQUENCE', ({ kv }) => kv.append(12345, [1])],
    ['append to a freed id', 'UNKNOWN_SEQUENCE', ({ kv, freed }) => kv.append(freed, [1])],
    ['append a negative token', 'INVALID_ARGUMENT', ({ kv, b }) => kv.append(b, [1, -1])],
    ['append a fractional token', 'INVALID_ARGUMENT', ({ kv, b }) => kv.append(b, [1, 2.5])],
    ['append a NaN token', 'INVALID_ARGUMENT', ({ kv, b }) => kv.append(b, [Number.NaN])],
    ['append a token >= 2^31', 'INVALID_ARGUMENT', ({ kv, b }) => kv.append(b, [2 ** 31])],
    ['append a negative Int32Array token', 'INVALID_ARGUMENT', ({ kv, b }) => kv.append(b, new Int32Array([4, -7]))],
    ['append a string', 'INVALID_ARGUMENT', ({ kv, b }) => kv.append(b, '1234' as never)],
    ['append null', 'INVALID_ARGUMENT', ({ kv, b }) => kv.append(b, null as never)],
    ['append a string token', 'INVALID_ARGUMENT', ({ kv, b }) => kv.append(b, ['1'] as never)],
    ['append with a string id', 'INVALID_ARGUMENT', ({ kv }) => kv.append('1' as never, [1])],
    ['append with a NaN id', 'INVALID_ARGUMENT', ({ kv }) => kv.append(Number.NaN, [1])],
    ['commit an unknown id', 'UNKNOWN_SEQUENCE', ({ kv }) => kv.commit(-4)],
    ['commit a freed id', 'UNKNOWN_SEQUENCE', ({ kv, freed }) => kv.commit(freed)],
    ['fork a freed id', 'UNKNOWN_SEQUENCE', ({ kv, freed }) => kv.fork(freed)],
    ['double free', 'UNKNOWN_SEQUENCE', ({ kv, freed }) => kv.free(freed)],
    ['free an object', 'INVALID_ARGUMENT', ({ kv }) => kv.free({} as never)],
    ['length of a freed id', 'UNKNOWN_SEQUENCE', ({ kv, freed }) => kv.length(freed)],
    ['blockTable of an unknown id', 'UNKNOWN_SEQUENCE', ({ kv }) => kv.blockTable(99)],
    ['setWeightVersion(-1)', 'INVALID_ARGUMENT', ({ kv }) => kv.setWeightVersion(-1)],
    ['setWeightVersion(1.5)', 'INVALID_ARGUMENT', ({ kv }) => kv.setWeightVersion(1.5)],
    ['setWeightVersion("2")', 'INVALID_ARGUMENT', ({ kv }) => kv.setWeightVersion('2' as never)],
    ['slotMapping past the end', 'INVALID_ARGUMENT', ({ kv, a }) => kv.slotMapping(a, 4, 3)],
    [
      'writeKv past the end',
      'INVALID_ARGUMENT',
      ({ kv, b }) => kv.writeKv(b, 0, 8, new Float32Array(4), new Float32Array(4)),
    ],
    [
      'writeKv committed KV',
      'INVALID_ARGUMENT',
      ({ kv, a }) => kv.writeKv(a, 0, 0, new Float32Array(2), new Float32Array(2)),
    ],
    [
      'writeKv a bad layer',
      'INVALID_ARGUMENT',
      ({ kv, b }) => kv.writeKv(b, 3, 0, new Float32Array(2), new Float32Array(2)),
    ],
    [
      'writeKv ragged rows',
      'INVALID_ARGUMENT',
      ({ kv, b }) => kv.writeKv(b, 0, 0, new Float32Array(3), new Float32Array(3)),
    ],
    [
      'writeKv mismatched k/v',
      'INVALID_ARGUMENT',
      ({ kv, b }) => kv.writeKv(b, 0, 0, new Float32Array(2), new Float32Array(4)),
    ],
    [
      'writeKv a Float64Array',
      'INVALID_ARGUMENT',
      ({ kv, b }) => kv.writeKv(b, 0, 0, new Float64Array(2) as never, new Float32Array(2)),
    ],
    ['readKv past the end', 'INVALID_ARGUMENT', ({ kv, a }) => kv.readKv(a, 0, 0, 7)],
    ['readKv a negative start', 'INVALID_ARGUMENT', ({ kv, a }) => kv.readKv(a, 0, -1, 1)],
    ['append that does not fit', 'KV_CACHE_FULL', ({ kv, b }) => kv.append(b, range(40))],
  ];
  for (const [name, code, fn] of cases) {
    it(`${name}: ${code}, nothing changes`, () => {
      const c = setup();
      expectCode(() => fn(c), code);
      expect(snapshot(c.kv, [c.a, c.b])).toEqual(c.snap);
    });
  }
});

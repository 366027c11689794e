// The KV write kernel against plain references: f32 exact, f16/bf16 rounded to nearest even,
// the AVX2 and portable paths bit-identical, and multi-threaded writes equal to single rows.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { nativeInfo, PagedKvCache } from '../../src/index.js';
import { addonCandidates } from '../../src/native.js';
import { roundBf16, roundF16 } from '../helpers/float16.js';
import { rng } from '../helpers/random.js';

/** Deterministic values covering magnitudes, signs, subnormals, ties and overflow. */
function testValues(n: number, seed: number): Float32Array {
  const rand = rng(seed);
  const special = [
    0,
    -0,
    1,
    -1,
    65504,
    65519.99,
    65520,
    1e5,
    -1e5,
    2 ** -14,
    2 ** -24,
    2 ** -25,
    3 * 2 ** -26,
    1e-30,
    1 + 2 ** -11,
    1 + 3 * 2 ** -11,
    1 + 2 ** -8,
    1 + 3 * 2 ** -8,
    3.4e38,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
  ];
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    out[i] = i < special.length ? (special[i] as number) : (rand() - 0.5) * 2 ** Math.floor(rand() * 60 - 30);
  }
  return out;
}

function roundTrip(dtype: 'f32' | 'f16' | 'bf16', values: Float32Array, heads: number, dim: number) {
  const rows = values.length / (heads * dim);
  const kv = new PagedKvCache({
    numBlocks: Math.ceil(rows / 16) + 2,
    numLayers: 2,
    numKvHeads: heads,
    headDim: dim,
    dtype,
  });
  const pad = kv.createSequence();
  kv.append(pad, [1, 2, 3]); // so the sequence under test does not start at slot 0
  const s = kv.createSequence();
  kv.append(s, new Array(rows).fill(5));
  const v = values.map((x) => -x);
  kv.writeKv(s, 1, 0, values, v);
  return kv.readKv(s, 1, 0, rows);
}

describe('KV write kernel', () => {
  it('stores f32 exactly', () => {
    const x = testValues(40 * 8 * 16, 1);
    const r = roundTrip('f32', x, 8, 16);
    expect(r.k).toEqual(x);
    expect(r.v).toEqual(x.map((y) => -y));
  });

  for (const [dtype, ref] of [
    ['f16', roundF16],
    ['bf16', roundBf16],
  ] as const) {
    it(`rounds ${dtype} to nearest even like the float64 reference`, () => {
      const x = testValues(37 * 4 * 24, 2); // row length 96: vector body; 37 rows
      const r = roundTrip(dtype, x, 4, 24);
      let maxRelErr = 0;
      for (let i = 0; i < x.length; i++) {
        const want = ref(x[i] as number);
        const got = r.k[i] as number;
        expect(Object.is(got, want) || got === want, `x=${x[i]} want ${want} got ${got}`).toBe(true);
        expect(r.v[i]).toBe(ref(-(x[i] as number)));
        if (Number.isFinite(want) && Math.abs(x[i] as number) > 1e-3) {
          maxRelErr = Math.max(maxRelErr, Math.abs(got - (x[i] as number)) / Math.abs(x[i] as number));
        }
      }
      expect(maxRelErr).toBeLessThanOrEqual(dtype === 'f16' ? 2 ** -11 : 2 ** -8);
    });

    it(`keeps ${dtype} NaN a NaN`, () => {
      const x = new Float32Array(16).fill(Number.NaN);
      x[3] = 1;
      const r = roundTrip(dtype, x, 1, 16);
      expect(Number.isNaN(r.k[0])).toBe(true);
      expect(r.k[3]).toBe(1);
    });
  }

  it('gives the same bits on the AVX2 and the portable path', () => {
    const addon = addonCandidates().find((p) => existsSync(p)) as string;
    const script = `
      const b = require(${JSON.stringify(addon)});
      const out = new Float64Array(8);
      const res = {};
      for (const dtype of ['f16', 'bf16']) {
        const kv = new b.NativePagedKvCache({ numBlocks: 64, blockSize: 16, numLayers: 1, numKvHeads: 3, headDim: 37,
          dtype, device: 'cpu', prefixCaching: true }, out);
        const s = kv.createSequence();
        const rows = 1000;
        kv.append(s, new Int32Array(rows));
        const x = new Float32Array(rows * 111);
        const u = new Uint32Array(x.buffer);
        let h = 12345;
        for (let i = 0; i < u.length; i++) { h = Math.imul(h ^ (h >>> 13), 0x5bd1e995) + i; u[i] = h >>> 0; }
        kv.writeKv(s, 0, 0, x, x);
        const [k] = kv.readKv(s, 0, 0, rows);
        res[dtype] = require('node:crypto').createHash('sha256').update(new Uint8Array(k.buffer)).digest('hex');
      }
      process.stdout.write(JSON.stringify({ simd: b.nativeInfo().simd, res }));`;
    const run = (env: NodeJS.ProcessEnv) =>
      JSON.parse(execFileSync(process.execPath, ['-e', script], { env: { ...process.env, ...env } }).toString());
    const scalar = run({ SWERL_SIMD: 'scalar' });
    const native = run({});
    expect(scalar.simd).toBe('scalar');
    expect(native.simd).toBe(nativeInfo().simd);
    expect(native.res).toEqual(scalar.res);
  });

  it('writes a large chunk on all threads exactly like row by row', () => {
    const heads = 8;
    const dim = 128;
    const rows = 600; // 600 * 1024 elements: split over the thread pool
    const kv = new PagedKvCache({ numBlocks: 80, numLayers: 1, numKvHeads: heads, headDim: dim, dtype: 'bf16' });
    const a = kv.createSequence();
    const b = kv.createSequence();
    kv.append(a, new Array(rows).fill(1));
    kv.append(b, new Array(rows).fill(2));
    const x = testValues(rows * heads * dim, 9);
    kv.writeKv(a, 0, 0, x, x);
    for (let r = 0; r < rows; r++) {
      const row = x.subarray(r * heads * dim, (r + 1) * heads * dim);
      kv.writeKv(b, 0, r, row, row);
    }
    const ra = kv.readKv(a, 0, 0, rows);
    const rb = kv.readKv(b, 0, 0, rows);
    expect(Buffer.from(ra.k.buffer).equals(Buffer.from(rb.k.buffer))).toBe(true);
    expect(Buffer.from(ra.v.buffer).equals(Buffer.from(rb.v.buffer))).toBe(true);
    expect(ra.k[5]).toBe(roundBf16(x[5] as number));
  });
});

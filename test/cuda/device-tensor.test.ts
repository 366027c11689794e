// DeviceTensor's copies in and out, its errors, and the paged KV cache on device memory (the
// block-table scatter in f32/f16/bf16, the gather, and fork's copy of a partial tail block),
// each against the CPU cache on the same operations, bit for bit.
import { describe, expect, it } from 'vitest';
import { DeviceTensor, nativeInfo, PagedKvCache } from '../../src/index.js';
import { expectSwerlError } from '../helpers/errors.js';
import { rng } from '../helpers/random.js';

const info = nativeInfo();
if (info.cudaDevices === 0) console.warn('CUDA tests skipped: no CUDA device (and not the simulation addon)');

describe.skipIf(info.cudaDevices === 0)('DeviceTensor', () => {
  it('round-trips f32 and i32 arrays bit for bit', () => {
    const f = new Float32Array([0, -0, 1.5, Number.NaN, Number.POSITIVE_INFINITY, -3e-40, 65504]);
    const t = DeviceTensor.from(f);
    const back = t.toArray();
    expect(new Uint32Array(back.buffer)).toEqual(new Uint32Array(f.buffer));
    const i = new Int32Array([1, -2, 2147483647, -2147483648]);
    const ti = DeviceTensor.from(i, [2, 2]);
    expect(ti.shape).toEqual([2, 2]);
    expect(ti.dtype).toBe('i32');
    expect(ti.toArray()).toEqual(i);
    t.dispose();
    ti.dispose();
  });

  it('starts zeroed and takes a new value with copyFrom', () => {
    const t = DeviceTensor.zeros([3, 4]);
    expect(Array.from(t.toArray())).toEqual(new Array(12).fill(0));
    const x = Float32Array.from({ length: 12 }, (_, k) => k / 3);
    t.copyFrom(x);
    expect(t.toArray()).toEqual(x);
    t.dispose();
  });

  it('refuses bad shapes and arrays, and use after dispose', () => {
    expectSwerlError(() => DeviceTensor.from(new Float32Array(6), [4, 2]), 'INVALID_ARGUMENT');
    expectSwerlError(() => DeviceTensor.zeros([2, -1]), 'INVALID_ARGUMENT');
    expectSwerlError(() => DeviceTensor.from(new Float64Array(2) as unknown as Float32Array), 'INVALID_ARGUMENT');
    const t = DeviceTensor.zeros([4]);
    expectSwerlError(() => t.copyFrom(new Float32Array(5)), 'INVALID_ARGUMENT');
    expectSwerlError(() => t.copyFrom(new Int32Array(4) as unknown as Float32Array), 'INVALID_ARGUMENT');
    t.dispose();
    t.dispose();
    expectSwerlError(() => t.toArray(), 'DISPOSED');
  });

  it('refuses a copy past the buffer at the native layer', () => {
    const t = DeviceTensor.zeros([4]);
    expectSwerlError(() => t.buffer.upload(new Float32Array(8), 0), 'INVALID_ARGUMENT');
    expectSwerlError(() => t.buffer.download(new Float32Array(2), 12), 'INVALID_ARGUMENT');
    expect(t.toArray()).toEqual(new Float32Array(4));
    t.dispose();
  });
});

describe.skipIf(info.cudaDevices === 0)('the paged KV cache on device memory', () => {
  for (const dtype of ['f32', 'f16', 'bf16'] as const) {
    it(`writes, reads and forks like the CPU cache (${dtype})`, () => {
      const rand = rng(dtype.length * 7 + 1);
      const geo = { numBlocks: 24, blockSize: 16, numLayers: 2, numKvHeads: 3, headDim: 20, dtype };
      const caches = [new PagedKvCache({ ...geo, device: 'cpu' }), new PagedKvCache({ ...geo, device: 'cuda' })];
      const row = geo.numKvHeads * geo.headDim;
      const read = (c: PagedKvCache, seq: number, layer: number, n: number) => {
        const { k, v } = c.readKv(seq, layer, 0, n);
        return [new Uint32Array(k.buffer).slice(), new Uint32Array(v.buffer).slice()];
      };
      const parents = caches.map((c) => c.createSequence());
      const lengths = [37, 5, 1]; // two full blocks and a partial one; then appends of 5 and 1
      let total = 0;
      for (const n of lengths) {
        const k = Float32Array.from({ length: n * row }, () => (rand() - 0.5) * 2 ** Math.floor(rand() * 40 - 20));
        const v = k.map((x) => -x * 0.5);
        caches.forEach((c, i) => {
          c.append(parents[i] as number, new Array(n).fill(3));
          for (let layer = 0; layer < geo.numLayers; layer++) c.writeKv(parents[i] as number, layer, total, k, v);
        });
        total += n;
      }
      for (let layer = 0; layer < geo.numLayers; layer++)
        expect(read(caches[1] as PagedKvCache, parents[1] as number, layer, total)).toEqual(
          read(caches[0] as PagedKvCache, parents[0] as number, layer, total),
        );
      // fork copies the partial tail block (43 = 2 * 16 + 11 tokens) on the device
      const forks = caches.map((c, i) => c.fork(parents[i] as number));
      for (let layer = 0; layer < geo.numLayers; layer++) {
        const cpu = read(caches[0] as PagedKvCache, forks[0] as number, layer, total);
        expect(read(caches[1] as PagedKvCache, forks[1] as number, layer, total)).toEqual(cpu);
        expect(cpu).toEqual(read(caches[0] as PagedKvCache, parents[0] as number, layer, total));
      }
      // the fork's tail is its own: writing it leaves the parent's unchanged
      const extra = Float32Array.from({ length: row }, () => rand());
      caches.forEach((c, i) => {
        c.append(forks[i] as number, [9]);
        c.writeKv(forks[i] as number, 0, total, extra, extra);
      });
      expect(read(caches[1] as PagedKvCache, parents[1] as number, 0, total)).toEqual(
        read(caches[0] as PagedKvCache, parents[0] as number, 0, total),
      );
      expect(read(caches[1] as PagedKvCache, forks[1] as number, 0, total + 1)).toEqual(
        read(caches[0] as PagedKvCache, forks[0] as number, 0, total + 1),
      );
      for (const c of caches) c.dispose();
    });
  }
});

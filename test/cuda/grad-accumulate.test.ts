// Folding a gradient slot into a gradient on the device (accumulateGradDevice: into += from, then
// from = 0) and zeroing a gradient (zeroGradDevice), bitwise against f32 arithmetic, at sizes
// that are not multiples of a block; with their refusals.
import { describe, expect, it } from 'vitest';
import { accumulateGradDevice, DeviceTensor, nativeInfo, zeroGradDevice } from '../../src/index.js';
import { expectSwerlError } from '../helpers/errors.js';
import { rng } from '../helpers/random.js';

const info = nativeInfo();
if (info.cudaDevices === 0) console.warn('CUDA tests skipped: no CUDA device (and not the simulation addon)');

describe.skipIf(info.cudaDevices === 0)('gradient slots on the device', () => {
  for (const n of [1, 1000, 100003]) {
    it(`accumulates and zeroes ${n} elements bitwise`, () => {
      const rand = rng(n);
      const a = Float32Array.from({ length: n }, () => (rand() - 0.5) * 2 ** Math.floor(rand() * 20 - 10));
      const b = Float32Array.from({ length: n }, () => (rand() - 0.5) * 2 ** Math.floor(rand() * 20 - 10));
      const [into, from] = [DeviceTensor.from(a), DeviceTensor.from(b)];
      accumulateGradDevice(into, from);
      const want = a.map((x, i) => Math.fround(x + (b[i] as number)));
      expect(new Uint32Array((into.toArray() as Float32Array).buffer)).toEqual(new Uint32Array(want.buffer));
      expect((from.toArray() as Float32Array).every((x) => x === 0)).toBe(true);
      zeroGradDevice(into);
      expect((into.toArray() as Float32Array).every((x) => x === 0)).toBe(true);
      into.dispose();
      from.dispose();
    });
  }

  it('refuses one tensor twice, different sizes and i32 tensors, changing nothing', () => {
    const a = DeviceTensor.from(new Float32Array([1, 2, 3]));
    const b = DeviceTensor.from(new Float32Array([1, 2]));
    const i = DeviceTensor.from(new Int32Array([1, 2, 3]));
    expectSwerlError(() => accumulateGradDevice(a, a), 'INVALID_ARGUMENT');
    expectSwerlError(() => accumulateGradDevice(a, b), 'INVALID_ARGUMENT');
    expectSwerlError(() => accumulateGradDevice(a, i), 'INVALID_ARGUMENT');
    expectSwerlError(() => zeroGradDevice(i), 'INVALID_ARGUMENT');
    expect(Array.from(a.toArray())).toEqual([1, 2, 3]);
    expect(Array.from(b.toArray())).toEqual([1, 2]);
    for (const t of [a, b, i]) t.dispose();
  });
});

// Top logprobs from the CUDA sampler (sample(..., { topLogprobs })) against the CPU path's (the
// engine's topLogprobs over host rows): the same tokens in the same order (ties by lower id),
// logprobs within 1e-6, on rows with ties, −Inf entries, vocabularies below n, and every size
// class; and the option's bounds.
import { describe, expect, it } from 'vitest';
import { DeviceTensor, nativeInfo, sample } from '../../src/index.js';
import { expectSwerlError } from '../helpers/errors.js';
import { rng } from '../helpers/random.js';

const info = nativeInfo();
if (info.cudaDevices === 0) console.warn('CUDA tests skipped: no CUDA device (and not the simulation addon)');

describe.skipIf(info.cudaDevices === 0)('top logprobs on the GPU', () => {
  for (const V of [1, 5, 1000, 4097]) {
    for (const n of [1, 5, 20]) {
      it(`vocab ${V}, top ${n}`, () => {
        const rand = rng(V * 31 + n);
        const rows = 3;
        const x = Float32Array.from({ length: rows * V }, () => Math.round((rand() - 0.5) * 16) / 2); // many ties
        if (V > 2) x[1] = Number.NEGATIVE_INFINITY;
        const params = Array.from({ length: rows }, (_, i) => ({ temperature: i === 0 ? 0 : 0.8, seed: i }));
        const cpu = sample(x, V, params, undefined, { topLogprobs: n });
        const t = DeviceTensor.from(x, [rows, V]);
        const gpu = sample(t, V, params, undefined, { topLogprobs: n });
        t.dispose();
        expect(gpu.top?.tokens).toEqual(cpu.top?.tokens);
        const [a, b] = [gpu.top?.logprobs as Float32Array, cpu.top?.logprobs as Float32Array];
        expect(a.length).toBe(rows * n);
        for (let i = 0; i < a.length; i++) {
          if (b[i] === Number.NEGATIVE_INFINITY) expect(a[i]).toBe(Number.NEGATIVE_INFINITY);
          else expect(Math.abs((a[i] as number) - (b[i] as number))).toBeLessThanOrEqual(1e-6);
        }
        if (V < n) expect(Array.from(gpu.top?.tokens.subarray(V, n) ?? [])).toEqual(new Array(n - V).fill(-1));
        expect(gpu.tokens).toEqual(cpu.tokens);
      });
    }
  }

  it('reports nothing without the option and refuses more than 20', () => {
    const t = DeviceTensor.from(new Float32Array([1, 2, 3]), [1, 3]);
    expect(sample(t, 3, [{ temperature: 0 }]).top).toBeUndefined();
    expectSwerlError(() => sample(t, 3, [{ temperature: 0 }], undefined, { topLogprobs: 21 }), 'INVALID_ARGUMENT');
    expectSwerlError(() => sample(t, 3, [{ temperature: 0 }], undefined, { topLogprobs: -1 }), 'INVALID_ARGUMENT');
    t.dispose();
  });
});

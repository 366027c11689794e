/**
 * The GEMM the model runs on: x·Wᵀ against a float64 reference; packed weights give the same bits
 * as packing per call; and a row's result does not depend on how many rows share the call (the
 * one-row path for decode-sized M included), which the paged = dense guarantee rests on.
 */
import { describe, expect, it } from 'vitest';
import { native } from '../../src/native.js';
import { rng } from '../helpers/random.js';

function randomArray(n: number, seed: number): Float32Array {
  const r = rng(seed);
  return Float32Array.from({ length: n }, () => r() * 2 - 1);
}

const SHAPES: [number, number, number][] = [
  [1, 1, 1],
  [1, 17, 257],
  [2, 100, 600],
  [3, 16, 256],
  [13, 15, 255],
  [72, 33, 300],
  [100, 64, 513],
];

describe('gemm x·Wᵀ', () => {
  for (const [M, N, K] of SHAPES) {
    it(`M ${M}, N ${N}, K ${K}: reference, packed = unpacked, rows alone = rows in the batch`, () => {
      const a = randomArray(M * K, M * 1000 + N);
      const w = randomArray(N * K, K);
      const c = native().gemm(a, w, M, N, K, true);
      for (let i = 0; i < M; i++)
        for (let j = 0; j < N; j++) {
          let ref = 0;
          for (let k = 0; k < K; k++) ref += (a[i * K + k] as number) * (w[j * K + k] as number);
          expect(Math.abs((c[i * N + j] as number) - ref)).toBeLessThan(1e-5 * Math.sqrt(K) + 1e-6);
        }
      const packed = native().packMatrix(w, N, K);
      const cp = native().gemmPacked(a, packed, M, new Float32Array(M * N));
      expect(Array.from(cp)).toEqual(Array.from(c));
      for (const i of [0, M - 1]) {
        const row = native().gemmPacked(a.subarray(i * K, (i + 1) * K), packed, 1, new Float32Array(N));
        expect(Array.from(row), `row ${i} alone`).toEqual(Array.from(c.subarray(i * N, (i + 1) * N)));
      }
    });
  }

  it('rejects mismatched shapes', () => {
    const packed = native().packMatrix(new Float32Array(6), 2, 3);
    expect(() => native().gemmPacked(new Float32Array(4), packed, 1, new Float32Array(2))).toThrow(/\[M, K\]/);
    expect(() => native().gemmPacked(new Float32Array(3), {}, 1, new Float32Array(2))).toThrow(/packMatrix/);
    // Sizes whose products wrap around to 0 in 64 bits are refused, not taken for empty arrays.
    const none = new Float32Array(0);
    expect(() => native().gemm(none, none, 2 ** 32, 2 ** 32, 2 ** 32, false)).toThrow(/2\^31/);
    expect(() => native().packMatrix(none, 2 ** 32, 2 ** 32)).toThrow(/2\^31/);
    expect(() => native().gemmPacked(none, packed, 2 ** 40, none)).toThrow(/2\^31/);
  });
});

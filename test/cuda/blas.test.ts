// The device bf16 GEMM (kernels/cuda/blas.h: cuBLAS on a GPU, the CPU GEMM in the simulation)
// against a float64 product of the bf16-rounded operands, for every transpose and edge shapes
// (one row, one column, K = 1, sizes that are not multiples of any tile), with beta 0 and 1.
import { describe, expect, it } from 'vitest';
import { DeviceTensor, nativeInfo } from '../../src/index.js';
import { native } from '../../src/native.js';
import { roundBf16 } from '../helpers/float16.js';
import { rng } from '../helpers/random.js';

const info = nativeInfo();
if (info.cudaDevices === 0) console.warn('CUDA tests skipped: no CUDA device (and not the simulation addon)');

/** Element (i, j) of a logical [rows, cols] matrix stored row-major, or transposed ([cols, rows]). */
const at = (x: Float32Array, rows: number, cols: number, trans: boolean, i: number, j: number) =>
  (trans ? x[j * rows + i] : x[i * cols + j]) as number;

describe.skipIf(info.cudaDevices === 0)('gemmBf16Device', () => {
  const shapes = [
    [1, 1, 1],
    [1, 37, 64],
    [5, 1, 300],
    [33, 70, 1],
    [64, 129, 257],
  ] as const;
  for (const [M, N, K] of shapes) {
    for (const transA of [false, true]) {
      for (const transB of [false, true]) {
        it(`M ${M} N ${N} K ${K}${transA ? ' Aᵀ' : ''}${transB ? ' Bᵀ' : ''}`, () => {
          const rand = rng(M * 1000 + N * 10 + K + (transA ? 1 : 0) + (transB ? 2 : 0));
          const a = Float32Array.from({ length: M * K }, () => rand() * 4 - 2);
          const b = Float32Array.from({ length: K * N }, () => rand() * 4 - 2);
          const c0 = Float32Array.from({ length: M * N }, () => rand() - 0.5);
          const [da, db] = [DeviceTensor.from(a), DeviceTensor.from(b)];
          for (const beta of [0, 1]) {
            const dc = DeviceTensor.from(c0);
            native().gemmBf16Device(da.buffer, db.buffer, M, N, K, transA, transB, dc.buffer, beta);
            const got = dc.toArray();
            for (let i = 0; i < M; i++) {
              for (let j = 0; j < N; j++) {
                let ref = beta * (c0[i * N + j] as number);
                let scale = Math.abs(ref);
                for (let k = 0; k < K; k++) {
                  const p = roundBf16(at(a, M, K, transA, i, k)) * roundBf16(at(b, K, N, transB, k, j));
                  ref += p;
                  scale += Math.abs(p);
                }
                expect(Math.abs((got[i * N + j] as number) - ref)).toBeLessThanOrEqual(1e-5 * scale + 1e-30);
              }
            }
            dc.dispose();
          }
          da.dispose();
          db.dispose();
        });
      }
    }
  }

  it('refuses buffers smaller than the shapes', () => {
    const small = DeviceTensor.zeros([4]);
    expect(() => native().gemmBf16Device(small.buffer, small.buffer, 3, 3, 3, false, false, small.buffer, 0)).toThrow(
      /holds 16 bytes/,
    );
    small.dispose();
  });
});

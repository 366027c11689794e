// The attention kernels' q·k scores: the tiled routine (several rows per reduction) against one
// dot product per row and a float64 reference, at each SIMD level this CPU has. At the AVX2 and
// scalar levels the tiled scores equal the per-row ones bitwise (the tile keeps the row's
// reduction order), so speeding up the tile changed no logit, logprob or gradient.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const dist = join(import.meta.dirname, '..', '..', 'dist', 'index.js');

// Prints, per (hd, n), the tiled and per-row scores and the float64 ones, as JSON.
const script = `
  import { nativeInfo } from ${JSON.stringify(dist)};
  import { native } from ${JSON.stringify(dist.replace('index.js', 'native.js'))};
  let s = 11;
  const r = () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 4294967296 - 0.5);
  const cases = [];
  for (const hd of [8, 16, 24, 32, 48, 64, 128])
    for (const n of [1, 3, 4, 5, 8, 15, 16, 17, 37]) {
      const scale = n % 2 ? 1 : 300; // large magnitudes make a changed summation order show
      const q = Float32Array.from({ length: hd }, () => r() * scale);
      const keys = Float32Array.from({ length: n * hd }, () => r() * scale);
      const tiled = native().attentionScores(q, keys, false);
      const perRow = native().attentionScores(q, keys, true);
      const exact = Array.from({ length: n }, (_, i) => {
        let a = 0;
        for (let d = 0; d < hd; d++) a += q[d] * keys[i * hd + d];
        return a;
      });
      const mag = Array.from({ length: n }, (_, i) => {
        let a = 0;
        for (let d = 0; d < hd; d++) a += Math.abs(q[d] * keys[i * hd + d]);
        return a;
      });
      cases.push({ hd, n, tiled: Array.from(tiled), perRow: Array.from(perRow), exact, mag });
    }
  console.log(JSON.stringify({ simd: nativeInfo().simd, cases }));`;

function run(simd?: string) {
  const env = { ...process.env };
  if (simd) env.SWERL_SIMD = simd;
  else delete env.SWERL_SIMD;
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { env }).toString()) as {
    simd: string;
    cases: { hd: number; n: number; tiled: number[]; perRow: number[]; exact: number[]; mag: number[] }[];
  };
}

describe('attention scores', () => {
  it.skipIf(!existsSync(dist))('tiled = per-row bitwise at the AVX2 and scalar levels; all levels near float64', () => {
    for (const level of ['scalar', 'avx2', undefined]) {
      const out = run(level);
      // A CPU without AVX2 runs the scalar level when asked for AVX2.
      const bitwise = out.simd === 'scalar' || out.simd === 'avx2-fma';
      for (const c of out.cases) {
        const what = `${out.simd} hd ${c.hd} n ${c.n}`;
        if (bitwise) expect(c.tiled.map((x, i) => Object.is(x, c.perRow[i])).every(Boolean), what).toBe(true);
        for (let i = 0; i < c.n; i++) {
          // f32 accumulation: within a few ulps of Σ|q·k| per term.
          const tol = 4 * c.hd * 2 ** -24 * (c.mag[i] as number);
          expect(Math.abs((c.tiled[i] as number) - (c.exact[i] as number)), what).toBeLessThanOrEqual(tol);
          expect(Math.abs((c.perRow[i] as number) - (c.exact[i] as number)), what).toBeLessThanOrEqual(tol);
        }
      }
    }
  });

  it.skipIf(!existsSync(dist))('refuses keys that are not [n, q.length]', async () => {
    const { native } = await import('../../src/native.js');
    expect(() => native().attentionScores(new Float32Array(4), new Float32Array(6), false)).toThrow(/keys must be/);
  });
});

// The CPU attention backward (dq, dk, dv of one dense causal sequence) against a float64
// reference, at each SIMD level this CPU has, over lengths that end inside, on and past the
// kernel's 16-key tiles, with grouped heads and head dims on and off the vector widths. It also
// checks that the thread count changes no bit: every sum in the backward has a fixed order.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { normal, rng } from '../helpers/random.js';

const dist = join(import.meta.dirname, '..', '..', 'dist', 'index.js');

interface Case {
  T: number;
  heads: number;
  kvHeads: number;
  hd: number;
  seed: number;
}
const CASES: Case[] = [
  { T: 1, heads: 2, kvHeads: 1, hd: 32, seed: 1 },
  { T: 16, heads: 4, kvHeads: 2, hd: 32, seed: 2 },
  { T: 45, heads: 4, kvHeads: 2, hd: 32, seed: 3 },
  { T: 70, heads: 2, kvHeads: 2, hd: 24, seed: 4 },
  { T: 53, heads: 3, kvHeads: 1, hd: 64, seed: 5 },
];

function inputs(c: Case): { qkv: Float32Array; dO: Float32Array } {
  const r = rng(c.seed);
  const width = (c.heads + 2 * c.kvHeads) * c.hd;
  return {
    qkv: Float32Array.from({ length: c.T * width }, () => normal(r)),
    dO: Float32Array.from({ length: c.T * c.heads * c.hd }, () => normal(r)),
  };
}

function add(a: Float64Array, i: number, v: number): void {
  a[i] = (a[i] as number) + v;
}

/** o and dqkv in float64, by the textbook formulas (the whole T×T score matrix per head). */
function reference(c: Case, qkv: Float32Array, dO: Float32Array): { o: Float64Array; dqkv: Float64Array } {
  const { T, heads: H, kvHeads: G, hd } = c;
  const width = (H + 2 * G) * hd;
  const scale = 1 / Math.sqrt(hd);
  const o = new Float64Array(T * H * hd);
  const dqkv = new Float64Array(T * width);
  const at = (t: number, col: number, d: number) => qkv[t * width + col + d] as number;
  for (let h = 0; h < H; h++) {
    const g = Math.floor(h / (H / G));
    const qc = h * hd;
    const kc = H * hd + g * hd;
    const vc = (H + G) * hd + g * hd;
    for (let t = 0; t < T; t++) {
      const s: number[] = [];
      for (let p = 0; p <= t; p++) {
        let a = 0;
        for (let d = 0; d < hd; d++) a += at(t, qc, d) * at(p, kc, d);
        s.push(a * scale);
      }
      const m = Math.max(...s);
      const e = s.map((x) => Math.exp(x - m));
      const sum = e.reduce((a, x) => a + x, 0);
      const P = e.map((x) => x / sum);
      const dOt = (d: number) => dO[(t * H + h) * hd + d] as number;
      const dP = P.map((_, p) => {
        let a = 0;
        for (let d = 0; d < hd; d++) a += dOt(d) * at(p, vc, d);
        return a;
      });
      const D = P.reduce((a, x, p) => a + x * (dP[p] as number), 0);
      for (let p = 0; p <= t; p++) {
        const pp = P[p] as number;
        const dS = pp * ((dP[p] as number) - D) * scale;
        for (let d = 0; d < hd; d++) {
          add(o, (t * H + h) * hd + d, pp * at(p, vc, d));
          add(dqkv, t * width + qc + d, dS * at(p, kc, d));
          add(dqkv, p * width + kc + d, dS * at(t, qc, d));
          add(dqkv, p * width + vc + d, pp * dOt(d));
        }
      }
    }
  }
  return { o, dqkv };
}

// Runs every case in a child process (the SIMD level and thread count are per process) on the
// inputs given, and returns the outputs.
function run(simd: string | undefined, threads: number, cases: { qkv: Float32Array; dO: Float32Array }[]) {
  const script = `
    import { readFileSync } from 'node:fs';
    import { nativeInfo } from ${JSON.stringify(dist)};
    import { native } from ${JSON.stringify(dist.replace('index.js', 'native.js'))};
    const shapes = ${JSON.stringify(CASES)};
    const inputs = JSON.parse(readFileSync(0, 'utf8'));
    const out = shapes.map((c, i) => {
      const g = native().attentionGradients(
        Float32Array.from(inputs[i].qkv), Float32Array.from(inputs[i].dO), c.heads, c.kvHeads, c.hd);
      return { o: Array.from(g.o), dqkv: Array.from(g.dqkv) };
    });
    console.log(JSON.stringify({ simd: nativeInfo().simd, out }));`;
  const env: NodeJS.ProcessEnv = { ...process.env, SWERL_NUM_THREADS: String(threads) };
  if (simd) env.SWERL_SIMD = simd;
  else delete env.SWERL_SIMD;
  // f32 values print exactly as JSON numbers and parse back to the same f32.
  const input = JSON.stringify(cases.map((c) => ({ qkv: Array.from(c.qkv), dO: Array.from(c.dO) })));
  return JSON.parse(
    execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      env,
      input,
      maxBuffer: 1 << 26,
    }).toString(),
  ) as {
    simd: string;
    out: { o: number[]; dqkv: number[] }[];
  };
}

/** The largest |a − b| over the largest |b|: the error relative to the tensor's scale. */
function relativeError(a: number[], b: Float64Array): number {
  let err = 0;
  let mag = 0;
  for (let i = 0; i < b.length; i++) {
    err = Math.max(err, Math.abs((a[i] as number) - (b[i] as number)));
    mag = Math.max(mag, Math.abs(b[i] as number));
  }
  return err / mag;
}

describe('attention backward', () => {
  it.skipIf(!existsSync(dist))(
    'dq, dk, dv near float64 at every SIMD level; the same bits with 1 and 3 threads',
    () => {
      const given = CASES.map(inputs);
      const refs = CASES.map((c, i) => reference(c, given[i]?.qkv as Float32Array, given[i]?.dO as Float32Array));
      for (const level of ['scalar', 'avx2', undefined]) {
        const one = run(level, 1, given);
        const three = run(level, 3, given);
        expect(three.out, `${one.simd}: 3 threads against 1`).toEqual(one.out);
        CASES.forEach((c, i) => {
          const what = `${one.simd} T ${c.T} heads ${c.heads}/${c.kvHeads} hd ${c.hd}`;
          const got = one.out[i] as { o: number[]; dqkv: number[] };
          const ref = refs[i] as { o: Float64Array; dqkv: Float64Array };
          expect(relativeError(got.o, ref.o), `${what}: o`).toBeLessThan(1e-5);
          expect(relativeError(got.dqkv, ref.dqkv), `${what}: dqkv`).toBeLessThan(1e-5);
        });
      }
    },
  );

  it.skipIf(!existsSync(dist))('refuses shapes that do not fit', async () => {
    const { native } = await import('../../src/native.js');
    expect(() => native().attentionGradients(new Float32Array(10), new Float32Array(4), 2, 1, 4)).toThrow(
      /qkv must be/,
    );
    expect(() => native().attentionGradients(new Float32Array(16), new Float32Array(3), 2, 1, 4)).toThrow(/dO must be/);
    expect(() => native().attentionGradients(new Float32Array(16), new Float32Array(8), 3, 2, 4)).toThrow(/heads/);
    // A row width that wraps around to 0 in 64 bits is refused (it once divided by zero).
    expect(() =>
      native().attentionGradients(new Float32Array(16), new Float32Array(8), 2 ** 42, 2 ** 42, 2 ** 22),
    ).toThrow(/heads/);
  });
});

// The CUDA AdamW and global-norm kernels (native/kernels/cuda/adamw.cu) against the CPU optimizer
// and float64 references:
// - an update equals, bit for bit, an f32 emulation of train/adamw.cc's arithmetic (Math.fround
//   after each operation is exact f32 rounding) and the CPU optimizer itself (AdamW on a Model,
//   with clipping, the decay choice per parameter, step 1 and a resumed step 1000);
// - the norm is within 1e-12 relative of a compensated float64 sum, equals itself bitwise across
//   calls, tensors and launches, and agrees with the CPU optimizer's norm.
// Element counts are not multiples of the kernels' block (256) or norm chunk (8192).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  AdamW,
  adamwStepDevice,
  clipGradNormDevice,
  DeviceTensor,
  gradNormDevice,
  Model,
  nativeInfo,
} from '../../src/index.js';
import { writeSafetensors } from '../../src/model/safetensors.js';
import { native } from '../../src/native.js';
import { expectSwerlError } from '../helpers/errors.js';
import { normal, rng } from '../helpers/random.js';

const info = nativeInfo();
if (info.cudaDevices === 0) console.warn('CUDA AdamW tests skipped: no CUDA device (and not the simulation addon)');

const f = Math.fround;

interface Hyper {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
}

/**
 * train/adamw.cc's adamwUpdate in f32, operation for operation: every +, −, ×, ÷ and sqrt of two
 * f32 values is rounded once by Math.fround after the exact-enough float64 result (double
 * rounding is harmless for these operations from f64 to f32).
 */
function emulateCpuAdamw(
  w: Float32Array,
  g: Float32Array,
  m: Float32Array,
  v: Float32Array,
  c: Hyper,
  step: number,
  decay: boolean,
): void {
  const bc1 = 1 - c.beta1 ** step;
  const bc2 = 1 - c.beta2 ** step;
  const stepSize = f(c.lr / bc1);
  const invSqrtBc2 = f(1 / Math.sqrt(bc2));
  const keep = decay ? f(1 - c.lr * c.weightDecay) : 1;
  const b1 = f(c.beta1);
  const b2 = f(c.beta2);
  const eps = f(c.eps);
  const omb1 = f(1 - b1);
  const omb2 = f(1 - b2);
  for (let i = 0; i < w.length; i++) {
    const gi = g[i] as number;
    const mi = f(f(b1 * (m[i] as number)) + f(omb1 * gi));
    const vi = f(f(b2 * (v[i] as number)) + f(f(omb2 * gi) * gi));
    m[i] = mi;
    v[i] = vi;
    const denom = f(f(f(Math.sqrt(vi)) * invSqrtBc2) + eps);
    w[i] = f(f((w[i] as number) * keep) - f(f(stepSize * mi) / denom));
  }
}

/** torch.optim.AdamW's formulas in float64 (no f32 rounding): the independent reference. */
function float64Adamw(
  w: Float32Array,
  g: Float32Array,
  m: Float32Array,
  v: Float32Array,
  c: Hyper,
  step: number,
  decay: boolean,
) {
  const out = new Float64Array(w.length);
  for (let i = 0; i < w.length; i++) {
    const gi = g[i] as number;
    const mi = c.beta1 * (m[i] as number) + (1 - c.beta1) * gi;
    const vi = c.beta2 * (v[i] as number) + (1 - c.beta2) * gi * gi;
    const wd = decay ? (w[i] as number) * (1 - c.lr * c.weightDecay) : (w[i] as number);
    out[i] = wd - ((c.lr / (1 - c.beta1 ** step)) * mi) / (Math.sqrt(vi / (1 - c.beta2 ** step)) + c.eps);
  }
  return out;
}

/** Σ x² in float64 with Neumaier's compensation (the products of f32 values are exact in f64). */
function sumSquares(g: Float32Array): number {
  let s = 0;
  let comp = 0;
  for (const x of g) {
    const p = x * x;
    const t = s + p;
    comp += Math.abs(s) >= p ? s - t + p : p - t + s;
    s = t;
  }
  return s + comp;
}

/** How many f32 steps apart a and b are (0: bitwise equal, for finite values of one sign). */
function ulps(a: Float32Array, b: Float32Array): number {
  const ia = new Int32Array(a.buffer, a.byteOffset, a.length);
  const ib = new Int32Array(b.buffer, b.byteOffset, b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs((ia[i] as number) - (ib[i] as number)));
  return worst;
}

function bits(a: Float32Array): Uint32Array {
  return new Uint32Array(a.buffer.slice(a.byteOffset, a.byteOffset + a.byteLength));
}

/** Gradients with a spread of magnitudes (and exact zeros), moments of a run in progress. */
function randomState(n: number, seed: number, fresh: boolean) {
  const r = rng(seed);
  const w = Float32Array.from({ length: n }, () => normal(r) * 0.05);
  const g = Float32Array.from({ length: n }, (_, i) => (i % 97 === 5 ? 0 : normal(r) * 10 ** (-4 + 4 * r())));
  const m = fresh ? new Float32Array(n) : Float32Array.from({ length: n }, () => normal(r) * 1e-3);
  const v = fresh ? new Float32Array(n) : Float32Array.from({ length: n }, () => (normal(r) * 1e-3) ** 2);
  return { w, g, m, v };
}

const HYPER: Hyper = { lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.1 };

describe.skipIf(info.cudaDevices === 0)('adamwStepDevice', () => {
  for (const n of [1, 1000, 100003])
    for (const step of [1, 1000])
      for (const decay of [true, false])
        it(`n ${n}, step ${step}, decay ${decay}: bitwise the CPU's f32 arithmetic, near float64`, () => {
          const s = randomState(n, n + step + (decay ? 1 : 0), step === 1);
          const t = {
            params: DeviceTensor.from(s.w),
            grads: DeviceTensor.from(s.g),
            m: DeviceTensor.from(s.m),
            v: DeviceTensor.from(s.v),
          };
          const w0 = Float32Array.from(s.w);
          const ref64 = float64Adamw(s.w, s.g, s.m, s.v, HYPER, step, decay);
          adamwStepDevice(
            t,
            { lr: HYPER.lr, betas: [HYPER.beta1, HYPER.beta2], eps: HYPER.eps, weightDecay: HYPER.weightDecay },
            step,
            decay,
          );
          emulateCpuAdamw(s.w, s.g, s.m, s.v, HYPER, step, decay);
          const w = t.params.toArray() as Float32Array;
          expect(ulps(t.m.toArray() as Float32Array, s.m)).toBe(0);
          expect(ulps(t.v.toArray() as Float32Array, s.v)).toBe(0);
          expect(ulps(w, s.w)).toBe(0);
          // Against float64 math, relative to the weight and its step: within 1e-5, since the CPU
          // (and so the device) forms 1 − β2 in f32 from f32 β2 (0.00099998713 for 0.999, 1.3e-5
          // below torch's 0.001), which moves sqrt(v) by about 6.5e-6 relative.
          let worst = 0;
          for (let i = 0; i < n; i++) {
            const r = ref64[i] as number;
            const scale = Math.abs(w0[i] as number) + Math.abs(r - (w0[i] as number));
            worst = Math.max(worst, Math.abs((w[i] as number) - r) / scale);
          }
          expect(worst).toBeLessThan(1e-5);
          expect(Array.from(t.grads.toArray())).toEqual(Array.from(s.g)); // the gradient is only read
          for (const x of Object.values(t)) x.dispose();
        });

  it('refuses mismatched, aliased or non-f32 tensors and bad settings', () => {
    const a = DeviceTensor.zeros([4]);
    const b = DeviceTensor.zeros([4]);
    const c = DeviceTensor.zeros([4]);
    const d = DeviceTensor.zeros([4]);
    const short = DeviceTensor.zeros([3]);
    const ints = DeviceTensor.from(new Int32Array(4));
    expectSwerlError(() => adamwStepDevice({ params: a, grads: short, m: c, v: d }, { lr: 1 }, 1), 'INVALID_ARGUMENT');
    expectSwerlError(() => adamwStepDevice({ params: a, grads: a, m: c, v: d }, { lr: 1 }, 1), 'INVALID_ARGUMENT');
    expectSwerlError(() => adamwStepDevice({ params: a, grads: ints, m: c, v: d }, { lr: 1 }, 1), 'INVALID_ARGUMENT');
    expectSwerlError(() => adamwStepDevice({ params: a, grads: b, m: c, v: d }, { lr: 1 }, 0), 'INVALID_ARGUMENT');
    expectSwerlError(() => adamwStepDevice({ params: a, grads: b, m: c, v: d }, { lr: -1 }, 1), 'INVALID_ARGUMENT');
    expectSwerlError(
      () => adamwStepDevice({ params: a, grads: b, m: c, v: d }, { lr: 1, betas: [1, 0.9] }, 1),
      'INVALID_ARGUMENT',
    );
    expectSwerlError(() => gradNormDevice(ints), 'INVALID_ARGUMENT');
    expectSwerlError(() => clipGradNormDevice(a, -1), 'INVALID_ARGUMENT');
    d.dispose();
    expectSwerlError(() => adamwStepDevice({ params: a, grads: b, m: c, v: d }, { lr: 1 }, 1), 'DISPOSED');
    for (const x of [a, b, c, short, ints]) x.dispose();
  });
});

describe.skipIf(info.cudaDevices === 0)('gradNormDevice', () => {
  for (const n of [1, 1000, 100003])
    it(`n ${n}: within 1e-12 of a compensated float64 sum, bitwise the same across calls and tensors`, () => {
      const { g } = randomState(n, 7 * n, true);
      const ref = Math.sqrt(sumSquares(g));
      const t = DeviceTensor.from(g);
      const norm = gradNormDevice(t);
      expect(Math.abs(norm - ref) / ref).toBeLessThan(1e-12);
      expect(gradNormDevice(t)).toBe(norm);
      // The same values in a larger tensor (other bytes after them), after other launches.
      const big = new Float32Array(n + 8195).fill(123.5);
      big.set(g);
      const t2 = DeviceTensor.from(big);
      const scratch = DeviceTensor.from(big);
      clipGradNormDevice(scratch, 1e-3);
      expect(native().globalNormDevice(t2.buffer, n)).toBe(norm);
      expect(gradNormDevice(t)).toBe(norm);
      for (const x of [t, t2, scratch]) x.dispose();
    });

  it('is 0 for zeros and NaN or Infinity for a non-finite gradient (which clipping leaves alone)', () => {
    const z = DeviceTensor.zeros([5000]);
    expect(gradNormDevice(z)).toBe(0);
    const g = new Float32Array(5000).fill(1);
    g[4321] = Number.POSITIVE_INFINITY;
    const inf = DeviceTensor.from(g);
    expect(clipGradNormDevice(inf, 1)).toBe(Number.POSITIVE_INFINITY);
    expect(inf.toArray()).toEqual(g);
    g[17] = Number.NaN;
    const nan = DeviceTensor.from(g);
    expect(clipGradNormDevice(nan, 1)).toBeNaN();
    for (const x of [z, inf, nan]) x.dispose();
  });

  it('clips as torch.nn.utils.clip_grad_norm_: scale max / (norm + 1e-6), only above max', () => {
    const { g } = randomState(30001, 5, true);
    const t = DeviceTensor.from(g);
    const norm = clipGradNormDevice(t, 1e9);
    expect(t.toArray()).toEqual(g); // below max: untouched
    const max = norm / 3;
    expect(clipGradNormDevice(t, max)).toBe(norm);
    const s = f(max / (norm + 1e-6));
    const clipped = t.toArray() as Float32Array;
    expect(bits(clipped)).toEqual(bits(g.map((x) => f(x * s))));
    expect(Math.abs(gradNormDevice(t) - max) / max).toBeLessThan(1e-6);
    t.dispose();
  });
});

// The CPU optimizer (native/train, through a Model) and the device kernels, step by step, with
// the same clipping and the same per-parameter decay choice: the weights stay bitwise equal.
describe.skipIf(info.cudaDevices === 0)('the device kernels replay the CPU optimizer', () => {
  const CFG = {
    architectures: ['Qwen2ForCausalLM'],
    vocab_size: 1009,
    hidden_size: 24,
    intermediate_size: 40,
    num_hidden_layers: 2,
    num_attention_heads: 2,
    num_key_value_heads: 1,
    head_dim: 12,
    rms_norm_eps: 1e-5,
  };
  const decays = (name: string) => !(name.endsWith('norm.weight') || name.endsWith('.bias'));

  async function replay(resumeAt: number, maxGradNorm: number, steps: number): Promise<{ normRel: number }> {
    const model = Model.random(CFG, 3);
    const params = model.parameters();
    const n = model.numParameters;
    const cfg = { lr: 2e-3, betas: [0.9, 0.95] as [number, number], eps: 1e-6, weightDecay: 0.1 };
    const arena = () => {
      const out = new Float32Array(n);
      let at = 0;
      for (const p of params) {
        const x = model.getParameter(p.name);
        out.set(x, at);
        at += x.length;
      }
      return out;
    };
    const grads = () => {
      const out = new Float32Array(n);
      let at = 0;
      for (const p of params) {
        const x = model.getGradient(p.name);
        out.set(x, at);
        at += x.length;
      }
      return out;
    };
    let mom = new Float32Array(n);
    let vel = new Float32Array(n);
    let opt: AdamW;
    const dir = mkdtempSync(join(tmpdir(), 'swerl-adamw-device-'));
    try {
      if (resumeAt > 0) {
        // A run in progress: moments of its own, the step count at resumeAt.
        const r = rng(11);
        mom = Float32Array.from({ length: n }, () => normal(r) * 1e-3);
        vel = Float32Array.from({ length: n }, () => (normal(r) * 1e-3) ** 2);
        const path = join(dir, 'opt.safetensors');
        await writeSafetensors(
          path,
          [
            { name: 'exp_avg', shape: [n], data: mom },
            { name: 'exp_avg_sq', shape: [n], data: vel },
          ],
          'F32',
          { format: 'swerl-adamw', step: String(resumeAt) },
        );
        opt = await AdamW.load(model, path, { ...cfg, maxGradNorm });
      } else opt = new AdamW(model, { ...cfg, maxGradNorm });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const m = DeviceTensor.from(mom);
    const v = DeviceTensor.from(vel);
    let normRel = 0;
    const r = rng(12);
    for (let s = 0; s < steps; s++) {
      const tokens = Array.from({ length: 9 }, () => Math.floor(r() * CFG.vocab_size));
      const targets = Array.from({ length: 9 }, () => Math.floor(r() * CFG.vocab_size));
      await model.sftBackward({ tokens, targets });
      const w0 = arena();
      const g = DeviceTensor.from(grads());
      const cpu = await opt.step();
      const norm = clipGradNormDevice(g, maxGradNorm);
      normRel = Math.max(normRel, Math.abs(norm - cpu.gradNorm) / cpu.gradNorm);
      const clipped = g.toArray() as Float32Array;
      const mAll = m.toArray() as Float32Array;
      const vAll = v.toArray() as Float32Array;
      const wAll = new Float32Array(n);
      let at = 0;
      for (const p of params) {
        const size = p.shape.reduce((a, b) => a * b, 1);
        const slice = (a: Float32Array) => DeviceTensor.from(a.slice(at, at + size));
        const t = { params: slice(w0), grads: slice(clipped), m: slice(mAll), v: slice(vAll) };
        adamwStepDevice(t, cfg, cpu.step, decays(p.name));
        wAll.set(t.params.toArray() as Float32Array, at);
        mAll.set(t.m.toArray() as Float32Array, at);
        vAll.set(t.v.toArray() as Float32Array, at);
        for (const x of Object.values(t)) x.dispose();
        at += size;
      }
      m.copyFrom(mAll);
      v.copyFrom(vAll);
      expect(bits(wAll)).toEqual(bits(arena()));
      g.dispose();
    }
    m.dispose();
    v.dispose();
    return { normRel };
  }

  it('from step 1, clipped every step: the weights bitwise, the norm within 1e-12', async () => {
    const { normRel } = await replay(0, 1e-3, 3);
    expect(normRel).toBeLessThan(1e-12);
  });

  it('resumed at step 999 (steps 1000, 1001), unclipped', async () => {
    const { normRel } = await replay(999, 0, 2);
    expect(normRel).toBeLessThan(1e-12);
  });
});

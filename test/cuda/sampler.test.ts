/**
 * The CUDA sampler (native/kernels/cuda/sampler.cu, sample() on a DeviceTensor) against the CPU
 * sampler on the same logits and against the float64 reference of the processed distribution
 * (test/helpers/sampling-reference.ts). Runs in the CUDA simulation (swerl_cudasim.node), or on a
 * GPU with SWERL_CUDA_TESTS_ADDON.
 *
 * - Against the CPU: every row's token is equal (the same exponential race, keyed by seed and
 *   position), and logprobs / rawLogprobs agree within the bound sampler_cuda.h documents
 *   (CPU_BOUND below); the largest deviation seen is printed at the end.
 * - Against the reference: the token is in the kept set (greedy: the first maximum) and the
 *   logprobs match to 1e-5, for rows whose filter decisions are far from their thresholds.
 * - Batch invariance: a row's results are the same bits alone, in a batch of 64, and reversed.
 * - Edge shapes and values, errors (thrown before anything is written; the logits unchanged).
 * The simulation is slow (threads run as fibers), so large vocabularies use a few rows.
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  DeviceTensor,
  nativeInfo,
  type SampleResult,
  type SamplingParams,
  sample,
  sampleAsync,
} from '../../src/index.js';
import { native } from '../../src/native.js';
import { expectSwerlError } from '../helpers/errors.js';
import { normal, rng } from '../helpers/random.js';
import { logSoftmax, processedDistribution, referenceLogprob } from '../helpers/sampling-reference.js';

const info = nativeInfo();
if (info.cudaDevices === 0) console.warn('CUDA sampler tests skipped: no CUDA device (and not the simulation addon)');

// ---- comparisons ---------------------------------------------------------------------------------

/** One unit in the last place of the f32 value x. */
function ulpOf(x: number): number {
  const a = Math.max(Math.abs(x), 2 ** -126);
  return 2 ** (Math.floor(Math.log2(a)) - 23);
}

/**
 * The documented bound (sampler_cuda.h): |CUDA − CPU| ≤ 4 f32 ulps of the CPU's value + 2e-6.
 * The CPU sums exps in f32 lanes (relative error ~1e-7 at these sizes), the CUDA sampler in f64.
 */
function withinCpuBound(gpu: number, cpu: number): boolean {
  if (gpu === cpu) return true;
  return Math.abs(gpu - cpu) <= 4 * ulpOf(cpu) + 2e-6;
}

// The largest deviations seen, printed at the end: CUDA vs CPU (absolute, and in f32 ulps where
// |logprob| ≥ 1, since ulps near 0 say little) and CUDA vs the float64 reference.
const worst = { abs: 0, ulps: 0, compared: 0, bitEqual: 0, ref: 0 };

function track(gpu: number, cpu: number): void {
  worst.compared++;
  if (Object.is(gpu, cpu)) worst.bitEqual++;
  const d = Math.abs(gpu - cpu);
  worst.abs = Math.max(worst.abs, d);
  if (Math.abs(cpu) >= 1) worst.ulps = Math.max(worst.ulps, d / ulpOf(cpu));
}

function onDevice<T>(logits: Float32Array, rows: number, vocab: number, fn: (t: DeviceTensor) => T): T {
  const t = DeviceTensor.from(logits, [rows, vocab]);
  try {
    return fn(t);
  } finally {
    t.dispose();
  }
}

/** Samples on the device and on the CPU; tokens must be equal and logprobs within the bound. */
function expectMatchesCpu(
  logits: Float32Array,
  vocab: number,
  params: SamplingParams[],
  positions?: Int32Array,
  label = '',
): SampleResult {
  const gpu = onDevice(logits, params.length, vocab, (t) => sample(t, vocab, params, positions));
  const cpu = sample(logits, vocab, params, positions);
  expect(Array.from(gpu.tokens), `${label}: tokens`).toEqual(Array.from(cpu.tokens));
  for (let i = 0; i < params.length; i++) {
    const pairs: [string, number, number][] = [
      ['logprob', gpu.logprobs[i] as number, cpu.logprobs[i] as number],
      ['rawLogprob', gpu.rawLogprobs[i] as number, cpu.rawLogprobs[i] as number],
    ];
    for (const [name, g, c] of pairs) {
      track(g, c);
      if (!withinCpuBound(g, c))
        expect.fail(`${label} row ${i} ${JSON.stringify(params[i])}: ${name} ${g} (CUDA) vs ${c} (CPU)`);
    }
  }
  return gpu;
}

/** Row i's token and the bits of its two logprobs, for bitwise comparisons. */
function bits(x: SampleResult, i: number): number[] {
  return [
    x.tokens[i] as number,
    new Uint32Array(Float32Array.of(x.logprobs[i] as number).buffer)[0] as number,
    new Uint32Array(Float32Array.of(x.rawLogprobs[i] as number).buffer)[0] as number,
  ];
}

/** Margins below this leave a filter's decision to rounding: such rows skip the reference check. */
const SAFE_MARGIN = 1e-4;

/**
 * Each row against the float64 reference: kept-set membership and both logprobs (1e-5, relative
 * above 1). Returns how many rows were checked.
 */
function expectMatchesReference(logits: Float32Array, vocab: number, params: SamplingParams[], out: SampleResult) {
  let checked = 0;
  for (let i = 0; i < params.length; i++) {
    const row = logits.subarray(i * vocab, (i + 1) * vocab);
    const p = params[i] as SamplingParams;
    // Below vLLM's epsilon (1e-5) the sampler is greedy; the reference is greedy at 0 only.
    const d = processedDistribution(row, (p.temperature ?? 1) < 1e-5 ? { ...p, temperature: 0 } : p);
    if (d.minPMargin < SAFE_MARGIN || d.topPMargin < SAFE_MARGIN) continue;
    checked++;
    const t = out.tokens[i] as number;
    const where = `row ${i} ${JSON.stringify(params[i])}: token ${t}`;
    if (d.greedy) expect(t, where).toBe(d.greedyToken);
    else expect(d.kept[t], `${where} outside the kept set`).toBe(1);
    const ref = referenceLogprob(d, t);
    const raw = logSoftmax(row)[t] as number;
    const lpErr = Math.abs((out.logprobs[i] as number) - ref);
    const rawErr = Math.abs((out.rawLogprobs[i] as number) - raw);
    worst.ref = Math.max(worst.ref, lpErr, rawErr);
    expect(lpErr, `${where} logprob`).toBeLessThan(1e-5 * Math.max(1, -ref));
    expect(rawErr, `${where} rawLogprob`).toBeLessThan(1e-5 * Math.max(1, -raw));
  }
  return checked;
}

// ---- inputs --------------------------------------------------------------------------------------

function normalRows(rows: number, vocab: number, seed: number, scale = 3): Float32Array {
  const r = rng(seed);
  return Float32Array.from({ length: rows * vocab }, () => scale * normal(r));
}

function tokens(r: () => number, n: number, vocab: number): number[] {
  return Array.from({ length: n }, () => Math.floor(r() * vocab));
}

/** Every option alone, then in combinations; seeds given (sample() would draw random ones). */
function optionCases(vocab: number): SamplingParams[] {
  const r = rng(vocab);
  const hist = () => ({ promptTokens: tokens(r, 12, vocab), outputTokens: tokens(r, 20, vocab) });
  const cases: SamplingParams[] = [
    {},
    { temperature: 0 },
    { temperature: 0.7 },
    { temperature: 1.6 },
    { topK: 1 },
    { topK: 5 },
    { topK: 50 },
    { topP: 0.9 },
    { topP: 0.5 },
    { topP: 1e-6 },
    { minP: 0.05 },
    { minP: 0.3 },
    { repetitionPenalty: 1.3, ...hist() },
    { repetitionPenalty: 0.8, ...hist() },
    { presencePenalty: 0.5, ...hist() },
    { frequencyPenalty: 0.3, ...hist() },
    { presencePenalty: -0.4, frequencyPenalty: 0.2, ...hist() },
    { temperature: 0.8, topK: 20, topP: 0.9 },
    { temperature: 1.2, topK: 40, minP: 0.02 },
    { temperature: 0.6, topP: 0.8, minP: 0.01 },
    { temperature: 0.9, topK: 30, topP: 0.7, minP: 0.03, repetitionPenalty: 1.2, ...hist() },
    { temperature: 0, repetitionPenalty: 1.5, presencePenalty: 1, ...hist() },
    { temperature: 1, topK: 8, frequencyPenalty: 0.5, presencePenalty: 0.25, ...hist() },
  ];
  return cases.map((p, i) => ({ seed: 1000 + i, ...p }));
}

/** Random combinations of every option. */
function randomParams(r: () => number, vocab: number, seed: number): SamplingParams {
  const p: SamplingParams = { seed };
  const pick = (prob: number) => r() < prob;
  if (pick(0.15)) p.temperature = 0;
  else if (pick(0.7)) p.temperature = 0.3 + 1.5 * r();
  if (pick(0.5)) p.topK = 1 + Math.floor(r() * Math.min(vocab, 80));
  if (pick(0.5)) p.topP = 0.2 + 0.79 * r();
  if (pick(0.3)) p.minP = 0.2 * r();
  if (pick(0.4)) {
    p.repetitionPenalty = 0.7 + r();
    p.promptTokens = tokens(r, 1 + Math.floor(r() * 10), vocab);
  }
  if (pick(0.4)) {
    p.presencePenalty = 2 * r() - 1;
    p.frequencyPenalty = r();
  }
  if (pick(0.6)) p.outputTokens = tokens(r, 1 + Math.floor(r() * 30), vocab);
  return p;
}

/** Logits on a coarse grid (bf16-like): many exact ties, which the filters cut through. */
function tiedRows(rows: number, vocab: number, seed: number): Float32Array {
  const r = rng(seed);
  return Float32Array.from({ length: rows * vocab }, () => Math.round(4 * normal(r)) / 4);
}

// ---- tests ---------------------------------------------------------------------------------------

describe.skipIf(info.cudaDevices === 0)('CUDA sampler', () => {
  afterAll(() => {
    console.log(
      `CUDA vs CPU logprobs over ${worst.compared} values: ${worst.bitEqual} bit-equal, ` +
        `max |diff| ${worst.abs.toExponential(3)}, max ${worst.ulps.toFixed(2)} f32 ulps (|logprob| >= 1); ` +
        `CUDA vs float64 reference: max |diff| ${worst.ref.toExponential(3)}`,
    );
  });

  it('every option alone and in combination matches the CPU and the float64 reference', () => {
    for (const vocab of [257, 1000]) {
      const params = optionCases(vocab);
      const logits = normalRows(params.length, vocab, vocab + 1);
      const out = expectMatchesCpu(logits, vocab, params, undefined, `vocab ${vocab}`);
      expect(expectMatchesReference(logits, vocab, params, out)).toBeGreaterThanOrEqual(params.length - 2);
    }
  });

  it('random combinations of all options match the CPU and the reference', () => {
    const r = rng(77);
    const vocab = 500;
    const rows = 48;
    const params = Array.from({ length: rows }, (_, i) => randomParams(r, vocab, 5000 + i));
    const logits = normalRows(rows, vocab, 78, 2.5);
    const positions = Int32Array.from({ length: rows }, (_, i) => 3 * i + 1);
    const out = expectMatchesCpu(logits, vocab, params, positions, 'random combinations');
    expect(expectMatchesReference(logits, vocab, params, out)).toBeGreaterThanOrEqual(rows - 4);
  });

  it('vocabularies that are not a multiple of the block: 1, 31, 1000, 4097', () => {
    for (const vocab of [1, 31, 1000, 4097]) {
      const params: SamplingParams[] = [
        { seed: 1 },
        { seed: 2, temperature: 0 },
        { seed: 3, topK: 3, temperature: 0.8 },
        { seed: 4, topP: 0.6 },
        { seed: 5, minP: 0.1, topK: 10, topP: 0.9 },
        { seed: 6, repetitionPenalty: 1.4, outputTokens: [0, vocab - 1], promptTokens: [vocab >> 1] },
      ];
      const logits = normalRows(params.length, vocab, 40 + vocab);
      const out = expectMatchesCpu(logits, vocab, params, undefined, `vocab ${vocab}`);
      expectMatchesReference(logits, vocab, params, out);
      if (vocab === 1) expect(Array.from(out.tokens)).toEqual(new Array(params.length).fill(0));
    }
  });

  it('one row, and many rows at many positions', () => {
    const one = normalRows(1, 300, 9);
    expectMatchesCpu(one, 300, [{ seed: 9, topK: 12, temperature: 0.9 }], new Int32Array([41]), 'one row');
    const rows = 160;
    const vocab = 48;
    const logits = normalRows(rows, vocab, 10);
    const params = Array.from(
      { length: rows },
      (_, i): SamplingParams => ({
        seed: 11,
        temperature: 0.8,
        ...(i % 3 === 1 ? { topK: 6 } : {}),
      }),
    );
    const positions = Int32Array.from({ length: rows }, (_, i) => i);
    expectMatchesCpu(logits, vocab, params, positions, 'many rows');
  });

  it('never samples −Inf logits, even when top-k reaches them', () => {
    const vocab = 200;
    const rows = 6;
    const logits = normalRows(rows, vocab, 12);
    const r = rng(13);
    for (let i = 0; i < rows; i++)
      for (let j = 0; j < vocab; j++) if (r() < 0.9) logits[i * vocab + j] = Number.NEGATIVE_INFINITY;
    logits.fill(Number.NEGATIVE_INFINITY, 5 * vocab, 6 * vocab - 1); // row 5: one finite logit, the last
    logits[6 * vocab - 1] = 1.5;
    const params: SamplingParams[] = [
      { seed: 1 },
      { seed: 2, topK: 150 },
      { seed: 3, topP: 0.999 },
      { seed: 4, temperature: 100 },
      { seed: 5, minP: 0.001, repetitionPenalty: 2, outputTokens: [0, 1, 2, 3] },
      { seed: 6, topK: 50, topP: 0.5 },
    ];
    // Many positions of the same rows: every draw lands on a finite logit.
    for (let pos = 0; pos < 4; pos++) {
      const positions = new Int32Array(rows).fill(pos);
      const out = expectMatchesCpu(logits, vocab, params, positions, `−Inf rows, position ${pos}`);
      for (let i = 0; i < rows; i++) expect(logits[i * vocab + (out.tokens[i] as number)]).toBeGreaterThan(-Infinity);
      expect(out.tokens[5]).toBe(vocab - 1);
      expectMatchesReference(logits, vocab, params, out);
    }
  });

  it('cuts through ties as the CPU does (index order within equal logits)', () => {
    const vocab = 700;
    const params: SamplingParams[] = [];
    for (const topK of [0, 1, 7, 40, 333]) for (const topP of [1, 0.3, 0.75]) params.push({ topK, topP });
    params.push({ temperature: 0 }, { minP: 0.5 }, { topK: 699 }, { topP: 0.95, temperature: 2 });
    const withSeeds = params.map((p, i) => ({ seed: 300 + i, ...p }));
    const logits = tiedRows(withSeeds.length, vocab, 14);
    for (let pos = 0; pos < 3; pos++) {
      const positions = new Int32Array(withSeeds.length).fill(pos);
      const out = expectMatchesCpu(logits, vocab, withSeeds, positions, `ties, position ${pos}`);
      expectMatchesReference(logits, vocab, withSeeds, out);
    }
    // All logits equal: top-k keeps the lowest indices, top-p the fewest that reach p.
    const flat = new Float32Array(3 * 64).fill(0.5);
    const flatParams = [
      { seed: 1, topK: 5 },
      { seed: 2, topP: 0.25 },
      { seed: 3, topK: 10, topP: 0.5 },
    ];
    for (let pos = 0; pos < 8; pos++) {
      const out = expectMatchesCpu(flat, 64, flatParams, new Int32Array(3).fill(pos), 'flat');
      expect(out.tokens[0]).toBeLessThan(5);
      expect(out.tokens[1]).toBeLessThan(16);
      expect(out.tokens[2]).toBeLessThan(5);
    }
  });

  it('extreme temperatures (1e-5, 1e-4, 100), top-k 1 and a tiny top-p', () => {
    const vocab = 999;
    const params: SamplingParams[] = [
      { temperature: 1e-5 },
      { temperature: 1e-4 },
      { temperature: 9e-6 }, // below vLLM's epsilon: greedy
      { temperature: 100 },
      { temperature: 100, topP: 0.5 },
      { temperature: 100, topK: 900 },
      { topK: 1 },
      { topK: 1, temperature: 50 },
      { topP: 1e-7 },
      { topP: 1e-7, temperature: 100 },
    ].map((p, i) => ({ seed: 70 + i, ...p }));
    const logits = normalRows(params.length, vocab, 15);
    // A near-tie at the top of row 1, so that 1e-4 is still a draw.
    logits[vocab + 5] = 20;
    logits[vocab + 6] = 20 + 1e-4 * 0.5;
    const out = expectMatchesCpu(logits, vocab, params, undefined, 'extreme temperatures');
    expectMatchesReference(logits, vocab, params, out);
    for (const i of [2, 6, 7, 8, 9]) {
      let arg = 0;
      for (let j = 1; j < vocab; j++)
        if ((logits[i * vocab + j] as number) > (logits[i * vocab + arg] as number)) arg = j;
      expect(out.tokens[i], `row ${i}: the first maximum`).toBe(arg);
      if (i !== 2) expect(out.logprobs[i]).toBe(0);
    }
  });

  it('gives a row the same bits alone, in a batch of 64, and with the batch reversed', () => {
    const vocab = 333;
    const rows = 64;
    const r = rng(16);
    const params = Array.from({ length: rows }, (_, i) => randomParams(r, vocab, 9000 + i));
    const logits = normalRows(rows, vocab, 17);
    const positions = Int32Array.from({ length: rows }, (_, i) => 7 * i);
    onDevice(logits, rows, vocab, (t) => {
      const batch = sample(t, vocab, params, positions);
      const reversed = new Float32Array(rows * vocab);
      for (let i = 0; i < rows; i++) reversed.set(logits.subarray(i * vocab, (i + 1) * vocab), (rows - 1 - i) * vocab);
      const rev = onDevice(reversed, rows, vocab, (tr) =>
        sample(tr, vocab, [...params].reverse(), Int32Array.from(positions).reverse()),
      );
      for (let i = 0; i < rows; i++) {
        const alone = onDevice(logits.slice(i * vocab, (i + 1) * vocab), 1, vocab, (ta) =>
          sample(ta, vocab, [params[i] as SamplingParams], positions.subarray(i, i + 1)),
        );
        expect(bits(alone, 0), `row ${i} alone`).toEqual(bits(batch, i));
        expect(bits(rev, rows - 1 - i), `row ${i} reversed`).toEqual(bits(batch, i));
      }
    });
  });

  it('splits plain rows over blocks: multi-chunk rows match the CPU and keep their bits in any batch', () => {
    // Plain rows (no penalty, no filter) are split into 4096-token chunks; 9000 is three chunks,
    // the last one short. The batch mixes plain rows with filtered and penalised ones.
    const vocab = 9000;
    const rows = 12;
    const r = rng(41);
    const params: SamplingParams[] = Array.from({ length: rows }, (_, i) => {
      if (i % 3 === 2) return randomParams(r, vocab, 500 + i);
      return { seed: 500 + i, temperature: [1, 0.7, 0, 1.6][i % 4] as number };
    });
    const logits = normalRows(rows, vocab, 43);
    // Row 0: its maximum twice, in the first and last chunks (greedy and the race take the first);
    // row 4: the maximum in the last chunk only; row 8: greedy with the maximum tied in chunks 1 and 2.
    logits[0 * vocab + 100] = 30;
    logits[0 * vocab + 8999] = 30;
    logits[4 * vocab + 8500] = 25;
    logits[8 * vocab + 5000] = 20;
    logits[8 * vocab + 8200] = 20;
    params[8] = { seed: 508, temperature: 0 };
    const positions = Int32Array.from({ length: rows }, (_, i) => 3 * i + 1);
    const batch = expectMatchesCpu(logits, vocab, params, positions, 'split rows');
    expect(batch.tokens[8]).toBe(5000);
    for (let i = 0; i < rows; i++) {
      const alone = onDevice(logits.slice(i * vocab, (i + 1) * vocab), 1, vocab, (ta) =>
        sample(ta, vocab, [params[i] as SamplingParams], positions.subarray(i, i + 1)),
      );
      expect(bits(alone, 0), `row ${i} alone`).toEqual(bits(batch, i));
    }
  });

  it('samples a Qwen-sized vocabulary (151936) like the CPU', () => {
    const vocab = 151936;
    const r = rng(18);
    const params: SamplingParams[] = [
      { seed: 1 },
      { seed: 2, temperature: 0.7, topK: 50, topP: 0.9 },
      { seed: 3, minP: 0.05, repetitionPenalty: 1.1, presencePenalty: 0.3, outputTokens: tokens(r, 64, vocab) },
    ];
    const logits = normalRows(params.length, vocab, 19, 2);
    for (let k = 0; k < 8; k++) logits[k * 9973] = 9 - k / 2; // a peaked head over a long tail
    const out = expectMatchesCpu(logits, vocab, params, new Int32Array([5, 6, 7]), 'vocab 151936');
    expectMatchesReference(logits, vocab, params, out);
  });

  it('stays within the logprob bound on flat and peaked rows of many sizes', () => {
    // Flat rows (small scale) put the most terms into the normaliser: the CPU's f32 partial sums
    // are furthest from exact there.
    const r = rng(22);
    for (const [rows, vocab, scale] of [
      [64, 4097, 3],
      [32, 20000, 0.5],
      [4, 151936, 0.25],
    ] as const) {
      const params = Array.from({ length: rows }, (_, i) =>
        i % 2 ? randomParams(r, vocab, 7000 + i) : { seed: 7000 + i, temperature: 0.5 + r() },
      );
      const logits = normalRows(rows, vocab, 23 + vocab, scale);
      expectMatchesCpu(logits, vocab, params, undefined, `vocab ${vocab}, scale ${scale}`);
    }
  });

  it('sampleAsync takes a DeviceTensor too', async () => {
    const vocab = 100;
    const logits = normalRows(2, vocab, 20);
    const params = [{ seed: 1, topK: 10 }, { seed: 2 }];
    const t = DeviceTensor.from(logits, [2, vocab]);
    const a = await sampleAsync(t, vocab, params);
    const s = sample(t, vocab, params);
    expect(a).toEqual(s);
    t.dispose();
  });

  it('throws NON_FINITE_LOGITS and INVALID_ARGUMENT like the CPU, leaving the logits unchanged', () => {
    const vocab = 40;
    const good = normalRows(3, vocab, 21);
    const cases: [string, (x: Float32Array) => void, SamplingParams[]?][] = [
      ['NaN', (x) => (x[vocab + 3] = Number.NaN)],
      ['+Inf', (x) => (x[vocab + 7] = Number.POSITIVE_INFINITY)],
      ['all −Inf', (x) => x.fill(Number.NEGATIVE_INFINITY, vocab, 2 * vocab)],
      [
        'a penalty that overflows to +Inf',
        (x) => (x[vocab + 2] = 3e38),
        [{ seed: 1 }, { seed: 2, presencePenalty: -3e38, outputTokens: [2] }, { seed: 3 }],
      ],
    ];
    for (const [name, spoil, given] of cases) {
      const x = good.slice();
      spoil(x);
      const params = given ?? [{ seed: 1 }, { seed: 2, topK: 5 }, { seed: 3, temperature: 0 }];
      const t = DeviceTensor.from(x, [3, vocab]);
      const e = expectSwerlError(() => sample(t, vocab, params), 'NON_FINITE_LOGITS');
      expect(e.message, name).toContain('row 1');
      expectSwerlError(() => sample(x, vocab, params), 'NON_FINITE_LOGITS');
      expect(new Uint32Array((t.toArray() as Float32Array).buffer), `${name}: logits unchanged`).toEqual(
        new Uint32Array(x.buffer),
      );
      t.dispose();
    }
    const t = DeviceTensor.from(good, [3, vocab]);
    const three = [{ seed: 1 }, { seed: 2 }, { seed: 3 }];
    expectSwerlError(() => sample(t, vocab, [{ seed: 1, topP: 0 }, { seed: 2 }, { seed: 3 }]), 'INVALID_ARGUMENT');
    expectSwerlError(() => sample(t, vocab + 1, three), 'INVALID_ARGUMENT');
    expectSwerlError(() => sample(t, vocab, three.slice(0, 2)), 'INVALID_ARGUMENT');
    const ints = DeviceTensor.from(new Int32Array(3 * vocab), [3, vocab]);
    expectSwerlError(() => sample(ints, vocab, three), 'INVALID_ARGUMENT');
    ints.dispose();
    // The binding's own checks, for a caller who bypasses src/sample.ts.
    const full = (p: object) => ({
      temperature: 1,
      topK: 0,
      topP: 1,
      minP: 0,
      seed: 1,
      repetitionPenalty: 1,
      presencePenalty: 0,
      frequencyPenalty: 0,
      ...p,
    });
    const raw = native();
    const nativeCall = (rows: number, params: object[], positions: Int32Array | null = null) =>
      raw.sampleDevice(t.buffer, rows, vocab, params as never, positions);
    expectSwerlError(() => nativeCall(3, [full({}), full({ topP: 0 }), full({})]), 'INVALID_ARGUMENT');
    expectSwerlError(
      () => nativeCall(3, [full({}), full({ outputTokens: Int32Array.of(vocab) }), full({})]),
      'INVALID_ARGUMENT',
    );
    expectSwerlError(() => nativeCall(3, [full({}), full({ repetitionPenalty: 0 }), full({})]), 'INVALID_ARGUMENT');
    expectSwerlError(() => nativeCall(2, [full({}), full({}), full({})]), 'INVALID_ARGUMENT');
    expectSwerlError(() => nativeCall(4, [full({}), full({}), full({}), full({})]), 'INVALID_ARGUMENT');
    expectSwerlError(() => nativeCall(3, [full({}), full({}), full({})], new Int32Array(2)), 'INVALID_ARGUMENT');
    expect(nativeCall(0, [])[0].length).toBe(0);
    expect(t.toArray()).toEqual(good);
    t.dispose();
    expectSwerlError(() => sample(t, vocab, three), 'DISPOSED');
  });
});

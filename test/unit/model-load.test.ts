/**
 * Model.load / Model.save: the Hugging Face layout (config.json + safetensors, single file or
 * sharded) and every error path of loading.
 *
 * - Round trips: save then load gives bitwise-identical parameters and logits (Qwen2 and Llama,
 *   tied and untied); a bf16 save stores each parameter rounded to nearest even, checked against a
 *   float64 reference (test/helpers/float16.ts), not against the writer's bit trick.
 * - Hand-written files: the safetensors bytes are built here (8-byte LE header length, JSON, data),
 *   with F16 / BF16 bit patterns whose values are decoded here from sign, exponent and mantissa.
 * - Errors: each asserts the SwerlError code and that the message names the file, field or tensor.
 *
 * Every parameter is overwritten with N(0, 0.3²) values before saving (transformers' init leaves
 * biases 0 and norms 1, which would hide a tensor that is not loaded at all).
 */
import { mkdir, mkdtemp, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ErrorCode, Model, SwerlError } from '../../src/index.js';
import { readSafetensorsHeader, writeSafetensors } from '../../src/model/safetensors.js';
import { expectSwerlError } from '../helpers/errors.js';
import { roundBf16 } from '../helpers/float16.js';
import { normal, rng } from '../helpers/random.js';

// ---- configs -------------------------------------------------------------------------------------

const QWEN = {
  architectures: ['Qwen2ForCausalLM'],
  vocab_size: 50,
  hidden_size: 16,
  intermediate_size: 24,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
};

const LLAMA = {
  architectures: ['LlamaForCausalLM'],
  vocab_size: 40,
  hidden_size: 16,
  intermediate_size: 20,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 1,
  rms_norm_eps: 1e-5,
  rope_theta: 500000,
  max_position_embeddings: 256,
  rope_scaling: {
    rope_type: 'llama3',
    factor: 8,
    low_freq_factor: 1,
    high_freq_factor: 4,
    original_max_position_embeddings: 64,
  },
};

const TOKENS = [1, 7, 3, 0, 12, 39, 5, 21];

// ---- temporary directories -----------------------------------------------------------------------

let root = '';
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'swerl-model-load-'));
});
afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

/** A fresh empty directory under the suite's temporary root. */
function newDir(): Promise<string> {
  return mkdtemp(join(root, 'case-'));
}

// ---- helpers -------------------------------------------------------------------------------------

/** A model of `config` whose every parameter (biases and norms too) is N(0, 0.3²), from `seed`. */
function scrambled(config: object, seed: number): Model {
  const m = Model.random(config, seed);
  const r = rng(seed + 1000);
  for (const p of m.parameters()) {
    const n = p.shape.reduce((a, d) => a * d, 1);
    m.setParameter(
      p.name,
      Float32Array.from({ length: n }, () => 0.3 * normal(r)),
    );
  }
  return m;
}

/** Every parameter's values, by name. */
function snapshot(m: Model): Map<string, Float32Array> {
  return new Map(m.parameters().map((p) => [p.name, m.getParameter(p.name)]));
}

function bits(a: Float32Array): Uint32Array {
  return new Uint32Array(a.buffer.slice(a.byteOffset, a.byteOffset + a.byteLength));
}

/** a and b hold the same f32 bit patterns (so -0 differs from 0); reports the first difference. */
function expectBitwise(actual: Float32Array, expected: Float32Array, what: string): void {
  expect(actual.length, `${what}: length`).toBe(expected.length);
  const x = bits(actual);
  const y = bits(expected);
  const i = x.findIndex((v, k) => v !== y[k]);
  const detail = i < 0 ? '' : `${what}[${i}]: got ${actual[i]} (0x${x[i]?.toString(16)}), want ${expected[i]}`;
  expect(i, detail).toBe(-1);
}

function expectSameParameters(actual: Model, expected: Model): void {
  expect(actual.parameters()).toEqual(expected.parameters());
  for (const p of expected.parameters())
    expectBitwise(actual.getParameter(p.name), expected.getParameter(p.name), p.name);
}

/** The SwerlError that fn throws or whose promise rejects, checked to carry `code`. */
async function swerlError(fn: () => unknown, code: ErrorCode): Promise<SwerlError> {
  let caught: unknown;
  try {
    await fn();
  } catch (e) {
    caught = e;
  }
  expect(caught, `expected a SwerlError ${code}`).toBeInstanceOf(SwerlError);
  expect((caught as SwerlError).code, (caught as SwerlError).message).toBe(code);
  return caught as SwerlError;
}

// ---- safetensors bytes, built by hand ------------------------------------------------------------

interface RawTensor {
  name: string;
  dtype: string;
  shape: number[];
  data: Uint8Array;
}

interface RawOptions {
  /** Edits the header object after the offsets are filled in. */
  mutate?: (header: Record<string, { dtype: string; shape: number[]; data_offsets: number[] }>) => void;
  /** Replaces the header text altogether. */
  headerText?: string;
  /** Overrides the 8-byte header length. */
  headerLength?: bigint;
  /** Pads the header with spaces until (8 + header length) % 8 equals this (default: no padding). */
  dataStartMod8?: number;
}

/** A safetensors file: 8-byte LE header length, the JSON header, the tensors' bytes in order. */
function safetensorsBytes(tensors: RawTensor[], o: RawOptions = {}): Buffer {
  const header: Record<string, { dtype: string; shape: number[]; data_offsets: number[] }> = {};
  let offset = 0;
  for (const t of tensors) {
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + t.data.length] };
    offset += t.data.length;
  }
  o.mutate?.(header);
  let text = o.headerText ?? JSON.stringify({ __metadata__: { format: 'pt' }, ...header });
  if (o.dataStartMod8 !== undefined) while ((8 + Buffer.byteLength(text)) % 8 !== o.dataStartMod8) text += ' ';
  const json = Buffer.from(text, 'utf8');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(o.headerLength ?? BigInt(json.length));
  return Buffer.concat([len, json, ...tensors.map((t) => Buffer.from(t.data))]);
}

function f32Bytes(values: Float32Array): Uint8Array {
  const out = new Uint8Array(values.length * 4);
  const dv = new DataView(out.buffer);
  values.forEach((v, i) => {
    dv.setFloat32(i * 4, v, true);
  });
  return out;
}

function u16Bytes(halfBits: Uint16Array): Uint8Array {
  const out = new Uint8Array(halfBits.length * 2);
  const dv = new DataView(out.buffer);
  halfBits.forEach((h, i) => {
    dv.setUint16(i * 2, h, true);
  });
  return out;
}

/** The model's parameters as F32 tensors, in parameters() order. */
function f32Tensors(m: Model): RawTensor[] {
  return m
    .parameters()
    .map((p) => ({ name: p.name, dtype: 'F32', shape: p.shape, data: f32Bytes(m.getParameter(p.name)) }));
}

/** IEEE binary16 bits to their value, from sign, exponent and mantissa. */
function decodeF16(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const man = h & 0x3ff;
  if (exp === 0) return sign * man * 2 ** -24;
  if (exp === 0x1f) return man ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * (1 + man / 1024) * 2 ** (exp - 15);
}

/** bfloat16 bits to their value, from sign, exponent and mantissa. */
function decodeBf16(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 7) & 0xff;
  const man = h & 0x7f;
  if (exp === 0) return sign * man * 2 ** -133;
  if (exp === 0xff) return man ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * (1 + man / 128) * 2 ** (exp - 127);
}

/** Known binary16 patterns and their values. */
const F16_KNOWN: [number, number][] = [
  [0x3e00, 1.5],
  [0xc080, -2.25],
  [0x7bff, 65504],
  [0xfbff, -65504],
  [0x0001, 2 ** -24], // smallest subnormal
  [0x8001, -(2 ** -24)],
  [0x0003, 3 * 2 ** -24],
  [0x03ff, 1023 * 2 ** -24], // largest subnormal
  [0x0400, 2 ** -14], // smallest normal
  [0x3c00, 1],
  [0x3555, 0.333251953125],
  [0x0000, 0],
  [0x8000, -0],
  [0x7c00, Number.POSITIVE_INFINITY],
  [0xfc00, Number.NEGATIVE_INFINITY],
];

/** Known bfloat16 patterns and their values. */
const BF16_KNOWN: [number, number][] = [
  [0x3fc0, 1.5],
  [0xc010, -2.25],
  [0x4780, 65536],
  [0x477f, 65280],
  [0x7f7f, 3.3895313892515355e38], // largest finite
  [0x0080, 2 ** -126], // smallest normal
  [0x0001, 2 ** -133], // smallest subnormal (an f32 subnormal)
  [0x807f, -127 * 2 ** -133],
  [0x3f80, 1],
  [0x3eab, 0.333984375],
  [0x0000, 0],
  [0x8000, -0],
  [0x7f80, Number.POSITIVE_INFINITY],
  [0xff80, Number.NEGATIVE_INFINITY],
];

/** The known patterns whose value is finite (Model.load refuses the others). */
function finite(known: readonly [number, number][]): [number, number][] {
  return known.filter(([, v]) => Number.isFinite(v));
}

type ParameterInfoLike = { name: string; shape: number[] };

/** n finite 16-bit patterns (never NaN or infinity) of a format with `expMask`, from seed. */
function finiteHalfBits(n: number, seed: number, expMask: number): Uint16Array {
  const r = rng(seed);
  return Uint16Array.from({ length: n }, () => {
    const h = Math.floor(r() * 0x10000);
    return (h & expMask) === expMask ? h & ~(expMask & -expMask) : h; // clear the lowest exponent bit
  });
}

/** Writes config.json for `config` into dir. */
async function writeConfig(dir: string, config: object): Promise<void> {
  await writeFile(join(dir, 'config.json'), JSON.stringify(config));
}

/** A directory with config.json of m and a hand-written model.safetensors of `tensors`. */
async function rawCheckpoint(m: Model, tensors: RawTensor[], o: RawOptions = {}): Promise<string> {
  const dir = await newDir();
  await writeConfig(dir, m.config);
  await writeFile(join(dir, 'model.safetensors'), safetensorsBytes(tensors, o));
  return dir;
}

// ---- round trips ---------------------------------------------------------------------------------

describe('Model.save then Model.load', () => {
  const cases: [string, object][] = [
    ['Qwen2 untied', QWEN],
    ['Qwen2 tied', { ...QWEN, tie_word_embeddings: true }],
    ['Llama untied', LLAMA],
    ['Llama tied', { ...LLAMA, tie_word_embeddings: true }],
  ];
  for (const [label, config] of cases) {
    it(`${label}: f32 parameters and logits are bitwise identical`, async () => {
      const m = scrambled(config, 11);
      const dir = await newDir();
      await m.save(dir);
      const loaded = await Model.load(dir);
      expectSameParameters(loaded, m);
      const tokens = TOKENS.filter((t) => t < m.config.vocab_size);
      const want = await m.forward(tokens);
      expect(want.length).toBe(tokens.length * m.config.vocab_size);
      expectBitwise(await loaded.forward(tokens), want, 'logits');
      // The logits depend on the weights: another model's differ, so equality above means something.
      const other = await scrambled(config, 12).forward(tokens);
      expect(bits(other)).not.toEqual(bits(want));
      // The loaded config is the saved one, with torch_dtype.
      expect(loaded.config).toEqual({ ...m.config, torch_dtype: 'float32' });
    });
  }

  it('writes Hugging Face names and shapes, F32, lm_head only when untied, data 8-byte aligned', async () => {
    for (const tied of [false, true]) {
      const m = scrambled({ ...QWEN, tie_word_embeddings: tied }, 3);
      const dir = await newDir();
      await m.save(dir);
      const h = await readSafetensorsHeader(join(dir, 'model.safetensors'));
      expect(h.metadata).toEqual({ format: 'pt' });
      expect([...h.tensors.keys()].sort()).toEqual(
        m
          .parameters()
          .map((p) => p.name)
          .sort(),
      );
      expect(h.tensors.has('lm_head.weight')).toBe(!tied);
      expect(h.tensors.has('model.layers.1.self_attn.k_proj.bias')).toBe(true);
      for (const p of m.parameters()) {
        const t = h.tensors.get(p.name);
        expect(t?.shape, p.name).toEqual(p.shape);
        expect(t?.dtype, p.name).toBe('F32');
        expect((t?.begin ?? 1) % 8, p.name).toBe(0);
      }
      const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8'));
      expect(config.tie_word_embeddings).toBe(tied);
      expect(config.torch_dtype).toBe('float32');
      expect(config.architectures).toEqual(['Qwen2ForCausalLM']);
    }
  });

  it('Llama has no q/k/v biases and keeps its rope_scaling through config.json', async () => {
    const m = scrambled(LLAMA, 5);
    expect(m.parameters().some((p) => p.name.endsWith('.bias'))).toBe(false);
    const dir = await newDir();
    await m.save(dir);
    const loaded = await Model.load(dir);
    expect(loaded.config.rope_scaling).toEqual(LLAMA.rope_scaling);
    expect(loaded.config.rope_theta).toBe(500000);
  });

  it('save(dir, { dtype: "bf16" }) stores each parameter rounded to nearest even', async () => {
    const m = scrambled(QWEN, 21);
    // Ties and edge cases, in a 16-value norm weight.
    const special = Float32Array.from([
      1 + 2 ** -8, // tie between 1 and 1 + 2^-7: to even (1)
      1 + 3 * 2 ** -8, // tie: to even (1 + 2^-6)
      1 + 2 ** -8 + 2 ** -20, // just above the tie: up
      -(1 + 2 ** -8), // negative tie: -1
      3.4028234663852886e38, // f32 max: rounds to infinity
      -3.4028234663852886e38,
      3.3895313892515355e38, // bf16 max: exact
      2 ** -149, // smallest f32 subnormal: to 0
      2 ** -134, // half a bf16 subnormal ulp: tie to even (0)
      3 * 2 ** -134, // 1.5 ulps: tie to even (2 ulps)
      1e-40,
      -0,
      Number.POSITIVE_INFINITY,
      0.1,
      65535,
      -1234.5678,
    ]);
    m.setParameter('model.norm.weight', special);
    const dir = await newDir();
    await m.save(dir, { dtype: 'bf16' });
    const h = await readSafetensorsHeader(join(dir, 'model.safetensors'));
    for (const t of h.tensors.values()) expect(t.dtype).toBe('BF16');
    const dataBytes = [...h.tensors.values()].reduce((a, t) => a + t.bytes, 0);
    expect(dataBytes).toBe(2 * m.numParameters);
    const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8'));
    expect(config.torch_dtype).toBe('bfloat16');

    // Decoded from the file's bytes: Model.load would refuse the infinities among the special values.
    const fileBytes = await readFile(join(dir, 'model.safetensors'));
    const stored = (name: string): Float32Array => {
      const t = h.tensors.get(name);
      if (!t) throw new Error(`${name} not in the file`);
      return Float32Array.from({ length: t.bytes / 2 }, (_, i) => decodeBf16(fileBytes.readUInt16LE(t.begin + 2 * i)));
    };
    let changed = 0;
    for (const p of m.parameters()) {
      const orig = m.getParameter(p.name);
      const want = Float32Array.from(orig, (v) => roundBf16(v));
      const got = stored(p.name);
      expectBitwise(got, want, p.name);
      changed += orig.filter((v, i) => !Object.is(v, got[i])).length;
    }
    expect(changed, 'bf16 rounding changed almost every random value').toBeGreaterThan(m.numParameters / 2);
    // The literal expectations of the special values (a check of the reference too).
    await expect(Model.load(dir)).rejects.toThrow(
      /tensor model\.norm\.weight holds a non-finite value .* at flat index 4;/,
    );
    expect(Array.from(stored('model.norm.weight'))).toEqual([
      1,
      1 + 2 ** -6,
      1 + 2 ** -7,
      -1,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
      3.3895313892515355e38,
      0,
      0,
      2 ** -132,
      roundBf16(1e-40),
      -0,
      Number.POSITIVE_INFINITY,
      0.10009765625,
      65536,
      -1232,
    ]);
  });

  it('a bf16 save keeps NaN a NaN, also one whose payload lies only in the low 16 bits', async () => {
    const m = scrambled(QWEN, 22);
    const v = m.getParameter('model.norm.weight');
    const u = new Uint32Array(v.buffer, v.byteOffset, v.length);
    v[3] = Number.NaN;
    u[4] = 0x7f800001; // signalling NaN: truncated to 16 bits it would read as +infinity
    u[5] = 0xff800100; // negative, likewise
    m.setParameter('model.norm.weight', v);
    expect(bits(m.getParameter('model.norm.weight'))[4]).toBe(0x7f800001);
    const dir = await newDir();
    await m.save(dir, { dtype: 'bf16' });
    // Read back from the file's bytes: Model.load refuses non-finite weights.
    const file = join(dir, 'model.safetensors');
    const t = (await readSafetensorsHeader(file)).tensors.get('model.norm.weight');
    const data = (await readFile(file)).subarray(t?.begin, (t?.begin ?? 0) + (t?.bytes ?? 0));
    const got = Array.from({ length: 6 }, (_, i) => decodeBf16(data.readUInt16LE(2 * i)));
    expect([3, 4, 5].map((i) => Number.isNaN(got[i]))).toEqual([true, true, true]);
    expect(Number.isNaN(got[2])).toBe(false);
    const e = await swerlError(() => Model.load(dir), 'CORRUPT_FILE');
    expect(e.message).toBe(
      `${file}: tensor model.norm.weight holds a non-finite value (NaN or ±Inf) at flat index 3; the checkpoint is corrupt (was it saved after training diverged?)`,
    );
  });

  it('save rejects dtype f16 (INVALID_ARGUMENT) and a path under a file (IO_ERROR)', async () => {
    const m = Model.random(QWEN, 1);
    const dir = await newDir();
    const e1 = await swerlError(() => m.save(dir, { dtype: 'f16' as 'bf16' }), 'INVALID_ARGUMENT');
    expect(e1.message).toContain('dtype');
    const file = join(dir, 'plain-file');
    await writeFile(file, 'x');
    const e2 = await swerlError(() => m.save(join(file, 'sub')), 'IO_ERROR');
    expect(e2.message).toContain(file);
  });
});

// ---- hand-written files --------------------------------------------------------------------------

describe('hand-written safetensors files', () => {
  for (const [dtype, known, expMask, decode] of [
    ['F16', F16_KNOWN, 0x7c00, decodeF16],
    ['BF16', BF16_KNOWN, 0x7f80, decodeBf16],
  ] as const) {
    it(`${dtype}: every tensor reads as the exact f32 of its bit patterns`, async () => {
      const m = Model.random(QWEN, 2);
      const expected = new Map<string, Float32Array>();
      const tensors = m.parameters().map((p, k) => {
        const n = p.shape.reduce((a, d) => a * d, 1);
        const hb = finiteHalfBits(n, 100 + k, expMask);
        if (p.name === 'model.embed_tokens.weight') for (const [i, [b]] of finite(known).entries()) hb[i] = b;
        expected.set(p.name, Float32Array.from(hb, decode));
        return { name: p.name, dtype, shape: p.shape, data: u16Bytes(hb) };
      });
      const loaded = await Model.load(await rawCheckpoint(m, tensors));
      for (const [name, want] of expected) expectBitwise(loaded.getParameter(name), want, name);
      const embed = loaded.getParameter('model.embed_tokens.weight');
      expect(Array.from(embed.subarray(0, finite(known).length))).toEqual(finite(known).map(([, v]) => v));
      expect(Object.is(embed[finite(known).findIndex(([b]) => b === 0x8000)], -0)).toBe(true);
    });
  }

  // NaN and ±Inf, in each stored dtype, refused at load (CORRUPT_FILE naming the file and the
  // tensor); the ±Inf patterns are the known ones above, so this checks their decoding too.
  const nonFinite: [string, (n: number, k: number) => Uint8Array, string][] = [];
  for (const [bits, what] of [
    [0x7fc00000, 'NaN'],
    [0x7f800001, 'signalling NaN'],
    [0x7f800000, '+Inf'],
    [0xff800000, '-Inf'],
  ] as const) {
    nonFinite.push([
      'F32',
      (n, k) => {
        const v = new Uint32Array(Float32Array.from({ length: n }, (_, i) => 0.01 * i).buffer);
        v[k] = bits;
        return new Uint8Array(v.buffer);
      },
      what,
    ]);
  }
  for (const [dtype, known, expMask, nan] of [
    ['F16', F16_KNOWN, 0x7c00, 0x7e00],
    ['BF16', BF16_KNOWN, 0x7f80, 0x7fc0],
  ] as const) {
    const patterns: [number, string][] = [
      [nan, 'NaN'],
      [nan | 0x8001, '-NaN'],
      ...known.filter(([, v]) => !Number.isFinite(v)).map(([b, v]): [number, string] => [b, String(v)]),
    ];
    for (const [b, what] of patterns) {
      nonFinite.push([
        dtype,
        (n, k) => {
          const hb = finiteHalfBits(n, 7, expMask);
          hb[k] = b;
          return u16Bytes(hb);
        },
        `${what} (0x${b.toString(16)})`,
      ]);
    }
  }
  it('a NaN or ±Inf in any tensor, stored as F32, F16 or BF16: CORRUPT_FILE naming the file and tensor', async () => {
    const m = Model.random(QWEN, 5);
    const ps = m.parameters();
    for (const [c, [dtype, make, what]] of nonFinite.entries()) {
      const target = ps[(3 * c + 1) % ps.length] as ParameterInfoLike;
      const n = target.shape.reduce((a, d) => a * d, 1);
      const k = (17 * c + 5) % n;
      const tensors = ps.map((p) => {
        const size = p.shape.reduce((a, d) => a * d, 1);
        if (p.name === target.name) return { name: p.name, dtype, shape: p.shape, data: make(size, k) };
        return { name: p.name, dtype: 'F32', shape: p.shape, data: f32Bytes(new Float32Array(size).fill(0.5)) };
      });
      const dir = await rawCheckpoint(m, tensors);
      const e = await swerlError(() => Model.load(dir), 'CORRUPT_FILE');
      expect(e.message, `${dtype} ${what} in ${target.name}`).toBe(
        `${join(dir, 'model.safetensors')}: tensor ${target.name} holds a non-finite value (NaN or ±Inf) at flat index ${k}; the checkpoint is corrupt (was it saved after training diverged?)`,
      );
    }
  });

  it('F32, F16 and BF16 tensors mixed in one file, F32 data not 4-byte aligned', async () => {
    const m = Model.random(QWEN, 4);
    const expected = new Map<string, Float32Array>();
    const tensors = m.parameters().map((p, k) => {
      const n = p.shape.reduce((a, d) => a * d, 1);
      const kind = k % 3;
      if (kind === 0) {
        const v = Float32Array.from({ length: n }, (_, i) => (i - n / 2) * 0.01 + k);
        expected.set(p.name, v);
        return { name: p.name, dtype: 'F32', shape: p.shape, data: f32Bytes(v) };
      }
      const hb = finiteHalfBits(n, 300 + k, kind === 1 ? 0x7c00 : 0x7f80);
      expected.set(p.name, Float32Array.from(hb, kind === 1 ? decodeF16 : decodeBf16));
      return { name: p.name, dtype: kind === 1 ? 'F16' : 'BF16', shape: p.shape, data: u16Bytes(hb) };
    });
    // (8 + header length) % 8 === 1: every tensor's data, F32 included, starts at an odd file offset.
    const dir = await rawCheckpoint(m, tensors, { dataStartMod8: 1 });
    const loaded = await Model.load(dir);
    for (const [name, want] of expected) expectBitwise(loaded.getParameter(name), want, name);
  });

  it('tensors in any order in the file, header padded or not', async () => {
    const m = scrambled(QWEN, 6);
    const tensors = f32Tensors(m).reverse();
    for (const mod of [0, 3, 6]) {
      const loaded = await Model.load(await rawCheckpoint(m, tensors, { dataStartMod8: mod }));
      expectSameParameters(loaded, m);
    }
  });

  it('a sharded checkpoint (model.safetensors.index.json) loads and matches', async () => {
    const m = scrambled(LLAMA, 7);
    const dir = await newDir();
    await writeConfig(dir, m.config);
    const params = m.parameters();
    const shardOf = (i: number) =>
      i % 2 === 0 ? 'model-00001-of-00002.safetensors' : 'model-00002-of-00002.safetensors';
    const weightMap: Record<string, string> = {};
    params.forEach((p, i) => {
      weightMap[p.name] = shardOf(i);
    });
    for (const shard of new Set(Object.values(weightMap))) {
      const tensors = params
        .filter((p) => weightMap[p.name] === shard)
        .map((p) => ({ name: p.name, shape: p.shape, data: m.getParameter(p.name) }));
      expect(tensors.length).toBeGreaterThan(3);
      await writeSafetensors(join(dir, shard), tensors, 'F32');
    }
    await writeFile(
      join(dir, 'model.safetensors.index.json'),
      JSON.stringify({ metadata: { total_size: 4 * m.numParameters }, weight_map: weightMap }),
    );
    const loaded = await Model.load(dir);
    expectSameParameters(loaded, m);
    expectBitwise(await loaded.forward(TOKENS), await m.forward(TOKENS), 'logits');
  });

  it('shards of different dtypes (F32 + BF16)', async () => {
    const m = scrambled(QWEN, 8);
    const dir = await newDir();
    await writeConfig(dir, m.config);
    const params = m.parameters();
    const half = Math.floor(params.length / 2);
    const shards: [string, typeof params, 'F32' | 'BF16'][] = [
      ['a.safetensors', params.slice(0, half), 'F32'],
      ['b.safetensors', params.slice(half), 'BF16'],
    ];
    const weightMap: Record<string, string> = {};
    for (const [file, ps, dtype] of shards) {
      for (const p of ps) weightMap[p.name] = file;
      const tensors = ps.map((p) => ({ name: p.name, shape: p.shape, data: m.getParameter(p.name) }));
      await writeSafetensors(join(dir, file), tensors, dtype);
    }
    await writeFile(join(dir, 'model.safetensors.index.json'), JSON.stringify({ weight_map: weightMap }));
    const loaded = await Model.load(dir);
    params.forEach((p, i) => {
      const orig = m.getParameter(p.name);
      const want = i < half ? orig : Float32Array.from(orig, (v) => roundBf16(v));
      expectBitwise(loaded.getParameter(p.name), want, p.name);
    });
  });
});

// ---- errors --------------------------------------------------------------------------------------

describe('Model.load errors', () => {
  /** A valid saved (f32) checkpoint of `config`. */
  async function saved(config: object = QWEN, seed = 9): Promise<{ m: Model; dir: string }> {
    const m = scrambled(config, seed);
    const dir = await newDir();
    await m.save(dir);
    return { m, dir };
  }

  /** The saved config.json of dir, edited. */
  async function editConfig(dir: string, edit: (c: Record<string, unknown>) => void): Promise<void> {
    const c = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8'));
    edit(c);
    await writeConfig(dir, c);
  }

  it('the valid checkpoint these cases start from loads', async () => {
    const { m, dir } = await saved();
    expectSameParameters(await Model.load(dir), m);
  });

  it('missing config.json: IO_ERROR naming it', async () => {
    const { dir } = await saved();
    await rm(join(dir, 'config.json'));
    const e = await swerlError(() => Model.load(dir), 'IO_ERROR');
    expect(e.message).toContain(join(dir, 'config.json'));
    const e2 = await swerlError(() => Model.load(join(dir, 'no-such-dir')), 'IO_ERROR');
    expect(e2.message).toContain(join(dir, 'no-such-dir', 'config.json'));
  });

  it('config.json not JSON: CORRUPT_FILE naming it', async () => {
    const { dir } = await saved();
    await writeFile(join(dir, 'config.json'), '{"architectures": ["Qwen2ForCausalLM"], vocab_size: 50');
    const e = await swerlError(() => Model.load(dir), 'CORRUPT_FILE');
    expect(e.message).toContain(join(dir, 'config.json'));
  });

  it('unsupported architecture GPT2LMHeadModel: UNSUPPORTED_MODEL', async () => {
    const { dir } = await saved();
    await editConfig(dir, (c) => {
      c.architectures = ['GPT2LMHeadModel'];
      c.model_type = 'gpt2';
    });
    const e = await swerlError(() => Model.load(dir), 'UNSUPPORTED_MODEL');
    expect(e.message).toContain('GPT2LMHeadModel');
  });

  it('no architectures but model_type llama: loads as Llama', async () => {
    const { m, dir } = await saved(LLAMA);
    await editConfig(dir, (c) => {
      delete c.architectures;
      c.model_type = 'llama';
    });
    const loaded = await Model.load(dir);
    expect(loaded.config.architectures).toEqual(['LlamaForCausalLM']);
    expectSameParameters(loaded, m);
  });

  it('hidden_act gelu: UNSUPPORTED_MODEL', async () => {
    const { dir } = await saved();
    await editConfig(dir, (c) => {
      c.hidden_act = 'gelu';
    });
    const e = await swerlError(() => Model.load(dir), 'UNSUPPORTED_MODEL');
    expect(e.message).toContain('gelu');
  });

  it('rope_scaling type dynamic: UNSUPPORTED_MODEL', async () => {
    const { dir } = await saved();
    await editConfig(dir, (c) => {
      c.rope_scaling = { type: 'dynamic', factor: 2 };
    });
    const e = await swerlError(() => Model.load(dir), 'UNSUPPORTED_MODEL');
    expect(e.message).toContain('dynamic');
  });

  it('no weights file: IO_ERROR naming the directory', async () => {
    const { dir } = await saved();
    await rm(join(dir, 'model.safetensors'));
    const e = await swerlError(() => Model.load(dir), 'IO_ERROR');
    expect(e.message).toContain(dir);
    expect(e.message).toContain('model.safetensors');
  });

  it('a file truncated by a few bytes: CORRUPT_FILE naming the file and the cut tensor', async () => {
    const { m, dir } = await saved();
    const file = join(dir, 'model.safetensors');
    const h = await readSafetensorsHeader(file);
    const last = [...h.tensors.entries()].reduce((a, b) => (b[1].begin > a[1].begin ? b : a));
    const size = last[1].begin + last[1].bytes;
    await truncate(file, size - 3);
    const e = await swerlError(() => Model.load(dir), 'CORRUPT_FILE');
    expect(e.message).toContain(file);
    expect(e.message).toContain(last[0]);
    expect(last[0]).toBe(m.parameters().at(-1)?.name);
  });

  it('a file cut inside the header or shorter than 8 bytes: CORRUPT_FILE', async () => {
    const { dir } = await saved();
    const file = join(dir, 'model.safetensors');
    await truncate(file, 40);
    const e = await swerlError(() => Model.load(dir), 'CORRUPT_FILE');
    expect(e.message).toContain(file);
    await truncate(file, 5);
    const e2 = await swerlError(() => Model.load(dir), 'CORRUPT_FILE');
    expect(e2.message).toContain(file);
  });

  it('header length larger than the file: CORRUPT_FILE', async () => {
    const m = scrambled(QWEN, 9);
    const good = safetensorsBytes(f32Tensors(m));
    for (const n of [BigInt(good.length), BigInt(good.length - 7), 2n ** 63n, 2n ** 64n - 1n]) {
      const dir = await rawCheckpoint(m, f32Tensors(m), { headerLength: n });
      const e = await swerlError(() => Model.load(dir), 'CORRUPT_FILE');
      expect(e.message).toContain(join(dir, 'model.safetensors'));
      expect(e.message).toContain('header length');
    }
  });

  it('header not JSON, or JSON that is not an object: CORRUPT_FILE', async () => {
    const m = scrambled(QWEN, 9);
    for (const headerText of ['{"model.norm.weight": {"dtype": "F32", ', 'not json at all', '[1, 2]', 'null']) {
      const dir = await rawCheckpoint(m, f32Tensors(m), { headerText });
      const e = await swerlError(() => Model.load(dir), 'CORRUPT_FILE');
      expect(e.message, headerText).toContain(join(dir, 'model.safetensors'));
    }
  });

  it('data_offsets inconsistent with the shape: CORRUPT_FILE naming the tensor', async () => {
    const m = scrambled(QWEN, 9);
    const name = 'model.layers.0.mlp.up_proj.weight';
    const edits: [string, (o: number[]) => number[]][] = [
      ['4 bytes short', ([b, e]) => [b as number, (e as number) - 4]],
      ['4 bytes long', ([b, e]) => [b as number, (e as number) + 4]],
      ['reversed', ([b, e]) => [e as number, b as number]],
      ['three offsets', ([b, e]) => [b as number, e as number, e as number]],
      ['negative', ([b, e]) => [-(b as number) - 8, e as number]],
      ['fractional', ([b, e]) => [(b as number) + 0.5, (e as number) + 0.5]],
    ];
    for (const [what, edit] of edits) {
      const dir = await rawCheckpoint(m, f32Tensors(m), {
        mutate: (h) => {
          const t = h[name] as { data_offsets: number[] };
          t.data_offsets = edit(t.data_offsets);
        },
      });
      const e = await swerlError(() => Model.load(dir), 'CORRUPT_FILE');
      expect(e.message, what).toContain(join(dir, 'model.safetensors'));
      expect(e.message, what).toContain(name);
    }
  });

  it('tensors that overlap, leave a hole, or leave bytes after the data: CORRUPT_FILE', async () => {
    const m = scrambled(QWEN, 9);
    const a = 'model.norm.weight';
    const b = 'model.layers.1.input_layernorm.weight';
    // Two tensors of the same size swapped onto one span (overlap) and shifted by 4 bytes (hole).
    const overlap = await rawCheckpoint(m, f32Tensors(m), {
      mutate: (h) => {
        (h[a] as { data_offsets: number[] }).data_offsets = [...(h[b] as { data_offsets: number[] }).data_offsets];
      },
    });
    const e1 = await swerlError(() => Model.load(overlap), 'CORRUPT_FILE');
    expect(e1.message).toMatch(/overlap or hole/);
    const tensors = f32Tensors(m);
    const dir = await rawCheckpoint(m, tensors);
    await writeFile(join(dir, 'model.safetensors'), Buffer.concat([safetensorsBytes(tensors), Buffer.alloc(8)]));
    const e2 = await swerlError(() => Model.load(dir), 'CORRUPT_FILE');
    expect(e2.message).toMatch(/end at byte/);
  });

  it('a config.json that is JSON but not an object: CORRUPT_FILE naming the file', async () => {
    for (const text of ['null', '[]', '"qwen2"']) {
      const dir = await newDir();
      await writeFile(join(dir, 'config.json'), text);
      const e = await swerlError(() => Model.load(dir), 'CORRUPT_FILE');
      expect(e.message).toContain(join(dir, 'config.json'));
    }
  });

  it('a bad shape entry: CORRUPT_FILE naming the tensor', async () => {
    const m = scrambled(QWEN, 9);
    for (const shape of [[-16], [16.5], 'x', null]) {
      const dir = await rawCheckpoint(m, f32Tensors(m), {
        mutate: (h) => {
          (h['model.norm.weight'] as { shape: unknown }).shape = shape;
        },
      });
      const e = await swerlError(() => Model.load(dir), 'CORRUPT_FILE');
      expect(e.message).toContain('model.norm.weight');
    }
  });

  it('a tensor of dtype I64: UNSUPPORTED_MODEL naming the tensor and dtype', async () => {
    const m = scrambled(QWEN, 9);
    const tensors = f32Tensors(m).map((t) =>
      t.name === 'model.norm.weight' ? { ...t, dtype: 'I64', data: new Uint8Array(8 * 16) } : t,
    );
    const dir = await rawCheckpoint(m, tensors);
    const e = await swerlError(() => Model.load(dir), 'UNSUPPORTED_MODEL');
    expect(e.message).toContain('model.norm.weight');
    expect(e.message).toContain('I64');
    expect(e.message).toContain(join(dir, 'model.safetensors'));
  });

  it('a missing tensor: MISSING_TENSOR listing it', async () => {
    const m = scrambled(QWEN, 9);
    const name = 'model.layers.1.mlp.down_proj.weight';
    const dir = await rawCheckpoint(
      m,
      f32Tensors(m).filter((t) => t.name !== name),
    );
    const e = await swerlError(() => Model.load(dir), 'MISSING_TENSOR');
    expect(e.message).toContain(name);
    expect(e.message).toContain('1 tensor');
    expect(e.message).toContain(dir);
  });

  it('many missing tensors: MISSING_TENSOR with the count and the first five', async () => {
    const m = scrambled(QWEN, 9);
    const dropped = m
      .parameters()
      .filter((p) => p.name.startsWith('model.layers.1.'))
      .map((p) => p.name);
    expect(dropped.length).toBeGreaterThan(5);
    const dir = await rawCheckpoint(
      m,
      f32Tensors(m).filter((t) => !dropped.includes(t.name)),
    );
    const e = await swerlError(() => Model.load(dir), 'MISSING_TENSOR');
    expect(e.message).toContain(`${dropped.length} tensor(s)`);
    for (const n of dropped.slice(0, 5)) expect(e.message).toContain(n);
  });

  it('an untied config over a tied checkpoint: MISSING_TENSOR lm_head.weight', async () => {
    const { dir } = await saved({ ...QWEN, tie_word_embeddings: true });
    await editConfig(dir, (c) => {
      c.tie_word_embeddings = false;
    });
    const e = await swerlError(() => Model.load(dir), 'MISSING_TENSOR');
    expect(e.message).toContain('lm_head.weight');
  });

  it('an extra unknown tensor: UNKNOWN_TENSOR naming it and the file', async () => {
    const m = scrambled(QWEN, 9);
    for (const extra of [
      { name: 'model.layers.2.input_layernorm.weight', shape: [16] }, // a layer the config lacks
      { name: 'model.embed_positions.weight', shape: [8, 16] },
    ]) {
      const n = extra.shape.reduce((a, d) => a * d, 1);
      const dir = await rawCheckpoint(m, [
        ...f32Tensors(m),
        { ...extra, dtype: 'F32', data: f32Bytes(new Float32Array(n)) },
      ]);
      const e = await swerlError(() => Model.load(dir), 'UNKNOWN_TENSOR');
      expect(e.message).toContain(extra.name);
      expect(e.message).toContain(join(dir, 'model.safetensors'));
    }
  });

  it('a Qwen2 checkpoint (q/k/v biases) under a Llama config: UNKNOWN_TENSOR', async () => {
    const { dir } = await saved(QWEN);
    await editConfig(dir, (c) => {
      c.architectures = ['LlamaForCausalLM'];
      c.model_type = 'llama';
    });
    const e = await swerlError(() => Model.load(dir), 'UNKNOWN_TENSOR');
    expect(e.message).toMatch(/self_attn\.[qkv]_proj\.bias/);
  });

  it('a shape mismatch: SHAPE_MISMATCH naming the tensor, the file and both shapes', async () => {
    const m = scrambled(QWEN, 9);
    const name = 'model.embed_tokens.weight';
    for (const shape of [
      [16, 50], // transposed: same size
      [800], // flattened
      [50, 16, 1],
    ]) {
      const dir = await rawCheckpoint(
        m,
        f32Tensors(m).map((t) => (t.name === name ? { ...t, shape } : t)),
      );
      const e = await swerlError(() => Model.load(dir), 'SHAPE_MISMATCH');
      expect(e.message).toContain(name);
      expect(e.message).toContain(join(dir, 'model.safetensors'));
      expect(e.message).toContain(`[${shape}]`);
      expect(e.message).toContain('[50,16]');
    }
  });

  it('a config whose sizes differ from the file: SHAPE_MISMATCH', async () => {
    const { dir } = await saved();
    await editConfig(dir, (c) => {
      c.intermediate_size = 32;
    });
    const e = await swerlError(() => Model.load(dir), 'SHAPE_MISMATCH');
    expect(e.message).toMatch(/mlp\.(gate|up|down)_proj\.weight/);
  });

  it('*.rotary_emb.inv_freq tensors are ignored', async () => {
    const m = scrambled(QWEN, 9);
    const invFreq = (l: number): RawTensor => ({
      name: `model.layers.${l}.self_attn.rotary_emb.inv_freq`,
      dtype: 'F32',
      shape: [2],
      data: f32Bytes(Float32Array.from([1, 0.01])),
    });
    const dir = await rawCheckpoint(m, [invFreq(0), ...f32Tensors(m), invFreq(1)]);
    const loaded = await Model.load(dir);
    expectSameParameters(loaded, m);
    expectBitwise(await loaded.forward(TOKENS), await m.forward(TOKENS), 'logits');
  });

  it('a tied config whose file also has lm_head.weight loads (the file lm_head is unused)', async () => {
    const m = scrambled({ ...QWEN, tie_word_embeddings: true }, 9);
    expect(m.parameters().some((p) => p.name === 'lm_head.weight')).toBe(false);
    const lmHead = Float32Array.from({ length: 50 * 16 }, (_, i) => Math.sin(i));
    const dir = await rawCheckpoint(m, [
      ...f32Tensors(m),
      { name: 'lm_head.weight', dtype: 'F32', shape: [50, 16], data: f32Bytes(lmHead) },
    ]);
    const loaded = await Model.load(dir);
    expectSameParameters(loaded, m);
    expectBitwise(await loaded.forward(TOKENS), await m.forward(TOKENS), 'logits');
  });

  it('{ device: "cuda" }: CUDA_UNAVAILABLE; another device: INVALID_ARGUMENT', async () => {
    const { dir } = await saved();
    await swerlError(() => Model.load(dir, { device: 'cuda' }), 'CUDA_UNAVAILABLE');
    const e = await swerlError(() => Model.load(dir, { device: 'tpu' as 'cpu' }), 'INVALID_ARGUMENT');
    expect(e.message).toContain('device');
    await swerlError(() => Model.load(42 as unknown as string), 'INVALID_ARGUMENT');
  });

  describe('sharded checkpoints', () => {
    /** dir with config.json and two shards of m split at the middle, and an index (weight_map as given). */
    async function sharded(m: Model, weightMap?: (w: Record<string, string>) => unknown): Promise<string> {
      const dir = await newDir();
      await writeConfig(dir, m.config);
      const params = m.parameters();
      const w: Record<string, string> = {};
      params.forEach((p, i) => {
        w[p.name] = i < params.length / 2 ? 's1.safetensors' : 's2.safetensors';
      });
      for (const file of ['s1.safetensors', 's2.safetensors']) {
        const ts = params
          .filter((p) => w[p.name] === file)
          .map((p) => ({ name: p.name, shape: p.shape, data: m.getParameter(p.name) }));
        await writeSafetensors(join(dir, file), ts, 'F32');
      }
      const index = { weight_map: weightMap ? weightMap(w) : w };
      await writeFile(join(dir, 'model.safetensors.index.json'), JSON.stringify(index));
      return dir;
    }

    it('the valid two-shard case loads', async () => {
      const m = scrambled(QWEN, 10);
      expectSameParameters(await Model.load(await sharded(m)), m);
    });

    it('a NaN in the second shard: CORRUPT_FILE naming that shard and the tensor', async () => {
      const m = scrambled(QWEN, 10);
      const last = m.parameters().at(-1)?.name as string;
      const v = m.getParameter(last);
      v[1] = Number.NaN;
      m.setParameter(last, v);
      const dir = await sharded(m);
      const e = await swerlError(() => Model.load(dir), 'CORRUPT_FILE');
      expect(e.message).toContain(
        `${join(dir, 's2.safetensors')}: tensor ${last} holds a non-finite value (NaN or ±Inf) at flat index 1;`,
      );
    });

    it('a tensor in two shards: CORRUPT_FILE naming it', async () => {
      const m = scrambled(QWEN, 10);
      const dir = await sharded(m);
      const dup = 'model.norm.weight';
      const p = m.parameters();
      const inS1 = p.slice(0, Math.ceil(p.length / 2)).map((x) => ({
        name: x.name,
        shape: x.shape,
        data: m.getParameter(x.name),
      }));
      expect(inS1.some((t) => t.name === dup)).toBe(false);
      inS1.push({ name: dup, shape: [16], data: m.getParameter(dup) });
      await writeSafetensors(join(dir, 's1.safetensors'), inS1, 'F32');
      const e = await swerlError(() => Model.load(dir), 'CORRUPT_FILE');
      expect(e.message).toContain(dup);
    });

    it('a shard the index names but the directory lacks: IO_ERROR naming it', async () => {
      const dir = await sharded(scrambled(QWEN, 10));
      await rm(join(dir, 's2.safetensors'));
      const e = await swerlError(() => Model.load(dir), 'IO_ERROR');
      expect(e.message).toContain(join(dir, 's2.safetensors'));
    });

    it('an index without weight_map, or not JSON: CORRUPT_FILE naming it', async () => {
      const dir = await sharded(scrambled(QWEN, 10), () => undefined);
      const e = await swerlError(() => Model.load(dir), 'CORRUPT_FILE');
      expect(e.message).toContain(join(dir, 'model.safetensors.index.json'));
      await writeFile(join(dir, 'model.safetensors.index.json'), '{"weight_map": ');
      const e2 = await swerlError(() => Model.load(dir), 'CORRUPT_FILE');
      expect(e2.message).toContain(join(dir, 'model.safetensors.index.json'));
    });

    // A shard name that is a directory ('.', '..', or a subdirectory) must give IO_ERROR, not a
    // plain Node EISDIR error (a bug this test found).
    it('a shard name that is a directory: IO_ERROR', async () => {
      for (const bad of ['.', '..', 'subdir.safetensors']) {
        const dir = await sharded(scrambled(QWEN, 10), (w) => ({ ...w, 'model.norm.weight': bad }));
        await mkdir(join(dir, 'subdir.safetensors'));
        await swerlError(() => Model.load(dir), 'IO_ERROR');
      }
    });

    it('a weight_map naming files outside the directory: CORRUPT_FILE', async () => {
      for (const bad of ['../s1.safetensors', 'sub/s1.safetensors', 'sub\\s1.safetensors']) {
        const dir = await sharded(scrambled(QWEN, 10), (w) => ({ ...w, 'model.norm.weight': bad }));
        await mkdir(join(dir, 'sub'));
        const e = await swerlError(() => Model.load(dir), 'CORRUPT_FILE');
        expect(e.message).toContain('weight_map');
      }
    });
  });
});

// ---- parameter and forward argument errors -------------------------------------------------------

describe('argument errors', () => {
  it('setParameter with a wrong length, a wrong type or an unknown name: INVALID_ARGUMENT, nothing changes', () => {
    const m = scrambled(QWEN, 13);
    const before = snapshot(m);
    const name = 'model.layers.0.self_attn.q_proj.weight';
    const size = 16 * 16;
    const bad: [string, unknown][] = [
      [name, new Float32Array(size - 1)],
      [name, new Float32Array(size + 1)],
      [name, new Float64Array(size)],
      [name, Array.from({ length: size }, () => 0)],
      ['model.layers.7.self_attn.q_proj.weight', new Float32Array(size)],
      ['lm_head', new Float32Array(50 * 16)],
    ];
    for (const [n, v] of bad) {
      const e = expectSwerlError(() => m.setParameter(n, v as Float32Array), 'INVALID_ARGUMENT');
      expect(e.message).toMatch(n === name ? /values/ : /name/);
      if (n !== name) expect(e.message).toContain(n);
    }
    for (const [n, v] of before) expectBitwise(m.getParameter(n), v, n);
    // A valid call does change the parameter (so the check above can fail).
    m.setParameter(name, new Float32Array(size).fill(0.5));
    expect(Array.from(m.getParameter(name)).every((x) => x === 0.5)).toBe(true);
    expectSwerlError(() => m.getParameter('nope'), 'INVALID_ARGUMENT');
  });

  it('getParameter returns a copy', () => {
    const m = scrambled(QWEN, 13);
    const a = m.getParameter('model.norm.weight');
    const b = Float32Array.from(a);
    a.fill(7);
    expectBitwise(m.getParameter('model.norm.weight'), b, 'model.norm.weight');
  });

  it('forward with a token id >= vocab_size or < 0: INVALID_ARGUMENT', async () => {
    const m = scrambled(QWEN, 14);
    const ok = await m.forward([0, 49]);
    expect(ok.length).toBe(2 * 50);
    // Out of the vocabulary: the message gives the valid range.
    for (const tokens of [[50], [1, 2, 50], Int32Array.from([3, 50]), Int32Array.from([-1]), [1e9]]) {
      const e = await swerlError(() => m.forward(tokens), 'INVALID_ARGUMENT');
      expect(e.message).toContain('tokens');
      expect(e.message).toContain('[0, 50)');
    }
    for (const tokens of [[-1], [1.5], ['3']]) {
      const e = await swerlError(() => m.forward(tokens as number[]), 'INVALID_ARGUMENT');
      expect(e.message).toContain('tokens');
    }
  });

  it('Model.random with a missing or bad hidden_size, or a bad seed: INVALID_ARGUMENT', () => {
    const { hidden_size: _, ...noHidden } = QWEN;
    const e = expectSwerlError(() => Model.random(noHidden, 1), 'INVALID_ARGUMENT');
    expect(e.message).toContain('hidden_size');
    for (const h of [0, 15.5, '16', -16]) {
      const e2 = expectSwerlError(() => Model.random({ ...QWEN, hidden_size: h }, 1), 'INVALID_ARGUMENT');
      expect(e2.message).toContain('hidden_size');
    }
    for (const seed of [-1, 1.5, Number.NaN]) {
      const e3 = expectSwerlError(() => Model.random(QWEN, seed), 'INVALID_ARGUMENT');
      expect(e3.message).toContain('seed');
    }
    // The same (config, seed) gives the same weights; another seed others.
    expectSameParameters(Model.random(QWEN, 5), Model.random(QWEN, 5));
    expect(bits(Model.random(QWEN, 5).getParameter('model.embed_tokens.weight'))).not.toEqual(
      bits(Model.random(QWEN, 6).getParameter('model.embed_tokens.weight')),
    );
  });
});

/**
 * The safetensors format (https://github.com/huggingface/safetensors): an 8-byte little-endian
 * header length N, N bytes of JSON ({ name: { dtype, shape, data_offsets: [begin, end] }, with an
 * optional "__metadata__" of strings }), then the data; offsets are relative to the data start.
 * Reading parses and checks the header here; the tensor bytes are copied natively through mmap.
 */
import { open, rename, stat } from 'node:fs/promises';
import { SwerlError } from '../errors.js';

/** The dtypes swerl reads and writes. */
export type SafetensorsDtype = 'F32' | 'F16' | 'BF16';

const DTYPE_BYTES: Record<string, number> = { F32: 4, F16: 2, BF16: 2 };

/** One tensor of a parsed header; `begin` is an absolute file offset. */
export interface SafetensorsEntry {
  dtype: SafetensorsDtype;
  shape: number[];
  begin: number;
  bytes: number;
}

/** A checked header: tensors by name, and the file's metadata. */
export interface SafetensorsHeader {
  path: string;
  tensors: Map<string, SafetensorsEntry>;
  metadata: Record<string, string>;
}

function corrupt(path: string, why: string): SwerlError {
  return new SwerlError(`${path} is not a valid safetensors file: ${why}`, 'CORRUPT_FILE');
}

/** Reads and checks a file's header. Throws IO_ERROR, CORRUPT_FILE or UNSUPPORTED_MODEL. */
export async function readSafetensorsHeader(path: string): Promise<SafetensorsHeader> {
  let fh: Awaited<ReturnType<typeof open>>;
  try {
    fh = await open(path, 'r');
  } catch (e) {
    throw new SwerlError(`cannot open ${path}: ${(e as Error).message}`, 'IO_ERROR');
  }
  try {
    const size = (await fh.stat()).size;
    if (size < 8) throw corrupt(path, `only ${size} bytes`);
    const lenBuf = Buffer.alloc(8);
    await fh.read(lenBuf, 0, 8, 0);
    const n = Number(lenBuf.readBigUInt64LE(0));
    if (n < 2 || n > 100 * 2 ** 20 || 8 + n > size)
      throw corrupt(path, `header length ${n} for a file of ${size} bytes`);
    const headerBuf = Buffer.alloc(n);
    await fh.read(headerBuf, 0, n, 8);
    let json: unknown;
    try {
      json = JSON.parse(headerBuf.toString('utf8'));
    } catch (e) {
      throw corrupt(path, `header is not JSON (${(e as Error).message})`);
    }
    if (typeof json !== 'object' || json === null || Array.isArray(json))
      throw corrupt(path, 'header is not an object');
    const dataStart = 8 + n;
    const tensors = new Map<string, SafetensorsEntry>();
    let metadata: Record<string, string> = {};
    for (const [name, v] of Object.entries(json as Record<string, unknown>)) {
      if (name === '__metadata__') {
        metadata = (v ?? {}) as Record<string, string>;
        continue;
      }
      const e = v as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
      if (typeof e !== 'object' || e === null) throw corrupt(path, `entry ${name} is not an object`);
      if (typeof e.dtype !== 'string') throw corrupt(path, `entry ${name} has no dtype`);
      const width = DTYPE_BYTES[e.dtype];
      if (width === undefined) {
        throw new SwerlError(
          `${path}: tensor ${name} has dtype ${e.dtype}; swerl reads F32, F16 and BF16`,
          'UNSUPPORTED_MODEL',
        );
      }
      if (!Array.isArray(e.shape) || !e.shape.every((d) => Number.isInteger(d) && d >= 0))
        throw corrupt(path, `entry ${name} has a bad shape`);
      const offs = e.data_offsets;
      if (!Array.isArray(offs) || offs.length !== 2 || !offs.every((d) => Number.isInteger(d) && d >= 0))
        throw corrupt(path, `entry ${name} has bad data_offsets`);
      const [b, end] = offs as [number, number];
      const numel = (e.shape as number[]).reduce((a, d) => a * d, 1);
      if (end - b !== numel * width)
        throw corrupt(path, `entry ${name}: data_offsets span ${end - b} bytes, its shape needs ${numel * width}`);
      if (dataStart + end > size)
        throw corrupt(path, `tensor ${name} ends at byte ${dataStart + end} of ${size}: the file is truncated`);
      tensors.set(name, {
        dtype: e.dtype as SafetensorsDtype,
        shape: e.shape as number[],
        begin: dataStart + b,
        bytes: end - b,
      });
    }
    // As the reference implementation requires: the tensors tile the data, without overlaps or holes.
    const spans = [...tensors.entries()].sort((a, b) => a[1].begin - b[1].begin);
    let at = dataStart;
    for (const [name, t] of spans) {
      if (t.begin !== at)
        throw corrupt(path, `tensor ${name} starts at byte ${t.begin}, expected ${at} (overlap or hole)`);
      at += t.bytes;
    }
    if (at !== size) throw corrupt(path, `the tensors end at byte ${at} but the file has ${size}`);
    return { path, tensors, metadata };
  } catch (e) {
    if (e instanceof SwerlError) throw e;
    throw new SwerlError(`cannot read ${path}: ${(e as Error).message}`, 'IO_ERROR');
  } finally {
    await fh.close();
  }
}

/** A tensor to write: f32 values, stored as `dtype`. */
export interface TensorToWrite {
  name: string;
  shape: number[];
  data: Float32Array;
}

function toBytes(data: Float32Array, dtype: SafetensorsDtype): Uint8Array {
  if (dtype === 'F32') return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const out = new Uint16Array(data.length);
  const u32 = new Uint32Array(data.buffer, data.byteOffset, data.length);
  if (dtype === 'BF16') {
    for (let i = 0; i < data.length; i++) {
      const u = u32[i] as number;
      // Round to nearest even; NaN stays NaN.
      out[i] = (u & 0x7fffffff) > 0x7f800000 ? (u >>> 16) | 0x40 : (u + 0x7fff + ((u >>> 16) & 1)) >>> 16;
    }
  } else {
    throw new SwerlError('writing F16 is not supported; use F32 or BF16', 'INVALID_ARGUMENT');
  }
  return new Uint8Array(out.buffer);
}

/**
 * Writes tensors (in the given order) as one safetensors file, through a temporary file renamed
 * into place, so a crash never leaves a half-written file under `path`.
 */
export async function writeSafetensors(
  path: string,
  tensors: TensorToWrite[],
  dtype: SafetensorsDtype,
  metadata: Record<string, string> = { format: 'pt' },
): Promise<void> {
  const width = DTYPE_BYTES[dtype] as number;
  const header: Record<string, unknown> = { __metadata__: metadata };
  let offset = 0;
  for (const t of tensors) {
    const bytes = t.data.length * width;
    header[t.name] = { dtype, shape: t.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - ((8 + Buffer.byteLength(json)) % 8)) % 8); // data starts 8-byte aligned
  const headerBytes = Buffer.from(json, 'utf8');
  const tmp = `${path}.tmp-${process.pid}`;
  try {
    const fh = await open(tmp, 'w');
    try {
      const len = Buffer.alloc(8);
      len.writeBigUInt64LE(BigInt(headerBytes.length));
      await fh.write(len);
      await fh.write(headerBytes);
      for (const t of tensors) await fh.write(toBytes(t.data, dtype));
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
  } catch (e) {
    if (e instanceof SwerlError) throw e;
    throw new SwerlError(`cannot write ${path}: ${(e as Error).message}`, 'IO_ERROR');
  }
}

/** Whether a file exists. */
export async function fileExists(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

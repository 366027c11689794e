/**
 * DeviceTensor: an array in GPU memory, for the CUDA kernels (`sample`, the losses, AdamW). Data
 * moves only by the explicit copies here: `DeviceTensor.from(array)` in, `toArray()` out. Without
 * a CUDA build or a GPU every constructor throws SwerlError('CUDA_UNAVAILABLE'); the simulation
 * addon (`swerl_cudasim.node`, see docs/cuda.md) runs the same kernels on the CPU for tests.
 */
import { invalidArgument } from './errors.js';
import { type NativeDeviceBuffer, native } from './native.js';

/** The element types a DeviceTensor holds. */
export type DeviceDtype = 'f32' | 'i32';

type HostArray = Float32Array | Int32Array;

/** A dense f32 or i32 array in device memory, with a shape. */
export class DeviceTensor {
  /** The native buffer; for the kernels' wrappers. @internal */
  readonly buffer: NativeDeviceBuffer;
  readonly shape: readonly number[];
  readonly dtype: DeviceDtype;

  private constructor(buffer: NativeDeviceBuffer, shape: readonly number[], dtype: DeviceDtype) {
    this.buffer = buffer;
    this.shape = shape;
    this.dtype = dtype;
  }

  /** Elements in the tensor: the product of its shape. */
  get size(): number {
    return this.shape.reduce((a, b) => a * b, 1);
  }

  /** A zero-filled tensor of `shape` on the device. */
  static zeros(shape: readonly number[], dtype: DeviceDtype = 'f32'): DeviceTensor {
    const dims = checkShape(shape);
    const n = dims.reduce((a, b) => a * b, 1);
    return new DeviceTensor(new (native().NativeDeviceBuffer)(Math.max(1, n) * 4), dims, dtype);
  }

  /** Copies `data` to the device; `shape` defaults to [data.length] and must hold data.length elements. */
  static from(data: HostArray, shape: readonly number[] = [data.length]): DeviceTensor {
    const dtype = dtypeOf(data);
    const dims = checkShape(shape);
    const n = dims.reduce((a, b) => a * b, 1);
    if (n !== data.length) throw invalidArgument('shape', `${data.length} elements`, `[${dims.join(', ')}]`);
    const t = DeviceTensor.zeros(dims, dtype);
    if (n > 0) t.buffer.upload(data, 0);
    return t;
  }

  /** Copies the tensor to a new host array. */
  toArray(): Float32Array | Int32Array {
    const out = this.dtype === 'f32' ? new Float32Array(this.size) : new Int32Array(this.size);
    if (out.length > 0) this.buffer.download(out, 0);
    return out;
  }

  /** Overwrites the tensor's elements from `data` (same length and dtype). */
  copyFrom(data: HostArray): void {
    if (dtypeOf(data) !== this.dtype) throw invalidArgument('data', `a ${this.dtype} array`, data.constructor.name);
    if (data.length !== this.size) throw invalidArgument('data', `${this.size} elements`, data.length);
    if (data.length > 0) this.buffer.upload(data, 0);
  }

  /** Frees the device memory now; using the tensor afterwards throws SwerlError('DISPOSED'). */
  dispose(): void {
    this.buffer.dispose();
  }
}

function dtypeOf(data: unknown): DeviceDtype {
  if (data instanceof Float32Array) return 'f32';
  if (data instanceof Int32Array) return 'i32';
  throw invalidArgument('data', 'a Float32Array or an Int32Array', Object.prototype.toString.call(data));
}

function checkShape(shape: readonly number[]): number[] {
  if (!Array.isArray(shape) || shape.some((d) => !Number.isSafeInteger(d) || d < 0))
    throw invalidArgument('shape', 'an array of integers >= 0', JSON.stringify(shape));
  return [...shape];
}

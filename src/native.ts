/**
 * The only file that loads the native addon. It declares the binding's shape
 * ({@link NativeBinding}), finds the compiled addon, loads it once and connects its errors to
 * {@link SwerlError}.
 *
 * Search order (first that exists and loads wins):
 * 1. `SWERL_NATIVE_PATH`, an explicit path to a `swerl.node` (for custom builds);
 * 2. `build/cmake/Release/swerl.node` (cmake-js: CPU, plus CUDA when it was built with nvcc);
 * 3. `build/Release/swerl.node` (node-gyp: the CPU-only fallback).
 * If none loads, one SwerlError('NATIVE_LOAD_FAILED') lists what was tried and what to do.
 * @internal
 */
import { accessSync, constants, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ErrorCodes, SwerlError } from './errors.js';

/** nativeInfo() as the addon returns it. */
export interface NativeInfoRaw {
  version: string;
  cuda: boolean;
  cudaDevices: number;
  cudaSimulated: boolean;
  cudaRuntimeVersion: number;
  simd: string;
  threads: number;
  /** The widest FMA the CPU has (the machine-limit probe uses it even where kernels do not). */
  peakFmaIsa: string;
  errorCodes: string[];
}

/** Options of the native KV cache constructor; all fields present and validated. */
export interface NativeKvOptions {
  numBlocks: number;
  blockSize: number;
  numLayers: number;
  numKvHeads: number;
  headDim: number;
  dtype: 'f32' | 'f16' | 'bf16';
  device: 'cpu' | 'cuda';
  prefixCaching: boolean;
}

/** The native paged KV cache (native/napi/kv_binding.cc). Small results go through `out`. */
export interface NativePagedKvCache {
  createSequence(): number;
  /** Returns cachedTokens; out[0] = newBlocks. */
  append(seq: number, tokens: Int32Array): number;
  /** Returns the total cachedTokens; out[0] = newBlocks; perSequence[i] = cached tokens of seqs[i] if given. */
  appendBatch(seqs: Float64Array, tokens: Int32Array, counts: Int32Array, perSequence?: Int32Array): number;
  commitBatch(seqs: Float64Array): void;
  commit(seq: number): void;
  fork(seq: number): number;
  free(seq: number): void;
  length(seq: number): number;
  committedLength(seq: number): number;
  blockTable(seq: number): Int32Array;
  setWeightVersion(version: number): void;
  /** Writes numBlocks, freeBlocks, cachedBlocks, activeBlocks, queriedTokens, cachedTokens, evictions to out[0..6]. */
  stats(): void;
  slotMapping(seq: number, start: number, count: number): Int32Array;
  writeKv(seq: number, layer: number, start: number, k: Float32Array, v: Float32Array): void;
  readKv(seq: number, layer: number, start: number, count: number): [Float32Array, Float32Array];
  dispose(): void;
}

/** Normalised policy-loss options, every field present. */
export interface NativePolicyLossConfig {
  clipLow: number;
  clipHigh: number;
  dualClip: number;
  agg: string;
  normLength: number;
  klCoef: number;
  entropyCoef: number;
  tisCap: number;
  /** The logit scale 1 / temperature, as the sampler's f32 1.0f / T (1: unscaled, bitwise as before). */
  invTemperature: number;
}

/** The policy loss's statistics, in every policy-loss result. */
export interface NativePolicyStats {
  loss: number;
  logprobs: Float32Array;
  entropy: number;
  clipFracLow: number;
  clipFracHigh: number;
}

/** The native decoder (native/napi/model_binding.cc). */
export interface NativeModel {
  paramTable(): { name: string; shape: number[]; offset: number; size: number }[];
  initRandom(seed: number, std: number): void;
  getParams(offset: number, count: number): Float32Array;
  setParams(offset: number, values: Float32Array): void;
  /** plan: [arenaOffset, fileOffset, count, dtype (0 f32, 1 f16, 2 bf16)] quadruples. */
  loadSafetensors(path: string, plan: Float64Array): Promise<void>;
  forward(tokens: Int32Array): Promise<Float32Array>;
  zeroGrad(): void;
  getGrads(offset: number, count: number): Float32Array;
  lossAndBackward(
    tokens: Int32Array,
    targets: Int32Array,
    mask: Float32Array,
    policy: {
      oldLogprobs: Float32Array;
      advantages: Float32Array;
      seqIds?: Int32Array;
      refLogprobs?: Float32Array;
      rolloutLogprobs?: Float32Array;
      config: NativePolicyLossConfig;
    } | null,
    options: { recompute: boolean; lossScale: number; chunkTokens: number; gradSlot: number; ownThread: boolean },
  ): Promise<{ loss: number; logprobs: Float32Array; entropy: number; clipFracLow: number; clipFracHigh: number }>;
  optimizerStep(cfg: {
    lr: number;
    beta1: number;
    beta2: number;
    eps: number;
    weightDecay: number;
    maxGradNorm: number;
    decayAll: boolean;
  }): Promise<{ gradNorm: number; step: number }>;
  optimizerState(): { step: number; m: Float32Array | null; v: Float32Array | null };
  optimizerSteps(): number;
  setOptimizerState(step: number, m: Float32Array, v: Float32Array): void;
  resetOptimizer(): void;
  forwardPaged(
    kvCache: NativePagedKvCache,
    tokens: Int32Array,
    slots: Int32Array,
    seqs: Float64Array,
    blockTables: Int32Array[],
    logitRows: Int32Array,
    async?: false,
  ): Float32Array;
  forwardPaged(
    kvCache: NativePagedKvCache,
    tokens: Int32Array,
    slots: Int32Array,
    seqs: Float64Array,
    blockTables: Int32Array[],
    logitRows: Int32Array,
    async: true,
  ): Promise<Float32Array>;
  weightVersion(): number;
}

/** Device memory (native/napi/device_binding.cc), wrapped by DeviceTensor. */
export interface NativeDeviceBuffer {
  /** Copies the typed array's bytes to the buffer at byteOffset. */
  upload(data: ArrayBufferView, byteOffset?: number): void;
  /** Fills the typed array from the buffer's bytes at byteOffset. */
  download(data: ArrayBufferView, byteOffset?: number): void;
  bytes(): number;
  dispose(): void;
}

/** Everything the addon exports (native/napi/addon.cc). */
export interface NativeBinding {
  init(errorClass: typeof SwerlError): void;
  nativeInfo(): NativeInfoRaw;
  NativePagedKvCache: new (options: NativeKvOptions, out: Float64Array) => NativePagedKvCache;
  NativeModel: new (config: import('./model/config.js').NativeModelConfig) => NativeModel;
  NativeDeviceBuffer: new (bytes: number) => NativeDeviceBuffer;
  /** sample() on device logits [rows, vocab]; results on the host. */
  sampleDevice(
    logits: NativeDeviceBuffer,
    rows: number,
    vocab: number,
    params: import('./sample.js').NativeSamplingParams[],
    positions: Int32Array | null,
    topLogprobs?: number,
  ): [Int32Array, Float32Array, Float32Array] | [Int32Array, Float32Array, Float32Array, Int32Array, Float32Array];
  /** policyLoss() on device logits [T, vocab]; writes the gradient into gradLogits (may be logits). */
  policyLossDevice(
    logits: NativeDeviceBuffer,
    vocab: number,
    targets: Int32Array,
    oldLogprobs: Float32Array,
    advantages: Float32Array,
    mask: Float32Array,
    seqIds: Int32Array | null,
    refLogprobs: Float32Array | null,
    rolloutLogprobs: Float32Array | null,
    config: NativePolicyLossConfig,
    gradLogits: NativeDeviceBuffer,
  ): NativePolicyStats;
  /** sftLoss() on device logits [T, vocab]; writes the gradient into gradLogits (may be logits). */
  sftLossDevice(
    logits: NativeDeviceBuffer,
    vocab: number,
    targets: Int32Array,
    mask: Float32Array,
    gradLogits: NativeDeviceBuffer,
    invTemperature?: number,
  ): { loss: number; logprobs: Float32Array };
  /** One AdamW step on device w, g, m, v of n floats. */
  adamwDevice(
    w: NativeDeviceBuffer,
    g: NativeDeviceBuffer,
    m: NativeDeviceBuffer,
    v: NativeDeviceBuffer,
    n: number,
    cfg: { lr: number; beta1: number; beta2: number; eps: number; weightDecay: number },
    step: number,
    decay: boolean,
  ): void;
  /** The L2 norm of device g[0, n), in a fixed reduction order. */
  globalNormDevice(g: NativeDeviceBuffer, n: number): number;
  /** c[M, N] = op(bf16(a)) · op(bf16(b)) + beta · c on the device (cuBLAS; the CPU GEMM in the simulation). */
  gemmBf16Device(
    a: NativeDeviceBuffer,
    b: NativeDeviceBuffer,
    M: number,
    N: number,
    K: number,
    transA: boolean,
    transB: boolean,
    c: NativeDeviceBuffer,
    beta: number,
  ): void;
  /** g[0, n) *= s on the device. */
  scaleDevice(g: NativeDeviceBuffer, n: number, s: number): void;
  /** a[0, n) = 0 on the device. */
  zeroDevice(a: NativeDeviceBuffer, n: number): void;
  /** into[0, n) += from[0, n), then from[0, n) = 0, on the device. */
  accumulateDevice(into: NativeDeviceBuffer, from: NativeDeviceBuffer, n: number): void;
  /**
   * policyLossFused() on the device: hidden [T, hiddenSize] and weight [vocab, hiddenSize] f32 device
   * buffers; writes gradHidden [T, hiddenSize], adds to gradWeight [vocab, hiddenSize] (both device).
   */
  policyLossFusedDevice(
    hidden: NativeDeviceBuffer,
    weight: NativeDeviceBuffer,
    hiddenSize: number,
    vocab: number,
    targets: Int32Array,
    oldLogprobs: Float32Array,
    advantages: Float32Array,
    mask: Float32Array,
    seqIds: Int32Array | null,
    refLogprobs: Float32Array | null,
    rolloutLogprobs: Float32Array | null,
    config: NativePolicyLossConfig,
    chunkTokens: number,
    gradHidden: NativeDeviceBuffer,
    gradWeight: NativeDeviceBuffer,
  ): NativePolicyStats;
  /** sftLossFused() on the device (see policyLossFusedDevice). */
  sftLossFusedDevice(
    hidden: NativeDeviceBuffer,
    weight: NativeDeviceBuffer,
    hiddenSize: number,
    vocab: number,
    targets: Int32Array,
    mask: Float32Array,
    chunkTokens: number,
    gradHidden: NativeDeviceBuffer,
    gradWeight: NativeDeviceBuffer,
    invTemperature?: number,
  ): { loss: number; logprobs: Float32Array };
  measureStreamCopy(bytes: number, reps: number, threads: number): Promise<number>;
  measurePeakFma(seconds: number, threads: number): Promise<number>;
  /** GB/s (read + write) of device-to-device copies on the CUDA device; CUDA_UNAVAILABLE without one. */
  measureDeviceCopy(bytes: number, reps: number): number;
  policyLoss(
    logits: Float32Array,
    vocab: number,
    targets: Int32Array,
    oldLogprobs: Float32Array,
    advantages: Float32Array,
    mask: Float32Array,
    seqIds: Int32Array | null,
    refLogprobs: Float32Array | null,
    rolloutLogprobs: Float32Array | null,
    config: NativePolicyLossConfig,
    gradLogits?: Float32Array,
  ): NativePolicyStats & { gradLogits: Float32Array };
  policyLossFused(
    hidden: Float32Array,
    weight: Float32Array,
    hiddenSize: number,
    vocab: number,
    targets: Int32Array,
    oldLogprobs: Float32Array,
    advantages: Float32Array,
    mask: Float32Array,
    seqIds: Int32Array | null,
    refLogprobs: Float32Array | null,
    rolloutLogprobs: Float32Array | null,
    config: NativePolicyLossConfig,
    chunkTokens: number,
    gradHidden?: Float32Array,
    gradWeight?: Float32Array,
  ): NativePolicyStats & { gradHidden: Float32Array; gradWeight: Float32Array };
  sftLossFused(
    hidden: Float32Array,
    weight: Float32Array,
    hiddenSize: number,
    vocab: number,
    targets: Int32Array,
    mask: Float32Array,
    chunkTokens: number,
    gradHidden?: Float32Array,
    gradWeight?: Float32Array,
    invTemperature?: number,
  ): { loss: number; gradHidden: Float32Array; gradWeight: Float32Array; logprobs: Float32Array };
  /** C [M, N] = a [M, K] · b ([K, N], or [N, K] when bTransposed). */
  gemm(
    a: Float32Array,
    b: Float32Array,
    M: number,
    N: number,
    K: number,
    bTransposed: boolean,
    out?: Float32Array,
  ): Float32Array;
  /** out [n] = q · keys[i] as the attention kernels score (tiled, or one dot per row); for tests. */
  attentionScores(q: Float32Array, keys: Float32Array, perRow: boolean): Float32Array;
  /**
   * Causal attention of one dense sequence and its backward, as a decoder layer runs them:
   * qkv [T, (heads + 2·kvHeads)·headDim] (q, then k, then v per row), dO [T, heads·headDim];
   * scale 1/√headDim. For tests.
   */
  attentionGradients(
    qkv: Float32Array,
    dO: Float32Array,
    heads: number,
    kvHeads: number,
    headDim: number,
  ): { o: Float32Array; lse: Float32Array; dqkv: Float32Array };
  /** w [N, K] packed as the B of x·wᵀ (an opaque native handle). */
  packMatrix(w: Float32Array, N: number, K: number): unknown;
  /** out [M, N] = a [M, K] · packed. */
  gemmPacked(a: Float32Array, packed: unknown, M: number, out: Float32Array): Float32Array;
  sample(
    logits: Float32Array,
    vocab: number,
    params: import('./sample.js').NativeSamplingParams[],
    positions: Int32Array | null,
    async?: false,
  ): [Int32Array, Float32Array, Float32Array];
  sample(
    logits: Float32Array,
    vocab: number,
    params: import('./sample.js').NativeSamplingParams[],
    positions: Int32Array | null,
    async: true,
  ): Promise<[Int32Array, Float32Array, Float32Array]>;
  sftLoss(
    logits: Float32Array,
    vocab: number,
    targets: Int32Array,
    mask: Float32Array,
    gradLogits?: Float32Array,
    invTemperature?: number,
  ): { loss: number; gradLogits: Float32Array; logprobs: Float32Array };
}

const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
let binding: NativeBinding | undefined;

/** Candidate addon paths in search order. */
export function addonCandidates(env: NodeJS.ProcessEnv = process.env): string[] {
  const list: string[] = [];
  if (env.SWERL_NATIVE_PATH) list.push(resolve(env.SWERL_NATIVE_PATH));
  list.push(join(packageRoot, 'build', 'cmake', 'Release', 'swerl.node'));
  list.push(join(packageRoot, 'build', 'Release', 'swerl.node'));
  return list;
}

let launcher: string | null | undefined;

/**
 * The sandbox launcher (native/sandbox/launch.cc), built beside the cmake addon, or null where it
 * was not built (the node-gyp fallback) or `SWERL_LAUNCHER=0`: LocalSandbox then starts commands
 * through `prlimit` and `setpriv`. Looked up beside `SWERL_NATIVE_PATH`'s addon first. Not the
 * addon: nothing is loaded.
 */
export function sandboxLauncherPath(env: NodeJS.ProcessEnv = process.env): string | null {
  if (env.SWERL_LAUNCHER === '0') return null;
  if (launcher !== undefined && env === process.env) return launcher;
  const dirs = [
    ...(env.SWERL_NATIVE_PATH ? [dirname(resolve(env.SWERL_NATIVE_PATH))] : []),
    join(packageRoot, 'build', 'cmake', 'Release'),
  ];
  let found: string | null = null;
  for (const dir of dirs) {
    try {
      accessSync(join(dir, 'swerl_launch'), constants.X_OK);
      found = join(dir, 'swerl_launch');
      break;
    } catch {
      // not built there
    }
  }
  if (env === process.env) launcher = found;
  return found;
}

/** Loads the addon on first use and returns it. Throws SwerlError('NATIVE_LOAD_FAILED'). */
export function native(): NativeBinding {
  if (binding) return binding;
  const require = createRequire(import.meta.url);
  const tried: string[] = [];
  for (const path of addonCandidates()) {
    if (!existsSync(path)) {
      tried.push(`${path}: not built`);
      continue;
    }
    try {
      const b = require(path) as NativeBinding;
      checkErrorCodes(b.nativeInfo().errorCodes, path);
      b.init(SwerlError);
      binding = b;
      return b;
    } catch (err) {
      if (err instanceof SwerlError) throw err;
      tried.push(`${path}: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  throw new SwerlError(
    `the swerl native addon could not be loaded. Tried:\n  ${tried.join('\n  ')}\n` +
      'Build it with `npm run build:native` (needs a C++17 compiler and CMake, or node-gyp with Python 3 and make; ' +
      'on Debian/Ubuntu: apt-get install -y build-essential cmake python3), or point SWERL_NATIVE_PATH at a swerl.node.',
    'NATIVE_LOAD_FAILED',
  );
}

function checkErrorCodes(codes: string[], path: string): void {
  const known = new Set<string>(ErrorCodes);
  const unknown = codes.filter((c) => !known.has(c));
  if (unknown.length > 0) {
    throw new SwerlError(
      `${path} raises error codes this version of swerl does not know (${unknown.join(', ')}): ` +
        'the addon and the JavaScript are from different versions. Rebuild with `npm run build:native`.',
      'NATIVE_LOAD_FAILED',
    );
  }
}

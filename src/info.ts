/** What the native addon was built with and what it found on this machine. */
import { native } from './native.js';

/** The result of {@link nativeInfo}. */
export interface NativeInfo {
  /** swerl version the addon was built from. */
  version: string;
  /** Whether the addon contains the CUDA kernels. */
  cuda: boolean;
  /** Usable CUDA devices; 0 without a GPU or driver, or in a CPU-only build. */
  cudaDevices: number;
  /**
   * Whether the CUDA kernels run in the CPU simulation of CUDA's execution model (the
   * `swerl_cudasim.node` test addon, whose one "device" is the CPU), not on a GPU.
   */
  cudaSimulated: boolean;
  /** The SIMD level the CPU kernels use: 'avx512', 'avx2-fma' or 'scalar' (SWERL_SIMD=scalar or avx2 caps it). */
  simd: string;
  /** Threads the CPU kernels use (SWERL_NUM_THREADS, else the core count). */
  threads: number;
}

/** Describes the loaded native addon. Loads it if needed (SwerlError 'NATIVE_LOAD_FAILED' if it cannot). */
export function nativeInfo(): NativeInfo {
  const raw = native().nativeInfo();
  return {
    version: raw.version,
    cuda: raw.cuda,
    cudaDevices: raw.cudaDevices,
    cudaSimulated: raw.cudaSimulated,
    simd: raw.simd,
    threads: raw.threads,
  };
}

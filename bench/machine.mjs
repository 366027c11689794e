/**
 * The machine suite: the limits every other figure is reported against (DESIGN.md section 8).
 * - machine.stream_gbps: STREAM-style copy bandwidth, bytes read + bytes written, all threads;
 * - machine.peak_fma_gflops: peak fp32 FMA rate (an FMA counts 2 FLOP), all threads;
 * and the same on one thread.
 */
import { nativeInfo } from '../dist/index.js';
import { native } from '../dist/native.js';
import { progress } from './lib.mjs';

/**
 * @typedef {object} MachineLimits
 * @property {number} threads native threads used for "all threads"
 * @property {number} streamGbps copy GB/s on all threads
 * @property {number} streamGbps1 copy GB/s on one thread
 * @property {number} peakGflops fp32 FMA GFLOP/s on all threads
 * @property {number} peakGflops1 fp32 FMA GFLOP/s on one thread
 */

/**
 * Measures the machine's limits, adds the machine.* records and returns the limits.
 * @param {{ quick: boolean, report: import('./lib.mjs').Report, meta: Record<string, unknown> }} ctx
 * @returns {Promise<MachineLimits>}
 */
export async function machineSuite(ctx) {
  const n = native();
  const threads = nativeInfo().threads;
  const bytes = (ctx.quick ? 32 : 256) * 1024 * 1024;
  const reps = 5;
  const fmaSeconds = ctx.quick ? 0.25 : 1.5;

  progress(`machine: stream copy, ${bytes >> 20} MiB x ${reps} reps, ${threads} threads`);
  const streamGbps = await n.measureStreamCopy(bytes, reps, threads);
  ctx.report.add({ name: 'machine.stream_gbps', value: streamGbps, unit: 'GB/s' });

  progress('machine: stream copy, 1 thread');
  const streamGbps1 = await n.measureStreamCopy(bytes, reps, 1);
  ctx.report.add({ name: 'machine.stream_gbps.1thread', value: streamGbps1, unit: 'GB/s' });

  progress(`machine: peak fp32 FMA, ${fmaSeconds} s, ${threads} threads`);
  const peakGflops = await n.measurePeakFma(fmaSeconds, threads);
  ctx.report.add({ name: 'machine.peak_fma_gflops', value: peakGflops, unit: 'GFLOP/s' });

  progress('machine: peak fp32 FMA, 1 thread');
  const peakGflops1 = await n.measurePeakFma(fmaSeconds, 1);
  ctx.report.add({ name: 'machine.peak_fma_gflops.1thread', value: peakGflops1, unit: 'GFLOP/s' });

  ctx.meta.machine = {
    threads,
    streamBytes: bytes,
    streamReps: reps,
    fmaSeconds,
    peakFmaIsa: n.nativeInfo().peakFmaIsa,
  };
  return { threads, streamGbps, streamGbps1, peakGflops, peakGflops1 };
}

/**
 * Shared helpers of the benchmark harness (DESIGN.md section 8): result records, the table printed
 * as the run goes, JSON output, a tinybench wrapper and a seeded PRNG.
 *
 * A record is `{ name, value, unit, baseline?: { name, value }, ratio?, roofline?: { value, unit, fraction } }`
 * with ratio = value / baseline.value (omitted when the baseline is 0) and
 * roofline.fraction = value / roofline.value.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Bench } from 'tinybench';

/**
 * @typedef {object} BenchRecord
 * @property {string} name
 * @property {number} value
 * @property {string} unit
 * @property {{ name: string, value: number }} [baseline]
 * @property {number} [ratio]
 * @property {{ value: number, unit: string, fraction: number }} [roofline]
 */

/**
 * @typedef {object} RecordSpec
 * @property {string} name
 * @property {number} value
 * @property {string} unit
 * @property {{ name: string, value: number }} [baseline]
 * @property {{ value: number, unit: string }} [roofline]
 */

/**
 * Builds a record from a spec, computing ratio and roofline.fraction.
 * @param {RecordSpec} spec
 * @returns {BenchRecord}
 */
export function makeRecord(spec) {
  /** @type {BenchRecord} */
  const rec = { name: spec.name, value: spec.value, unit: spec.unit };
  if (spec.baseline) {
    rec.baseline = { name: spec.baseline.name, value: spec.baseline.value };
    if (spec.baseline.value !== 0) rec.ratio = spec.value / spec.baseline.value;
  }
  if (spec.roofline) {
    rec.roofline = {
      value: spec.roofline.value,
      unit: spec.roofline.unit,
      fraction: spec.roofline.value !== 0 ? spec.value / spec.roofline.value : 0,
    };
  }
  return rec;
}

/**
 * Formats a number compactly: 4 significant digits, with k/M/G suffixes for large values.
 * @param {number | undefined} v
 * @returns {string}
 */
export function fmt(v) {
  if (v === undefined) return '';
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a >= 1e9) return `${(v / 1e9).toPrecision(4)}G`;
  if (a >= 1e6) return `${(v / 1e6).toPrecision(4)}M`;
  if (a >= 1e4) return `${(v / 1e3).toPrecision(4)}k`;
  if (a === 0) return '0';
  return v.toPrecision(4);
}

/** Column layout of the printed table. */
const COLUMNS = [
  { title: 'name', width: 34 },
  { title: 'value', width: 10, right: true },
  { title: 'unit', width: 9 },
  { title: 'baseline', width: 10, right: true },
  { title: 'ratio', width: 8, right: true },
  { title: 'limit', width: 16, right: true },
  { title: 'of limit', width: 9, right: true },
];

/**
 * @param {string[]} cells
 * @returns {string}
 */
function row(cells) {
  return COLUMNS.map((c, i) => {
    const s = cells[i] ?? '';
    return c.right ? s.padStart(c.width) : s.padEnd(c.width);
  })
    .join('  ')
    .trimEnd();
}

/** Collects records and prints each as a table row the moment it is added. */
export class Report {
  /** @type {BenchRecord[]} */
  records = [];
  #headerPrinted = false;

  /**
   * Adds a record (and prints it).
   * @param {RecordSpec} spec
   * @returns {BenchRecord}
   */
  add(spec) {
    const rec = makeRecord(spec);
    this.records.push(rec);
    this.#print(rec);
    return rec;
  }

  /**
   * The record of that name, if any.
   * @param {string} name
   * @returns {BenchRecord | undefined}
   */
  get(name) {
    return this.records.find((r) => r.name === name);
  }

  /** @param {BenchRecord} rec */
  #print(rec) {
    if (!this.#headerPrinted) {
      this.#headerPrinted = true;
      const header = row(COLUMNS.map((c) => c.title));
      process.stdout.write(`${header}\n${'-'.repeat(header.length)}\n`);
    }
    const limit = rec.roofline ? `${fmt(rec.roofline.value)} ${rec.roofline.unit}` : '';
    const frac = rec.roofline ? `${(rec.roofline.fraction * 100).toPrecision(3)}%` : '';
    const ratio = rec.ratio !== undefined ? `${rec.ratio.toPrecision(3)}x` : rec.baseline ? 'n/a' : '';
    process.stdout.write(
      `${row([rec.name, fmt(rec.value), rec.unit, rec.baseline ? fmt(rec.baseline.value) : '', ratio, limit, frac])}\n`,
    );
  }
}

/**
 * Prints a progress line on stderr (the table stays alone on stdout).
 * @param {string} msg
 */
export function progress(msg) {
  process.stderr.write(`  .. ${msg}\n`);
}

/**
 * Writes `data` as pretty JSON, creating the directory.
 * @param {string} path
 * @param {unknown} data
 */
export function writeJson(path, data) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(data, null, 2)}\n`);
}

/**
 * @typedef {object} Measurement
 * @property {number} periodMs mean milliseconds per iteration (timed part only)
 * @property {number} p50Ms median milliseconds per iteration
 * @property {number} rme relative margin of error of the mean, in percent
 * @property {number} samples iterations measured
 */

/**
 * Runs `fn` under tinybench and returns its timing. `fn` may return `{ overriddenDuration }`
 * (milliseconds, measured with {@link now}) to time only part of an iteration; it should then also
 * return `overriddenIterationCost` (the whole iteration) so the time budget counts it.
 * @param {string} name
 * @param {() => unknown} fn
 * @param {{ time: number, warmupTime: number, iterations?: number }} opts time budgets in ms
 * @returns {Promise<Measurement>}
 */
export async function measure(name, fn, opts) {
  const bench = new Bench({
    time: opts.time,
    warmupTime: opts.warmupTime,
    iterations: opts.iterations ?? 10,
    warmupIterations: 2,
    throws: true,
  });
  bench.add(name, fn, { async: false });
  await bench.run();
  const task = bench.tasks[0];
  const r = task?.result;
  if (!r || (r.state !== 'completed' && r.state !== 'aborted-with-statistics')) {
    throw new Error(`benchmark ${name} did not complete (state ${r?.state})`);
  }
  return { periodMs: r.period, p50Ms: r.latency.p50, rme: r.latency.rme, samples: r.latency.samplesCount };
}

/** The timer tinybench uses by default (milliseconds). */
export const now = () => performance.now();

/** mulberry32 (src/random.ts, built into dist/): a small seeded PRNG returning floats in [0, 1). */
export { mulberry32 } from '../dist/random.js';

/**
 * A uniform integer in [lo, hi] (inclusive).
 * @param {() => number} rng
 * @param {number} lo
 * @param {number} hi
 * @returns {number}
 */
export function uniformInt(rng, lo, hi) {
  return lo + Math.floor(rng() * (hi - lo + 1));
}

/**
 * An Int32Array of n random token ids in [0, vocab).
 * @param {() => number} rng
 * @param {number} n
 * @param {number} [vocab]
 * @returns {Int32Array}
 */
export function randomTokens(rng, n, vocab = 150000) {
  const out = new Int32Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(rng() * vocab);
  return out;
}

/**
 * `npm run bench`: runs the benchmark suites and writes bench/results/latest.json (an array of
 * records, DESIGN.md section 8) and bench/results/latest.meta.json (context: machine, versions,
 * date, per-suite details). The machine suite always runs first: the other suites report their
 * figures against its limits.
 *
 * Usage: node bench/run.mjs [--suite machine|kv|sample|loss|model|engine|env|shell|rollout|cuda]... [--quick]
 *        [--out PATH] [--checkpoint DIR]
 *   --suite  run only these suites (repeatable or comma-separated; machine always runs)
 *   --quick  short run (smoke test)
 *   --out    results path (default bench/results/latest.json; meta goes next to it as *.meta.json)
 *   --checkpoint  the rollout suite's policy: a run's checkpoints/<phase> (default: a random model)
 *
 * Needs the compiled package: `npm run build` (or `npx tsc -p tsconfig.build.json` and the addon).
 */
import { cpus, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { nativeInfo } from '../dist/index.js';
import { cudaSuite } from './cuda.mjs';
import { engineSuite } from './engine.mjs';
import { envSuite } from './env.mjs';
import { kvSuite } from './kv.mjs';
import { progress, Report, writeJson } from './lib.mjs';
import { lossSuite } from './loss.mjs';
import { machineSuite } from './machine.mjs';
import { modelSuite } from './model.mjs';
import { rolloutSuite } from './rollout.mjs';
import { sampleSuite } from './sample.mjs';
import { shellSuite } from './shell.mjs';

const here = dirname(fileURLToPath(import.meta.url));

/** Suites other than machine, in run order. */
const SUITES = {
  kv: kvSuite,
  sample: sampleSuite,
  loss: lossSuite,
  model: modelSuite,
  engine: engineSuite,
  env: envSuite,
  shell: shellSuite,
  rollout: rolloutSuite,
  cuda: cudaSuite,
};

const { values } = parseArgs({
  options: {
    suite: { type: 'string', multiple: true },
    quick: { type: 'boolean', default: false },
    out: { type: 'string' },
    checkpoint: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

if (values.help) {
  process.stdout.write(
    'node bench/run.mjs [--suite machine|kv|sample|loss|model|engine|env|shell|rollout|cuda]... [--quick] [--out PATH]\n' +
      '                   [--checkpoint DIR]\n' +
      '  writes bench/results/latest.json and latest.meta.json\n' +
      "  --checkpoint: the rollout suite's policy (a run's checkpoints/<phase>; default a random model)\n",
  );
  process.exit(0);
}

const known = ['machine', ...Object.keys(SUITES)];
const requested = (values.suite ?? known).flatMap((s) => s.split(',')).map((s) => s.trim());
for (const s of requested) {
  if (!known.includes(s)) {
    process.stderr.write(`unknown suite '${s}'; known: ${known.join(', ')}\n`);
    process.exit(2);
  }
}

const outPath = resolve(values.out ?? join(here, 'results', 'latest.json'));
const metaPath = outPath.endsWith('.json') ? `${outPath.slice(0, -5)}.meta.json` : `${outPath}.meta.json`;
const quick = values.quick ?? false;
const report = new Report();
const info = nativeInfo();
/** @type {Record<string, unknown>} */
const meta = {
  date: new Date().toISOString(),
  quick,
  suites: requested,
  node: process.version,
  platform: `${process.platform}-${process.arch}`,
  cpuModel: cpus()[0]?.model ?? 'unknown',
  logicalCpus: cpus().length,
  totalMemoryBytes: totalmem(),
  native: {
    version: info.version,
    simd: info.simd,
    threads: info.threads,
    cuda: info.cuda,
    cudaDevices: info.cudaDevices,
    cudaSimulated: info.cudaSimulated,
  },
  seconds: {},
  errors: [],
};
const seconds = /** @type {Record<string, number>} */ (meta.seconds);
const errors = /** @type {string[]} */ (meta.errors);

const started = performance.now();
progress(`swerl bench${quick ? ' (quick)' : ''}: ${info.simd}, ${info.threads} threads, ${meta.cpuModel}`);
report.add({ name: 'machine.threads', value: info.threads, unit: 'threads' });

progress('suite machine');
let t = performance.now();
const limits = await machineSuite({ quick, report, meta });
seconds.machine = (performance.now() - t) / 1000;

for (const [name, suite] of Object.entries(SUITES)) {
  if (!requested.includes(name)) continue;
  progress(`suite ${name}`);
  t = performance.now();
  try {
    await suite({ quick, report, meta, limits, checkpoint: values.checkpoint });
  } catch (err) {
    const msg = err instanceof Error ? (err.stack ?? err.message) : String(err);
    errors.push(`${name}: ${msg}`);
    process.stderr.write(`suite ${name} failed: ${msg}\n`);
    process.exitCode = 1;
  }
  seconds[name] = (performance.now() - t) / 1000;
}
seconds.total = (performance.now() - started) / 1000;

writeJson(outPath, report.records);
writeJson(metaPath, meta);
progress(`wrote ${outPath} (${report.records.length} records) and ${metaPath} in ${seconds.total.toFixed(1)} s`);

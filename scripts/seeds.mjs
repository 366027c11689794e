#!/usr/bin/env node
// Runs one config of `node train.js` on several seeds and writes, per stage, the mean and 95%
// confidence interval (Student's t over the seeds) of held-out Pass@1 and Pass@k, the paired
// DAPO − RFT difference, the goal checks, and where each run's time went.
//
//   node scripts/seeds.mjs --seeds 11,12,13,14,15 [--preset default] [--config FILE] [--out runs/seeds] [--jobs 1]
//                          [--include OLD/seeds.json]
//
// Each seed runs into OUT/seed-N (a finished run is reused, an unfinished one resumed), then
// OUT/seeds.json (the table and every run's summary and time breakdown) and OUT/seeds.md (the
// Markdown table) are written. --jobs runs that many seeds at once, each with the cores shared
// among them as its kernel threads (SWERL_NUM_THREADS = cores / jobs, at least 1, unless set).
// --include adds the runs of an earlier seeds.json (same config; seeds not in --seeds) to the
// table, each with the commit it ran at.
// Build first (npm run build:ts); the runs use dist/.
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { seedTable, seedTableMarkdown } from '../dist/pipeline/seed-stats.js';

const USAGE =
  'usage: node scripts/seeds.mjs --seeds 11,12,13 [--preset default] [--config FILE] [--out runs/seeds] [--jobs 1] [--include OLD/seeds.json]';
let values;
try {
  ({ values } = parseArgs({
    options: {
      seeds: { type: 'string' },
      preset: { type: 'string' },
      config: { type: 'string' },
      out: { type: 'string' },
      jobs: { type: 'string' },
      include: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  }));
} catch (e) {
  console.error(`${e.message}\n${USAGE}`);
  process.exit(2);
}
if (values.help || !values.seeds) {
  console.log(USAGE);
  process.exit(values.help ? 0 : 2);
}
const seeds = values.seeds.split(',').map((s) => Number(s.trim()));
if (seeds.some((s) => !Number.isInteger(s) || s < 0) || new Set(seeds).size !== seeds.length) {
  console.error(`--seeds: distinct integers >= 0, got ${values.seeds}\n${USAGE}`);
  process.exit(2);
}
const jobs = Math.max(1, Number(values.jobs ?? 1));
// Each run's kernel threads: the cores shared among the jobs, unless SWERL_NUM_THREADS says. A
// run's thread pool waits for its slowest thread at every parallel region, so runs whose threads
// outnumber the cores stall one another; a run's results do not depend on its thread count
// (test/native/thread-invariance.test.ts).
const threadsPerRun = process.env.SWERL_NUM_THREADS ?? String(Math.max(1, Math.floor(availableParallelism() / jobs)));
const out = resolve(values.out ?? 'runs/seeds');
const base = values.config ? JSON.parse(readFileSync(values.config, 'utf8')) : {};
if (values.preset) base.preset = values.preset;
if (typeof base.seed === 'number') console.log(`note: the config's seed ${base.seed} is replaced by each run's`);
// Runs of an earlier study, checked before any run starts: same config, seeds not run again here.
let included = [];
if (values.include) {
  const old = JSON.parse(readFileSync(values.include, 'utf8'));
  if (JSON.stringify(old.config ?? {}) !== JSON.stringify(base)) {
    console.error(
      `--include ${values.include}: its config ${JSON.stringify(old.config)} is not this study's ${JSON.stringify(base)}`,
    );
    process.exit(2);
  }
  included = (old.runs ?? []).filter((r) => !seeds.includes(r.seed));
  for (const r of included)
    console.log(
      `seed ${r.seed}: included from ${values.include} (commit ${r.provenance?.commit?.slice(0, 7) ?? 'unknown'})`,
    );
}
const trainJs = join(dirname(fileURLToPath(import.meta.url)), '..', 'train.js');
mkdirSync(out, { recursive: true });

const summaryOf = (dir) => {
  try {
    const s = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'));
    return s.finished ? s : null;
  } catch {
    return null;
  }
};

/** Runs one seed to the end (resuming a stopped run); resolves with its summary. */
function runSeed(seed) {
  const dir = join(out, `seed-${seed}`);
  const done = summaryOf(dir);
  if (done) {
    console.log(`seed ${seed}: finished run in ${dir} reused`);
    return Promise.resolve(done);
  }
  const config = join(out, `config-seed-${seed}.json`);
  writeFileSync(config, `${JSON.stringify({ ...base, seed }, null, 2)}\n`);
  const args = [trainJs, '--config', config, '--out', dir];
  if (existsSync(join(dir, 'state.json'))) args.push('--resume');
  console.log(`seed ${seed}: SWERL_NUM_THREADS=${threadsPerRun} node train.js ${args.slice(1).join(' ')}`);
  const log = join(out, `seed-${seed}.log`);
  writeFileSync(log, '');
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, SWERL_NUM_THREADS: threadsPerRun },
    });
    const keep = (b) => {
      appendFileSync(log, b);
      const last = b.toString().trim().split('\n').at(-1);
      if (last && !/\d+%\)/.test(last)) console.log(`seed ${seed}: ${last}`);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('close', (code) => {
      const s = summaryOf(dir);
      if (code === 0 && s) ok(s);
      else fail(new Error(`seed ${seed}: train.js exited with ${code}; see ${log}`));
    });
  });
}

/** A run's metrics events. */
function metricsOf(dir) {
  // A line cut short (a run killed mid-write, or two processes that once shared a folder) is
  // skipped and counted, not fatal: the table does not depend on it.
  let unreadable = 0;
  const events = readFileSync(join(dir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .flatMap((l) => {
      try {
        return [JSON.parse(l)];
      } catch {
        unreadable++;
        return [];
      }
    });
  if (unreadable > 0) console.log(`note: ${dir}/metrics.jsonl: ${unreadable} unreadable line(s) skipped`);
  return events;
}

/**
 * What the warm start left for RL: the mean training loss of the warm start's last epoch, the
 * base's format errors per episode and share of submitted episodes on the test split, and the
 * number of trajectories RFT kept (over all its rounds). The earlier studies found that the base
 * decides the run.
 */
function warmStartOutcome(events) {
  const steps = events.filter((e) => e.stage === 'warmstart' && e.event === 'step');
  const lastEpoch = steps.at(-1)?.epoch;
  const last = steps.filter((e) => e.epoch === lastEpoch);
  const base = events.find((e) => e.stage === 'base' && e.event === 'eval');
  // One rollouts event per RFT round (rft.minKept): the kept trajectories of all of them.
  const rft = events.filter((e) => e.stage === 'rft' && e.event === 'rollouts');
  const round = (x, d) => (typeof x === 'number' ? Number(x.toFixed(d)) : null);
  return {
    warmStartLastEpochLoss: last.length ? round(last.reduce((a, e) => a + e.loss, 0) / last.length, 4) : null,
    baseFormatErrorsPerEpisode: round(base?.formatErrors, 2),
    baseSubmitted: round(base?.submitted, 3),
    rftKept: rft.length ? rft.reduce((a, e) => a + (e.kept ?? 0), 0) : null,
  };
}

/** Where a run's time went, from its metrics events (seconds). */
function timeBreakdown(events, wallSeconds) {
  const parts = {
    setup: 0,
    copyPretraining: 0,
    warmStart: 0,
    evaluations: 0,
    rft: 0,
    dapoRollouts: 0,
    dapoTraining: 0,
  };
  let prev = events[0]?.t;
  for (const e of events) {
    const dt = (e.t - prev) / 1000;
    prev = e.t;
    if (e.stage === 'dapo' && e.event === 'iteration') {
      parts.dapoRollouts += e.rolloutSeconds ?? 0;
      parts.dapoTraining += e.trainSeconds ?? 0;
    } else if (e.event === 'eval' || e.event === 'validation') parts.evaluations += dt;
    else if (e.stage === 'copy') parts.copyPretraining += dt;
    else if (e.stage === 'warmstart') parts.warmStart += dt;
    else if (e.stage === 'rft') parts.rft += dt;
  }
  const counted = Object.values(parts).reduce((a, x) => a + x, 0);
  parts.setup = Math.max(0, wallSeconds - counted);
  return Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, Math.round(v)]));
}

const summaries = new Map();
const queue = [...seeds];
let failed = null;
await Promise.all(
  Array.from({ length: Math.min(jobs, seeds.length) }, async () => {
    while (queue.length > 0 && !failed) {
      const seed = queue.shift();
      try {
        summaries.set(seed, await runSeed(seed));
      } catch (e) {
        failed = e;
      }
    }
  }),
);
if (failed) {
  console.error(failed.message);
  process.exit(1);
}
const perRun = [
  ...included,
  ...seeds.map((seed) => {
    const run = summaries.get(seed);
    const events = metricsOf(join(out, `seed-${seed}`));
    return {
      seed,
      stages: run.stages,
      wallSeconds: Math.round(run.wallSeconds),
      time: timeBreakdown(events, run.wallSeconds),
      warmStart: warmStartOutcome(events),
      provenance: run.provenance,
    };
  }),
].sort((a, b) => a.seed - b.seed);
const table = seedTable(perRun);
writeFileSync(join(out, 'seeds.json'), `${JSON.stringify({ config: base, table, runs: perRun }, null, 2)}\n`);
const commits = perRun.map((r) => `seed ${r.seed}: ${r.provenance?.commit?.slice(0, 7) ?? 'unknown'}`);
const outcomes = perRun
  .filter((r) => r.warmStart)
  .map((r) => {
    const w = r.warmStart;
    return `| ${r.seed} | ${w.warmStartLastEpochLoss ?? '—'} | ${w.baseFormatErrorsPerEpisode ?? '—'} | ${w.baseSubmitted ?? '—'} | ${w.rftKept ?? '—'} |`;
  });
const outcomeTable =
  outcomes.length > 0
    ? `\n| seed | warm-start loss (last epoch) | base format errors / episode | base submitted | RFT kept |\n|---|---|---|---|---|\n${outcomes.join('\n')}\n`
    : '';
const md = `${seedTableMarkdown(table)}${outcomeTable}\nCommits: ${commits.join(', ')}.\n`;
writeFileSync(join(out, 'seeds.md'), md);
console.log(`\n${md}`);
if (table.goal) console.log(`goal: ${JSON.stringify(table.goal)}`);
console.log(`written: ${join(out, 'seeds.json')}, ${join(out, 'seeds.md')}`);

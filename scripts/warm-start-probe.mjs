#!/usr/bin/env node
// The warm-start probe: what the embedded default's warm start leaves for RL, per seed, under
// config overrides, without reading the test split. For each seed it records the expert's
// demonstrations once (cached in OUT/demos-seed-N.json, so that every variant of a seed trains on
// the same data), then the tokenizer, model, copy pretraining and warm start of
// `resolveConfig(overrides + seed)`, and measures:
//   - the warm start's last-epoch training loss;
//   - the model's loss on the names of the fix (the slip the error reports and the right name,
//     wherever the expert writes them) and on every other trained token, over the demonstrations
//     with names drawn afresh (a stream the warm start never drew): whether it learned to read the
//     name, the skill the default's tasks test;
//   - Pass@1 and Pass@k, format errors and submissions of that base on the validation split (its
//     own bug sites; never the test split), `--validation` tasks, `--k` samples each.
// One JSON line per (seed, variant) goes to OUT/probe.jsonl.
//
//   npm run build:ts && node scripts/warm-start-probe.mjs --seeds 401,402 [--set '{"warmStart":{"epochs":40}}']
//        [--name epochs40] [--out runs/warm-start-probe] [--validation 24] [--k 4]
// With --checkpoint DIR (one seed: the run's), the measures are taken on that checkpoint (a run's
// `checkpoints/base`) instead of a new warm start; the warm-start loss is then left out.
import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { expertDemos } from '../dist/embedded/demonstrations.js';
import { nameLoss, nameLossStream } from '../dist/embedded/name-loss.js';
import { warmStartOn } from '../dist/embedded/warm-start.js';
import { Engine, Model, Tokenizer } from '../dist/index.js';
import { resolveConfig } from '../dist/pipeline/config.js';
import { generateSplit } from '../dist/pipeline/run.js';
import { episodeStats, evaluate } from '../dist/pipeline/stages.js';

const { values } = parseArgs({
  options: {
    seeds: { type: 'string' },
    set: { type: 'string', default: '{}' },
    name: { type: 'string', default: 'default' },
    out: { type: 'string', default: 'runs/warm-start-probe' },
    validation: { type: 'string', default: '24' },
    k: { type: 'string', default: '4' },
    checkpoint: { type: 'string' },
  },
});
if (!values.seeds || (values.checkpoint && values.seeds.includes(','))) {
  console.error(
    'usage: node scripts/warm-start-probe.mjs --seeds 401,402 [--set JSON] [--name NAME] [--out DIR] [--validation 24] [--k 4]\n' +
      '       node scripts/warm-start-probe.mjs --seeds N --checkpoint RUN/checkpoints/base [...]  (a run of seed N)',
  );
  process.exit(2);
}
const out = resolve(values.out);
mkdirSync(out, { recursive: true });
const overrides = JSON.parse(values.set);

/** The demonstration pool and its recorded demonstrations for a seed, recorded once. */
async function demosFor(c) {
  const path = join(out, `demos-seed-${c.seed}.json`);
  // Only what the demonstrations depend on (the training settings left out, absent ones dropped).
  const training = {
    epochs: 0,
    lr: 0,
    copySteps: 0,
    optimizer: 0,
    targetNameLoss: undefined,
    extendEpochs: undefined,
    maxExtraEpochs: undefined,
    copyMix: undefined,
  };
  const key = JSON.stringify({ miniSwe: c.miniSwe, ...c.warmStart, ...training });
  if (existsSync(path)) {
    const cached = JSON.parse(readFileSync(path, 'utf8'));
    if (cached.key === key) return cached;
    console.error(`${path} holds demonstrations of other task or demonstration settings: use another --out`);
    process.exit(2);
  }
  const train = await generateSplit(c, 'train', c.miniSwe.trainTasks, c.seed);
  const pool = c.warmStart.demoTasks > 0 ? train.slice(0, c.warmStart.demoTasks) : train;
  const tasks = Array.from({ length: c.warmStart.demos }, (_, i) => pool[i % pool.length]);
  const demos = await expertDemos(tasks, c, {
    log: () => {},
    progress: (_, n, total) => n % 16 === 0 && console.log(`seed ${c.seed}: demonstrations ${n}/${total}`),
  });
  // Atomically: a probe of another variant may read the cache while this one writes it.
  writeFileSync(`${path}.${process.pid}`, JSON.stringify({ key, pool, demos }));
  renameSync(`${path}.${process.pid}`, path);
  return { key, pool, demos };
}

const round = (x, d = 4) => Number(x.toFixed(d));
for (const seed of values.seeds.split(',').map(Number)) {
  const c = resolveConfig({ ...overrides, seed }, 'default');
  const t0 = performance.now();
  const { pool, demos } = await demosFor(c);
  const steps = [];
  const hooks = {
    log: (e) => e.stage === 'warmstart' && e.event === 'step' && steps.push(e),
    progress: (what, n, total) => n % 100 === 0 && console.log(`seed ${seed} ${values.name}: ${what} ${n}/${total}`),
  };
  const tw = performance.now();
  const { model, tokenizer } = values.checkpoint
    ? { model: await Model.load(values.checkpoint), tokenizer: await Tokenizer.load(values.checkpoint) }
    : await warmStartOn(c, pool, demos, hooks, (l) => console.log(`seed ${seed}: ${l}`));
  const warmSeconds = (performance.now() - tw) / 1000;
  const lastEpoch = steps.at(-1)?.epoch;
  const last = steps.filter((e) => e.epoch === lastEpoch);
  const names = await nameLoss(model, tokenizer, demos, nameLossStream(seed));
  const engine = new Engine({
    model,
    kvBlocks: c.engine.kvBlocks,
    maxBatchTokens: c.engine.maxBatchTokens,
    blockSize: 16,
  });
  const k = Number(values.k);
  // --validation 0: the name losses alone.
  const nv = Number(values.validation);
  const vtasks = nv > 0 ? await generateSplit(c, 'validation', nv, c.seed + 2) : [];
  const ev =
    nv > 0
      ? await evaluate({ model, tokenizer, engine }, vtasks, c, 'probe', hooks, {
          iteration: 0,
          k,
          phase: 'probe-base',
        })
      : null;
  const stats = ev ? episodeStats(ev.records) : null;
  const row = {
    seed,
    variant: values.name,
    overrides,
    checkpoint: values.checkpoint ?? null,
    warmStartLastEpochLoss: last.length ? round(last.reduce((a, e) => a + e.loss, 0) / last.length) : null,
    nameLoss: round(names.nameLoss),
    otherLoss: round(names.otherLoss),
    validation: ev && {
      tasks: vtasks.length,
      k,
      pass1: round(ev.pass1),
      passK: round(ev.passK),
      formatErrors: round(stats.formatErrors, 2),
      submitted: round(stats.submitted, 3),
    },
    warmStartSeconds: Math.round(warmSeconds),
    seconds: Math.round((performance.now() - t0) / 1000),
  };
  console.log(JSON.stringify(row));
  appendFileSync(join(out, 'probe.jsonl'), `${JSON.stringify(row)}\n`);
  engine.close?.();
}
process.exit(0);

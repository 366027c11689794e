/**
 * The learnability probe: does the embedded model, trained from scratch, learn to solve held-out
 * mini-SWE tasks? It generates tasks (cached in a JSON file), records the expert's
 * demonstrations, trains a tokenizer and a model of the given shape, optionally runs copy
 * pretraining, then alternates SFT chunks with held-out evaluations at temperature 1, printing
 * the loss, Pass@1 and the episodes' commands after each chunk. Used to choose the default
 * preset's task design and budget (see the issue 7 notes).
 *
 *   npm run build:ts && node scripts/learnability-probe.mjs [key=value ...]
 *     h=256 l=4        hidden size and layers (4 heads, 2 KV heads, MLP 3h)
 *     copy=0           copy-pretraining steps first
 *     steps=400 chunk=100 bs=4 lr=2e-3 demos=96 noise=0.2
 *     kinds=misspelled-name rename=1 style=direct issue=reproduction|error prompt=paper|compact
 *     split=identifiers|stems|qwen2   the tokenizer's pre-tokenization
 *     verbose=1        every held-out episode's first commands
 *     tasks=PATH (cache; default runs/probe-tasks.json)
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { copyPretrain } from '../dist/embedded/copy-pretrain.js';
import { demoSample, expertDemos } from '../dist/embedded/demonstrations.js';
import { embeddedModelConfig } from '../dist/embedded/model.js';
import { tokenizerCorpus } from '../dist/embedded/tokenizer-corpus.js';
import { Engine, generateMiniSweTasks, Model, Tokenizer } from '../dist/index.js';
import { resolveConfig } from '../dist/pipeline/config.js';
import { episodeStats, evaluate, sftEpochs } from '../dist/pipeline/stages.js';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.split('=')));
const num = (k, d) => Number(args[k] ?? d);
const h = num('h', 256);
const kinds = (args.kinds ?? 'misspelled-name').split(',');
const rename = args.rename !== '0';
const c = resolveConfig({
  miniSwe: { kinds, renameLocals: rename, issue: args.issue ?? 'reproduction' },
  warmStart: { style: args.style ?? 'direct', noise: num('noise', 0.2) },
  embeddedModel: { hiddenSize: h, layers: num('l', 4), heads: 4, kvHeads: 2, intermediateSize: 3 * h },
  eval: { k: 2 },
  episode: {
    maxTurns: 8,
    maxTokensPerTurn: 96,
    maxContextTokens: 3072,
    concurrency: 16,
    prompt: args.prompt ?? 'paper',
  },
});
const cache = args.tasks ?? 'runs/probe-tasks.json';
let train;
let test;
if (existsSync(cache)) ({ train, test } = JSON.parse(readFileSync(cache, 'utf8')));
else {
  const o = { difficulty: 0, kinds, renameLocals: rename, issue: args.issue ?? 'reproduction' };
  train = await generateMiniSweTasks({ ...o, count: 48, seed: 1, split: 'train' });
  test = await generateMiniSweTasks({ ...o, count: 12, seed: 2, split: 'test' });
  mkdirSync(dirname(cache), { recursive: true });
  writeFileSync(cache, JSON.stringify({ train, test }));
}
const quiet = { log() {} };
const demos = await expertDemos(
  Array.from({ length: num('demos', 96) }, (_, i) => train[i % train.length]),
  c,
  quiet,
);
const tokenizer = Tokenizer.train(tokenizerCorpus(c, train, demos), {
  vocabSize: c.tokenizer.vocabSize,
  split: args.split ?? c.tokenizer.split,
});
const samples = demos.map((d) => demoSample(d, tokenizer));
const mean = (f) => samples.reduce((a, s) => a + f(s), 0) / samples.length;
const model = Model.random(embeddedModelConfig(c, tokenizer.vocabSize), 1);
console.log(
  `model ${(model.numParameters / 1e6).toFixed(2)} M, vocab ${tokenizer.vocabSize}, ${samples.length} demos of ` +
    `${mean((s) => s.tokens.length).toFixed(0)} tokens (${mean((s) => s.lossMask.reduce((a, x) => a + x, 0)).toFixed(0)} trained)`,
);
const engine = new Engine({ model, kvBlocks: 4096, maxBatchTokens: 2048, blockSize: 16 });
const p = { model, engine, tokenizer };
if (num('copy', 0) > 0) {
  const t = performance.now();
  const m = await copyPretrain(p, { steps: num('copy', 0), batchSize: 16, lr: num('lr', 2e-3), seed: 7 }, quiet);
  console.log(
    `copy pretraining: ${m.length} steps in ${((performance.now() - t) / 1000).toFixed(0)} s, loss ${m.at(-1).loss.toFixed(3)}`,
  );
}
const t0 = performance.now();
for (let done = 0; done < num('steps', 400); ) {
  const bs = num('bs', 4);
  const epochs = Math.ceil((num('chunk', 100) * bs) / samples.length);
  const m = await sftEpochs(
    p,
    samples,
    { epochs, batchSize: bs, lr: num('lr', 2e-3), warmupRatio: 0.05, seed: done, stage: 'sft' },
    quiet,
  );
  done += m.length;
  const r = await evaluate(p, test, c, 'probe', quiet);
  const s = episodeStats(r.records);
  console.log(
    `steps ${done} (${((performance.now() - t0) / 1000).toFixed(0)} s): loss ${m.at(-1).loss.toFixed(3)} | ` +
      `held-out Pass@1 ${r.pass1.toFixed(3)} Pass@2 ${r.passK.toFixed(3)}, format errors ${s.formatErrors.toFixed(2)}/episode, submitted ${s.submitted.toFixed(2)}`,
  );
  // For name slips: how often the first command names the slip the error reports, and a sed does.
  const slipOf = (id) =>
    /ReferenceError: (\S+) is not defined/.exec(test.find((t) => t.instance_id === id)?.problem_statement ?? '')?.[1];
  const count = (pick) =>
    r.records.filter((rec) => {
      const slip = slipOf(rec.instance_id);
      const commands = rec.turns.map((t) => t.command).filter((x) => x !== null);
      return slip !== undefined && pick(commands).some((cmd) => cmd.includes(slip));
    }).length;
  const first = count((cmds) => cmds.slice(0, 1));
  const sed = count((cmds) => cmds.filter((cmd) => cmd.startsWith('sed')));
  console.log(
    `  slips: the first command names it ${first}/${r.records.length}, a sed names it ${sed}/${r.records.length}`,
  );
  if (args.verbose)
    for (const rec of r.records)
      console.log(
        `  ${rec.resolved ? 'OK' : '--'} ${JSON.stringify(rec.turns.slice(0, 3).map((t) => t.command ?? t.formatError))}`,
      );
  for (const rec of r.records.slice(0, 2))
    console.log(`  ${rec.instance_id}: ${JSON.stringify(rec.turns.map((t) => t.command ?? t.formatError))}`);
}
process.exit(0);

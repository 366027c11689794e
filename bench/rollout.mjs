/**
 * The rollout suite: rollout.text_workers.episodes_per_s, episodes per second of runRollouts with
 * the text work around the model (ChatML rendering and tokenizing of observations, decoding of
 * responses, action parsing) on its piscina pool (textWorkers: true, the default), beside the same
 * rollouts with that work on the main thread. Both sides run the default preset's episode shape
 * (7 turns, 96 tokens per turn, 3072-token context, 32 episodes in flight, the compact prompt) on
 * held-out mini-SWE tasks, alternating (off, on, off, on) so that load drifts reach both; meta
 * carries the main thread's event-loop utilization on each side and whether the records matched
 * bit for bit: they must, except from an observation on, where the processes of one malformed
 * command raced to write (counted in meta).
 *
 * The policy is the checkpoint given by `--checkpoint DIR` (a run's `checkpoints/<phase>`: real
 * commands and observations), else a random model of the default's shape with a tokenizer
 * trained on the tasks (its responses are format errors; the observations are the scaffold's
 * error message).
 */

import { embeddedModelConfig } from '../dist/embedded/model.js';
import {
  Engine,
  generateMiniSweTasks,
  Model,
  promptStyleOf,
  recordDivergence,
  resolveConfig,
  runRollouts,
  SYSTEM_PROMPT,
  Tokenizer,
} from '../dist/index.js';
import { progress } from './lib.mjs';

/** @param {import('./sample.mjs').SuiteContext & { checkpoint?: string }} ctx */
export async function rolloutSuite(ctx) {
  /** @type {Record<string, unknown>} */
  const meta = {};
  ctx.meta.rollout = meta;
  const c = resolveConfig({}, 'default');
  const tasks = await generateMiniSweTasks({
    count: ctx.quick ? 4 : 16,
    seed: 2,
    split: 'test',
    kinds: c.miniSwe.kinds ?? undefined,
    renameLocals: c.miniSwe.renameLocals,
    issue: c.miniSwe.issue,
  });
  let model;
  let tokenizer;
  if (ctx.checkpoint) {
    [model, tokenizer] = await Promise.all([Model.load(ctx.checkpoint), Tokenizer.load(ctx.checkpoint)]);
    meta.policy = `checkpoint ${ctx.checkpoint}`;
  } else {
    const corpus = [SYSTEM_PROMPT, ...tasks.flatMap((t) => Object.values(t.files ?? {}))];
    tokenizer = Tokenizer.train(corpus, { vocabSize: c.tokenizer.vocabSize, split: c.tokenizer.split });
    model = Model.random(embeddedModelConfig(c, tokenizer.vocabSize), 5);
    meta.policy = "a random model of the default's shape";
  }
  const G = ctx.quick ? 2 : 8;
  const run = async (textWorkers) => {
    const engine = new Engine({ model, kvBlocks: c.engine.kvBlocks, maxBatchTokens: c.engine.maxBatchTokens });
    const elu0 = performance.eventLoopUtilization();
    const t0 = performance.now();
    const records = await runRollouts({
      engine,
      tokenizer,
      tasks,
      samplesPerTask: G,
      seed: 17,
      maxTurns: c.episode.maxTurns,
      maxTokensPerTurn: c.episode.maxTokensPerTurn,
      maxContextTokens: c.episode.maxContextTokens,
      concurrency: c.episode.concurrency,
      maxObservationChars: c.episode.maxObservationChars,
      prompt: promptStyleOf(c),
      textWorkers,
    });
    const seconds = (performance.now() - t0) / 1000;
    const elu = performance.eventLoopUtilization(elu0).utilization;
    return { records, seconds, elu };
  };
  const sides = { on: { seconds: 0, elu: [] }, off: { seconds: 0, elu: [] } };
  // Every run is compared with the first, record by record. An episode may part at an observation
  // (the processes of one malformed command racing to write, which no sandbox orders without
  // serialising them): counted, not failed. Any other difference fails the suite.
  let first = null;
  const parted = { observation: 0, engine: [] };
  const rounds = ctx.quick ? 1 : 2;
  for (let round = 0; round < rounds; round++)
    for (const side of ['off', 'on']) {
      progress(
        `rollout.text_workers: ${tasks.length * G} episodes, text work ${side === 'on' ? 'on workers' : 'on the main thread'}`,
      );
      const r = await run(side === 'on');
      sides[side].seconds += r.seconds;
      sides[side].elu.push(r.elu);
      if (first === null) {
        first = r.records;
        continue;
      }
      r.records.forEach((x, i) => {
        const y = first[i];
        const d =
          y && x.instance_id === y.instance_id && x.sample === y.sample
            ? recordDivergence(y, x)
            : { kind: 'order', at: 0 };
        if (d.kind === 'observation') parted.observation++;
        else if (d.kind !== 'identical') parted.engine.push(`${side} #${i} ${d.kind} at token ${d.at}`);
      });
    }
  const episodes = tasks.length * G * rounds;
  meta.identicalRecords = parted.observation === 0 && parted.engine.length === 0;
  meta.episodesPartedAtAnObservation = parted.observation;
  meta.mainThreadUtilization = { workers: sides.on.elu, mainThread: sides.off.elu };
  meta.seconds = { workers: sides.on.seconds, mainThread: sides.off.seconds };
  ctx.report.add({
    name: 'rollout.text_workers.episodes_per_s',
    value: episodes / sides.on.seconds,
    unit: 'episodes/s',
    baseline: { name: 'the same rollouts, text work on the main thread', value: episodes / sides.off.seconds },
  });
  if (parted.engine.length > 0)
    throw new Error(
      `rollout.text_workers: ${parted.engine.length} records differ where the environment answered the same (${parted.engine.slice(0, 3).join('; ')})`,
    );
}

/**
 * The embedded model's warm start, the pipeline's first phase when no `modelDir` is given: the
 * scripted expert's demonstrations (some in another scaffold's format), a BPE tokenizer trained
 * on them, a random model of the config's shape, copy pretraining, and SFT on the demonstrations
 * (with fresh names and files per epoch when asked). A real model brings all of this from its
 * pretraining and instruction tuning; runPipeline calls this only for the embedded default.
 */

import type { Trajectory } from '../agent/episode.js';
import { catalogueModules } from '../env/mini-swe/generate.js';
import { NAME_POOL } from '../env/mini-swe/mutate.js';
import type { SweTask } from '../env/tasks.js';
import { Model } from '../model/model.js';
import type { PipelineConfig } from '../pipeline/config.js';
import { type Policy, type StageHooks, sftEpochs } from '../pipeline/stages.js';
import { count } from '../pipeline/wording.js';
import { mulberry32 } from '../random.js';
import { Tokenizer } from '../tokenizer/tokenizer.js';
import type { TrainSample } from '../train/trainer.js';
import { copyPretrain, copySequence } from './copy-pretrain.js';
import { demoSample, expertDemos } from './demonstrations.js';
import { withFreshFiles, withFreshNames } from './fresh-names.js';
import { embeddedModelConfig } from './model.js';
import { nameLoss, nameLossStream } from './name-loss.js';
import { tokenizerCorpus } from './tokenizer-corpus.js';

/**
 * Builds and warm-starts the embedded policy: `c.warmStart.demos` demonstrations on `demoPool`'s
 * tasks (cycled), the tokenizer, the model (seeded by `c.seed`), then, with `warmStart.enabled`,
 * copy pretraining and the SFT epochs, each with AdamW as `warmStart.optimizer` sets it. `say`
 * gets one line per step of it.
 */
export async function embeddedWarmStart(
  c: PipelineConfig,
  demoPool: SweTask[],
  hooks: StageHooks,
  say: (line: string) => void = () => {},
): Promise<{ model: Model; tokenizer: Tokenizer }> {
  say(`expert demonstrations: ${c.warmStart.demos}`);
  const demoTasks = Array.from({ length: c.warmStart.demos }, (_, i) => demoPool[i % demoPool.length] as SweTask);
  const demos = await expertDemos(demoTasks, c, hooks);
  return warmStartOn(c, demoPool, demos, hooks, say);
}

/**
 * The warm start on demonstrations already recorded (`demos`, as expertDemos gives them for
 * `demoPool`): the tokenizer, the model, copy pretraining and the SFT epochs. embeddedWarmStart
 * records the demonstrations and calls it; a study of warm-start settings records them once.
 */
export async function warmStartOn(
  c: PipelineConfig,
  demoPool: SweTask[],
  demos: Trajectory[],
  hooks: StageHooks,
  say: (line: string) => void = () => {},
): Promise<{ model: Model; tokenizer: Tokenizer }> {
  const tokenizer = Tokenizer.train(tokenizerCorpus(c, demoPool, demos), {
    vocabSize: c.tokenizer.vocabSize,
    split: c.tokenizer.split,
  });
  const model = Model.random(embeddedModelConfig(c, tokenizer.vocabSize), c.seed);
  say(`embedded model: ${(model.numParameters / 1e6).toFixed(2)} M parameters, vocabulary ${tokenizer.vocabSize}`);
  if (c.warmStart.enabled && c.warmStart.copySteps > 0) {
    const steps = await copyPretrain(
      { model, tokenizer } as Policy,
      {
        steps: c.warmStart.copySteps,
        batchSize: 16,
        lr: c.warmStart.lr,
        seed: c.seed * 13 + 1,
        optimizer: c.warmStart.optimizer,
      },
      hooks,
    );
    say(
      `copy pretraining: ${count(steps.length, 'step')}, loss ${steps[0]?.loss.toFixed(3)} -> ${steps.at(-1)?.loss.toFixed(3)}`,
    );
  }
  if (c.warmStart.enabled && c.warmStart.epochs > 0) {
    // With freshNames, epoch e's demonstrations carry names drawn by a seeded stream of their own.
    // With freshFiles, the same stream then draws each demonstration's module file name.
    // With copyMix, epoch e adds copy sequences drawn by another seeded stream of their own.
    const { freshNames, freshFiles, copyMix = 0 } = c.warmStart;
    const plain = freshNames || freshFiles ? null : demos.map((d) => demoSample(d, tokenizer));
    const stems = catalogueModules(c.miniSwe.catalogue).map((m) => m.name);
    const copies = Math.round(copyMix * demos.length);
    const demoSamples = (e: number) => {
      if (plain) return plain;
      const rng = mulberry32(c.seed * 611953 + e);
      return demos.map((d) => {
        const named = freshNames ? withFreshNames(d, NAME_POOL, rng) : d;
        return demoSample(freshFiles ? withFreshFiles(named, stems, rng) : named, tokenizer);
      });
    };
    const samples = (e: number) => {
      if (copies === 0) return demoSamples(e);
      const rng = mulberry32(c.seed * 392113 + 17 + e);
      return [...demoSamples(e), ...Array.from({ length: copies }, () => copySequence(rng, tokenizer.vocabSize))];
    };
    const policy = { model, tokenizer } as Policy;
    const options = { ...c.warmStart, warmupRatio: 0.05, stage: 'warmstart' };
    const steps = await sftEpochs(policy, samples, { ...options, seed: c.seed + 5 }, hooks);
    say(
      `warm start: ${count(steps.length, 'step')}, loss ${steps[0]?.loss.toFixed(3)} -> ${steps.at(-1)?.loss.toFixed(3)}`,
    );
    await trainToNameLoss(c, policy, demos, samples, options, hooks, say);
  }
  return { model, tokenizer };
}

/**
 * `warmStart.targetNameLoss`: while the loss on the fix's names is above the target, blocks of
 * `extendEpochs` more epochs (epoch indices after `epochs`, so the fresh names keep coming from
 * the same stream), each a new warmup-cosine cycle at `lr` with a new AdamW, at most
 * `maxExtraEpochs` in all. Each measure draws its names from its own stream (nameLossStream),
 * one the epochs never draw. Logs one `name-loss` event per measure.
 */
async function trainToNameLoss(
  c: PipelineConfig,
  policy: Policy,
  demos: Trajectory[],
  samples: (epoch: number) => TrainSample[],
  options: Omit<Parameters<typeof sftEpochs>[2], 'seed'>,
  hooks: StageHooks,
  say: (line: string) => void,
): Promise<void> {
  const { targetNameLoss: target, extendEpochs = 10, maxExtraEpochs = 20, epochs } = c.warmStart;
  if (target === undefined || target === null) return;
  let extra = 0;
  for (;;) {
    const measure = await nameLoss(policy.model, policy.tokenizer, demos, nameLossStream(c.seed, extra));
    const more = Math.min(extendEpochs, maxExtraEpochs - extra);
    const goOn = measure.nameLoss > target && more > 0;
    hooks.log({
      stage: 'warmstart',
      event: 'name-loss',
      epochs: epochs + extra,
      nameLoss: measure.nameLoss,
      otherLoss: measure.otherLoss,
      target,
      extend: goOn ? more : 0,
    });
    say(
      `warm start: loss on the fix's names ${measure.nameLoss.toFixed(3)} after ${count(epochs + extra, 'epoch')} (target ${target})${goOn ? `: ${count(more, 'more epoch')}` : ''}`,
    );
    if (!goOn) return;
    const from = epochs + extra;
    await sftEpochs(policy, (e) => samples(from + e), { ...options, epochs: more, seed: c.seed + 5 + from }, hooks);
    extra += more;
  }
}

/**
 * The embedded default's presets: `default` (the embedded run, at most 25 minutes on 2 cores) and
 * `smoke` (under 2). Each is a partial config over the config schema's defaults
 * (src/pipeline/config.ts), which registers them in PRESETS next to the generic `paper` preset.
 */
import type { PresetConfig } from '../pipeline/config.js';

/**
 * The default is the task design and budget the learnability probes found a model trained from
 * scratch can learn on 2 cores (docs/results.md): name slips whose issue is the error alone, every
 * task with its own local names (renameLocals, so a name must be read, not recalled), the direct
 * expert, a 0.9 M-parameter model with copy pretraining and the 'identifiers' tokenizer, the
 * compact prompt, demonstrations from half the training tasks and RL on the other half. The warm
 * start swaps every demonstration's names afresh each epoch (freshNames), so the base copies the
 * name in the error; half of the demonstrations write another scaffold's fences (foreignFormat
 * 0.5), so that, like the paper's base model, it fails mostly on format errors, per episode at
 * random, which RFT and DAPO learn away from the reward. RFT samples 10 per task and trains one
 * epoch, as the paper does: with 3 samples its kept count swung from 4 to 13 between runs on
 * different machines, and with 4 it changed nothing. DAPO samples 8 per task, so that few groups
 * are flat, with failed episodes' format-error turns trained, on 8 tasks per iteration in 2
 * optimizer steps of 32 samples (4 groups) each, the paper's shape of many trajectories per step
 * (128) and 2-8 steps per iteration: with 4 steps of 8 samples (one group) per step, the updates
 * read as noise, and DAPO ended below RFT on seeds 1 and 2. It refills flat groups from the
 * iteration's unused tasks for up to 2 rounds (DAPO's dynamic sampling), so that every step trains
 * on full groups: without refill, seed 2's iterations trained 0 to 16 samples and DAPO ended below
 * RFT. The turn penalty is off: with it from turn 5 of the 7, an unresolved episode that submits
 * early earned more than one that kept trying, and DAPO learned to submit rather than to fix; on
 * the validation split, DAPO from the RFT policies of seeds 501-505 lost 5.4 points of Pass@1 on
 * average with the penalty (on four seeds of five) and gained 2.3 without it (−4.9 to +6.8), more
 * than with it on every seed (scripts/branch-run.mjs --after eval-rft, docs/results.md). A higher
 * rate (3e-4) without the penalty collapsed seed 501's policy (43.5% -> 17.4%). DAPO runs 20
 * iterations: on the validation split, continued from the 16th to the 20th iteration, it raised
 * the weak seeds 1002, 1004 and 1005 by 2.3 to 5.5 points and held the others (docs/results.md
 * "Raising the weakest seeds"), at about 80 s more of a run alone; on fresh seeds 1101-1105 it
 * read base 18.4%, RFT 46.4%, DAPO 63.4% (DAPO ≥ 36.2% on every seed). It ran 16 before that:
 * in the study of seeds 601-605 the resolved share of its own rollouts was still rising at
 * iteration 8 on every seed, and on the validation split, DAPO continued from the 8th to the
 * 16th iteration raised Pass@1 on seeds 501-503 and 505 (+4.2 to +8.3 points) and held it on 504
 * (docs/results.md "How long DAPO runs"); DAPO's share of a run alone went from 177 s (seed 605, 8
 * iterations) to 328 s (seed 705, 16).
 * Format-error turns are masked in samples with a positive advantage only ('positive'): trained
 * with a resolved episode's advantage, they were pushed up, and format errors rose in DAPO's
 * rollouts on some seeds (701, 503); on the validation split, from the RFT policies of seeds
 * 501-505, the 16 iterations with 'positive' against false read +1.5 points of Pass@1 on average
 * (−2.3 to +7.3, higher on four seeds) with fewer format errors on four (docs/results.md).
 * The warm start runs 40 epochs: with 30, some seeds' bases did not learn to copy the name in the
 * error (loss on the fix's names 0.15-0.84 against 0.03 on other tokens); 40 lowered that loss on
 * all four validation seeds tried (401-404) and raised their mean validation Pass@1 from 4.2% to
 * 12.0% (scripts/warm-start-probe.mjs, docs/results.md). After the 40 epochs it measures that loss
 * on fresh names and trains blocks of 10 more epochs, at most 20, while it is above 0.06
 * (targetNameLoss): on the validation split, seed 504's base (loss 0.728 at 40 epochs) read 6.0%
 * Pass@1 and its whole pipeline 6.0 -> 9.4 -> 11.2%; with the target, 25.0 -> 53.9 -> 60.7%; seed
 * 502's base went from 12.2% to 18.0%. Bases already below the target train no longer.
 * The tasks come from the merged catalogue (the fifteen wide modules' code in the core's four
 * files), each split's tasks from distinct bug sites (distinctSites), so that the test split spans
 * 49 sites in 4 files, none above a third of it; the core catalogue's was 9 sites, two thirds in
 * one module. The warm start rehearses copy pretraining (copyMix 0.25: 24 copy sequences beside
 * the 96 demonstrations each epoch): without it the warm start overwrote the copying, and on the
 * merged catalogue seed 402's base never learned to copy the name (loss 2.5 after 60 epochs,
 * Pass@1 0 through RFT and DAPO); with it, on the validation split, seeds 401 and 402 read
 * 34.1 -> 79.7 -> 85.9% and 7.0 -> 24.2 -> 58.1% (base, RFT, DAPO; docs/results.md).
 * It evaluates 48 held-out tasks 8 times each (384 episodes): at 24 tasks and k = 3 one
 * evaluation was several points off (a checkpoint read 38.9% at k = 3 and 29.5% at k = 12), and
 * the held-out tasks' second half is harder than the first.
 */
const DEFAULT: PresetConfig = {
  preset: 'default',
  miniSwe: {
    trainTasks: 64,
    testTasks: 48,
    difficulty: 0,
    kinds: ['misspelled-name'],
    renameLocals: true,
    issue: 'error',
    catalogue: 'merged',
    distinctSites: true,
  },
  embeddedModel: { hiddenSize: 128, layers: 4, heads: 4, kvHeads: 2, intermediateSize: 384 },
  episode: { maxTurns: 7, maxTokensPerTurn: 96, maxContextTokens: 3072, concurrency: 32 },
  warmStart: {
    enabled: true,
    demos: 96,
    noise: 0.2,
    style: 'direct',
    foreignFormat: 0.5,
    freshNames: true,
    copySteps: 1500,
    copyMix: 0.25,
    demoTasks: 32,
    epochs: 40,
    targetNameLoss: 0.06,
    lr: 1e-3,
    batchSize: 4,
  },
  eval: { k: 8 },
  rft: { samplesPerTask: 10, epochs: 1, lr: 2e-4, batchSize: 4 },
  dapo: {
    lr: 1e-4,
    samplesPerTask: 8,
    stepsPerIteration: 2,
    refillRounds: 2,
    maskFormatErrors: 'positive',
    turnPenalty: false,
    stages: [{ iterations: 20, maxTurns: 7, maxContextTokens: 3072, tasksPerIteration: 8 }],
  },
};

/**
 * The smoke run is small but trains in every stage: a 0.5 M-parameter model learns the four
 * training tasks' direct fixes by heart (warm-start loss 6.2 -> 0.02), a quarter of them in
 * another scaffold's fences, so that its samples at temperature 1 solve some and fail others: RFT
 * keeps a few resolved trajectories and DAPO's groups are mixed (seed 1 with hashed sampling
 * seeds, on an AVX2 machine: 3 kept of 24; DAPO trained 4 of 16 samples in each iteration). It does not generalise to the held-out tasks;
 * it is there to show that every stage, checkpoint and resume path works, quickly. The turn
 * penalty is off.
 */
const SMOKE: PresetConfig = {
  preset: 'smoke',
  miniSwe: { trainTasks: 4, testTasks: 3, kinds: ['misspelled-name'], issue: 'error' },
  embeddedModel: { hiddenSize: 128, layers: 2, heads: 4, kvHeads: 2, intermediateSize: 384 },
  episode: { maxTurns: 6, maxTokensPerTurn: 96, maxContextTokens: 2048, concurrency: 8 },
  warmStart: {
    demos: 4,
    noise: 0,
    style: 'direct',
    foreignFormat: 0.25,
    epochs: 120,
    lr: 3e-3,
    batchSize: 2,
  },
  tokenizer: { vocabSize: 1200 },
  rft: { samplesPerTask: 6, epochs: 1, lr: 2e-4, batchSize: 4 },
  dapo: {
    lr: 1e-4,
    samplesPerTask: 4,
    stepsPerIteration: 1,
    refillRounds: 1,
    maskFormatErrors: false,
    turnPenalty: false,
    stages: [{ iterations: 2, maxTurns: 6, maxContextTokens: 2048, tasksPerIteration: 3 }],
  },
};

/** The embedded default's presets, by name, in the order the CLI lists them. */
export const EMBEDDED_PRESETS: Readonly<Record<'default' | 'smoke', PresetConfig>> = { default: DEFAULT, smoke: SMOKE };

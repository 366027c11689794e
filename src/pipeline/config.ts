/**
 * The pipeline's configuration: presets (`smoke`, `default`) and JSON configs for real runs,
 * validated field by field so that a bad config fails before anything runs, naming the field.
 */
import { readFile } from 'node:fs/promises';
import { BUG_KINDS } from '../env/mini-swe/generate.js';
import { SwerlError } from '../errors.js';
import type { LossAggregation } from '../train/losses.js';

/**
 * AdamW's settings for one training phase. The paper's (arXiv 2508.03501, App. C), for RFT and
 * both RL stages: weight decay 0.1, betas 0.9 / 0.999, eps 1e-8, gradient clipping 1.0.
 */
export interface OptimizerConfig {
  weightDecay: number;
  beta1: number;
  beta2: number;
  eps: number;
  /** Clip the global gradient norm to this before each update; 0 = off. */
  maxGradNorm: number;
}

/**
 * One DAPO stage of the two-stage schedule. In a config file only `iterations`, `maxTurns`,
 * `maxContextTokens` and `tasksPerIteration` are required; the others default to the `dapo`
 * section's value of the same name, so a resolved config's stages are complete.
 */
export interface DapoStageConfig {
  iterations: number;
  maxTurns: number;
  maxContextTokens: number;
  /** Tasks sampled per iteration (G samples each). */
  tasksPerIteration: number;
  /** G, the samples per task (default dapo.samplesPerTask; the paper's is 10 in both stages). */
  samplesPerTask: number;
  /** The clip range (1 - clipLow, 1 + clipHigh) (default dapo's; the paper's: 0.2/0.3, then 0.2/0.26). */
  clipLow: number;
  clipHigh: number;
  /**
   * Trajectories per optimizer step (default dapo.batchSize; the paper's: 128, then 256): an
   * iteration takes ceil(trained samples / batchSize) steps, so the steps vary with the samples
   * that have an advantage, as in the paper. 0 = a fixed `dapo.stepsPerIteration` steps.
   */
  batchSize: number;
  /**
   * The turn penalty's threshold L_thr (default dapo.turnPenaltyThreshold; the paper's: 10): with
   * `dapo.turnPenalty`, an episode of |τ| >= L_thr turns gets (L_thr - |τ|) / (maxTurns - L_thr).
   * It must be below the stage's maxTurns.
   */
  turnPenaltyThreshold: number;
}

/** Everything a run needs. */
export interface PipelineConfig {
  preset: string;
  seed: number;
  /** A Hugging Face model folder, or null for the embedded model trained from scratch. */
  modelDir: string | null;
  /** A tasks file (.json/.jsonl/.parquet), or null for the generated mini-SWE suite. */
  tasksFile: string | null;
  /** The generated suite: tier, and optionally only some bug kinds (BUG_KINDS). */
  miniSwe: {
    trainTasks: number;
    testTasks: number;
    difficulty: number;
    kinds: string[] | null;
    renameLocals: boolean;
    /** What a mutant task's issue shows: the failing test and its error, or the error only. */
    issue: 'reproduction' | 'error';
    /** Which modules (generateMiniSweTasks' `catalogue`): the core four, or fifteen. */
    catalogue: 'core' | 'wide';
    /**
     * Draw each split's tasks from distinct bug sites while the split has sites left
     * (generateMiniSweTasks' `distinctSites`), so that N held-out tasks measure N sites, not a
     * few sites many times.
     */
    distinctSites: boolean;
  };
  /** The embedded model's shape (a Qwen2 model trained from scratch; vocab from the tokenizer). */
  embeddedModel: { hiddenSize: number; layers: number; heads: number; kvHeads: number; intermediateSize: number };
  /** Held-out tasks for evaluation when tasksFile is set: the last `evalTasks` of the file. */
  evalTasks: number;
  /**
   * Write every phase's rollout records to `<out>/rollouts/<phase>.msgpack` (readRollouts reads
   * them back; verl's rollout_data_dir). Default true.
   */
  saveRollouts: boolean;
  /**
   * Where episodes run. With 'docker', each task runs (and is graded) in `taskImage(task, image)`:
   * its own `image`, else SWE-bench's name for the instance, else this `image`, else
   * node:20-bookworm.
   */
  sandbox: { kind: 'local' | 'docker'; image?: string };
  /** 'remote': an OpenAI-compatible server at `url` serving `model` (evaluation-only runs). */
  engine: { backend: 'local' | 'remote'; url?: string; model?: string; kvBlocks: number; maxBatchTokens: number };
  episode: {
    maxTurns: number;
    maxTokensPerTurn: number;
    maxContextTokens: number;
    commandTimeoutMs: number;
    episodeTimeoutMs: number;
    concurrency: number;
    maxObservationChars: number;
    /**
     * Mask test runners' wall-clock figures (`duration_ms`, pytest's `in 0.12s`) in observations
     * (maskTimings), so that rollouts are a function of the seed and the weights (default true).
     */
    maskTimings: boolean;
    /**
     * The scaffold's prompts: 'paper' (the paper's layout), 'compact' (scaffoldPrompts), or 'auto'
     * (the default): compact for the embedded model trained from scratch, paper for a `modelDir`.
     */
    prompt: 'auto' | 'paper' | 'compact';
  };
  warmStart: {
    enabled: boolean;
    demos: number;
    noise: number;
    /** The expert's plan (expertPolicy's style). */
    style: 'thorough' | 'direct';
    /**
     * In [0, 1]: the share of the demonstrations written in another scaffold's action format
     * (```bash fences instead of ```command, as mini-SWE-agent writes them), chosen by seed. It
     * stands for an instruct model's prior over formats: the paper's base model fails mostly on
     * format errors (App. E), which RFT, trained on its resolved trajectories with format-error
     * turns masked, and RL then remove. In this scaffold such a fence is a format error.
     */
    foreignFormat: number;
    /**
     * Name augmentation (withFreshNames): each epoch, every misspelled-name demonstration gets
     * another slip and right name from the generator's pool, through issue, observations and
     * commands, so that the warm start teaches reading the name in the error, not remembering it.
     */
    freshNames: boolean;
    /**
     * File augmentation (withFreshFiles): each epoch, every demonstration's module gets another
     * catalogue module's file name through issue, observations and commands, so that the warm
     * start teaches copying the file grep printed, not remembering it (default false).
     */
    freshFiles: boolean;
    /** Induction pretraining steps (copyPretrain) before the demonstrations; 0 = none. */
    copySteps: number;
    /**
     * 0: every training task gives demonstrations and RFT and DAPO train on every task. N > 0: the
     * first N training tasks give the demonstrations and RFT and DAPO train on the others, as the
     * paper's RL tasks are not its model's fine-tuning data (RL then gains only where the policy
     * generalises, not where it recalls a demonstration).
     */
    demoTasks: number;
    epochs: number;
    lr: number;
    batchSize: number;
    optimizer: OptimizerConfig;
  };
  /**
   * The embedded model's tokenizer, trained on the demonstrations: its vocabulary size and its
   * pre-tokenization (Tokenizer.train's `split`: 'identifiers', the default, keeps a name the same
   * tokens in every context so that the model can copy names it has not seen; 'stems' also cuts
   * a word's final `s` off, so that a name and its plural share tokens; 'qwen2').
   */
  tokenizer: { vocabSize: number; split: 'qwen2' | 'identifiers' | 'stems' };
  /**
   * Evaluation. The test split is read once per stage, for the results table: `k` samples per
   * task after each stage. With `every` > 0, DAPO validates after every `every` iterations
   * (verl's `test_freq`) with `everyK` samples per task (0: `k`) on the validation split, never on
   * the test split: `validationTasks` tasks, from bug sites of their own for the generated suite
   * (split 'validation'), or the rows before the held-out ones of a tasks file. `limits`: the
   * turn and context limits evaluations run with, 'last-stage' (the last DAPO stage's, as the
   * paper evaluates at its final stage's limits; the episode's without DAPO) or 'episode'.
   */
  eval: { k: number; every: number; everyK: number; validationTasks: number; limits: 'last-stage' | 'episode' };
  rft: {
    enabled: boolean;
    /**
     * With N > 0, RFT samples the first N of the RL tasks and DAPO trains on the others, tasks
     * the policy has not been fine-tuned on (with a pool of thousands, as the paper's, one RFT
     * epoch memorises little; with tens, DAPO on RFT's own tasks mostly replays their fixes).
     * 0 = both on all of them.
     */
    tasks: number;
    samplesPerTask: number;
    epochs: number;
    lr: number;
    warmupRatio: number;
    batchSize: number;
    /**
     * RFT samples with the one-shot demonstration (the paper's App. F.2: a worked bug fix in the
     * scaffold's format, appended to the system prompt) when it samples from the base policy.
     * The demonstration is not part of the trained samples' prompt.
     */
    oneShot: boolean;
    optimizer: OptimizerConfig;
  };
  dapo: {
    enabled: boolean;
    stages: DapoStageConfig[];
    samplesPerTask: number;
    stepsPerIteration: number;
    /** Trajectories per optimizer step, the stages' default (DapoStageConfig.batchSize); 0 = stepsPerIteration. */
    batchSize: number;
    /**
     * Passes over each iteration's samples (verl's `ppo_epochs`, TRL's `num_iterations`); each
     * pass takes `stepsPerIteration` steps over a fresh shuffle. 1 = the paper's (each sample once).
     */
    epochs: number;
    lr: number;
    /**
     * The learning rate over DAPO's iterations: 'constant' (the paper's), or 'cosine' from `lr` at
     * the first iteration to `lr · minLrRatio` after the last (verl's `lr_scheduler_type`).
     */
    lrSchedule: 'constant' | 'cosine';
    minLrRatio: number;
    clipLow: number;
    clipHigh: number;
    agg: LossAggregation;
    /**
     * Dr.GRPO's constant for agg 'seq-mean-token-sum-norm': each sample's token sum is divided by
     * it. 0 (the default) = the stage's generation budget, maxTurns × episode.maxTokensPerTurn
     * (Dr.GRPO divides by the max generation length).
     */
    normLength: number;
    estimator: 'grpo' | 'drgrpo' | 'rloo';
    dropZeroAdvantage: boolean;
    /**
     * DAPO's dynamic-sampling refill: rounds of extra tasks sampled (from the stage's pool, not yet
     * used this iteration) until `tasksPerIteration` groups have a non-zero advantage; 0 = off.
     */
    refillRounds: number;
    filterOverlong: boolean;
    /**
     * Whether turns with a format error carry no gradient in RL (true, the default, as in RFT);
     * false trains them with their episode's advantage, so that a failed episode's malformed turns
     * are pushed down too (the paper does not say which it did).
     */
    maskFormatErrors: boolean;
    /** Weight of the k3 KL penalty to a frozen reference (the policy where DAPO starts); 0 = off. */
    klCoef: number;
    entropyCoef: number;
    temperature: number;
    topP: number;
    topK: number;
    minP: number;
    /** The paper's turn penalty (turnPenalty) on DAPO's rewards, with each stage's threshold. */
    turnPenalty: boolean;
    /** The stages' default turn-penalty threshold (DapoStageConfig.turnPenaltyThreshold). */
    turnPenaltyThreshold: number;
    /**
     * Between stages, tasks whose success rate over the stage's iterations is at least this are
     * dropped as easy, and tasks never solved as unsolvable (the paper's curriculum: 2/3). 1 drops
     * only the tasks solved every time.
     */
    easyTaskThreshold: number;
    optimizer: OptimizerConfig;
  };
  /**
   * Which checkpoints a finished run keeps in `<out>/checkpoints/`: 'stages' (the default) keeps
   * each finished stage's (base, RFT, the final DAPO iteration) and the latest one; 'all' keeps
   * every iteration's; 'last' only the latest. The KL reference stays while DAPO needs it.
   */
  checkpoints: { keep: 'stages' | 'all' | 'last' };
}

/** The SFT phases' AdamW (transformers' Trainer's weight decay 0.01). */
const SFT_OPTIMIZER: OptimizerConfig = { weightDecay: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8, maxGradNorm: 1 };
/** The paper's AdamW for RFT and RL (App. C). */
const PAPER_OPTIMIZER: OptimizerConfig = { weightDecay: 0.1, beta1: 0.9, beta2: 0.999, eps: 1e-8, maxGradNorm: 1 };
/** DAPO's AdamW as the embedded presets use it (no weight decay). */
const RL_OPTIMIZER: OptimizerConfig = { weightDecay: 0, beta1: 0.9, beta2: 0.999, eps: 1e-8, maxGradNorm: 1 };

/** A DAPO stage as a config file or preset gives it: the fields not given come from the dapo section. */
export type DapoStageInput = Pick<
  DapoStageConfig,
  'iterations' | 'maxTurns' | 'maxContextTokens' | 'tasksPerIteration'
> &
  Partial<DapoStageConfig>;

/** A preset: a config whose stages may leave per-stage settings to the dapo section (resolveConfig fills them). */
export type PresetConfig = Omit<PipelineConfig, 'dapo'> & {
  dapo: Omit<PipelineConfig['dapo'], 'stages'> & { stages: DapoStageInput[] };
};

const BASE: Omit<PresetConfig, 'preset'> = {
  seed: 1,
  modelDir: null,
  tasksFile: null,
  miniSwe: {
    trainTasks: 32,
    testTasks: 12,
    difficulty: 0,
    kinds: null,
    renameLocals: false,
    issue: 'reproduction',
    catalogue: 'core',
    distinctSites: false,
  },
  embeddedModel: { hiddenSize: 256, layers: 6, heads: 4, kvHeads: 2, intermediateSize: 768 },
  evalTasks: 12,
  saveRollouts: true,
  sandbox: { kind: 'local' },
  engine: { backend: 'local', kvBlocks: 8192, maxBatchTokens: 2048 },
  episode: {
    maxTurns: 12,
    maxTokensPerTurn: 160,
    maxContextTokens: 6144,
    commandTimeoutMs: 20_000,
    episodeTimeoutMs: 180_000,
    concurrency: 16,
    maxObservationChars: 2000,
    maskTimings: true,
    prompt: 'auto',
  },
  warmStart: {
    enabled: true,
    demos: 48,
    noise: 0.3,
    style: 'thorough',
    foreignFormat: 0,
    freshNames: false,
    freshFiles: false,
    copySteps: 0,
    demoTasks: 0,
    epochs: 2,
    lr: 2e-3,
    batchSize: 8,
    optimizer: { ...SFT_OPTIMIZER },
  },
  tokenizer: { vocabSize: 2048, split: 'identifiers' },
  eval: { k: 2, every: 0, everyK: 0, validationTasks: 0, limits: 'last-stage' },
  rft: {
    enabled: true,
    tasks: 0,
    samplesPerTask: 2,
    epochs: 2,
    lr: 5e-4,
    warmupRatio: 0.1,
    batchSize: 8,
    oneShot: false,
    optimizer: { ...SFT_OPTIMIZER },
  },
  dapo: {
    enabled: true,
    stages: [{ iterations: 3, maxTurns: 12, maxContextTokens: 6144, tasksPerIteration: 8 }],
    samplesPerTask: 4,
    stepsPerIteration: 2,
    batchSize: 0,
    epochs: 1,
    lr: 3e-4,
    lrSchedule: 'constant',
    minLrRatio: 0,
    clipLow: 0.2,
    clipHigh: 0.28,
    agg: 'token-mean',
    normLength: 0,
    estimator: 'grpo',
    dropZeroAdvantage: true,
    refillRounds: 0,
    filterOverlong: false,
    maskFormatErrors: true,
    klCoef: 0,
    entropyCoef: 0,
    temperature: 1,
    topP: 1,
    topK: 0,
    minP: 0,
    turnPenalty: true,
    turnPenaltyThreshold: 10,
    easyTaskThreshold: 2 / 3,
    optimizer: { ...RL_OPTIMIZER },
  },
  checkpoints: { keep: 'stages' },
};

/**
 * The presets: `default` (the embedded run, at most 25 minutes on 2 cores) and `smoke` (under 2).
 * The smoke run is small but trains in every stage: a 0.5 M-parameter model learns the four
 * training tasks' direct fixes by heart (warm-start loss 6.2 -> 0.02), a quarter of them in
 * another scaffold's fences, so that its samples at temperature 1 solve some and fail others: RFT
 * keeps a few resolved trajectories and DAPO's groups are mixed (seeds 1 and 2: 3 and 2 kept of
 * 24; DAPO trained 8 to 12 samples every iteration). It does not generalise to the held-out tasks;
 * it is there to show that every stage, checkpoint and resume path works, quickly.
 * The default is the task design and budget the learnability probes found a model trained from
 * scratch can learn on 2 cores (docs/results.md): name slips whose issue is the error
 * alone, every task with its own local names (renameLocals, so a name must be read, not
 * recalled), the direct expert, a 0.9 M-parameter model with copy pretraining and the
 * 'identifiers' tokenizer, the compact prompt, demonstrations from half the training tasks and
 * RL on the other half. The warm start swaps every demonstration's names afresh each epoch
 * (freshNames), so the base copies the name in the error; half of the demonstrations write
 * another scaffold's fences (foreignFormat 0.5), so that, like the paper's base model, it fails
 * mostly on format errors, per episode at random, which RFT and DAPO learn away from the reward.
 * RFT samples 10 per task and trains one epoch, as the paper does: with 3 samples its kept count
 * swung from 4 to 13 between runs on different machines, and with 4 it changed nothing. DAPO
 * samples 8 per task, so that few groups are flat, with format-error turns trained, on 8 tasks per
 * iteration in 2 optimizer steps of 32 samples (4 groups) each, the paper's shape of many
 * trajectories per step (128) and 2-8 steps per iteration: with 4 steps of 8 samples (one group)
 * per step, the updates read as noise, and DAPO ended below RFT on seeds 1 and 2. It refills flat groups from the iteration's unused tasks for up to 2
 * rounds (DAPO's dynamic sampling), so that every step trains on full groups: without refill, seed
 * 2's iterations trained 0 to 16 samples and DAPO ended below RFT.
 * It evaluates 48 held-out tasks 8 times each (384 episodes): at 24 tasks and k = 3 one
 * evaluation was several points off (a checkpoint read 38.9% at k = 3 and 29.5% at k = 12), and
 * the held-out tasks' second half is harder than the first.
 */
export const PRESETS: Record<string, PresetConfig> = {
  default: {
    preset: 'default',
    ...structuredClone(BASE),
    miniSwe: {
      trainTasks: 64,
      testTasks: 48,
      difficulty: 0,
      kinds: ['misspelled-name'],
      renameLocals: true,
      issue: 'error',
      catalogue: 'core',
      distinctSites: false,
    },
    embeddedModel: { hiddenSize: 128, layers: 4, heads: 4, kvHeads: 2, intermediateSize: 384 },
    episode: { ...BASE.episode, maxTurns: 7, maxTokensPerTurn: 96, maxContextTokens: 3072, concurrency: 32 },
    warmStart: {
      enabled: true,
      demos: 96,
      noise: 0.2,
      style: 'direct',
      foreignFormat: 0.5,
      freshNames: true,
      freshFiles: false,
      copySteps: 1500,
      demoTasks: 32,
      epochs: 30,
      lr: 1e-3,
      batchSize: 4,
      optimizer: { ...SFT_OPTIMIZER },
    },
    eval: { ...BASE.eval, k: 8 },
    rft: { ...structuredClone(BASE.rft), samplesPerTask: 10, epochs: 1, lr: 2e-4, batchSize: 4 },
    dapo: {
      ...structuredClone(BASE.dapo),
      lr: 1e-4,
      samplesPerTask: 8,
      stepsPerIteration: 2,
      refillRounds: 2,
      maskFormatErrors: false,
      turnPenaltyThreshold: 5,
      stages: [{ iterations: 8, maxTurns: 7, maxContextTokens: 3072, tasksPerIteration: 8 }],
    },
  },
  smoke: {
    preset: 'smoke',
    ...structuredClone(BASE),
    miniSwe: {
      trainTasks: 4,
      testTasks: 3,
      difficulty: 0,
      kinds: ['misspelled-name'],
      renameLocals: false,
      issue: 'error',
      catalogue: 'core',
      distinctSites: false,
    },
    embeddedModel: { hiddenSize: 128, layers: 2, heads: 4, kvHeads: 2, intermediateSize: 384 },
    episode: { ...BASE.episode, maxTurns: 6, maxTokensPerTurn: 96, maxContextTokens: 2048, concurrency: 8 },
    warmStart: {
      enabled: true,
      demos: 4,
      noise: 0,
      style: 'direct',
      foreignFormat: 0.25,
      freshNames: false,
      freshFiles: false,
      copySteps: 0,
      demoTasks: 0,
      epochs: 120,
      lr: 3e-3,
      batchSize: 2,
      optimizer: { ...SFT_OPTIMIZER },
    },
    tokenizer: { ...BASE.tokenizer, vocabSize: 1200 },
    eval: { ...BASE.eval },
    rft: { ...structuredClone(BASE.rft), samplesPerTask: 6, epochs: 1, lr: 2e-4, batchSize: 4 },
    dapo: {
      ...structuredClone(BASE.dapo),
      lr: 1e-4,
      samplesPerTask: 4,
      stepsPerIteration: 1,
      refillRounds: 1,
      maskFormatErrors: false,
      turnPenalty: false,
      stages: [{ iterations: 2, maxTurns: 6, maxContextTokens: 2048, tasksPerIteration: 3 }],
    },
  },
};

/**
 * The paper's RL (arXiv 2508.03501, §4, App. C) for a real model and task file: set `modelDir`
 * (e.g. Qwen2.5-72B-Instruct) and `tasksFile` (SWE-rebench-style tasks). RFT samples 10 per task
 * with the one-shot demonstration and trains one epoch (lr 5e-6, cosine, weight decay 0.1); DAPO
 * runs two stages, G = 10, lr 1e-6 constant, token-mean loss, no KL, temperature 1 without filters,
 * zero-advantage groups dropped without refill, overlong episodes kept, the turn penalty at
 * L_thr = 10: stage 1 at 65k context and 40 turns, 300 tasks per iteration, 128 trajectories
 * per step, ε 0.2/0.3; stage 2 at 131k and 80 turns, 100 tasks, 256 per step, ε 0.2/0.26, on the
 * tasks left after the curriculum filter (success rate >= 2/3 or never solved). Iteration counts
 * are not in the paper's text (over 100 in all); 50 + 50 is a placeholder to set. Evaluation
 * uses the last stage's limits, as the paper evaluates at 131k.
 */
PRESETS.paper = {
  ...structuredClone(PRESETS.default as PresetConfig),
  preset: 'paper',
  miniSwe: { ...structuredClone(BASE.miniSwe) },
  warmStart: { ...structuredClone(BASE.warmStart), enabled: false },
  episode: { ...BASE.episode, maxTurns: 40, maxTokensPerTurn: 4096, maxContextTokens: 65536, prompt: 'paper' },
  engine: { ...BASE.engine, kvBlocks: 8448 },
  eval: { k: 10, every: 0, everyK: 0, validationTasks: 0, limits: 'last-stage' },
  rft: {
    enabled: true,
    tasks: 0,
    samplesPerTask: 10,
    epochs: 1,
    lr: 5e-6,
    warmupRatio: 0.1,
    batchSize: 64,
    oneShot: true,
    optimizer: { ...PAPER_OPTIMIZER },
  },
  dapo: {
    ...structuredClone(BASE.dapo),
    samplesPerTask: 10,
    lr: 1e-6,
    batchSize: 128,
    clipHigh: 0.3,
    refillRounds: 0,
    maskFormatErrors: true,
    turnPenalty: true,
    turnPenaltyThreshold: 10,
    easyTaskThreshold: 2 / 3,
    optimizer: { ...PAPER_OPTIMIZER },
    stages: [
      {
        iterations: 50,
        maxTurns: 40,
        maxContextTokens: 65536,
        tasksPerIteration: 300,
        samplesPerTask: 10,
        clipLow: 0.2,
        clipHigh: 0.3,
        batchSize: 128,
        turnPenaltyThreshold: 10,
      },
      {
        iterations: 50,
        maxTurns: 80,
        maxContextTokens: 131072,
        tasksPerIteration: 100,
        samplesPerTask: 10,
        clipLow: 0.2,
        clipHigh: 0.26,
        batchSize: 256,
        turnPenaltyThreshold: 10,
      },
    ],
  },
};

/** The scaffold prompt a run uses: episode.prompt, with 'auto' resolved by the policy model. */
export function promptStyleOf(c: PipelineConfig): 'paper' | 'compact' {
  if (c.episode.prompt !== 'auto') return c.episode.prompt;
  return c.modelDir ? 'paper' : 'compact';
}

function fail(field: string, expected: string, got: unknown): never {
  throw new SwerlError(
    `config field ${field} must be ${expected}, got ${JSON.stringify(got)}; see docs/training.md, "Configs"`,
    'INVALID_CONFIG',
  );
}

type Spec = 'int+' | 'int0' | 'num+' | 'num0' | 'unit' | 'bool' | 'str?' | 'object' | string[];

/** An optimizer section: AdamW's settings, each in its range. */
function checkOptimizer(o: unknown, path: string): void {
  if (typeof o !== 'object' || o === null || Array.isArray(o)) fail(path.replace(/\.$/, ''), 'an object', o);
  check(
    o as Record<string, unknown>,
    { weightDecay: 'num0', beta1: 'unit', beta2: 'unit', eps: 'num+', maxGradNorm: 'num0' },
    path,
  );
  const { beta1, beta2 } = o as OptimizerConfig;
  if (beta1 >= 1) fail(`${path}beta1`, 'in [0, 1)', beta1);
  if (beta2 >= 1) fail(`${path}beta2`, 'in [0, 1)', beta2);
}

/** Checks one object against a spec, field by field, rejecting unknown fields. */
function check(obj: Record<string, unknown>, spec: Record<string, Spec>, path: string): void {
  for (const k of Object.keys(obj)) if (!(k in spec)) fail(`${path}${k}`, `one of ${Object.keys(spec).join(', ')}`, k);
  for (const [k, s] of Object.entries(spec)) {
    const v = obj[k];
    const f = `${path}${k}`;
    if (Array.isArray(s)) {
      if (!s.includes(v as string)) fail(f, s.map((x) => `'${x}'`).join(' | '), v);
    } else if (s === 'bool') {
      if (typeof v !== 'boolean') fail(f, 'true or false', v);
    } else if (s === 'object') {
      if (typeof v !== 'object' || v === null || Array.isArray(v)) fail(f, 'an object', v);
    } else if (s === 'str?') {
      if (v !== null && v !== undefined && typeof v !== 'string') fail(f, 'a string or null', v);
    } else {
      if (typeof v !== 'number' || !Number.isFinite(v)) fail(f, 'a number', v);
      if ((s === 'int+' || s === 'int0') && !Number.isInteger(v)) fail(f, 'an integer', v);
      if ((s === 'int+' || s === 'num+') && v <= 0) fail(f, 'greater than 0', v);
      if ((s === 'int0' || s === 'num0') && v < 0) fail(f, '0 or more', v);
      if (s === 'unit' && (v < 0 || v > 1)) fail(f, 'in [0, 1]', v);
    }
  }
}

function merge<T>(base: T, over: unknown, path: string): T {
  if (over === undefined) return structuredClone(base);
  if (Array.isArray(base)) return over as T;
  if (typeof base === 'object' && base !== null) {
    if (typeof over !== 'object' || over === null || Array.isArray(over))
      fail(path.replace(/\.$/, '') || 'config', 'an object', over);
    const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
    for (const [k, v] of Object.entries(over as Record<string, unknown>))
      out[k] = k in out ? merge(out[k], v, `${path}${k}.`) : v;
    return out as T;
  }
  return over as T;
}

/** A preset's config with `overrides` merged in, validated. INVALID_CONFIG names the bad field. */
export function resolveConfig(overrides: unknown = {}, preset = 'default'): PipelineConfig {
  const base = PRESETS[preset];
  if (!base) fail('preset', Object.keys(PRESETS).join(' | '), preset);
  const c = merge(base, overrides, '') as unknown as PipelineConfig;
  const top = c as unknown as Record<string, unknown>;
  const sections = [
    'miniSwe',
    'embeddedModel',
    'sandbox',
    'engine',
    'episode',
    'warmStart',
    'tokenizer',
    'eval',
    'rft',
    'dapo',
    'checkpoints',
  ];
  for (const k of sections)
    if (typeof top[k] !== 'object' || top[k] === null || Array.isArray(top[k])) fail(k, 'an object', top[k]);
  const scalars = Object.fromEntries(Object.entries(top).filter(([k]) => !sections.includes(k)));
  const scalarSpec: Record<string, Spec> = {
    preset: 'str?',
    seed: 'int0',
    modelDir: 'str?',
    tasksFile: 'str?',
    evalTasks: 'int+',
    saveRollouts: 'bool',
  };
  // An unknown top-level key names every valid one, the sections too (not only the scalars).
  for (const k of Object.keys(scalars))
    if (!(k in scalarSpec)) fail(k, `one of ${[...Object.keys(scalarSpec), ...sections].join(', ')}`, k);
  check(scalars, scalarSpec, '');
  check(c.checkpoints as never, { keep: ['stages', 'all', 'last'] }, 'checkpoints.');
  const ms = c.miniSwe as unknown as Record<string, unknown>;
  check(
    { ...ms, kinds: undefined },
    {
      trainTasks: 'int+',
      testTasks: 'int+',
      difficulty: 'int0',
      kinds: 'str?',
      renameLocals: 'bool',
      issue: ['reproduction', 'error'],
      catalogue: ['core', 'wide'],
      distinctSites: 'bool',
    },
    'miniSwe.',
  );
  if (
    ms.kinds !== null &&
    (!Array.isArray(ms.kinds) ||
      ms.kinds.length === 0 ||
      ms.kinds.some((k) => !(BUG_KINDS as readonly string[]).includes(k as string)))
  )
    fail('miniSwe.kinds', `null or a non-empty array of ${BUG_KINDS.join(', ')}`, ms.kinds);
  check(
    c.embeddedModel as never,
    { hiddenSize: 'int+', layers: 'int+', heads: 'int+', kvHeads: 'int+', intermediateSize: 'int+' },
    'embeddedModel.',
  );
  const em = c.embeddedModel;
  if (em.hiddenSize % em.heads !== 0 || (em.hiddenSize / em.heads) % 2 !== 0)
    fail('embeddedModel.heads', `a divisor of hiddenSize ${em.hiddenSize} leaving an even head size`, em.heads);
  if (em.heads % em.kvHeads !== 0) fail('embeddedModel.kvHeads', `a divisor of heads ${em.heads}`, em.kvHeads);
  if (c.miniSwe.difficulty > 3) fail('miniSwe.difficulty', 'in [0, 3]', c.miniSwe.difficulty);
  const sb = c.sandbox as unknown as Record<string, unknown>;
  check({ kind: sb.kind }, { kind: ['local', 'docker'] }, 'sandbox.');
  if (sb.image !== undefined && typeof sb.image !== 'string') fail('sandbox.image', 'an image name', sb.image);
  for (const k of Object.keys(sb)) if (k !== 'kind' && k !== 'image') fail(`sandbox.${k}`, 'kind or image', k);
  const en = c.engine as unknown as Record<string, unknown>;
  check(
    { backend: en.backend, kvBlocks: en.kvBlocks, maxBatchTokens: en.maxBatchTokens },
    { backend: ['local', 'remote'], kvBlocks: 'int+', maxBatchTokens: 'int+' },
    'engine.',
  );
  if (en.backend === 'remote') {
    if (typeof en.url !== 'string') fail('engine.url', 'the server URL (backend remote)', en.url);
    if (typeof c.modelDir !== 'string')
      fail('modelDir', 'the served model folder (its tokenizer), with backend remote', c.modelDir);
    const training = ['warmStart', 'rft', 'dapo'].filter((k) => (top[k] as { enabled: boolean }).enabled);
    if (training.length > 0)
      fail(
        `${training[0]}.enabled`,
        "false with engine.backend 'remote' (the pipeline updates weights in process; a remote server evaluates only)",
        true,
      );
  }
  if (en.model !== undefined && typeof en.model !== 'string') fail('engine.model', 'the served model name', en.model);
  check(
    c.episode as never,
    {
      prompt: ['auto', 'paper', 'compact'],
      maxTurns: 'int+',
      maxTokensPerTurn: 'int+',
      maxContextTokens: 'int+',
      commandTimeoutMs: 'int+',
      episodeTimeoutMs: 'int+',
      concurrency: 'int+',
      maxObservationChars: 'int+',
      maskTimings: 'bool',
    },
    'episode.',
  );
  check(
    c.warmStart as never,
    {
      enabled: 'bool',
      demos: 'int0',
      noise: 'unit',
      style: ['thorough', 'direct'],
      foreignFormat: 'unit',
      freshNames: 'bool',
      freshFiles: 'bool',
      copySteps: 'int0',
      demoTasks: 'int0',
      epochs: 'int0',
      lr: 'num0',
      batchSize: 'int+',
      optimizer: 'object',
    },
    'warmStart.',
  );
  checkOptimizer(c.warmStart.optimizer, 'warmStart.optimizer.');
  if (c.miniSwe.issue === 'error' && c.warmStart.enabled && c.warmStart.style === 'thorough')
    fail(
      'warmStart.style',
      "'direct' with miniSwe.issue 'error' (the thorough expert reproduces with the issue's script)",
      c.warmStart.style,
    );
  if (c.warmStart.freshFiles && c.tasksFile !== null)
    fail(
      'warmStart.freshFiles',
      "false with a tasksFile (it names files after the mini-SWE catalogue's modules)",
      true,
    );
  if (c.tasksFile === null && c.modelDir === null && c.warmStart.demoTasks >= c.miniSwe.trainTasks)
    fail(
      'warmStart.demoTasks',
      `0 or fewer than miniSwe.trainTasks (${c.miniSwe.trainTasks}), to leave tasks for RL`,
      c.warmStart.demoTasks,
    );
  if (
    c.tasksFile === null &&
    c.modelDir === null &&
    c.rft.tasks > 0 &&
    c.rft.enabled &&
    c.dapo.enabled &&
    c.warmStart.demoTasks + c.rft.tasks >= c.miniSwe.trainTasks
  )
    fail(
      'rft.tasks',
      `0 or fewer than the RL tasks (miniSwe.trainTasks ${c.miniSwe.trainTasks} less warmStart.demoTasks ${c.warmStart.demoTasks}), to leave tasks for DAPO`,
      c.rft.tasks,
    );
  check(c.tokenizer as never, { vocabSize: 'int+', split: ['qwen2', 'identifiers', 'stems'] }, 'tokenizer.');
  if (c.tokenizer.vocabSize < 300) fail('tokenizer.vocabSize', 'at least 300', c.tokenizer.vocabSize);
  check(
    c.eval as never,
    { k: 'int+', every: 'int0', everyK: 'int0', validationTasks: 'int0', limits: ['last-stage', 'episode'] },
    'eval.',
  );
  if (c.eval.every > 0 && c.eval.validationTasks === 0)
    fail(
      'eval.validationTasks',
      'at least 1 with eval.every > 0 (DAPO validates on the validation split, never on the test split)',
      0,
    );
  check(
    c.rft as never,
    {
      enabled: 'bool',
      tasks: 'int0',
      samplesPerTask: 'int+',
      epochs: 'int0',
      lr: 'num0',
      warmupRatio: 'unit',
      batchSize: 'int+',
      oneShot: 'bool',
      optimizer: 'object',
    },
    'rft.',
  );
  checkOptimizer(c.rft.optimizer, 'rft.optimizer.');
  const d = c.dapo as unknown as Record<string, unknown>;
  if (!Array.isArray(d.stages) || d.stages.length === 0) fail('dapo.stages', 'a non-empty array', d.stages);
  // A stage's per-stage settings default to the dapo section's (checked below, then checked again
  // per stage), so that `dapo.clipHigh` in a config file applies to every stage that sets none.
  const perStage = ['samplesPerTask', 'clipLow', 'clipHigh', 'batchSize', 'turnPenaltyThreshold'] as const;
  d.stages = (d.stages as unknown[]).map((st, i) => {
    if (typeof st !== 'object' || st === null || Array.isArray(st)) fail(`dapo.stages[${i}]`, 'an object', st);
    const filled: Record<string, unknown> = { ...(st as Record<string, unknown>) };
    for (const k of perStage) if (filled[k] === undefined) filled[k] = d[k];
    check(
      filled,
      {
        iterations: 'int0',
        maxTurns: 'int+',
        maxContextTokens: 'int+',
        tasksPerIteration: 'int+',
        samplesPerTask: 'int+',
        clipLow: 'unit',
        clipHigh: 'num0',
        batchSize: 'int0',
        turnPenaltyThreshold: 'int+',
      },
      `dapo.stages[${i}].`,
    );
    return filled;
  });
  check(
    Object.fromEntries(Object.entries(d).filter(([k]) => k !== 'stages')),
    {
      enabled: 'bool',
      samplesPerTask: 'int+',
      stepsPerIteration: 'int+',
      epochs: 'int+',
      lr: 'num0',
      lrSchedule: ['constant', 'cosine'],
      minLrRatio: 'unit',
      clipLow: 'unit',
      clipHigh: 'num0',
      agg: ['token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum', 'seq-mean-token-sum-norm'],
      normLength: 'int0',
      estimator: ['grpo', 'drgrpo', 'rloo'],
      dropZeroAdvantage: 'bool',
      refillRounds: 'int0',
      filterOverlong: 'bool',
      maskFormatErrors: 'bool',
      klCoef: 'num0',
      entropyCoef: 'num0',
      temperature: 'num+',
      topP: 'unit',
      topK: 'int0',
      minP: 'unit',
      turnPenalty: 'bool',
      turnPenaltyThreshold: 'int+',
      easyTaskThreshold: 'num+',
      batchSize: 'int0',
      optimizer: 'object',
    },
    'dapo.',
  );
  if (c.dapo.easyTaskThreshold > 1) fail('dapo.easyTaskThreshold', 'in (0, 1]', c.dapo.easyTaskThreshold);
  checkOptimizer(c.dapo.optimizer, 'dapo.optimizer.');
  // The turn penalty (turnPenalty) needs threshold < maxTurns in every stage: at equality the
  // paper's formula is 0/0 at the last turn, and above it the penalty could never apply.
  if (c.dapo.enabled && c.dapo.turnPenalty)
    c.dapo.stages.forEach((st, i) => {
      if (st.turnPenaltyThreshold >= st.maxTurns)
        fail(
          st.turnPenaltyThreshold === c.dapo.turnPenaltyThreshold &&
            !(overrides as { dapo?: { stages?: unknown } })?.dapo?.stages
            ? 'dapo.turnPenaltyThreshold'
            : `dapo.stages[${i}].turnPenaltyThreshold`,
          `below dapo.stages[${i}].maxTurns (${st.maxTurns}) with dapo.turnPenalty (set dapo.turnPenalty false for none)`,
          st.turnPenaltyThreshold,
        );
    });
  if (c.preset === 'paper' && (c.modelDir === null || c.tasksFile === null))
    fail(
      c.modelDir === null ? 'modelDir' : 'tasksFile',
      "a model folder and a tasks file with preset 'paper' (it trains a real model on real tasks)",
      null,
    );
  // Every episode must fit the KV cache alone (the engine preempts under pressure, but one
  // conversation larger than the cache would fail with PROMPT_TOO_LONG mid-run).
  const longest = Math.max(c.episode.maxContextTokens, ...c.dapo.stages.map((st) => st.maxContextTokens));
  if (c.engine.backend === 'local' && c.engine.kvBlocks * 16 < longest + c.episode.maxTokensPerTurn)
    fail(
      'engine.kvBlocks',
      `at least ${Math.ceil((longest + c.episode.maxTokensPerTurn) / 16)} (16-token blocks for the longest episode)`,
      c.engine.kvBlocks,
    );
  if (c.dapo.samplesPerTask < 2 && c.dapo.enabled)
    fail('dapo.samplesPerTask', 'at least 2 (a group)', c.dapo.samplesPerTask);
  checkRlSampling(c);
  return c;
}

/**
 * Sampling filters in RL (top-p, top-k, min-p) make the engine's logprobs those of the filtered
 * distribution, which the trainer cannot reproduce: only truncated importance sampling against
 * the rollout's logprobs (the loss's `tisCap`, with recomputed old logprobs) would correct for
 * them, and the pipeline's loss (dapoLossConfig) enables no TIS. So they are refused
 * (INVALID_CONFIG) rather than warned about. A temperature other than 1 is refused too: the
 * trainer's fused LM-head loss has no logit scale yet (Trainer.policyStep refuses it as well,
 * which would fail only after the first iteration's rollouts).
 */
function checkRlSampling(c: PipelineConfig): void {
  const d = c.dapo;
  const why = '(sampling filters bias the policy gradient without TIS, which the pipeline does not enable)';
  if (d.topP < 1) fail('dapo.topP', `1 ${why}`, d.topP);
  if (d.topK > 0) fail('dapo.topK', `0 ${why}`, d.topK);
  if (d.minP > 0) fail('dapo.minP', `0 ${why}`, d.minP);
  if (d.temperature !== 1)
    fail('dapo.temperature', '1 (the trainer cannot yet train at another rollout temperature)', d.temperature);
}

/** Sampling filters in RL change the distribution the logprobs come from: a loud warning. */
export function rlFilterWarnings(c: PipelineConfig): string[] {
  const w: string[] = [];
  if (c.dapo.temperature !== 1) w.push(`dapo.temperature is ${c.dapo.temperature}, not 1`);
  if (c.dapo.topP < 1) w.push(`dapo.topP is ${c.dapo.topP}`);
  if (c.dapo.topK > 0) w.push(`dapo.topK is ${c.dapo.topK}`);
  if (c.dapo.minP > 0) w.push(`dapo.minP is ${c.dapo.minP}`);
  return w;
}

/** Reads a JSON config file over a preset (`preset` field, default 'default'). */
export async function loadConfig(path: string): Promise<PipelineConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new SwerlError(`cannot read the config ${path}: ${(e as Error).message}`, 'IO_ERROR');
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new SwerlError(`the config ${path} is not valid JSON: ${(e as Error).message}`, 'INVALID_CONFIG');
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) fail('config', 'a JSON object', json);
  const preset = (json as { preset?: unknown }).preset ?? 'default';
  if (typeof preset !== 'string') fail('preset', 'a preset name', preset);
  return resolveConfig(json, preset);
}

/**
 * The pipeline's configuration, declared once as a schema (zod): each field's type, range, default
 * and documentation are written here, and the types (`PipelineConfig`, `PresetConfig`), the
 * defaults and INVALID_CONFIG's messages follow from it. A preset is a partial config over the
 * schema's defaults; a JSON config is a partial config over a preset. A bad config fails before
 * anything runs, naming the field.
 */
import { readFile } from 'node:fs/promises';
import * as z from 'zod';
import { EMBEDDED_PRESETS } from '../embedded/presets.js';
import { BUG_KINDS, MINI_SWE_CATALOGUES } from '../env/mini-swe/generate.js';
import { SwerlError } from '../errors.js';
import type { LossAggregation } from '../train/losses.js';

// --- Field kinds: each carries what INVALID_CONFIG says it must be. ---

/** An integer in [min, max] (max: none), with its wording. */
function int(min: number, max?: number) {
  const expected =
    max !== undefined
      ? `an integer in [${min}, ${max}]`
      : min === 1
        ? 'an integer greater than 0'
        : min === 0
          ? 'an integer, 0 or more'
          : `an integer, at least ${min}`;
  const s = z.int(expected).min(min, expected);
  return max === undefined ? s : s.max(max, expected);
}
/** A number in a range, with its wording: `gt`/`min` bound it below, `lt`/`max` above. */
function num(expected: string, r: { gt?: number; min?: number; lt?: number; max?: number }) {
  let s = z.number(expected);
  if (r.gt !== undefined) s = s.gt(r.gt, expected);
  if (r.min !== undefined) s = s.min(r.min, expected);
  if (r.lt !== undefined) s = s.lt(r.lt, expected);
  if (r.max !== undefined) s = s.max(r.max, expected);
  return s;
}
const positive = () => num('a number greater than 0', { gt: 0 });
const nonNegative = () => num('a number, 0 or more', { min: 0 });
const unit = () => num('a number in [0, 1]', { min: 0, max: 1 });
const bool = () => z.boolean('true or false');
/** One of the values, named as `'a' | 'b'`. */
function oneOf<const T extends readonly [string, ...string[]]>(values: T) {
  return z.enum(values, values.map((v) => `'${v}'`).join(' | '));
}

/** A strict object (unknown keys refused) over `shape`. */
type Strict<S extends z.core.$ZodLooseShape> = z.ZodObject<S, z.core.$strict>;
/** A section of the config: a strict object that an absent section gives with its defaults. */
type Section<S extends z.core.$ZodLooseShape> = z.ZodPrefault<Strict<S>>;

/** A strict object whose unknown key names every valid key. */
function strict<S extends z.core.$ZodLooseShape>(shape: S): Strict<S> {
  return z.strictObject(shape, {
    error: (iss) => (iss.code === 'unrecognized_keys' ? `one of ${Object.keys(shape).join(', ')}` : 'an object'),
  }) as Strict<S>;
}
/** A section: strict, its rules between fields (run once every field is valid), `{}` when absent. */
function section<S extends z.core.$ZodLooseShape>(
  shape: S,
  rules?: (value: z.output<Strict<S>>, ctx: Ctx) => void,
): Section<S> {
  const o = strict(shape);
  return (rules ? o.superRefine(rules, { when: clean }) : o).prefault({} as z.input<Strict<S>>);
}

type Ctx = z.core.$RefinementCtx;

/** Whether the value parsed without an issue so far (rules between fields run only then). */
function clean(payload: z.core.ParsePayload): boolean {
  return payload.issues.length === 0;
}

/** A refusal by a rule: `path` (from the refined object), what it must be, what it is. */
function issue(ctx: Ctx, path: PropertyKey[], expected: string, got: unknown): void {
  ctx.addIssue({ code: 'custom', path, message: expected, input: got });
}

/** The loss aggregations (every LossAggregation, checked by the type). */
const AGGREGATIONS: { [K in LossAggregation]: K } = {
  'token-mean': 'token-mean',
  'seq-mean-token-mean': 'seq-mean-token-mean',
  'seq-mean-token-sum': 'seq-mean-token-sum',
  'seq-mean-token-sum-norm': 'seq-mean-token-sum-norm',
};

// --- The schema: each section's fields once, with their ranges, defaults and documentation. The
// defaults are the base every preset overrides. (Each shape is a named constant and each schema
// has its type written out, so that the field documentation reaches the declaration files.) ---

/**
 * AdamW's settings for one training phase, the warm start's and RFT's defaulting to weight decay
 * 0.01 (transformers' Trainer's), DAPO's to 0. The paper's (arXiv 2508.03501, App. C), for RFT
 * and both RL stages: weight decay 0.1, betas 0.9 / 0.999, eps 1e-8, gradient clipping 1.0.
 */
function optimizerShape(weightDecay: number) {
  return {
    weightDecay: nonNegative().default(weightDecay),
    beta1: num('a number in [0, 1)', { min: 0, lt: 1 }).default(0.9),
    beta2: num('a number in [0, 1)', { min: 0, lt: 1 }).default(0.999),
    eps: positive().default(1e-8),
    /** Clip the global gradient norm to this before each update; 0 = off. */
    maxGradNorm: nonNegative().default(1),
  };
}
type OptimizerShape = ReturnType<typeof optimizerShape>;
/** An optimizer section (its type written out where it is used: see the schema's note). */
const optimizer = (weightDecay: number): Section<OptimizerShape> => section(optimizerShape(weightDecay));

const dapoStageShape = {
  iterations: int(0),
  maxTurns: int(1),
  maxContextTokens: int(1),
  /** Tasks sampled per iteration (G samples each). */
  tasksPerIteration: int(1),
  /** G, the samples per task (default dapo.samplesPerTask; the paper's is 10 in both stages). */
  samplesPerTask: int(1).optional(),
  /** The clip range (1 - clipLow, 1 + clipHigh) (default dapo's; the paper's: 0.2/0.3, then 0.2/0.26). */
  clipLow: unit().optional(),
  clipHigh: nonNegative().optional(),
  /**
   * Trajectories per optimizer step (default dapo.batchSize; the paper's: 128, then 256): an
   * iteration takes ceil(trained samples / batchSize) steps, so the steps vary with the samples
   * that have an advantage, as in the paper. 0 = a fixed `dapo.stepsPerIteration` steps.
   */
  batchSize: int(0).optional(),
  /**
   * The turn penalty's threshold L_thr (default dapo.turnPenaltyThreshold; the paper's: 10): with
   * `dapo.turnPenalty`, an episode of |τ| >= L_thr turns gets (L_thr - |τ|) / (maxTurns - L_thr).
   * It must be below the stage's maxTurns.
   */
  turnPenaltyThreshold: int(1).optional(),
};
/**
 * One DAPO stage of the two-stage schedule. In a config file only `iterations`, `maxTurns`,
 * `maxContextTokens` and `tasksPerIteration` are required; the others default to the `dapo`
 * section's value of the same name, so a resolved config's stages are complete.
 */
const dapoStageSchema: Strict<typeof dapoStageShape> = strict(dapoStageShape);

const miniSweShape = {
  trainTasks: int(1).default(32),
  testTasks: int(1).default(12),
  difficulty: int(0, 3).default(0),
  /** Only these bug kinds (null: all of BUG_KINDS). */
  kinds: z
    .array(oneOf(BUG_KINDS), `null or a non-empty array of ${BUG_KINDS.join(', ')}`)
    .min(1, `null or a non-empty array of ${BUG_KINDS.join(', ')}`)
    .nullable()
    .default(null),
  renameLocals: bool().default(false),
  /** What a mutant task's issue shows: the failing test and its error, or the error only. */
  issue: oneOf(['reproduction', 'error']).default('reproduction'),
  /**
   * Which modules (generateMiniSweTasks' `catalogue`): the core four, fifteen, or the fifteen's
   * code merged into the core's four files.
   */
  catalogue: oneOf(MINI_SWE_CATALOGUES).default('core'),
  /**
   * Draw each split's tasks from distinct bug sites while the split has sites left
   * (generateMiniSweTasks' `distinctSites`), so that N held-out tasks measure N sites, not a
   * few sites many times.
   */
  distinctSites: bool().default(false),
};

const embeddedModelShape = {
  hiddenSize: int(1).default(256),
  layers: int(1).default(6),
  heads: int(1).default(4),
  kvHeads: int(1).default(2),
  intermediateSize: int(1).default(768),
};

const sandboxShape = {
  kind: oneOf(['local', 'docker']).default('local'),
  image: z.string('an image name').optional(),
};

const engineShape = {
  backend: oneOf(['local', 'remote']).default('local'),
  kvBlocks: int(1).default(8192),
  maxBatchTokens: int(1).default(2048),
  url: z.string('the server URL').optional(),
  model: z.string('the served model name').optional(),
};

const episodeShape = {
  maxTurns: int(1).default(12),
  maxTokensPerTurn: int(1).default(160),
  maxContextTokens: int(1).default(6144),
  commandTimeoutMs: int(1).default(20_000),
  episodeTimeoutMs: int(1).default(180_000),
  concurrency: int(1).default(16),
  maxObservationChars: int(1).default(2000),
  /**
   * Mask test runners' wall-clock figures (`duration_ms`, pytest's `in 0.12s`) in observations
   * (maskTimings), so that rollouts are a function of the seed and the weights (default true).
   */
  maskTimings: bool().default(true),
  /**
   * The scaffold's prompts: 'paper' (the paper's layout), 'compact' (scaffoldPrompts), or 'auto'
   * (the default): compact for the embedded model trained from scratch, paper for a `modelDir`.
   */
  prompt: oneOf(['auto', 'paper', 'compact']).default('auto'),
};

const warmStartShape = {
  enabled: bool().default(true),
  demos: int(0).default(48),
  noise: unit().default(0.3),
  /** The expert's plan (expertPolicy's style). */
  style: oneOf(['thorough', 'direct']).default('thorough'),
  /**
   * In [0, 1]: the share of the demonstrations written in another scaffold's action format
   * (```bash fences instead of ```command, as mini-SWE-agent writes them), chosen by seed. It
   * stands for an instruct model's prior over formats: the paper's base model fails mostly on
   * format errors (App. E), which RFT, trained on its resolved trajectories with format-error
   * turns masked, and RL then remove. In this scaffold such a fence is a format error.
   */
  foreignFormat: unit().default(0),
  /**
   * Name augmentation (withFreshNames): each epoch, every misspelled-name demonstration gets
   * another slip and right name from the generator's pool, through issue, observations and
   * commands, so that the warm start teaches reading the name in the error, not remembering it.
   */
  freshNames: bool().default(false),
  /**
   * File augmentation (withFreshFiles): each epoch, every demonstration's module gets another
   * catalogue module's file name through issue, observations and commands, so that the warm
   * start teaches copying the file grep printed, not remembering it (default false).
   */
  freshFiles: bool().default(false),
  /** Induction pretraining steps (copyPretrain) before the demonstrations; 0 = none. */
  copySteps: int(0).default(0),
  /**
   * Rehearsal of the induction pretraining during the warm start: each epoch adds this many copy
   * sequences (copySequence) per demonstration, drawn afresh, to the demonstrations, so that the
   * copying circuits are trained on while the demonstrations are learned instead of being
   * overwritten. 0.25: 24 sequences beside 96 demonstrations. Absent (no default in the resolved
   * config, so that configs without it keep their configHash) or 0: none.
   */
  copyMix: nonNegative().optional(),
  /**
   * 0: every training task gives demonstrations and RFT and DAPO train on every task. N > 0: the
   * first N training tasks give the demonstrations and RFT and DAPO train on the others, as the
   * paper's RL tasks are not its model's fine-tuning data (RL then gains only where the policy
   * generalises, not where it recalls a demonstration).
   */
  demoTasks: int(0).default(0),
  epochs: int(0).default(2),
  lr: nonNegative().default(2e-3),
  batchSize: int(1).default(8),
  /**
   * With a number, the warm start trains on past `epochs` while the model's loss on the fix's
   * names (nameLoss: the demonstrations with names drawn afresh, a stream the epochs never drew)
   * is above it: blocks of `extendEpochs` epochs, each a new warmup-cosine cycle at `lr`, at most
   * `maxExtraEpochs` in all. A seed whose warm start did not learn to copy the name from the
   * error gets more steps, the others none. Absent or null: `epochs` only. The three keys have
   * no defaults in the resolved config (absent means off, 10 and 20), so that configs without
   * them keep their configHash.
   */
  targetNameLoss: z
    .number('null or a number greater than 0')
    .gt(0, 'null or a number greater than 0')
    .nullable()
    .optional(),
  extendEpochs: int(1).optional(),
  maxExtraEpochs: int(0).optional(),
  /** The warm start's AdamW (weight decay 0.01 by default). */
  optimizer: optimizer(0.01) as Section<OptimizerShape>,
};

const tokenizerShape = {
  /** At least 300: the 256 bytes, the special tokens and some merges. */
  vocabSize: int(300).default(2048),
  split: oneOf(['qwen2', 'identifiers', 'stems']).default('identifiers'),
};

const evalShape = {
  k: int(1).default(2),
  every: int(0).default(0),
  everyK: int(0).default(0),
  validationTasks: int(0).default(0),
  limits: oneOf(['last-stage', 'episode']).default('last-stage'),
};

const rftShape = {
  enabled: bool().default(true),
  /**
   * With N > 0, RFT samples the first N of the RL tasks and DAPO trains on the others, tasks
   * the policy has not been fine-tuned on (with a pool of thousands, as the paper's, one RFT
   * epoch memorises little; with tens, DAPO on RFT's own tasks mostly replays their fixes).
   * 0 = both on all of them.
   */
  tasks: int(0).default(0),
  samplesPerTask: int(1).default(2),
  epochs: int(0).default(2),
  lr: nonNegative().default(5e-4),
  warmupRatio: unit().default(0.1),
  batchSize: int(1).default(8),
  /**
   * RFT samples with the one-shot demonstration (the paper's App. F.2: a worked bug fix in the
   * scaffold's format, appended to the system prompt) when it samples from the base policy.
   * The demonstration is not part of the trained samples' prompt.
   */
  oneShot: bool().default(false),
  /**
   * RFT in rounds (expert iteration): while fewer than `minKept` resolved trajectories have been
   * kept, another round samples the tasks from the policy the previous round fine-tuned and
   * fine-tunes on its resolved ones, at most `maxRounds` rounds in all. Unset or 0 = one round.
   * Both keys stay out of a resolved config that does not set them (its configHash is unchanged).
   */
  minKept: int(0).optional(),
  /** The most RFT rounds `minKept` may run (at least 1; 3 when unset). */
  maxRounds: int(1).optional(),
  /** RFT's AdamW (weight decay 0.01 by default). */
  optimizer: optimizer(0.01) as Section<OptimizerShape>,
};

const dapoShape = {
  enabled: bool().default(true),
  /** The stages, in order; each resolved with the section's per-stage defaults (DapoStageConfig). */
  stages: z
    .array(dapoStageSchema as typeof dapoStageSchema, 'a non-empty array')
    .min(1, 'a non-empty array')
    .default(() => [{ iterations: 3, maxTurns: 12, maxContextTokens: 6144, tasksPerIteration: 8 }]),
  /** G, the stages' default samples per task (at least 2: a group). */
  samplesPerTask: int(1).default(4),
  stepsPerIteration: int(1).default(2),
  /** Trajectories per optimizer step, the stages' default (DapoStageConfig.batchSize); 0 = stepsPerIteration. */
  batchSize: int(0).default(0),
  /**
   * Passes over each iteration's samples (verl's `ppo_epochs`, TRL's `num_iterations`); each
   * pass takes `stepsPerIteration` steps over a fresh shuffle. 1 = the paper's (each sample once).
   */
  epochs: int(1).default(1),
  lr: nonNegative().default(3e-4),
  /**
   * The learning rate over DAPO's iterations: 'constant' (the paper's), or 'cosine' from `lr` at
   * the first iteration to `lr · minLrRatio` after the last (verl's `lr_scheduler_type`).
   */
  lrSchedule: oneOf(['constant', 'cosine']).default('constant'),
  minLrRatio: unit().default(0),
  /** The stages' default clip range (1 - clipLow, 1 + clipHigh). */
  clipLow: unit().default(0.2),
  clipHigh: nonNegative().default(0.28),
  agg: z
    .enum(
      AGGREGATIONS,
      Object.values(AGGREGATIONS)
        .map((v) => `'${v}'`)
        .join(' | '),
    )
    .default('token-mean'),
  /**
   * Dr.GRPO's constant for agg 'seq-mean-token-sum-norm': each sample's token sum is divided by
   * it. 0 (the default) = the stage's generation budget, maxTurns × episode.maxTokensPerTurn
   * (Dr.GRPO divides by the max generation length).
   */
  normLength: int(0).default(0),
  estimator: oneOf(['grpo', 'drgrpo', 'rloo']).default('grpo'),
  dropZeroAdvantage: bool().default(true),
  /**
   * DAPO's dynamic-sampling refill: rounds of extra tasks sampled (from the stage's pool, not yet
   * used this iteration) until `tasksPerIteration` groups have a non-zero advantage; 0 = off.
   */
  refillRounds: int(0).default(0),
  filterOverlong: bool().default(false),
  /**
   * Whether turns with a format error carry no gradient in RL (true, the default, as in RFT);
   * false trains them with their episode's advantage, so that a failed episode's malformed turns
   * are pushed down too (the paper does not say which it did); 'positive' masks them only in
   * samples whose advantage is positive, so that a malformed turn is pushed down in a failed
   * episode and never pushed up by a resolved one.
   */
  maskFormatErrors: z.union([z.boolean(), z.literal('positive')], "true, false or 'positive'").default(true),
  /** Weight of the k3 KL penalty to a frozen reference (the policy where DAPO starts); 0 = off. */
  klCoef: nonNegative().default(0),
  entropyCoef: nonNegative().default(0),
  /**
   * The rollout temperature (the paper's: 1). The trainer divides its logits by it, as verl
   * divides the actor's by the rollout temperature, so its logprobs are the engine's bit for bit
   * (Trainer.policyStep's temperature); at least 1e-5 (below, the engine samples greedily).
   */
  temperature: num('a number, 1e-5 or more', { min: 1e-5 }).default(1),
  /** Sampling filters; off in RL, the only values accepted (see checkRlSampling). */
  topP: unit().default(1),
  topK: int(0).default(0),
  minP: unit().default(0),
  /** The paper's turn penalty (turnPenalty) on DAPO's rewards, with each stage's threshold. */
  turnPenalty: bool().default(true),
  /** The stages' default turn-penalty threshold (DapoStageConfig.turnPenaltyThreshold). */
  turnPenaltyThreshold: int(1).default(10),
  /**
   * Between stages, tasks whose success rate over the stage's iterations is at least this are
   * dropped as easy, and tasks never solved as unsolvable (the paper's curriculum: 2/3). 1 drops
   * only the tasks solved every time.
   */
  easyTaskThreshold: num('a number in (0, 1]', { gt: 0, max: 1 }).default(2 / 3),
  /** DAPO's AdamW (no weight decay by default). */
  optimizer: optimizer(0) as Section<OptimizerShape>,
};

/** The dapo section as given: per-stage settings may be left to the section. */
const dapoFields: Strict<typeof dapoShape> = strict(dapoShape)
  .superRefine(
    (d, ctx) => {
      if (!d.enabled) return;
      // A group needs two samples, in the section's default and in every stage that sets its own.
      if (d.samplesPerTask < 2) issue(ctx, ['samplesPerTask'], 'at least 2 (a group)', d.samplesPerTask);
      d.stages.forEach((st, i) => {
        if (st.samplesPerTask !== undefined && st.samplesPerTask < 2)
          issue(ctx, ['stages', i, 'samplesPerTask'], 'at least 2 (a group)', st.samplesPerTask);
      });
      // The turn penalty needs threshold < maxTurns in every stage: at equality the paper's
      // formula is 0/0 at the last turn, and above it the penalty could never apply.
      if (d.turnPenalty)
        d.stages.forEach((st, i) => {
          const own = st.turnPenaltyThreshold !== undefined;
          const threshold = st.turnPenaltyThreshold ?? d.turnPenaltyThreshold;
          if (threshold >= st.maxTurns)
            issue(
              ctx,
              own ? ['stages', i, 'turnPenaltyThreshold'] : ['turnPenaltyThreshold'],
              `below dapo.stages[${i}].maxTurns (${st.maxTurns}) with dapo.turnPenalty (set dapo.turnPenalty false for none)`,
              threshold,
            );
        });
    },
    { when: clean },
  )
  .superRefine(checkRlSampling, { when: clean });

/**
 * Sampling filters in RL (top-p, top-k, min-p) make the engine's logprobs those of the filtered
 * distribution, which the trainer cannot reproduce: only truncated importance sampling against
 * the rollout's logprobs (the loss's `tisCap`, with recomputed old logprobs) would correct for
 * them, and the pipeline's loss (dapoLossConfig) enables no TIS. So they are refused
 * (INVALID_CONFIG) rather than warned about. A temperature is no filter: the trainer scales its
 * logits by the same 1/T (Trainer.policyStep), so any temperature trains unbiased.
 */
function checkRlSampling(d: { topP: number; topK: number; minP: number }, ctx: Ctx): void {
  const why = '(sampling filters bias the policy gradient without TIS, which the pipeline does not enable)';
  if (d.topP < 1) issue(ctx, ['topP'], `1 ${why}`, d.topP);
  if (d.topK > 0) issue(ctx, ['topK'], `0 ${why}`, d.topK);
  if (d.minP > 0) issue(ctx, ['minP'], `0 ${why}`, d.minP);
}

/**
 * One DAPO stage of the two-stage schedule, resolved: the per-stage settings a config leaves out
 * are the `dapo` section's of the same name.
 */
export type DapoStageConfig = Required<z.output<typeof dapoStageSchema>>;
/** The dapo section, resolved: every stage complete. */
type DapoSection = Omit<z.output<typeof dapoFields>, 'stages'> & {
  /** The stages, in order, each with its per-stage settings (the section's where it sets none). */
  stages: DapoStageConfig[];
};

/**
 * The dapo section. A stage's per-stage settings default to the section's, so that `dapo.clipHigh`
 * in a config file applies to every stage that sets none.
 */
type DapoSchema = z.ZodPrefault<
  z.ZodPipe<Strict<typeof dapoShape>, z.ZodTransform<DapoSection, z.output<typeof dapoFields>>>
>;
const dapoSection: DapoSchema = dapoFields
  .transform(
    ({ enabled, stages, ...d }): DapoSection => ({
      enabled,
      stages: stages.map((st) => ({
        iterations: st.iterations,
        maxTurns: st.maxTurns,
        maxContextTokens: st.maxContextTokens,
        tasksPerIteration: st.tasksPerIteration,
        samplesPerTask: st.samplesPerTask ?? d.samplesPerTask,
        clipLow: st.clipLow ?? d.clipLow,
        clipHigh: st.clipHigh ?? d.clipHigh,
        batchSize: st.batchSize ?? d.batchSize,
        turnPenaltyThreshold: st.turnPenaltyThreshold ?? d.turnPenaltyThreshold,
      })),
      ...d,
    }),
  )
  .prefault({});

const configShape = {
  /** The preset the config is over ('default', 'smoke', 'paper'). */
  preset: z.string('a preset name').default('default'),
  seed: int(0).default(1),
  /** A Hugging Face model folder, or null for the embedded model trained from scratch. */
  modelDir: z.string('a model folder or null').nullable().default(null),
  /** A tasks file (.json/.jsonl/.parquet), or null for the generated mini-SWE suite. */
  tasksFile: z.string('a tasks file or null').nullable().default(null),
  /** The generated suite: tier, and optionally only some bug kinds (BUG_KINDS). */
  miniSwe: section(miniSweShape) as Section<typeof miniSweShape>,
  /** The embedded model's shape (a Qwen2 model trained from scratch; vocab from the tokenizer). */
  embeddedModel: section(embeddedModelShape, (em, ctx) => {
    if (em.hiddenSize % em.heads !== 0 || (em.hiddenSize / em.heads) % 2 !== 0)
      issue(ctx, ['heads'], `a divisor of hiddenSize ${em.hiddenSize} leaving an even head size`, em.heads);
    else if (em.heads % em.kvHeads !== 0) issue(ctx, ['kvHeads'], `a divisor of heads ${em.heads}`, em.kvHeads);
  }) as Section<typeof embeddedModelShape>,
  /** Held-out tasks for evaluation when tasksFile is set: the last `evalTasks` of the file. */
  evalTasks: int(1).default(12),
  /**
   * Write every phase's rollout records to `<out>/rollouts/<phase>.msgpack` (readRollouts reads
   * them back; verl's rollout_data_dir). Default true.
   */
  saveRollouts: bool().default(true),
  /**
   * Where episodes run. With 'docker', each task runs (and is graded) in `taskImage(task, image)`:
   * its own `image`, else SWE-bench's name for the instance, else this `image`, else
   * node:20-bookworm.
   */
  sandbox: section(sandboxShape) as Section<typeof sandboxShape>,
  /** 'remote': an OpenAI-compatible server at `url` serving `model` (evaluation-only runs). */
  engine: section(engineShape) as Section<typeof engineShape>,
  /** An episode's limits and scaffold. */
  episode: section(episodeShape) as Section<typeof episodeShape>,
  /** The warm start (the embedded model): expert demonstrations and SFT on them. */
  warmStart: section(warmStartShape) as Section<typeof warmStartShape>,
  /**
   * The embedded model's tokenizer, trained on the demonstrations: its vocabulary size and its
   * pre-tokenization (Tokenizer.train's `split`: 'identifiers', the default, keeps a name the same
   * tokens in every context so that the model can copy names it has not seen; 'stems' also cuts
   * a word's final `s` off, so that a name and its plural share tokens; 'qwen2').
   */
  tokenizer: section(tokenizerShape) as Section<typeof tokenizerShape>,
  /**
   * Evaluation. The test split is read once per stage, for the results table: `k` samples per
   * task after each stage. With `every` > 0, DAPO validates after every `every` iterations
   * (verl's `test_freq`) with `everyK` samples per task (0: `k`) on the validation split, never on
   * the test split: `validationTasks` tasks, from bug sites of their own for the generated suite
   * (split 'validation'), or the rows before the held-out ones of a tasks file. `limits`: the
   * turn and context limits evaluations run with, 'last-stage' (the last DAPO stage's, as the
   * paper evaluates at its final stage's limits; the episode's without DAPO) or 'episode'.
   */
  eval: section(evalShape, (e, ctx) => {
    if (e.every > 0 && e.validationTasks === 0)
      issue(
        ctx,
        ['validationTasks'],
        'at least 1 with eval.every > 0 (DAPO validates on the validation split, never on the test split)',
        0,
      );
  }) as Section<typeof evalShape>,
  /** Rejection-sampling fine-tuning: the policy's resolved trajectories, trained on by SFT. */
  rft: section(rftShape) as Section<typeof rftShape>,
  /** DAPO: the RL stages and their loss, sampling and optimizer. */
  dapo: dapoSection as DapoSchema,
  /**
   * Which checkpoints a finished run keeps in `<out>/checkpoints/`: 'stages' (the default) keeps
   * each finished stage's (base, RFT, the final DAPO iteration) and the latest one; 'all' keeps
   * every iteration's; 'last' only the latest. The KL reference stays while DAPO needs it.
   */
  checkpoints: section({ keep: oneOf(['stages', 'all', 'last']).default('stages') }),
};

/** The config's fields, every section, before the rules between sections. */
const configFields: Strict<typeof configShape> = strict(configShape);

/**
 * The whole config: every section, with the rules between sections (crossChecks). Its input is a
 * config file's (every field optional), its output a resolved config (PipelineConfig).
 */
export const pipelineConfigSchema: Strict<typeof configShape> = configFields.superRefine(crossChecks, {
  when: clean,
});

/** The rules between sections, on a config whose every field is valid (stages filled). */
function crossChecks(c: z.output<typeof configFields>, ctx: Ctx): void {
  if (c.engine.backend === 'remote') {
    if (c.engine.url === undefined) issue(ctx, ['engine', 'url'], 'the server URL (backend remote)', undefined);
    else if (c.modelDir === null)
      issue(ctx, ['modelDir'], 'the served model folder (its tokenizer), with backend remote', null);
    else {
      const training = (['warmStart', 'rft', 'dapo'] as const).filter((k) => c[k].enabled);
      if (training[0])
        issue(
          ctx,
          [training[0], 'enabled'],
          "false with engine.backend 'remote' (the pipeline updates weights in process; a remote server evaluates only)",
          true,
        );
    }
  }
  if (c.miniSwe.issue === 'error' && c.warmStart.enabled && c.warmStart.style === 'thorough')
    issue(
      ctx,
      ['warmStart', 'style'],
      "'direct' with miniSwe.issue 'error' (the thorough expert reproduces with the issue's script)",
      c.warmStart.style,
    );
  if (c.warmStart.freshFiles && c.tasksFile !== null)
    issue(
      ctx,
      ['warmStart', 'freshFiles'],
      "false with a tasksFile (it names files after the mini-SWE catalogue's modules)",
      true,
    );
  if (c.tasksFile === null && c.modelDir === null && c.warmStart.demoTasks >= c.miniSwe.trainTasks)
    issue(
      ctx,
      ['warmStart', 'demoTasks'],
      `0 or fewer than miniSwe.trainTasks (${c.miniSwe.trainTasks}), to leave tasks for RL`,
      c.warmStart.demoTasks,
    );
  else if (
    c.tasksFile === null &&
    c.modelDir === null &&
    c.rft.tasks > 0 &&
    c.rft.enabled &&
    c.dapo.enabled &&
    c.warmStart.demoTasks + c.rft.tasks >= c.miniSwe.trainTasks
  )
    issue(
      ctx,
      ['rft', 'tasks'],
      `0 or fewer than the RL tasks (miniSwe.trainTasks ${c.miniSwe.trainTasks} less warmStart.demoTasks ${c.warmStart.demoTasks}), to leave tasks for DAPO`,
      c.rft.tasks,
    );
  if (c.preset === 'paper' && (c.modelDir === null || c.tasksFile === null))
    issue(
      ctx,
      [c.modelDir === null ? 'modelDir' : 'tasksFile'],
      "a model folder and a tasks file with preset 'paper' (it trains a real model on real tasks)",
      null,
    );
  // Every episode must fit the KV cache alone (the engine preempts under pressure, but one
  // conversation larger than the cache would fail with PROMPT_TOO_LONG mid-run).
  const longest = Math.max(c.episode.maxContextTokens, ...c.dapo.stages.map((st) => st.maxContextTokens));
  if (c.engine.backend === 'local' && c.engine.kvBlocks * 16 < longest + c.episode.maxTokensPerTurn)
    issue(
      ctx,
      ['engine', 'kvBlocks'],
      `at least ${Math.ceil((longest + c.episode.maxTokensPerTurn) / 16)} (16-token blocks for the longest episode)`,
      c.engine.kvBlocks,
    );
}

// --- Types, from the schema. ---

/** Everything a run needs: a resolved config, every field set, the DAPO stages complete. */
export type PipelineConfig = z.output<typeof pipelineConfigSchema>;
/**
 * A config as a preset or a JSON config file gives it: every field optional (a preset's are over
 * the schema's defaults, a file's over its preset), a DAPO stage with its four required fields.
 */
export type PresetConfig = z.input<typeof pipelineConfigSchema>;
/**
 * AdamW's settings for one training phase. The paper's (arXiv 2508.03501, App. C), for RFT and
 * both RL stages: weight decay 0.1, betas 0.9 / 0.999, eps 1e-8, gradient clipping 1.0.
 */
export type OptimizerConfig = z.output<Section<OptimizerShape>>;
/** A DAPO stage as a config file or preset gives it: the fields not given come from the dapo section. */
export type DapoStageInput = z.input<typeof dapoStageSchema>;

// --- Presets. ---

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
const PAPER: PresetConfig = {
  preset: 'paper',
  // Not read with a modelDir (which this preset requires): the embedded default's shape.
  embeddedModel: { hiddenSize: 128, layers: 4, heads: 4, kvHeads: 2, intermediateSize: 384 },
  warmStart: { enabled: false },
  episode: { maxTurns: 40, maxTokensPerTurn: 4096, maxContextTokens: 65536, prompt: 'paper' },
  engine: { kvBlocks: 8448 },
  eval: { k: 10, limits: 'last-stage' },
  rft: {
    enabled: true,
    tasks: 0,
    samplesPerTask: 10,
    epochs: 1,
    lr: 5e-6,
    warmupRatio: 0.1,
    batchSize: 64,
    oneShot: true,
    optimizer: { weightDecay: 0.1 },
  },
  dapo: {
    samplesPerTask: 10,
    epochs: 1,
    lr: 1e-6,
    lrSchedule: 'constant',
    batchSize: 128,
    clipLow: 0.2,
    clipHigh: 0.3,
    agg: 'token-mean',
    estimator: 'grpo',
    klCoef: 0,
    dropZeroAdvantage: true,
    refillRounds: 0,
    filterOverlong: false,
    maskFormatErrors: true,
    turnPenalty: true,
    turnPenaltyThreshold: 10,
    easyTaskThreshold: 2 / 3,
    optimizer: { weightDecay: 0.1 },
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

/**
 * The presets, each a partial config over the schema's defaults: `default` and `smoke` (the
 * embedded default's, src/embedded/presets.ts) and `paper` (the paper's RL for a real model). They
 * are frozen: resolveConfig returns fresh objects.
 */
export const PRESETS: Readonly<Record<string, PresetConfig>> = Object.freeze({
  ...Object.fromEntries(Object.entries(EMBEDDED_PRESETS).map(([k, p]) => [k, deepFreeze(structuredClone(p))])),
  paper: deepFreeze(PAPER),
});

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null) for (const x of Object.values(v)) deepFreeze(x);
  return Object.freeze(v);
}

// --- Resolving. ---

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

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * `over` merged into `base` (a preset's plain data), in new objects: objects key by key, anything
 * else (arrays too) replaced whole. `base` is not changed.
 */
function merge(base: unknown, over: unknown, path: string): unknown {
  if (over === undefined) return structuredClone(base);
  if (!isObject(base)) return over;
  if (!isObject(over)) fail(path || 'config', 'an object', over);
  const out: Record<string, unknown> = structuredClone(base);
  // defineProperty: a key such as `__proto__` stays a key (and is refused as unknown).
  for (const [k, v] of Object.entries(over))
    Object.defineProperty(out, k, {
      value: Object.hasOwn(out, k) ? merge(out[k], v, path ? `${path}.${k}` : k) : v,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  return out;
}

/** The first issue as INVALID_CONFIG: an unknown key first, as a misspelt key explains the rest. */
function invalid(issues: readonly z.core.$ZodIssue[]): never {
  const first = (issues.find((i) => i.code === 'unrecognized_keys') ?? issues[0]) as z.core.$ZodIssue;
  let path: PropertyKey[] = first.path;
  let got: unknown = first.input;
  if (first.code === 'unrecognized_keys') {
    path = [...path, first.keys[0] as string];
    got = first.keys[0];
  }
  // `dapo.stages[0].clipHigh`; a key that is no identifier in brackets: `rft[" "]`.
  const field = path
    .map((p, i) =>
      typeof p === 'number'
        ? `[${p}]`
        : typeof p === 'string' && /^[A-Za-z_$][\w$]*$/.test(p)
          ? `${i === 0 ? '' : '.'}${p}`
          : `[${JSON.stringify(String(p))}]`,
    )
    .join('');
  fail(field || 'config', first.message, got);
}

/** A fallback for an issue no field kind words (none should reach it): the expected type. */
const fallbackError: z.core.$ZodErrorMap = (iss) =>
  iss.code === 'invalid_type' ? `a value of type ${iss.expected}` : undefined;

/**
 * A preset's config with `overrides` merged in (objects key by key, arrays replaced whole),
 * validated and completed (defaults, DAPO stages filled from the dapo section). INVALID_CONFIG
 * names the bad field, what it must be and what it is. The preset is not changed, and the config
 * returned shares no object with it.
 */
export function resolveConfig(overrides: unknown = {}, preset = 'default'): PipelineConfig {
  if (!Object.hasOwn(PRESETS, preset)) fail('preset', Object.keys(PRESETS).join(' | '), preset);
  const merged = merge(PRESETS[preset], overrides, '');
  const r = pipelineConfigSchema.safeParse(merged, { reportInput: true, error: fallbackError });
  if (!r.success) invalid(r.error.issues);
  return r.data;
}

/** Sampling filters in RL change the distribution the logprobs come from: a loud warning. */
export function rlFilterWarnings(c: PipelineConfig): string[] {
  const w: string[] = [];
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
  if (!isObject(json)) fail('config', 'a JSON object', json);
  const preset = json.preset ?? 'default';
  if (typeof preset !== 'string') fail('preset', 'a preset name', preset);
  return resolveConfig(json, preset);
}

/**
 * The pipeline's stages as functions over one policy (a Model, its Engine and Tokenizer), for any
 * model (the embedded model's own warm start lives in src/embedded/):
 * - SFT epochs (the warm start's and RFT's training);
 * - evaluation: Pass@1 averaged over k runs and Pass@k on held-out tasks, at eval.limits;
 * - RFT: k samples per task (with rft.oneShot, the one-shot demonstration in the system prompt),
 *   the resolved trajectories kept, format-error turns masked, SFT with warmup + cosine;
 * - DAPO iterations: G samples per task under the stage's limits and turn penalty, group
 *   advantages, zero-advantage groups dropped (and refilled), optimizer steps on the stage's
 *   token-level clip-higher loss, a fixed number per iteration or one per batch of trajectories.
 * Sampling seeds are hashes of the run seed, phase, iteration, round, task and sample (rl/seeds.ts).
 * Each reports metrics through `log` (one JSON object per event) and progress through `progress`.
 * A stage with nothing to train (no sample with a trained token: a policy that solved nothing, a
 * batch of only flat groups) does not throw: it skips the optimizer step, logs a `skipped` event
 * (or `skipped: 1` in the DAPO iteration's event) and says so in its return value.
 */
import { systemPrompt } from '../agent/scaffold.js';
import type { Engine } from '../engine/engine.js';
import type { RemoteEngine } from '../engine/remote.js';
import type { SweTask } from '../env/tasks.js';
import { type ErrorCode, ErrorCodes, invalidArgument, SwerlError } from '../errors.js';
import type { Model } from '../model/model.js';
import { mulberry32 } from '../random.js';
import { keptGroups } from '../rl/group-filters.js';
import { dapoLossConfig } from '../rl/loss-config.js';
import { withSystemPrompt } from '../rl/one-shot.js';
import { policySamples, rftSamples } from '../rl/samples.js';
import { rolloutSeeds } from '../rl/seeds.js';
import type { RolloutRecord } from '../rollout/record.js';
import { runRollouts } from '../rollout/rollouts.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import { AdamW, type AdamWOptions, warmupCosineLr } from '../train/adamw.js';
import { sequenceLogprobs } from '../train/reference.js';
import { type StepMetrics, Trainer, type TrainSample } from '../train/trainer.js';
import { type DapoStageConfig, type OptimizerConfig, type PipelineConfig, promptStyleOf } from './config.js';
import { dapoPhase } from './phases.js';

/** The policy being trained. */
export interface Policy {
  model: Model;
  engine: Engine | RemoteEngine;
  tokenizer: Tokenizer;
}

/** Hooks for metrics and progress. */
export interface StageHooks {
  log: (event: Record<string, unknown>) => void;
  /** A stage's progress: done of total units, with a label; `unit` is 'step' or 'episode'. */
  progress?: (label: string, done: number, total: number, unit?: 'step' | 'episode') => void;
  /** A phase's rollout records as they are complete (runPipeline writes them to `rollouts/`). */
  rollouts?: (phase: string, records: RolloutRecord[]) => void;
}

/** Deterministic shuffle (mulberry32). */
export function shuffled<T>(xs: T[], seed: number): T[] {
  const rnd = mulberry32(seed);
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

/**
 * AdamW's options from a config's optimizer section (weight decay, betas, eps, gradient clipping).
 * Without one, transformers' Trainer's AdamW: weight decay 0.01, torch's betas and eps, clipping at 1.
 */
export function adamwOptions(o?: OptimizerConfig): Omit<AdamWOptions, 'lr' | 'resume' | 'decayAll'> {
  if (!o) return { weightDecay: 0.01 };
  return { weightDecay: o.weightDecay, betas: [o.beta1, o.beta2], eps: o.eps, maxGradNorm: o.maxGradNorm };
}

/**
 * DAPO's optimizer: AdamW as `dapo.optimizer` sets it, at the rate `lr` gives, continuing the
 * moments saved at `saved` (AdamW.save's file, from a DAPO checkpoint) when there is one.
 */
export async function dapoOptimizer(
  model: Model,
  c: PipelineConfig,
  lr: number | (() => number),
  saved: string | null = null,
): Promise<AdamW> {
  const settings = { lr: typeof lr === 'number' ? lr : () => lr(), ...adamwOptions(c.dapo.optimizer) };
  return saved ? AdamW.load(model, saved, settings) : new AdamW(model, settings);
}

/** Whether a sample has a token to train (a sample without one carries no gradient). */
function trainable(s: TrainSample): boolean {
  return s.lossMask.some((v) => v > 0);
}

/**
 * SFT epochs over samples (shuffled per epoch), one optimizer step per batch, with AdamW as
 * `o.optimizer` sets it (adamwOptions). `samples` may be a
 * function of the epoch (the same number each epoch), for data that is augmented afresh per epoch.
 * With no sample that has a trained token (RFT of a policy that solved nothing) no step is taken,
 * a `skipped` event is logged and the result is empty; a batch of only untrained samples is
 * skipped the same way (its step is logged as skipped), the others unchanged.
 */
export async function sftEpochs(
  p: Policy,
  samplesOf: TrainSample[] | ((epoch: number) => TrainSample[]),
  o: {
    epochs: number;
    batchSize: number;
    lr: number;
    warmupRatio: number;
    seed: number;
    stage: string;
    optimizer?: OptimizerConfig;
  },
  hooks: StageHooks,
): Promise<StepMetrics[]> {
  const epochSamples = typeof samplesOf === 'function' ? samplesOf : () => samplesOf;
  const first = epochSamples(0);
  const steps = Math.ceil(first.length / o.batchSize) * o.epochs;
  if (steps === 0 || !first.some(trainable)) {
    if (o.epochs > 0)
      hooks.log({
        stage: o.stage,
        event: 'skipped',
        reason: first.length === 0 ? 'no samples' : 'no sample with a trained token',
        samples: first.length,
      });
    return [];
  }
  const opt = new AdamW(p.model, {
    lr:
      steps > 1
        ? warmupCosineLr({
            peak: o.lr,
            warmupSteps: Math.min(Math.floor(steps * o.warmupRatio), steps - 1),
            totalSteps: steps,
          })
        : o.lr,
    ...adamwOptions(o.optimizer),
  });
  const trainer = new Trainer(p.model, { optimizer: opt });
  const out: StepMetrics[] = [];
  const label = o.stage === 'warmstart' ? 'warm start' : `${o.stage} training`;
  let visited = 0; // batches, trained or skipped (the progress)
  for (let e = 0; e < o.epochs; e++) {
    const order = shuffled(e === 0 ? first : epochSamples(e), o.seed + e);
    for (let b = 0, batch = 0; b < order.length; b += o.batchSize, batch++) {
      const chunk = order.slice(b, b + o.batchSize);
      visited++;
      if (!chunk.some(trainable)) {
        // The Trainer refuses a step with no trained token (INVALID_ARGUMENT): skip it, say so.
        hooks.log({ stage: o.stage, event: 'skipped', epoch: e, batch, reason: 'no sample with a trained token' });
        hooks.progress?.(label, visited, steps, 'step');
        continue;
      }
      const m = await trainer.sftStep(chunk);
      out.push(m);
      hooks.log({
        stage: o.stage,
        event: 'step',
        phase: o.stage,
        epoch: e,
        step: out.length,
        loss: m.loss,
        gradNorm: m.gradNorm,
        lr: m.lr,
        tokens: m.tokens,
        tokensPerSecond: m.tokens / m.seconds,
      });
      hooks.progress?.(label, visited, steps, 'step');
    }
  }
  return out;
}

/** Pass@1 averaged over k runs, and Pass@k, with the records. */
export interface EvalResult {
  pass1: number;
  passK: number;
  k: number;
  tasks: number;
  /** Samples the grader could not judge (counted as unsolved in Pass@1 and Pass@k). */
  errors: number;
  /** Pass@1 and Pass@k per task repository (SWE-bench's per-repo breakdown; a mini-SWE module). */
  byRepo: Record<string, { pass1: number; passK: number; tasks: number }>;
  records: RolloutRecord[];
}

/** The turn and context limits of a phase's episodes, and its turn penalty's threshold (null: none). */
export interface EpisodeLimits {
  maxTurns: number;
  maxContextTokens: number;
  turnPenaltyThreshold: number | null;
}

/**
 * The limits of episodes run under a DAPO stage (`stage`), or under the episode section: the
 * stage's turns and context, or the episode's; the turn penalty's threshold is the stage's (the
 * dapo section's without one), null with `dapo.turnPenalty` false.
 */
export function episodeLimits(c: PipelineConfig, stage?: DapoStageConfig): EpisodeLimits {
  return {
    maxTurns: stage?.maxTurns ?? c.episode.maxTurns,
    maxContextTokens: stage?.maxContextTokens ?? c.episode.maxContextTokens,
    turnPenaltyThreshold: c.dapo.turnPenalty ? (stage?.turnPenaltyThreshold ?? c.dapo.turnPenaltyThreshold) : null,
  };
}

/**
 * The limits evaluations run with (`eval.limits`): with 'last-stage' and DAPO enabled the last
 * DAPO stage's (the paper evaluates at its final stage's context), else the episode section's.
 * The base, RFT and DAPO evaluations and the validations all use them, so their figures compare.
 */
export function evalLimits(c: PipelineConfig): EpisodeLimits {
  const last = c.eval.limits === 'last-stage' && c.dapo.enabled ? c.dapo.stages.at(-1) : undefined;
  return episodeLimits(c, last);
}

function rolloutOptions(c: PipelineConfig, limits: EpisodeLimits = episodeLimits(c)) {
  return {
    maxTurns: limits.maxTurns,
    maxTokensPerTurn: c.episode.maxTokensPerTurn,
    maxContextTokens: limits.maxContextTokens,
    commandTimeoutMs: c.episode.commandTimeoutMs,
    episodeTimeoutMs: c.episode.episodeTimeoutMs,
    concurrency: c.episode.concurrency,
    maxObservationChars: c.episode.maxObservationChars,
    maskTimings: c.episode.maskTimings,
    prompt: promptStyleOf(c),
    turnPenaltyThreshold: limits.turnPenaltyThreshold,
    sandbox:
      c.sandbox.kind === 'docker'
        ? { kind: 'docker' as const, ...(c.sandbox.image === undefined ? {} : { image: c.sandbox.image }) }
        : undefined,
  };
}

/**
 * Evaluates the policy on held-out tasks: k samples each at temperature 1 (`c.eval.k`), under
 * evalLimits (`eval.limits`). With
 * `validation`, it is a validation during DAPO instead (`eval.every`): `validation.k` samples per
 * task, logged as a 'validation' event of the DAPO iteration, its rollouts saved as
 * `validation.phase` (by default `val-<stage>-<iteration>`; the pipeline passes validationPhase's).
 */
export async function evaluate(
  p: Policy,
  tasks: SweTask[],
  c: PipelineConfig,
  stage: string,
  hooks: StageHooks,
  validation?: { iteration: number; k: number; phase?: string },
): Promise<EvalResult> {
  const k = validation?.k ?? c.eval.k;
  const phase = validation ? (validation.phase ?? `val-${stage}-${validation.iteration}`) : `eval-${stage}`;
  let done = 0;
  const records = await runRollouts({
    engine: p.engine,
    tokenizer: p.tokenizer,
    tasks,
    samplesPerTask: k,
    sampleSeed: rolloutSeeds({ run: c.seed, phase, iteration: validation?.iteration ?? 0, round: 0 }, tasks),
    group: phase,
    sampling: { temperature: 1 },
    ...rolloutOptions(c, evalLimits(c)),
    onRecord: () => hooks.progress?.(phase, ++done, tasks.length * k, 'episode'),
  });
  // A sample the grader could not judge (`error`) counts as unsolved: a policy cannot raise its
  // score by making its failures ungradable. The count is reported beside the figures.
  allFailedOrThrow(records, phase);
  let pass1 = 0;
  let passK = 0;
  const byRepo: EvalResult['byRepo'] = {};
  for (let i = 0; i < tasks.length; i++) {
    const group = records.slice(i * k, (i + 1) * k);
    const solved = group.filter((r) => r.resolved && r.error === undefined).length;
    pass1 += solved / k;
    if (solved > 0) passK++;
    const name = (tasks[i] as SweTask).repo;
    byRepo[name] ??= { pass1: 0, passK: 0, tasks: 0 };
    const repo = byRepo[name];
    repo.pass1 += solved / k;
    repo.passK += solved > 0 ? 1 : 0;
    repo.tasks++;
  }
  for (const e of Object.values(byRepo)) {
    e.pass1 /= e.tasks;
    e.passK /= e.tasks;
  }
  const n = Math.max(1, tasks.length);
  const errors = records.filter((x) => x.error !== undefined).length;
  const r: EvalResult = { pass1: pass1 / n, passK: passK / n, k, tasks: tasks.length, errors, byRepo, records };
  const stats = { pass1: r.pass1, passK: r.passK, k, tasks: tasks.length, byRepo, ...episodeStats(records) };
  hooks.rollouts?.(phase, records);
  if (validation) hooks.log({ stage, event: 'validation', phase, iteration: validation.iteration, ...stats });
  else hooks.log({ stage, event: 'eval', phase, ...stats });
  return r;
}

/**
 * A phase whose every episode failed for reasons not the policy's (no sandbox isolation, no Docker
 * engine, a missing image) has nothing to learn from or measure: it stops the run with the first
 * error, rather than train on nothing and report 0%.
 */
export function allFailedOrThrow(records: RolloutRecord[], phase: string): void {
  if (records.length === 0 || records.some((r) => r.error === undefined)) return;
  const e = records[0]?.error ?? { code: 'INTERNAL', message: 'unknown' };
  throw new SwerlError(
    `every episode of ${phase} failed before it could be graded (${records.length} episode${records.length === 1 ? '' : 's'}); the first: ${e.message}`,
    (ErrorCodes as readonly string[]).includes(e.code) ? (e.code as ErrorCode) : 'INTERNAL',
  );
}

/**
 * Means over the judged records (those without `error`): reward, resolved share, turns, generated
 * tokens, format errors, submits; `episodes` counts them all and `errors` the unjudged ones.
 */
export function episodeStats(records: RolloutRecord[]): Record<string, number> {
  const judged = records.filter((r) => r.error === undefined);
  const n = Math.max(1, judged.length);
  const sum = (f: (r: RolloutRecord) => number) => judged.reduce((a, r) => a + f(r), 0) / n;
  return {
    reward: sum((r) => r.reward),
    resolved: sum((r) => (r.resolved ? 1 : 0)),
    turns: sum((r) => r.turns.length),
    responseTokens: sum((r) => r.assistantMask.reduce((a, x) => a + x, 0)),
    formatErrors: sum((r) => r.turns.filter((t) => t.formatError !== null).length),
    submitted: sum((r) => (r.finishReason === 'submit' ? 1 : 0)),
    episodes: records.length,
    errors: records.length - judged.length,
  };
}

/**
 * RFT: k samples per training task, resolved ones kept (format errors masked), SFT. With
 * `rft.oneShot` the samples are drawn with the one-shot demonstration in the system prompt, and
 * the kept trajectories are trained with the normal one (withSystemPrompt: the same tokens after
 * the system message). With `rft.minKept` > 0, RFT runs in rounds: while the trajectories kept so
 * far number fewer than `minKept` and fewer than `rft.maxRounds` rounds have run, it samples the
 * tasks again from the policy it has just fine-tuned (fresh sample seeds: the round is part of
 * their hash) and fine-tunes on that round's resolved trajectories (expert iteration, for a base
 * that solves too little for one round to teach it much). The result has the first round's
 * episode statistics (the base policy's), `kept` and `episodes` over all rounds, `rounds`,
 * `steps` (optimizer steps) and `skipped` (1 when nothing was trained) besides.
 */
export async function rft(
  p: Policy,
  tasks: SweTask[],
  c: PipelineConfig,
  hooks: StageHooks,
): Promise<Record<string, number>> {
  const minKept = c.rft.minKept ?? 0;
  const rounds = minKept > 0 ? (c.rft.maxRounds ?? 3) : 1;
  let first: Record<string, number> | undefined;
  let kept = 0;
  let episodes = 0;
  let steps = 0;
  let round = 0;
  while (round < rounds && (round === 0 || kept < minKept)) {
    const r = await rftRound(p, tasks, c, hooks, round);
    first ??= r.stats;
    kept += r.stats.kept ?? 0;
    episodes += r.stats.episodes ?? 0;
    steps += r.steps;
    round++;
  }
  return { ...first, kept, episodes, rounds: round, steps, skipped: steps === 0 ? 1 : 0 };
}

/** One RFT round (0-based): rollouts from the current policy, the resolved kept, SFT on them. */
async function rftRound(
  p: Policy,
  tasks: SweTask[],
  c: PipelineConfig,
  hooks: StageHooks,
  round: number,
): Promise<{ stats: Record<string, number>; steps: number }> {
  let done = 0;
  const t0 = performance.now();
  const busy0 = p.engine.stats().busySeconds;
  const label = round === 0 ? 'rft rollouts' : `rft round ${round + 1} rollouts`;
  const records = await runRollouts({
    engine: p.engine,
    tokenizer: p.tokenizer,
    tasks,
    samplesPerTask: c.rft.samplesPerTask,
    sampleSeed: rolloutSeeds({ run: c.seed, phase: 'rft', iteration: 0, round }, tasks),
    group: 'rft',
    ...rolloutOptions(c),
    oneShot: c.rft.oneShot,
    onRecord: () => hooks.progress?.(label, ++done, tasks.length * c.rft.samplesPerTask, 'episode'),
  });
  const rolloutSeconds = (performance.now() - t0) / 1000;
  // The engine's share of the rollouts' wall time; the rest it waited on the environment.
  const engineSeconds = p.engine.stats().busySeconds - busy0;
  // Round 0's file keeps its name ('rft'); later rounds' are 'rft-r2', 'rft-r3', ...
  hooks.rollouts?.(round === 0 ? 'rft' : `rft-r${round + 1}`, records);
  allFailedOrThrow(records, 'rft rollouts');
  const style = promptStyleOf(c);
  const prompts = { sampled: systemPrompt(style, { oneShot: true }), trained: systemPrompt(style) };
  const kept = c.rft.oneShot
    ? records.map((r) => (r.resolved && r.error === undefined ? withSystemPrompt(r, prompts, p.tokenizer) : r))
    : records;
  const samples = rftSamples(kept);
  const stats = { ...episodeStats(records), kept: samples.length, rolloutSeconds, engineSeconds };
  hooks.log({ stage: 'rft', event: 'rollouts', phase: 'rft', ...(round > 0 ? { round: round + 1 } : {}), ...stats });
  // Round 0 shuffles with seed + 11, as RFT always has; later rounds step by a prime so that no
  // round's shuffle seed meets another stage's (seed + small offsets).
  const trained = await sftEpochs(p, samples, { ...c.rft, seed: c.seed + 11 + 7919 * round, stage: 'rft' }, hooks);
  return { stats, steps: trained.length };
}

/** Extras of {@link dapoIteration}. */
export interface DapoExtras {
  /** The frozen reference policy for the KL penalty (required when c.dapo.klCoef > 0). */
  reference?: Model;
  /** Tasks to refill from (in order) when groups are dropped, per c.dapo.refillRounds. */
  refill?: SweTask[];
  /**
   * The iteration's phase name (rollout file, progress label, `phase` of the metrics event); by
   * default `dapoPhase(1, iteration)`, as runPipeline names it in a one-stage schedule.
   */
  phase?: string;
}

/**
 * One DAPO iteration: G = `stage.samplesPerTask` rollouts per task under the stage's limits and
 * turn penalty, advantages, and optimizer steps on the stage's clip range: with `stage.batchSize`
 * > 0, ceil(trained samples / batchSize) steps of batchSize samples (the last one smaller: the
 * paper's fixed batch, its steps varying with the samples that have an advantage), else
 * `dapo.stepsPerIteration` steps that share the samples. With
 * `refillRounds`, tasks from `extras.refill` are rolled out in further rounds until
 * `tasks.length` groups have a non-zero advantage (DAPO's dynamic sampling, which keeps the batch
 * full); with `klCoef`, each sample carries the reference's logprobs. An iteration with no sample
 * to train (every group flat, every sample untrained) takes no step: its metrics say `skipped: 1`.
 */
export async function dapoIteration(
  p: Policy,
  tasks: SweTask[],
  c: PipelineConfig,
  stage: DapoStageConfig,
  iteration: number,
  optimizer: AdamW,
  hooks: StageHooks,
  extras: DapoExtras = {},
): Promise<{ metrics: Record<string, number>; records: RolloutRecord[] }> {
  const G = stage.samplesPerTask;
  if (c.dapo.klCoef > 0 && !extras.reference)
    throw invalidArgument('extras.reference', 'a reference Model (dapo.klCoef > 0)', extras.reference);
  const phase = extras.phase ?? dapoPhase(1, iteration);
  let done = 0;
  let total = tasks.length * G;
  const t0 = performance.now();
  const busy0 = p.engine.stats().busySeconds;
  const batchOptions = {
    estimator: c.dapo.estimator,
    dropZeroAdvantage: c.dapo.dropZeroAdvantage,
    filterOverlong: c.dapo.filterOverlong,
    maskFormatErrors: c.dapo.maskFormatErrors,
  };
  const records: RolloutRecord[] = [];
  const spare = [...(extras.refill ?? [])].filter((t) => !tasks.includes(t));
  let round: SweTask[] = tasks;
  let refillRounds = 0;
  let batch: ReturnType<typeof policySamples>;
  for (;;) {
    records.push(
      ...(await runRollouts({
        engine: p.engine,
        tokenizer: p.tokenizer,
        tasks: round,
        samplesPerTask: G,
        // Each refill round's samples are seeded and grouped apart from the rounds before.
        sampleSeed: rolloutSeeds({ run: c.seed, phase, iteration, round: refillRounds }, round),
        group: `${phase}/r${refillRounds}`,
        sampling: { temperature: c.dapo.temperature, topP: c.dapo.topP, topK: c.dapo.topK, minP: c.dapo.minP },
        ...rolloutOptions(c, episodeLimits(c, stage)),
        onRecord: () => hooks.progress?.(`${phase} rollouts`, ++done, total, 'episode'),
      })),
    );
    allFailedOrThrow(records, `${phase} rollouts`);
    batch = policySamples(records, batchOptions);
    const missing = tasks.length - keptGroups(batch);
    if (missing <= 0 || refillRounds >= c.dapo.refillRounds || spare.length === 0) break;
    round = spare.splice(0, missing);
    total += round.length * G;
    refillRounds++;
  }
  const rolloutSeconds = (performance.now() - t0) / 1000;
  const engineSeconds = p.engine.stats().busySeconds - busy0; // the rest: waiting on the environment
  hooks.rollouts?.(phase, records);
  const generated = records.reduce((a, r) => a + r.assistantMask.reduce((s, x) => s + x, 0), 0);
  // The reference's logprobs at the rollout temperature, as the policy's are in the step (verl's
  // reference policy also divides by the rollout temperature), so the k3 KL compares like with like.
  if (extras.reference)
    for (const s of batch.samples)
      s.refLogprobs = await sequenceLogprobs(extras.reference, s.tokens, { temperature: c.dapo.temperature });
  const trainer = new Trainer(p.model, { optimizer });
  const steps: StepMetrics[] = [];
  const t1 = performance.now();
  // Every pass's steps take the rollout policy's logprobs as the ratio's denominator, so passes
  // after the first are off-policy by design and the clip bounds them (PPO's epochs).
  const n = batch.samples.length;
  const per = stage.batchSize > 0 ? stage.batchSize : Math.max(1, Math.ceil(n / c.dapo.stepsPerIteration));
  const planned = n > 0 ? c.dapo.epochs * Math.ceil(n / per) : 0;
  for (let epoch = 0; epoch < c.dapo.epochs && batch.samples.length > 0; epoch++) {
    const order = shuffled(batch.samples, c.seed + iteration + epoch * 7_919_993);
    for (let b = 0; b < order.length; b += per) {
      steps.push(
        await trainer.policyStep(order.slice(b, b + per), dapoLossConfig(c, stage), {
          temperature: c.dapo.temperature,
        }),
      );
      hooks.progress?.(`${phase} training`, steps.length, planned, 'step');
    }
  }
  const trainSeconds = (performance.now() - t1) / 1000;
  const mean = (f: (m: StepMetrics) => number | undefined) =>
    steps.length ? steps.reduce((a, m) => a + (f(m) ?? 0), 0) / steps.length : 0;
  const metrics = {
    iteration,
    skipped: steps.length === 0 ? 1 : 0,
    ...episodeStats(records),
    groups: batch.groups,
    droppedGroups: batch.droppedGroups,
    droppedUntrained: batch.droppedUntrained,
    droppedErrors: batch.droppedErrors,
    trainedSamples: batch.samples.length,
    steps: steps.length,
    samplesPerStep: n > 0 ? per : 0,
    lr: steps[0]?.lr ?? 0,
    loss: mean((m) => m.loss),
    entropy: mean((m) => m.entropy),
    clipFracLow: mean((m) => m.clipFracLow),
    clipFracHigh: mean((m) => m.clipFracHigh),
    ratioDeviation: mean((m) => m.ratioDeviation),
    kl: mean((m) => m.kl),
    refillRounds,
    gradNorm: mean((m) => m.gradNorm),
    rolloutSeconds,
    engineSeconds,
    trainSeconds,
    rolloutTokensPerSecond: generated / Math.max(1e-9, rolloutSeconds),
  };
  hooks.log({ stage: 'dapo', event: 'iteration', phase, ...metrics });
  return { metrics, records };
}

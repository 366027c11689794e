/**
 * The trainer: optimizer steps over multi-turn samples (rollout records or demonstrations).
 * A sample is a whole conversation's tokens with a per-token loss mask (the policy's own tokens;
 * observations and masked turns get 0); token i is trained as the target of row i − 1. Each
 * sample is its own micro-batch (no packing: the native backward takes one sequence); every sample
 * runs forward, the fused LM-head loss and backward natively, its gradients added with a weight
 * that makes the step's loss the
 * aggregation over the whole batch (DAPO's token-mean: each sample weighs its share of the
 * batch's trained tokens), then AdamW steps once. Optimizer steps update the weights in place,
 * which bumps Model.weightVersion, and an Engine over the same model re-versions its KV. A policy
 * sample trains at its rollout temperature T (logits / T, as verl's actor), so that the trainer's
 * logprobs are the engine's at T bit for bit.
 */
import { invalidArgument } from '../errors.js';
import { GRAD_SLOTS, type Model } from '../model/model.js';
import { checkInteger } from '../validate.js';
import type { AdamW } from './adamw.js';
import type { PolicyLossConfig } from './losses.js';

/** One training sample: a conversation with the tokens to train. */
export interface TrainSample {
  tokens: Int32Array;
  /** Per token: 1 where the token is trained as a target (length = tokens.length). */
  lossMask: Float32Array | Uint8Array;
}

/** A policy-gradient sample: a rollout's tokens with its advantage and behaviour logprobs. */
export interface PolicySample extends TrainSample {
  /** The sequence's advantage (every token of it), or one per token. */
  advantage: number | Float32Array;
  /** Per token: the logprobs the rollout policy gave them (the engine's), 0 where untrained. */
  oldLogprobs: Float32Array;
  /**
   * Per token: the reference policy's logprobs (see {@link sequenceLogprobs}), for the k3 KL
   * penalty of `klCoef`; without them the penalty is off for this sample.
   */
  refLogprobs?: Float32Array;
  /**
   * The temperature the rollout sampled this sample at (default: the step's
   * {@link PolicyStepOptions.temperature}). The engine records logprobs of softmax(logits / T), so
   * the trainer scales this sample's logits by 1 / T too (verl divides the actor's logits by the
   * rollout temperature): its logprobs, entropy, ratios and KL are at T. Samples of one step may
   * differ (each sample is its own micro-batch). A finite number >= 1e-5; INVALID_ARGUMENT otherwise.
   */
  temperature?: number;
}

/** Options of {@link Trainer.policyStep}. */
export interface PolicyStepOptions {
  /**
   * The rollout temperature T for samples without their own (default: the loss config's
   * `temperature`, else 1; giving both with different values is INVALID_ARGUMENT). The trainer
   * trains on softmax(logits / T): its logprobs ({@link StepMetrics.logprobs}) are bitwise the
   * engine's at T for the same weights, when the engine sampled without top-k / top-p / min-p or
   * penalties. A finite number >= 1e-5 (below it the engine samples greedily and reports
   * temperature-1 logprobs); 0, negatives, NaN and ±Infinity are INVALID_ARGUMENT, changing nothing.
   */
  temperature?: number;
}

/** Trainer options. */
export interface TrainerOptions {
  optimizer: AdamW;
  /** Activation recomputation in backward (less memory, ~1.3x time). */
  recompute?: boolean;
  /**
   * Samples whose forward and backward run at once (1 to 8), lane l taking samples l, l + L, ...
   * in order into gradient slot l (BackwardOptions.gradSlot), the slots added in lane order: the
   * step depends on the lane count, never on timing or the core count. Default 2 for models under
   * 32 M parameters, whose kernels are too small to keep two cores busy one sample at a time
   * (the embedded model's copy pretraining ran at 1.1 of 2 cores), else 1.
   */
  sampleLanes?: number;
}

/** What one optimizer step reports. */
export interface StepMetrics {
  step: number;
  lr: number;
  gradNorm: number;
  /** The batch loss (its aggregation over all trained tokens). */
  loss: number;
  samples: number;
  /** Trained tokens (Σ mask). */
  tokens: number;
  /** Backward calls: samples with a trained token (each sample is its own micro-batch). */
  microBatches: number;
  /** Policy steps: masked mean entropy, clip fractions, mean |ratio − 1|, mean k3 KL to the reference. */
  entropy?: number;
  clipFracLow?: number;
  clipFracHigh?: number;
  ratioDeviation?: number;
  kl?: number;
  /**
   * Per sample, the current policy's logprob of each token (the trainer's, for checks), before the
   * update; for a policy step, at the sample's rollout temperature.
   */
  logprobs: Float32Array[];
  seconds: number;
}

/** Row inputs of a sample: tokens[0, T−1) predict tokens[1, T). */
function rows(s: TrainSample, name: string): { tokens: Int32Array; targets: Int32Array; mask: Float32Array } {
  const T = s?.tokens?.length;
  if (!(s?.tokens instanceof Int32Array) || T < 2)
    throw invalidArgument(`${name}.tokens`, 'an Int32Array of 2+ tokens', s?.tokens);
  if (!s.lossMask || s.lossMask.length !== T)
    throw invalidArgument(`${name}.lossMask`, `${T} values (one per token)`, s.lossMask?.length);
  const mask = new Float32Array(T - 1);
  for (let t = 1; t < T; t++) mask[t - 1] = s.lossMask[t] ? 1 : 0;
  return { tokens: s.tokens.subarray(0, T - 1), targets: s.tokens.subarray(1), mask };
}

/**
 * The engine samples greedily below this temperature (vLLM's epsilon, kernels/cpu/sampler.cc), and
 * then reports temperature-1 logprobs: no rollout the trainer could match was sampled at T < this.
 */
const MIN_TEMPERATURE = 1e-5;

/**
 * A rollout temperature the trainer can match: a finite T >= 1e-5 (INVALID_ARGUMENT otherwise).
 * The loss scales the logits by 1 / T as the engine's sampler does (see {@link PolicyStepOptions}).
 */
function checkTemperature(name: string, t: unknown): number {
  if (typeof t !== 'number' || !Number.isFinite(t) || t < MIN_TEMPERATURE)
    throw invalidArgument(name, `a finite number >= ${MIN_TEMPERATURE} (the rollout temperature)`, t);
  return t;
}

/** Groups sample indices into micro-batches of at most `budget` tokens (a longer sample alone). */
export function microBatches(lengths: number[], budget: number): number[][] {
  const out: number[][] = [];
  let cur: number[] = [];
  let used = 0;
  lengths.forEach((n, i) => {
    if (cur.length > 0 && used + n > budget) {
      out.push(cur);
      cur = [];
      used = 0;
    }
    cur.push(i);
    used += n;
  });
  if (cur.length > 0) out.push(cur);
  return out;
}

/** Optimizer steps over samples, with the fused LM-head losses and gradient accumulation. */
export class Trainer {
  readonly model: Model;
  readonly #o: Required<TrainerOptions>;

  constructor(model: Model, o: TrainerOptions) {
    if (!o?.optimizer) throw invalidArgument('optimizer', 'an AdamW', o?.optimizer);
    // Removed: it was documented as packing but only grouped a metric. Refused rather than
    // ignored, so that a caller relying on it learns that nothing is packed.
    if ((o as { microBatchTokens?: unknown }).microBatchTokens !== undefined)
      throw invalidArgument(
        'microBatchTokens',
        'absent (removed: each sample is its own micro-batch)',
        (o as { microBatchTokens?: unknown }).microBatchTokens,
      );
    this.model = model;
    this.#o = {
      optimizer: o.optimizer,
      recompute: o.recompute ?? false,
      sampleLanes: checkInteger('sampleLanes', o.sampleLanes ?? (model.numParameters < 32e6 ? 2 : 1), 1, GRAD_SLOTS),
    };
  }

  /**
   * The step both kinds share: zero the gradients, run `backward` on every sample with trained
   * tokens (in order, `sampleLanes` at once, each lane on its gradient slot),
   * given its trained tokens n, the batch's N and the count S of samples with any, then one
   * optimizer step. Results come back by sample index (null for a sample with nothing trained),
   * so that callers sum them in a fixed order.
   */
  async #step<P extends { tokens: Int32Array; mask: Float32Array }, R extends { logprobs: Float32Array }>(
    prepared: P[],
    backward: (p: P, c: { n: number; N: number; S: number; gradSlot: number; ownThread: boolean }) => Promise<R>,
  ) {
    const counts = prepared.map((p) => p.mask.reduce((a, b) => a + b, 0));
    const N = counts.reduce((a, b) => a + b, 0);
    const S = counts.filter((n) => n > 0).length;
    if (N === 0) throw invalidArgument('samples', 'at least one trained token', 0);
    this.model.zeroGrad();
    const results: (R | null)[] = new Array(prepared.length).fill(null);
    const todo = prepared.map((_, i) => i).filter((i) => (counts[i] as number) > 0);
    const lanes = Math.min(this.#o.sampleLanes, todo.length);
    const settled = await Promise.allSettled(
      Array.from({ length: lanes }, async (_, l) => {
        for (let k = l; k < todo.length; k += lanes) {
          const i = todo[k] as number;
          results[i] = await backward(prepared[i] as P, {
            n: counts[i] as number,
            N,
            S,
            gradSlot: l,
            ownThread: lanes > 1,
          });
        }
      }),
    );
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    const st = await this.#o.optimizer.step();
    const logprobs = results.map((r, i) => r?.logprobs ?? new Float32Array((prepared[i] as P).tokens.length));
    return { N, microBatches: todo.length, results, counts, logprobs, st };
  }

  /**
   * One SFT step: token-mean cross-entropy over every masked token of every sample. A batch with
   * no trained token (no samples, or every mask 0) has no loss to average: it throws
   * INVALID_ARGUMENT and changes nothing (no optimizer step, the step count unchanged). Callers
   * with possibly empty data skip the step instead, as the pipeline's stages do (sftEpochs, rft,
   * dapoIteration).
   */
  async sftStep(samples: TrainSample[]): Promise<StepMetrics> {
    const t0 = performance.now();
    const prepared = samples.map((s, i) => rows(s, `samples[${i}]`));
    const r = await this.#step(prepared, (p, { n, N, gradSlot, ownThread }) =>
      this.model.sftBackward(p, { lossScale: n / N, recompute: this.#o.recompute, gradSlot, ownThread }),
    );
    let loss = 0;
    r.results.forEach((b, i) => {
      if (b) loss += b.loss * ((r.counts[i] as number) / r.N);
    });
    return {
      ...r.st,
      loss,
      samples: samples.length,
      tokens: r.N,
      microBatches: r.microBatches,
      logprobs: r.logprobs,
      seconds: (performance.now() - t0) / 1000,
    };
  }

  /**
   * One policy-gradient step (PPO-clip / DAPO per `cfg`): each sample's advantage and behaviour
   * logprobs, aggregated over the batch by `cfg.agg` (token-mean by default). Like
   * {@link Trainer.sftStep}, a batch with no trained token throws INVALID_ARGUMENT, untouched.
   * Each sample trains at its rollout temperature (its own `temperature`, else `o.temperature`,
   * else `cfg.temperature`, else 1): the logits are divided by it, as verl's actor does, so the
   * step's logprobs are the engine's at that temperature (see {@link PolicyStepOptions.temperature}).
   */
  async policyStep(
    samples: PolicySample[],
    cfg: PolicyLossConfig = {},
    o: PolicyStepOptions = {},
  ): Promise<StepMetrics> {
    const t0 = performance.now();
    const agg = cfg.agg ?? 'token-mean';
    if (o?.temperature !== undefined && cfg.temperature !== undefined && o.temperature !== cfg.temperature)
      throw invalidArgument(
        'temperature',
        `the loss config's temperature ${cfg.temperature} (give one of them)`,
        o.temperature,
      );
    const stepT = checkTemperature('temperature', o?.temperature ?? cfg.temperature ?? 1);
    const prepared = samples.map((s, i) => {
      const r = rows(s, `samples[${i}]`);
      const temperature =
        s.temperature === undefined ? stepT : checkTemperature(`samples[${i}].temperature`, s.temperature);
      const T = s.tokens.length;
      if (!(s.oldLogprobs instanceof Float32Array) || s.oldLogprobs.length !== T)
        throw invalidArgument(`samples[${i}].oldLogprobs`, `a Float32Array of ${T}`, s.oldLogprobs?.length);
      const advantages = new Float32Array(T - 1);
      if (typeof s.advantage === 'number') {
        if (!Number.isFinite(s.advantage))
          throw invalidArgument(`samples[${i}].advantage`, 'a finite number', s.advantage);
        advantages.fill(s.advantage);
      } else if (s.advantage instanceof Float32Array && s.advantage.length === T)
        advantages.set(s.advantage.subarray(1));
      else throw invalidArgument(`samples[${i}].advantage`, `a number or a Float32Array of ${T}`, s.advantage);
      if (s.refLogprobs !== undefined && !(s.refLogprobs instanceof Float32Array && s.refLogprobs.length === T))
        throw invalidArgument(`samples[${i}].refLogprobs`, `a Float32Array of ${T}`, s.refLogprobs?.length);
      const refLogprobs = s.refLogprobs?.subarray(1);
      return {
        ...r,
        oldLogprobs: s.oldLogprobs.subarray(1),
        advantages,
        temperature,
        ...(refLogprobs ? { refLogprobs } : {}),
      };
    });
    // Each call aggregates over its own sample; this weight makes the sum the batch's aggregate.
    const weight = (n: number, N: number, S: number) => (agg === 'token-mean' ? n / N : 1 / S);
    const step = await this.#step(prepared, (p, { n, N, S, gradSlot, ownThread }) =>
      this.model.policyBackward(
        p,
        { ...cfg, temperature: p.temperature },
        {
          lossScale: weight(n, N, S),
          recompute: this.#o.recompute,
          gradSlot,
          ownThread,
        },
      ),
    );
    const N = step.N;
    const S = step.counts.filter((n) => n > 0).length;
    let loss = 0;
    let entropy = 0;
    let clipLow = 0;
    let clipHigh = 0;
    let dev = 0;
    let kl = 0;
    step.results.forEach((r, i) => {
      if (!r) return;
      const p = prepared[i] as (typeof prepared)[number];
      const n = step.counts[i] as number;
      loss += r.loss * weight(n, N, S);
      entropy += r.entropy * n;
      clipLow += r.clipFracLow * n;
      clipHigh += r.clipFracHigh * n;
      for (let t = 0; t < p.mask.length; t++)
        if (p.mask[t]) dev += Math.abs(Math.exp((r.logprobs[t] as number) - (p.oldLogprobs[t] as number)) - 1);
      if (p.refLogprobs)
        for (let t = 0; t < p.mask.length; t++) {
          if (!p.mask[t]) continue;
          // k3 (Schulman's low-variance estimator), as verl's low_var_kl, clamped the same way.
          const d = Math.max(-20, Math.min(20, (p.refLogprobs[t] as number) - (r.logprobs[t] as number)));
          kl += Math.min(10, Math.exp(d) - d - 1);
        }
    });
    return {
      ...step.st,
      loss,
      samples: samples.length,
      tokens: N,
      microBatches: step.microBatches,
      entropy: entropy / N,
      clipFracLow: clipLow / N,
      clipFracHigh: clipHigh / N,
      ratioDeviation: dev / N,
      kl: kl / N,
      logprobs: step.logprobs,
      seconds: (performance.now() - t0) / 1000,
    };
  }
}

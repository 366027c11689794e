/**
 * AdamW with decoupled weight decay and bias correction (torch.optim.AdamW's arithmetic), global
 * gradient-norm clipping (torch.nn.utils.clip_grad_norm_'s rule) and learning-rate schedules,
 * over a {@link Model}'s accumulated gradients. The update runs natively, off the JS thread.
 */
import { open } from 'node:fs/promises';
import { invalidArgument, SwerlError } from '../errors.js';
import { type Model, nativeModelOf } from '../model/model.js';
import { readSafetensorsHeader, writeSafetensors } from '../model/safetensors.js';

/** A learning rate per optimizer step (1-based: the rate of the step about to be taken). */
export type LrSchedule = (step: number) => number;

/** A constant learning rate. */
export function constantLr(lr: number): LrSchedule {
  checkRate('lr', lr);
  return () => lr;
}

/** The cosine decay's factor at `progress` in [0, 1]: 1 at 0, `minRatio` at 1. */
export function cosineDecay(progress: number, minRatio: number): number {
  return minRatio + (1 - minRatio) * 0.5 * (1 + Math.cos(Math.PI * progress));
}

/**
 * Linear warmup from 0 to `peak` over `warmupSteps`, then cosine decay to `peak · minRatio` at
 * `totalSteps` (transformers' get_cosine_schedule_with_warmup, with a floor), as the paper's RFT
 * recipe uses.
 */
export function warmupCosineLr(o: {
  peak: number;
  warmupSteps: number;
  totalSteps: number;
  minRatio?: number;
}): LrSchedule {
  checkRate('peak', o.peak);
  const minRatio = o.minRatio ?? 0;
  if (!(Number.isInteger(o.warmupSteps) && o.warmupSteps >= 0))
    throw invalidArgument('warmupSteps', 'an integer >= 0', o.warmupSteps);
  if (!(Number.isInteger(o.totalSteps) && o.totalSteps > o.warmupSteps))
    throw invalidArgument('totalSteps', 'an integer > warmupSteps', o.totalSteps);
  if (!(minRatio >= 0 && minRatio <= 1)) throw invalidArgument('minRatio', 'a number in [0, 1]', minRatio);
  return (step) => {
    if (step <= o.warmupSteps) return (o.peak * step) / Math.max(1, o.warmupSteps);
    const progress = Math.min(1, (step - o.warmupSteps) / (o.totalSteps - o.warmupSteps));
    return o.peak * cosineDecay(progress, minRatio);
  };
}

function checkRate(name: string, v: unknown): void {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw invalidArgument(name, 'a finite number >= 0', v);
}

/** AdamW's settings (torch's defaults, except weightDecay 0.01 as transformers' Trainer uses for RL). */
export interface AdamWOptions {
  /** A learning rate or a schedule (default 1e-5). */
  lr?: number | LrSchedule;
  betas?: [number, number];
  eps?: number;
  /** Decoupled weight decay (default 0.01), on linear and embedding weights only unless decayAll. */
  weightDecay?: number;
  decayAll?: boolean;
  /** Clip the global gradient norm to this before the update (default 1.0; 0 = off). */
  maxGradNorm?: number;
  /**
   * Continue the model's optimizer state (its step count and moments, e.g. restored from a
   * checkpoint) instead of starting afresh. One optimizer per model at a time: the state is the model's.
   */
  resume?: boolean;
}

/** The result of one {@link AdamW.step}. */
export interface StepResult {
  /** The step just taken (1-based). */
  step: number;
  /** The learning rate it used. */
  lr: number;
  /** The global gradient norm before clipping. */
  gradNorm: number;
}

/** AdamW over one model's parameters; its moments live natively beside the weights. */
export class AdamW {
  readonly #model: Model;
  readonly #schedule: LrSchedule;
  readonly #cfg: {
    beta1: number;
    beta2: number;
    eps: number;
    weightDecay: number;
    maxGradNorm: number;
    decayAll: boolean;
  };

  constructor(model: Model, o: AdamWOptions = {}) {
    this.#model = model;
    const lr = o.lr ?? 1e-5;
    this.#schedule = typeof lr === 'function' ? lr : constantLr(lr);
    const [beta1, beta2] = o.betas ?? [0.9, 0.999];
    for (const [n, v] of [
      ['betas[0]', beta1],
      ['betas[1]', beta2],
    ] as const)
      if (!(typeof v === 'number' && v >= 0 && v < 1)) throw invalidArgument(n, 'a number in [0, 1)', v);
    const eps = o.eps ?? 1e-8;
    if (!(typeof eps === 'number' && eps > 0)) throw invalidArgument('eps', 'a number > 0', eps);
    const weightDecay = o.weightDecay ?? 0.01;
    checkRate('weightDecay', weightDecay);
    const maxGradNorm = o.maxGradNorm ?? 1;
    checkRate('maxGradNorm', maxGradNorm);
    this.#cfg = { beta1, beta2, eps, weightDecay, maxGradNorm, decayAll: o.decayAll ?? false };
    // The moments and the step count live on the model: a new optimizer starts them afresh (its
    // schedule from step 1), as a new torch optimizer does, unless it resumes the model's state.
    if (!o.resume) nativeModelOf(model).resetOptimizer();
  }

  /** Steps taken so far. */
  get stepCount(): number {
    return nativeModelOf(this.#model).optimizerSteps();
  }

  /**
   * Writes the optimizer state (the step count, and torch's `exp_avg` / `exp_avg_sq` moments over
   * the model's flat parameter arena, f32) as one safetensors file, atomically.
   */
  async save(path: string): Promise<void> {
    const st = nativeModelOf(this.#model).optimizerState();
    const n = this.#model.numParameters;
    const zeros = () => new Float32Array(n);
    const m = st.m ?? zeros();
    const v = st.v ?? zeros();
    await writeSafetensors(
      path,
      [
        { name: 'exp_avg', shape: [m.length], data: m },
        { name: 'exp_avg_sq', shape: [v.length], data: v },
      ],
      'F32',
      { format: 'swerl-adamw', step: String(st.step) },
    );
  }

  /**
   * An optimizer that continues the state {@link AdamW.save} wrote for this model (its schedule
   * continues from the saved step). Throws CORRUPT_FILE when the file does not fit the model.
   */
  static async load(model: Model, path: string, o: Omit<AdamWOptions, 'resume'> = {}): Promise<AdamW> {
    const h = await readSafetensorsHeader(path);
    const step = Number(h.metadata.step);
    const read = async (name: string): Promise<Float32Array> => {
      const e = h.tensors.get(name);
      if (e?.dtype !== 'F32' || e.bytes !== model.numParameters * 4)
        throw new SwerlError(
          `${path}: ${name} is missing or does not match this model's ${model.numParameters} parameters`,
          'CORRUPT_FILE',
        );
      const out = new Float32Array(model.numParameters);
      const fh = await open(path, 'r');
      try {
        await fh.read(new Uint8Array(out.buffer), 0, e.bytes, e.begin);
      } finally {
        await fh.close();
      }
      return out;
    };
    if (!Number.isInteger(step) || step < 0)
      throw new SwerlError(`${path}: no valid step in its metadata`, 'CORRUPT_FILE');
    const m = await read('exp_avg');
    const v = await read('exp_avg_sq');
    nativeModelOf(model).setOptimizerState(step, m, v);
    return new AdamW(model, { ...o, resume: true });
  }

  /**
   * Clips, applies one AdamW update with the scheduled rate, and zeroes the gradients. Throws
   * NON_FINITE_GRADIENT (weights unchanged) when a gradient is NaN or infinite.
   */
  async step(): Promise<StepResult> {
    const next = nativeModelOf(this.#model).optimizerSteps() + 1;
    const lr = this.#schedule(next);
    checkRate('scheduled lr', lr);
    const r = await nativeModelOf(this.#model).optimizerStep({ lr, ...this.#cfg });
    return { step: r.step, lr, gradNorm: r.gradNorm };
  }
}

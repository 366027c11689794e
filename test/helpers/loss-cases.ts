/**
 * Seeded inputs for the loss tests (the generators of test/native/loss.test.ts, shared with
 * test/cuda/losses.test.ts): random logits rows, targets, masks, and per-token logprobs placed so
 * that each log-ratio logp − old is clearly inside the clip range, below or above it, never near a
 * kink (the clip bounds 0.8 and 1.28, a dual clip of 3, ±20), so float32 and float64 take the same
 * branch.
 */
import { rowStats, scaleLogits } from './loss-reference.js';
import { normal, rng } from './random.js';

/** The policy loss's inputs, host arrays; logits [T, vocab]. */
export interface PolicyArgs {
  logits: Float32Array;
  vocab: number;
  targets: Int32Array;
  oldLogprobs: Float32Array;
  advantages: Float32Array;
  mask: Float32Array;
  seqIds?: Int32Array;
  refLogprobs?: Float32Array;
  rolloutLogprobs?: Float32Array;
}

/** The SFT loss's inputs, host arrays; logits [T, vocab]. */
export interface SftArgs {
  logits: Float32Array;
  vocab: number;
  targets: Int32Array;
  mask: Float32Array;
  temperature?: number;
}

/** Options of {@link makePolicyCase}. */
export interface CaseOptions {
  T: number;
  vocab: number;
  seed: number;
  /** Standard deviation of the logits (default 2). */
  scale?: number;
  /** Contiguous runs of up to 5 sequences with sparse ids (one may be fully masked). */
  seqs?: boolean;
  /** Probability that a token is in the mask (default 0.8). */
  maskProb?: number;
  /** refLogprobs within ±1.5 of logp. */
  kl?: boolean;
  /** rolloutLogprobs within ±1 of oldLogprobs. */
  tis?: boolean;
}

const uniform = (r: () => number, lo: number, hi: number) => lo + (hi - lo) * r();

/**
 * A log-ratio logp − old clearly inside the clip range, below it, or above it; never within 0.15 of
 * log(0.8), log(1.28), log(3) (the dual clip used here) or ±20.
 */
export function logRatio(r: () => number): number {
  const k = r();
  if (k < 0.4) return uniform(r, -0.07, 0.09);
  if (k < 0.65) return uniform(r, -1.5, -0.4);
  if (k < 0.85) return uniform(r, 0.4, 0.9);
  return uniform(r, 1.3, 2.5);
}

/** A random policy-loss case (see the options); 20% of the rows put their target on a peak. */
export function makePolicyCase(o: CaseOptions): PolicyArgs {
  const r = rng(o.seed);
  const { T, vocab } = o;
  const scale = o.scale ?? 2;
  const logits = new Float32Array(T * vocab);
  for (let i = 0; i < logits.length; i++) logits[i] = normal(r) * scale;
  const targets = new Int32Array(T);
  for (let t = 0; t < T; t++) targets[t] = Math.floor(r() * vocab);
  for (let t = 0; t < T; t++) if (r() < 0.2) logits[t * vocab + (targets[t] as number)] = 6 + scale;
  const { logp } = rowStats(logits, vocab, targets);
  const mask = new Float32Array(T);
  const maskProb = o.maskProb ?? 0.8;
  for (let t = 0; t < T; t++) mask[t] = r() < maskProb ? 1 : 0;
  const advantages = new Float32Array(T);
  for (let t = 0; t < T; t++) advantages[t] = r() < 0.05 ? 0 : normal(r);
  const oldLogprobs = new Float32Array(T);
  for (let t = 0; t < T; t++) oldLogprobs[t] = (logp[t] as number) - logRatio(r);
  const args: PolicyArgs = { logits, vocab, targets, oldLogprobs, advantages, mask };
  if (o.seqs) {
    const n = 1 + Math.floor(r() * Math.min(5, T));
    const cuts = Array.from({ length: n - 1 }, () => 1 + Math.floor(r() * Math.max(1, T - 1))).sort((x, y) => x - y);
    const seqIds = new Int32Array(T);
    let s = 0;
    for (let t = 0; t < T; t++) {
      while (s < cuts.length && t >= (cuts[s] as number)) s++;
      seqIds[t] = 3 * s + 7;
    }
    if (r() < 0.5) {
      const dead = 3 * Math.floor(r() * n) + 7;
      for (let t = 0; t < T; t++) if (seqIds[t] === dead) mask[t] = 0;
    }
    args.seqIds = seqIds;
  }
  if (o.kl) {
    const ref = new Float32Array(T);
    for (let t = 0; t < T; t++) ref[t] = (logp[t] as number) + uniform(r, -1.5, 1.5);
    args.refLogprobs = ref;
  }
  if (o.tis) {
    const roll = new Float32Array(T);
    for (let t = 0; t < T; t++) roll[t] = (oldLogprobs[t] as number) + uniform(r, -1, 1);
    args.rolloutLogprobs = roll;
  }
  return args;
}

/** A random SFT case: normal logits of standard deviation `scale`, 80% of the tokens masked in. */
export function makeSftCase(T: number, vocab: number, seed: number, scale = 2): SftArgs {
  const r = rng(seed);
  const logits = new Float32Array(T * vocab);
  for (let i = 0; i < logits.length; i++) logits[i] = normal(r) * scale;
  const targets = new Int32Array(T);
  for (let t = 0; t < T; t++) targets[t] = Math.floor(r() * vocab);
  const mask = new Float32Array(T);
  for (let t = 0; t < T; t++) mask[t] = r() < 0.8 ? 1 : 0;
  return { logits, vocab, targets, mask };
}

/**
 * The case at temperature T: oldLogprobs (and the TIS and KL logprobs) moved with the scaled
 * logprobs, so that the log-ratios stay those makePolicyCase chose, away from the kinks.
 */
export function atTemperature(args: PolicyArgs, T: number): PolicyArgs {
  const { logp } = rowStats(args.logits, args.vocab, args.targets);
  const scaled = rowStats(scaleLogits(args.logits, T), args.vocab, args.targets).logp;
  const move = (a: Float32Array | undefined) =>
    a && Float32Array.from(a, (v, t) => v + (scaled[t] as number) - (logp[t] as number));
  const out: PolicyArgs = { ...args, oldLogprobs: move(args.oldLogprobs) as Float32Array };
  if (args.refLogprobs) out.refLogprobs = move(args.refLogprobs) as Float32Array;
  if (args.rolloutLogprobs) out.rolloutLogprobs = move(args.rolloutLogprobs) as Float32Array;
  return out;
}

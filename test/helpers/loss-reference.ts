/**
 * Plain float64 references for policyLoss / sftLoss, written from the spec (DESIGN.md section 6),
 * independent of native/. Sums use Neumaier compensation; logsumexp subtracts the row maximum.
 * Inputs are read as numbers (f32 inputs are exact in f64), so a test can also feed float64 logits
 * here to check the reference gradient by finite differences. A temperature T makes the loss that of
 * softmax(logits / T): the logits are divided by T in float64 and the gradient carries 1 / T.
 */

export type LossAgg = 'token-mean' | 'seq-mean-token-mean' | 'seq-mean-token-sum' | 'seq-mean-token-sum-norm';

export interface PolicyLossRefConfig {
  clipLow?: number;
  clipHigh?: number;
  dualClip?: number;
  agg?: LossAgg;
  normLength?: number;
  klCoef?: number;
  entropyCoef?: number;
  tisCap?: number;
  /** Rollout temperature T (default 1): everything is of softmax(logits / T). */
  temperature?: number;
}

export interface PolicyLossRefInput {
  logits: ArrayLike<number>;
  vocab: number;
  targets: ArrayLike<number>;
  oldLogprobs: ArrayLike<number>;
  advantages: ArrayLike<number>;
  mask: ArrayLike<number>;
  seqIds?: ArrayLike<number> | undefined;
  refLogprobs?: ArrayLike<number> | undefined;
  rolloutLogprobs?: ArrayLike<number> | undefined;
}

export interface PolicyLossRef {
  loss: number;
  gradLogits: Float64Array;
  logprobs: Float64Array;
  entropy: number;
  clipFracLow: number;
  clipFracHigh: number;
  /** Σ|w_t|·(|tis·ℓ_t| + klCoef·|k3_t| + entropyCoef·|H_t|): the magnitude the loss's rounding error scales with. */
  lossScale: number;
  /** Per-token entropy H_t. */
  tokenEntropy: Float64Array;
}

export interface SftLossRefInput {
  logits: ArrayLike<number>;
  vocab: number;
  targets: ArrayLike<number>;
  mask: ArrayLike<number>;
  /** Temperature T (default 1): the loss is of softmax(logits / T). */
  temperature?: number | undefined;
}

export interface SftLossRef {
  loss: number;
  gradLogits: Float64Array;
  logprobs: Float64Array;
  lossScale: number;
}

/** Compensated (Neumaier) summation. */
export class Sum {
  private s = 0;
  private c = 0;
  add(x: number): void {
    const t = this.s + x;
    if (Math.abs(this.s) >= Math.abs(x)) this.c += this.s - t + x;
    else this.c += x - t + this.s;
    this.s = t;
  }
  get value(): number {
    return this.s + this.c;
  }
}

/** Per-row softmax statistics: lse_t, logp_t = x[target] − lse, H_t = −Σ p log p. */
export interface RowStats {
  lse: Float64Array;
  logp: Float64Array;
  entropy: Float64Array;
}

export function rowStats(logits: ArrayLike<number>, vocab: number, targets: ArrayLike<number>): RowStats {
  const T = targets.length;
  const lse = new Float64Array(T);
  const logp = new Float64Array(T);
  const entropy = new Float64Array(T);
  for (let t = 0; t < T; t++) {
    const off = t * vocab;
    let mx = Number.NEGATIVE_INFINITY;
    for (let j = 0; j < vocab; j++) mx = Math.max(mx, logits[off + j] as number);
    const z = new Sum();
    for (let j = 0; j < vocab; j++) z.add(Math.exp((logits[off + j] as number) - mx));
    const l = mx + Math.log(z.value);
    const h = new Sum();
    for (let j = 0; j < vocab; j++) {
      const lp = (logits[off + j] as number) - l;
      h.add(-Math.exp(lp) * lp);
    }
    lse[t] = l;
    logp[t] = (logits[off + (targets[t] as number)] as number) - l;
    entropy[t] = Math.max(0, h.value);
  }
  return { lse, logp, entropy };
}

/**
 * Aggregation weights: agg(x) = Σ_t w_t x_t. Returns null when Σm = 0 or no sequence has Σm > 0
 * (the loss is then 0 with zero gradients).
 */
export function aggWeights(
  mask: ArrayLike<number>,
  seqIds: ArrayLike<number> | undefined,
  agg: LossAgg,
  normLength: number | undefined,
): Float64Array | null {
  const T = mask.length;
  const total = new Sum();
  for (let t = 0; t < T; t++) total.add(mask[t] as number);
  const sumM = total.value;
  if (!(sumM > 0)) return null;
  const w = new Float64Array(T);
  if (agg === 'token-mean') {
    for (let t = 0; t < T; t++) w[t] = (mask[t] as number) / sumM;
    return w;
  }
  const perSeq = new Map<number, Sum>();
  for (let t = 0; t < T; t++) {
    const id = seqIds ? (seqIds[t] as number) : 0;
    let s = perSeq.get(id);
    if (!s) {
      s = new Sum();
      perSeq.set(id, s);
    }
    s.add(mask[t] as number);
  }
  let S = 0;
  for (const s of perSeq.values()) if (s.value > 0) S++;
  if (S === 0) return null;
  for (let t = 0; t < T; t++) {
    const m = mask[t] as number;
    const ms = (perSeq.get(seqIds ? (seqIds[t] as number) : 0) as Sum).value;
    if (agg === 'seq-mean-token-mean') w[t] = ms > 0 ? m / (S * ms) : 0;
    else if (agg === 'seq-mean-token-sum') w[t] = m / S;
    else if (agg === 'seq-mean-token-sum-norm') {
      if (normLength === undefined || !(normLength > 0)) throw new Error('normLength required');
      w[t] = m / (S * normLength);
    } else throw new Error(`bad agg ${String(agg)}`);
  }
  return w;
}

/** logits / T in float64 (the logits themselves when T is 1 or absent). */
export function scaleLogits(logits: ArrayLike<number>, temperature: number | undefined): ArrayLike<number> {
  if (temperature === undefined || temperature === 1) return logits;
  return Float64Array.from(logits as ArrayLike<number>, (x) => x / temperature);
}

/** Multiplies a gradient with respect to logits / T by d(logits / T) / d logits = 1 / T, in place. */
function chainTemperature(grad: Float64Array, temperature: number | undefined): void {
  if (temperature === undefined || temperature === 1) return;
  for (let i = 0; i < grad.length; i++) grad[i] = (grad[i] as number) / temperature;
}

const clamp = (x: number, lo: number, hi: number) => Math.min(Math.max(x, lo), hi);
/** Derivative of clamp: identity inside [lo, hi] (inclusive), zero outside. */
const dclamp = (x: number, lo: number, hi: number) => (x >= lo && x <= hi ? 1 : 0);

/**
 * Writes d(loss)/d(logits) for one row given gLogp = d loss/d logp_t and gH = d loss/d H_t:
 * gLogp·(δ(j,target) − p_j) + gH·(−p_j (log p_j + H_t)).
 */
function rowGrad(
  out: Float64Array,
  logits: ArrayLike<number>,
  vocab: number,
  t: number,
  target: number,
  lse: number,
  H: number,
  gLogp: number,
  gH: number,
): void {
  const off = t * vocab;
  for (let j = 0; j < vocab; j++) {
    const lp = (logits[off + j] as number) - lse;
    const p = Math.exp(lp);
    out[off + j] = gLogp * ((j === target ? 1 : 0) - p) + gH * (-p * (lp + H));
  }
}

export function policyLossRef(a: PolicyLossRefInput, cfg: PolicyLossRefConfig = {}): PolicyLossRef {
  const clipLow = cfg.clipLow ?? 0.2;
  const clipHigh = cfg.clipHigh ?? 0.28;
  const dualClip = cfg.dualClip ?? 0;
  const agg = cfg.agg ?? 'token-mean';
  const klCoef = cfg.klCoef ?? 0;
  const entropyCoef = cfg.entropyCoef ?? 0;
  const tisCap = cfg.tisCap ?? 0;
  const { vocab, targets, oldLogprobs, advantages, mask } = a;
  const logits = scaleLogits(a.logits, cfg.temperature);
  const T = targets.length;
  const { lse, logp, entropy } = rowStats(logits, vocab, targets);
  const gradLogits = new Float64Array(T * vocab);
  const zero: PolicyLossRef = {
    loss: 0,
    gradLogits,
    logprobs: logp,
    entropy: 0,
    clipFracLow: 0,
    clipFracHigh: 0,
    lossScale: 0,
    tokenEntropy: entropy,
  };
  if (agg === 'seq-mean-token-sum-norm' && (cfg.normLength === undefined || !(cfg.normLength > 0))) {
    throw new Error('normLength required');
  }
  const w = aggWeights(mask, a.seqIds, agg, cfg.normLength);
  if (!w) return zero;

  const sumM = new Sum();
  const entSum = new Sum();
  const lowSum = new Sum();
  const highSum = new Sum();
  const loss = new Sum();
  const scale = new Sum();
  const lo = 1 - clipLow;
  const hi = 1 + clipHigh;
  const useKl = klCoef > 0 && a.refLogprobs !== undefined;
  const useTis = tisCap > 0 && a.rolloutLogprobs !== undefined;
  for (let t = 0; t < T; t++) {
    const m = mask[t] as number;
    const A = advantages[t] as number;
    const lp = logp[t] as number;
    const H = entropy[t] as number;
    sumM.add(m);
    entSum.add(m * H);

    // Clipped surrogate.
    const d = lp - (oldLogprobs[t] as number);
    const r = Math.exp(clamp(d, -20, 20));
    const drdLogp = r * dclamp(d, -20, 20);
    const L1 = -A * r;
    const L2 = -A * clamp(r, lo, hi);
    let ell: number;
    let dEll: number; // d ℓ / d logp
    if (L1 >= L2) {
      ell = L1;
      dEll = -A * drdLogp;
    } else {
      ell = L2;
      dEll = -A * dclamp(r, lo, hi) * drdLogp;
    }
    if (dualClip > 1 && A < 0 && -A * dualClip < ell) {
      ell = -A * dualClip;
      dEll = 0;
    }
    if (A > 0 && r > hi) highSum.add(m);
    if (A < 0 && r < lo) lowSum.add(m);
    if (useTis) {
      const tw = Math.min(
        Math.exp((oldLogprobs[t] as number) - ((a.rolloutLogprobs as ArrayLike<number>)[t] as number)),
        tisCap,
      );
      ell *= tw;
      dEll *= tw;
    }

    // k3 KL estimator.
    let k3 = 0;
    let dK3 = 0; // d k3 / d logp
    if (useKl) {
      const x = ((a.refLogprobs as ArrayLike<number>)[t] as number) - lp;
      const xc = clamp(x, -20, 20);
      const raw = Math.exp(xc) - xc - 1;
      k3 = Math.min(raw, 10);
      dK3 = raw <= 10 ? (Math.exp(xc) - 1) * dclamp(x, -20, 20) * -1 : 0;
    }

    const wt = w[t] as number;
    loss.add(wt * ell);
    if (useKl) loss.add(klCoef * wt * k3);
    if (entropyCoef !== 0) loss.add(-entropyCoef * wt * H);
    scale.add(Math.abs(wt) * (Math.abs(ell) + klCoef * Math.abs(k3) + Math.abs(entropyCoef) * Math.abs(H)));

    const gLogp = wt * (dEll + (useKl ? klCoef * dK3 : 0));
    const gH = -entropyCoef * wt;
    if (gLogp !== 0 || gH !== 0) {
      rowGrad(gradLogits, logits, vocab, t, targets[t] as number, lse[t] as number, H, gLogp, gH);
    }
  }
  const M = sumM.value;
  chainTemperature(gradLogits, cfg.temperature);
  return {
    loss: loss.value,
    gradLogits,
    logprobs: logp,
    entropy: entSum.value / M,
    clipFracLow: lowSum.value / M,
    clipFracHigh: highSum.value / M,
    lossScale: scale.value,
    tokenEntropy: entropy,
  };
}

export function sftLossRef(a: SftLossRefInput): SftLossRef {
  const { vocab, targets, mask } = a;
  const logits = scaleLogits(a.logits, a.temperature);
  const T = targets.length;
  const { lse, logp, entropy } = rowStats(logits, vocab, targets);
  const gradLogits = new Float64Array(T * vocab);
  const total = new Sum();
  for (let t = 0; t < T; t++) total.add(mask[t] as number);
  const M = total.value;
  if (!(M > 0)) return { loss: 0, gradLogits, logprobs: logp, lossScale: 0 };
  const loss = new Sum();
  const scale = new Sum();
  for (let t = 0; t < T; t++) {
    const wt = (mask[t] as number) / M;
    const lp = logp[t] as number;
    loss.add(-wt * lp);
    scale.add(Math.abs(wt * lp));
    if (wt !== 0)
      rowGrad(gradLogits, logits, vocab, t, targets[t] as number, lse[t] as number, entropy[t] as number, -wt, 0);
  }
  chainTemperature(gradLogits, a.temperature);
  return { loss: loss.value, gradLogits, logprobs: logp, lossScale: scale.value };
}

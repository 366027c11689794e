/**
 * A plain float64 reference of the distribution sample() draws from (DESIGN.md section 6), written
 * from the spec, independent of native/, plus the statistics the sampling tests need (chi-square
 * goodness of fit with its survival function).
 *
 * vLLM's order, per row:
 * 1. penalties on a copy y of the logits: the repetition penalty r over tokens in promptTokens ∪
 *    outputTokens (y > 0 ? y / r : y · r), then y_j −= frequencyPenalty · c_j + presencePenalty · [c_j > 0]
 *    with c_j the count of j in outputTokens;
 * 2. temperature 0: greedy, the first maximum of y; its logprob is log_softmax(y)[token];
 * 3. otherwise z = y / T, p = softmax(z) and three filters, each keeping a prefix of the order
 *    (z descending, index ascending): min-p (p_j ≥ minP · max p), top-k (the first k), top-p (the
 *    shortest prefix whose mass, renormalised over what is kept so far, reaches p). The processed
 *    distribution is p restricted to the kept set and renormalised.
 * −Inf logits have probability 0; NaN, +Inf or an all −Inf row are errors (the reference throws).
 */

/** Sampling parameters as SamplingParams spells them (the seed is irrelevant to the distribution). */
import { Sum } from './loss-reference.js';

export interface SamplingRefParams {
  temperature?: number;
  topK?: number;
  topP?: number;
  minP?: number;
  repetitionPenalty?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  promptTokens?: ArrayLike<number>;
  outputTokens?: ArrayLike<number>;
}

function checkRow(x: ArrayLike<number>): void {
  let anyFinite = false;
  for (let j = 0; j < x.length; j++) {
    const v = x[j] as number;
    if (Number.isNaN(v) || v === Number.POSITIVE_INFINITY) throw new Error('reference: NaN or +Inf logit');
    if (v > Number.NEGATIVE_INFINITY) anyFinite = true;
  }
  if (!anyFinite) throw new Error('reference: no finite logit');
}

/** log_softmax(x) in float64 (−Inf entries stay −Inf). */
export function logSoftmax(x: ArrayLike<number>): Float64Array {
  checkRow(x);
  let mx = Number.NEGATIVE_INFINITY;
  for (let j = 0; j < x.length; j++) mx = Math.max(mx, x[j] as number);
  const s = new Sum();
  for (let j = 0; j < x.length; j++) s.add(Math.exp((x[j] as number) - mx));
  const lse = mx + Math.log(s.value);
  const out = new Float64Array(x.length);
  for (let j = 0; j < x.length; j++) out[j] = (x[j] as number) - lse;
  return out;
}

/** Step 1: the penalised logits y (float64). */
export function penalizedLogits(logits: ArrayLike<number>, p: SamplingRefParams): Float64Array {
  const n = logits.length;
  const y = Float64Array.from(logits);
  const prompt = p.promptTokens ?? [];
  const output = p.outputTokens ?? [];
  const r = p.repetitionPenalty ?? 1;
  if (r !== 1) {
    const seen = new Uint8Array(n);
    for (let i = 0; i < prompt.length; i++) seen[prompt[i] as number] = 1;
    for (let i = 0; i < output.length; i++) seen[output[i] as number] = 1;
    for (let j = 0; j < n; j++) {
      if (!seen[j]) continue;
      const v = y[j] as number;
      y[j] = v > 0 ? v / r : v * r;
    }
  }
  const freq = p.frequencyPenalty ?? 0;
  const pres = p.presencePenalty ?? 0;
  if (freq !== 0 || pres !== 0) {
    const count = new Float64Array(n);
    for (let i = 0; i < output.length; i++) count[output[i] as number] = (count[output[i] as number] as number) + 1;
    for (let j = 0; j < n; j++) {
      const c = count[j] as number;
      if (c > 0) y[j] = (y[j] as number) - (freq * c + pres);
    }
  }
  return y;
}

/** The processed distribution of one row. */
export interface ProcessedDistribution {
  /** True for temperature 0. */
  greedy: boolean;
  /** Greedy rows: the first maximum of the penalised logits (−1 otherwise). */
  greedyToken: number;
  /** Greedy rows: log_softmax(y)[greedyToken] (NaN otherwise). */
  greedyLogprob: number;
  /** The penalised logits y. */
  y: Float64Array;
  /** Token ids in the order (y descending, index ascending); −Inf last. */
  order: Int32Array;
  /** Length of the kept prefix of `order`. */
  keptCount: number;
  /** Kept-set membership (a kept −Inf token still has probability 0). */
  kept: Uint8Array;
  /** The processed distribution: p restricted to the kept set, renormalised (0 elsewhere). Greedy: one-hot. */
  probs: Float64Array;
  /**
   * How far the filters' decisions are from flipping: min over tokens of |ln(p_j / max p) − ln(minP)|
   * for min-p, and min(cum_cut − topP, topP − cum_{cut−1}) for top-p (Infinity when the filter is off).
   * Tests build their cases so that these margins dwarf float32 rounding.
   */
  minPMargin: number;
  topPMargin: number;
}

/** Steps 1 to 3 for one row. Throws on NaN / +Inf / all −Inf (raw or penalised). */
export function processedDistribution(logits: ArrayLike<number>, p: SamplingRefParams = {}): ProcessedDistribution {
  checkRow(logits);
  const n = logits.length;
  const y = penalizedLogits(logits, p);
  checkRow(y);
  const T = p.temperature ?? 1;
  const order = Int32Array.from({ length: n }, (_, j) => j).sort((a, b) => {
    const ya = y[a] as number;
    const yb = y[b] as number;
    return ya > yb ? -1 : ya < yb ? 1 : a - b;
  });
  const kept = new Uint8Array(n);
  const probs = new Float64Array(n);
  const base = { y, order, minPMargin: Number.POSITIVE_INFINITY, topPMargin: Number.POSITIVE_INFINITY };
  if (T === 0) {
    const token = order[0] as number;
    kept[token] = 1;
    probs[token] = 1;
    return {
      ...base,
      greedy: true,
      greedyToken: token,
      greedyLogprob: logSoftmax(y)[token] as number,
      keptCount: 1,
      kept,
      probs,
    };
  }
  // w_j = p_j / max p = exp(z_j − max z).
  const zmax = (y[order[0] as number] as number) / T;
  const w = new Float64Array(n);
  for (let j = 0; j < n; j++) w[j] = Math.exp((y[j] as number) / T - zmax);
  let len = n;
  let minPMargin = Number.POSITIVE_INFINITY;
  const minP = p.minP ?? 0;
  if (minP > 0) {
    let c = 0;
    for (let j = 0; j < n; j++) {
      const wj = w[j] as number;
      if (wj >= minP) c++;
      if (wj > 0) minPMargin = Math.min(minPMargin, Math.abs(Math.log(wj) - Math.log(minP)));
    }
    len = Math.max(1, c);
  }
  const topK = p.topK ?? 0;
  if (topK > 0) len = Math.min(len, topK);
  let topPMargin = Number.POSITIVE_INFINITY;
  const topP = p.topP ?? 1;
  if (topP < 1) {
    const mass = new Sum();
    for (let i = 0; i < len; i++) mass.add(w[order[i] as number] as number);
    const M = mass.value;
    const cum = new Sum();
    let prev = 0;
    let cut = len;
    for (let i = 0; i < len; i++) {
      cum.add(w[order[i] as number] as number);
      const c = cum.value / M;
      if (c >= topP) {
        cut = i + 1;
        topPMargin = Math.min(c - topP, topP - prev);
        break;
      }
      prev = c;
    }
    len = cut;
  }
  const total = new Sum();
  for (let i = 0; i < len; i++) {
    const j = order[i] as number;
    kept[j] = 1;
    total.add(w[j] as number);
  }
  for (let i = 0; i < len; i++) {
    const j = order[i] as number;
    probs[j] = (w[j] as number) / total.value;
  }
  return {
    ...base,
    greedy: false,
    greedyToken: -1,
    greedyLogprob: Number.NaN,
    keptCount: len,
    kept,
    probs,
    minPMargin,
    topPMargin,
  };
}

/** The log-probability the sampler should report for `token` (greedy: under log_softmax(y)). */
export function referenceLogprob(d: ProcessedDistribution, token: number): number {
  if (d.greedy) return token === d.greedyToken ? d.greedyLogprob : Number.NEGATIVE_INFINITY;
  return Math.log(d.probs[token] as number);
}

// ---- chi-square --------------------------------------------------------------------------------

/** ln Γ(x), x > 0 (Lanczos, g = 7, 9 terms; relative error ~1e-15). */
export function lnGamma(x: number): number {
  const c = [
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
    12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
  ];
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - lnGamma(1 - x);
  const xx = x - 1;
  let a = c[0] as number;
  const t = xx + 7.5;
  for (let i = 1; i < 9; i++) a += (c[i] as number) / (xx + i);
  return 0.5 * Math.log(2 * Math.PI) + (xx + 0.5) * Math.log(t) - t + Math.log(a);
}

/** Q(a, x) = Γ(a, x) / Γ(a), the regularized upper incomplete gamma function (Numerical Recipes' gammq). */
export function gammaQ(a: number, x: number): number {
  if (x <= 0) return 1;
  const lnPre = -x + a * Math.log(x) - lnGamma(a);
  if (x < a + 1) {
    // Series for P(a, x).
    let ap = a;
    let del = 1 / a;
    let sum = del;
    for (let i = 0; i < 100000; i++) {
      ap += 1;
      del *= x / ap;
      sum += del;
      if (Math.abs(del) < Math.abs(sum) * 1e-16) break;
    }
    return Math.max(0, 1 - sum * Math.exp(lnPre));
  }
  // Continued fraction for Q(a, x) (modified Lentz).
  const tiny = 1e-300;
  let b = x + 1 - a;
  let c = 1 / tiny;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i < 100000; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < tiny) d = tiny;
    c = b + an / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) < 1e-16) break;
  }
  return Math.exp(lnPre) * h;
}

/** P(χ²_k ≥ x). */
export function chiSquareSf(x: number, k: number): number {
  if (!(x > 0)) return 1;
  if (x === Number.POSITIVE_INFINITY) return 0;
  return gammaQ(k / 2, x / 2);
}

export interface ChiSquareResult {
  stat: number;
  dof: number;
  pValue: number;
  /** Cells after merging (each with expected count ≥ minExpected). */
  cells: number;
}

/**
 * Pearson's goodness-of-fit test of `counts` (per token) against `probs`. Tokens with probability 0
 * must have count 0 (otherwise the statistic is +Inf); tokens with small expected counts are merged,
 * smallest first, so that every cell expects at least `minExpected`.
 */
export function chiSquareGof(counts: ArrayLike<number>, probs: ArrayLike<number>, minExpected = 5): ChiSquareResult {
  let n = 0;
  for (let j = 0; j < counts.length; j++) n += counts[j] as number;
  const idx: number[] = [];
  for (let j = 0; j < probs.length; j++) {
    if ((probs[j] as number) > 0) idx.push(j);
    else if ((counts[j] as number) > 0) return { stat: Number.POSITIVE_INFINITY, dof: 0, pValue: 0, cells: 0 };
  }
  idx.sort((a, b) => (probs[b] as number) - (probs[a] as number));
  // Cells: the largest tokens alone while they expect ≥ minExpected, then the rest pooled.
  const cells: { e: number; o: number }[] = [];
  let pool = { e: 0, o: 0 };
  for (const j of idx) {
    const e = n * (probs[j] as number);
    const o = counts[j] as number;
    if (e >= minExpected && pool.e === 0) cells.push({ e, o });
    else {
      pool.e += e;
      pool.o += o;
    }
  }
  if (pool.e > 0) {
    if (pool.e < minExpected && cells.length > 0) {
      const last = cells.pop() as { e: number; o: number };
      pool = { e: pool.e + last.e, o: pool.o + last.o };
    }
    cells.push(pool);
  }
  let stat = 0;
  for (const c of cells) stat += ((c.o - c.e) * (c.o - c.e)) / c.e;
  const dof = cells.length - 1;
  return { stat, dof, pValue: dof > 0 ? chiSquareSf(stat, dof) : 1, cells: cells.length };
}

/** Per-token counts of `tokens` over a vocabulary of `vocab`. */
export function tokenCounts(tokens: ArrayLike<number>, vocab: number): Float64Array {
  const c = new Float64Array(vocab);
  for (let i = 0; i < tokens.length; i++) c[tokens[i] as number] = (c[tokens[i] as number] as number) + 1;
  return c;
}

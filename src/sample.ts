/**
 * Batched token sampling (DESIGN.md section 6), native and multi-threaded over rows. vLLM's
 * order: penalties, temperature, min-p, top-k, top-p. Row i depends only on its own logits,
 * params[i] and positions[i], never on the rest of the batch.
 *
 * Logits on the host (a Float32Array) are sampled on the CPU; logits on the GPU (a DeviceTensor)
 * by the CUDA sampler, which draws the same tokens (the same race, keyed by seed and position)
 * and reports logprobs that agree with the CPU's to the bound documented in
 * native/kernels/cuda/sampler_cuda.h.
 */
import { randomInt } from 'node:crypto';
import { DeviceTensor } from './device-tensor.js';
import { invalidArgument } from './errors.js';
import { native } from './native.js';
import { checkInteger, checkObject, toTokenArray } from './validate.js';

/** How one row is sampled. */
export interface SamplingParams {
  /** Softmax temperature (default 1); 0 (or below 1e-5, as vLLM) = greedy: the first maximum. */
  temperature?: number;
  /** Keep the k most likely tokens (default 0 = off). */
  topK?: number;
  /** Keep the smallest set of most likely tokens whose probability reaches p (default 1 = off). */
  topP?: number;
  /** Keep tokens whose probability is at least minP × the largest (default 0 = off). */
  minP?: number;
  /** Seed of the row's random draw, an integer in [0, 2^53); random when absent. */
  seed?: number;
  /** vLLM's repetition penalty over prompt and output tokens (default 1 = off). */
  repetitionPenalty?: number;
  /** Subtracted once from the logit of every token in outputTokens (default 0). */
  presencePenalty?: number;
  /** Subtracted per occurrence in outputTokens (default 0). */
  frequencyPenalty?: number;
  /** Prompt tokens, for the repetition penalty. */
  promptTokens?: ArrayLike<number>;
  /** Tokens generated so far, for all three penalties. */
  outputTokens?: ArrayLike<number>;
}

/** Result of {@link sample}, one entry per row. */
export interface SampleResult {
  tokens: Int32Array;
  /**
   * Log-probability of each token under the distribution actually sampled from (after penalties,
   * temperature and filters). For greedy rows: under softmax of the penalised logits.
   */
  logprobs: Float32Array;
  /** Log-probability under log_softmax of the raw logits (temperature 1, no filters). */
  rawLogprobs: Float32Array;
}

/** Options of {@link sample} beyond the rows' params. */
export interface SampleOptions {
  /**
   * Also report each row's n most likely tokens under log_softmax of the raw logits, best first
   * (ties: the lower id), as the OpenAI API's top_logprobs (0-20, default 0).
   */
  topLogprobs?: number;
}

/** The top logprobs of {@link sample}: [rows, n], row-major (token −1 past the vocabulary). */
export interface TopLogprobs {
  tokens: Int32Array;
  logprobs: Float32Array;
}

/**
 * Samples one token per row of `logits` ([params.length, vocab], row-major). Row i uses params[i]
 * and positions[i] (default 0): the same (seed, position, logits row, params) always gives the
 * same token. −Inf logits are allowed (probability 0); NaN or +Inf throw NON_FINITE_LOGITS.
 *
 * `logits` is a Float32Array (sampled on the CPU) or an f32 {@link DeviceTensor} of
 * params.length × vocab elements, e.g. shape [rows, vocab] (sampled on the GPU by the CUDA
 * sampler; the results come back on the host). Both give the same token for the same row; the
 * logprobs agree to the CUDA sampler's documented bound. A DeviceTensor without a CUDA build or
 * device throws CUDA_UNAVAILABLE (when it is created). With `options.topLogprobs` n, `top` holds
 * each row's n most likely tokens and their raw logprobs (computed on the GPU for a DeviceTensor).
 */
export function sample(
  logits: Float32Array | DeviceTensor,
  vocab: number,
  params: SamplingParams[],
  positions?: Int32Array,
  options: SampleOptions = {},
): SampleResult & { top?: TopLogprobs } {
  const rows = checkSampleArgs(logits, vocab, params, positions);
  const n = topCount(options);
  if (logits instanceof DeviceTensor) {
    const [tokens, logprobs, rawLogprobs, topTokens, topLogprobs] = native().sampleDevice(
      logits.buffer,
      rows.length,
      vocab,
      rows,
      positions ?? null,
      n,
    );
    return topTokens && topLogprobs
      ? { tokens, logprobs, rawLogprobs, top: { tokens: topTokens, logprobs: topLogprobs } }
      : { tokens, logprobs, rawLogprobs };
  }
  const [tokens, logprobs, rawLogprobs] = native().sample(logits, vocab, rows, positions ?? null);
  return n > 0
    ? { tokens, logprobs, rawLogprobs, top: hostTopLogprobs(logits, vocab, n) }
    : { tokens, logprobs, rawLogprobs };
}

/**
 * {@link sample} on a native thread (for servers and the engine: the event loop stays free).
 * A Float32Array of `logits` must not change until the Promise settles. With a DeviceTensor the
 * work is the GPU's: the kernel runs from the calling thread (the call returns once the results
 * are on the host) and the Promise resolves with them.
 */
export async function sampleAsync(
  logits: Float32Array | DeviceTensor,
  vocab: number,
  params: SamplingParams[],
  positions?: Int32Array,
  options: SampleOptions = {},
): Promise<SampleResult & { top?: TopLogprobs }> {
  if (logits instanceof DeviceTensor) return sample(logits, vocab, params, positions, options);
  const rows = checkSampleArgs(logits, vocab, params, positions);
  const n = topCount(options);
  const [tokens, logprobs, rawLogprobs] = await native().sample(logits, vocab, rows, positions ?? null, true);
  return n > 0
    ? { tokens, logprobs, rawLogprobs, top: hostTopLogprobs(logits, vocab, n) }
    : { tokens, logprobs, rawLogprobs };
}

function topCount(options: SampleOptions): number {
  const o = checkObject('options', options ?? {});
  return checkInteger('options.topLogprobs', o.topLogprobs ?? 0, 0, 20);
}

/** The top logprobs of every row of host logits ({@link topLogprobs} per row). */
function hostTopLogprobs(logits: Float32Array, vocab: number, n: number): TopLogprobs {
  const rows = logits.length / vocab;
  const tokens = new Int32Array(rows * n).fill(-1);
  const logprobs = new Float32Array(rows * n).fill(Number.NEGATIVE_INFINITY);
  for (let r = 0; r < rows; r++) {
    topLogprobs(logits.subarray(r * vocab, (r + 1) * vocab), n).forEach((t, k) => {
      tokens[r * n + k] = t.token;
      logprobs[r * n + k] = t.logprob;
    });
  }
  return { tokens, logprobs };
}

/** The n most likely tokens of a logits row under log_softmax, best first (ties: lower id). */
export function topLogprobs(row: Float32Array, n: number): { token: number; logprob: number }[] {
  let max = Number.NEGATIVE_INFINITY;
  for (let j = 0; j < row.length; j++) if ((row[j] as number) > max) max = row[j] as number;
  let sum = 0;
  for (let j = 0; j < row.length; j++) sum += Math.exp((row[j] as number) - max);
  const lse = max + Math.log(sum);
  const best: number[] = [];
  for (let j = 0; j < row.length; j++) {
    const v = row[j] as number;
    if (best.length === n && v <= (row[best[n - 1] as number] as number)) continue;
    let at = best.length;
    while (at > 0 && (row[best[at - 1] as number] as number) < v) at--;
    best.splice(at, 0, j);
    if (best.length > n) best.pop();
  }
  return best.map((token) => ({ token, logprob: (row[token] as number) - lse }));
}

function checkSampleArgs(
  logits: Float32Array | DeviceTensor,
  vocab: number,
  params: SamplingParams[],
  positions: Int32Array | undefined,
): NativeSamplingParams[] {
  const onDevice = logits instanceof DeviceTensor;
  if (!(logits instanceof Float32Array) && !onDevice)
    throw invalidArgument('logits', 'a Float32Array or a DeviceTensor', logits);
  if (onDevice && logits.dtype !== 'f32') throw invalidArgument('logits', 'an f32 DeviceTensor', logits.dtype);
  checkInteger('vocab', vocab, 1, 0x7fffffff);
  if (!Array.isArray(params)) throw invalidArgument('params', 'an array with one SamplingParams per row', params);
  const size = onDevice ? logits.size : logits.length;
  if (size !== params.length * vocab) {
    throw invalidArgument(
      'logits',
      `[params.length, vocab] = ${params.length * vocab} values`,
      onDevice ? `a DeviceTensor of shape [${logits.shape.join(', ')}]` : `${size} values`,
    );
  }
  if (positions !== undefined && !(positions instanceof Int32Array && positions.length === params.length)) {
    throw invalidArgument('positions', `an Int32Array of ${params.length} positions`, positions);
  }
  return params.map((p, i) => normalize(p, i));
}

/** SamplingParams with every field present, as the native sampler takes them. */
export interface NativeSamplingParams {
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  seed: number;
  repetitionPenalty: number;
  presencePenalty: number;
  frequencyPenalty: number;
  promptTokens?: Int32Array;
  outputTokens?: Int32Array;
}

function normalize(p: unknown, i: number): NativeSamplingParams {
  const o = checkObject(`params[${i}]`, p ?? {});
  const num = (name: string, dflt: number, ok: (v: number) => boolean, expected: string): number => {
    const v = o[name] ?? dflt;
    if (typeof v !== 'number' || !Number.isFinite(v) || !ok(v))
      throw invalidArgument(`params[${i}].${name}`, expected, v);
    return v;
  };
  const out: NativeSamplingParams = {
    temperature: num('temperature', 1, (v) => v >= 0, 'a number >= 0'),
    topK: checkInteger(`params[${i}].topK`, o.topK ?? 0, 0, 0x7fffffff),
    topP: num('topP', 1, (v) => v > 0 && v <= 1, 'a number in (0, 1]'),
    minP: num('minP', 0, (v) => v >= 0 && v <= 1, 'a number in [0, 1]'),
    seed: o.seed === undefined ? randomInt(2 ** 48 - 1) : checkInteger(`params[${i}].seed`, o.seed, 0),
    repetitionPenalty: num('repetitionPenalty', 1, (v) => v > 0, 'a number > 0'),
    presencePenalty: num('presencePenalty', 0, () => true, 'a finite number'),
    frequencyPenalty: num('frequencyPenalty', 0, () => true, 'a finite number'),
  };
  if (o.promptTokens !== undefined) out.promptTokens = toTokenArray(`params[${i}].promptTokens`, o.promptTokens);
  if (o.outputTokens !== undefined) out.outputTokens = toTokenArray(`params[${i}].outputTokens`, o.outputTokens);
  return out;
}

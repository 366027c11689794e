/**
 * Request parameters shared by /v1/completions and /v1/chat/completions: checked against what
 * the server can honour. Unknown fields are refused with a 400 (as OpenAI does), never ignored.
 */
import type { SamplingParams } from '../sample.js';
import { badParam } from './http-error.js';

/** A parsed request body. */
export type Body = Record<string, unknown>;

/** What both endpoints take, checked. */
export interface CommonParams {
  /** max_tokens / max_completion_tokens as asked (undefined: the endpoint's default). */
  requestedMaxTokens: number | undefined;
  sampling: SamplingParams;
  n: number;
  stream: boolean;
  includeUsage: boolean;
  stopStrings: string[];
  /** Token ids that end a completion (the tokenizer's end token unless ignore_eos). */
  stopIds: number[];
  /** vLLM's return_tokens_as_token_ids: logprob tokens as "token_id:<id>". */
  idsAsTokens: boolean;
  /** Whether `seed` was given (each choice i then samples with seed + i). */
  seeded: boolean;
}

/** Refuses any field of `body` not in `allowed`, with OpenAI's message for it. */
export function checkKeys(body: Body, allowed: ReadonlySet<string>): void {
  for (const k of Object.keys(body))
    if (!allowed.has(k)) throw badParam(k, `Unrecognized request argument supplied: ${k}`, 'unknown_parameter');
}

/** Fields both endpoints accept (OpenAI's, then vLLM's extensions). */
export const COMMON_KEYS = [
  'model',
  'max_tokens',
  'temperature',
  'top_p',
  'n',
  'stream',
  'stream_options',
  'stop',
  'seed',
  'presence_penalty',
  'frequency_penalty',
  'logit_bias',
  'user',
  'top_k',
  'min_p',
  'repetition_penalty',
  'stop_token_ids',
  'ignore_eos',
  'return_tokens_as_token_ids',
];

/** A number field in [min, max], or undefined when absent / null. */
export function optNum(body: Body, name: string, min: number, max: number): number | undefined {
  const v = body[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max)
    throw badParam(name, `${name} must be a number in [${min}, ${max}], got ${JSON.stringify(v)}`);
  return v;
}

/** An integer field in [min, max], or undefined when absent / null. */
export function optInt(body: Body, name: string, min: number, max: number): number | undefined {
  const v = optNum(body, name, min, max);
  if (v !== undefined && !Number.isInteger(v)) throw badParam(name, `${name} must be an integer, got ${v}`);
  return v;
}

/** A boolean field, or `dflt` when absent / null. */
export function optBool(body: Body, name: string, dflt: boolean): boolean {
  const v = body[name];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'boolean') throw badParam(name, `${name} must be a boolean, got ${JSON.stringify(v)}`);
  return v;
}

/** The parameters both endpoints take; `maxTokensKey` names the field holding max_tokens. */
export function commonParams(body: Body, o: { eosTokenId: number | undefined; vocabSize: number }): CommonParams {
  const requestedMaxTokens =
    optInt(body, 'max_completion_tokens', 1, Number.MAX_SAFE_INTEGER) ??
    optInt(body, 'max_tokens', 1, Number.MAX_SAFE_INTEGER);
  const sampling: SamplingParams = {};
  const temperature = optNum(body, 'temperature', 0, 2);
  if (temperature !== undefined) sampling.temperature = temperature;
  const topP = optNum(body, 'top_p', 0, 1);
  if (topP !== undefined) {
    if (topP === 0) throw badParam('top_p', 'top_p must be in (0, 1]');
    sampling.topP = topP;
  }
  const topK = optInt(body, 'top_k', -1, 2 ** 30);
  if (topK !== undefined && topK > 0) sampling.topK = topK;
  const minP = optNum(body, 'min_p', 0, 1);
  if (minP !== undefined) sampling.minP = minP;
  const seed = optInt(body, 'seed', -(2 ** 53) + 1, Number.MAX_SAFE_INTEGER);
  // OpenAI takes any 64-bit seed; the sampler wants a non-negative one, so negatives fold over.
  if (seed !== undefined) sampling.seed = seed < 0 ? -seed : seed;
  const presence = optNum(body, 'presence_penalty', -2, 2);
  if (presence) sampling.presencePenalty = presence;
  const frequency = optNum(body, 'frequency_penalty', -2, 2);
  if (frequency) sampling.frequencyPenalty = frequency;
  const repetition = optNum(body, 'repetition_penalty', Number.MIN_VALUE, 100);
  if (repetition !== undefined && repetition !== 1) sampling.repetitionPenalty = repetition;
  const bias = body.logit_bias;
  if (bias !== undefined && bias !== null) {
    if (typeof bias !== 'object' || Array.isArray(bias)) throw badParam('logit_bias', 'logit_bias must be an object');
    if (Object.keys(bias).length > 0) throw badParam('logit_bias', 'logit_bias is not supported by this server');
  }
  if (body.user !== undefined && body.user !== null && typeof body.user !== 'string')
    throw badParam('user', 'user must be a string');
  const n = optInt(body, 'n', 1, 16) ?? 1;
  const stream = optBool(body, 'stream', false);
  let includeUsage = false;
  const so = body.stream_options;
  if (so !== undefined && so !== null) {
    if (!stream) throw badParam('stream_options', 'stream_options can only be given with stream: true');
    if (typeof so !== 'object' || Array.isArray(so))
      throw badParam('stream_options', 'stream_options must be an object');
    for (const k of Object.keys(so))
      if (k !== 'include_usage') throw badParam(`stream_options.${k}`, `stream_options.${k} is not supported`);
    includeUsage = optBool(so as Body, 'include_usage', false);
  }
  let stopStrings: string[] = [];
  if (typeof body.stop === 'string') stopStrings = [body.stop];
  else if (Array.isArray(body.stop) && body.stop.length <= 4 && body.stop.every((s) => typeof s === 'string'))
    stopStrings = body.stop as string[];
  else if (body.stop !== undefined && body.stop !== null)
    throw badParam('stop', 'stop must be a string or an array of up to 4 strings');
  const extra = body.stop_token_ids ?? [];
  if (!Array.isArray(extra) || !extra.every((t) => Number.isInteger(t) && t >= 0 && t < o.vocabSize))
    throw badParam('stop_token_ids', `stop_token_ids must be an array of token ids in [0, ${o.vocabSize})`);
  const stopIds = [...(extra as number[])];
  if (o.eosTokenId !== undefined && !optBool(body, 'ignore_eos', false)) stopIds.push(o.eosTokenId);
  return {
    requestedMaxTokens,
    sampling,
    n,
    stream,
    includeUsage,
    stopStrings: stopStrings.filter((s) => s.length > 0),
    stopIds,
    idsAsTokens: optBool(body, 'return_tokens_as_token_ids', false),
    seeded: seed !== undefined,
  };
}

/**
 * The completion budget of a prompt: the asked max_tokens, which must fit the context with the
 * prompt (vLLM's 400 otherwise), or the endpoint's default capped by what is left.
 */
export function resolveMaxTokens(
  requested: number | undefined,
  dflt: number,
  promptTokens: number,
  maxModelLen: number,
  promptParam: string,
): number {
  const left = maxModelLen - promptTokens;
  if (left <= 0)
    throw badParam(
      promptParam,
      `This model's maximum context length is ${maxModelLen} tokens. However, your ${promptParam} resulted in ${promptTokens} tokens, which leaves no room for a completion. Please reduce the length of the ${promptParam}.`,
      'context_length_exceeded',
    );
  if (requested === undefined) return Math.min(dflt, left);
  if (requested > left)
    throw badParam(
      'max_tokens',
      `This model's maximum context length is ${maxModelLen} tokens. However, you requested ${promptTokens + requested} tokens (${promptTokens} in the ${promptParam}, ${requested} in the completion). Please reduce the length of the ${promptParam} or completion.`,
      'context_length_exceeded',
    );
  return requested;
}

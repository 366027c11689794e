/**
 * An OpenAI-compatible HTTP server over the engine: GET /v1/models, POST /v1/completions and
 * POST /v1/chat/completions (docs/serve.md is the reference). This file holds the HTTP side:
 * routing, the optional API key, the bound on admitted requests and tokens (429 beyond it), the
 * per-request log line, and the endpoints' own fields; params.ts, chat-request.ts and
 * generate.ts do the rest. Nothing a client sends can stop the server.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Engine } from '../engine/engine.js';
import { invalidArgument } from '../errors.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import { renderChat } from './chat-request.js';
import { tokenBytesOf } from './detokenizer.js';
import { type RunCounts, type RunSpec, runRequest, type ServeContext } from './generate.js';
import { badParam, HttpError, sendError, sendJson } from './http-error.js';
import { type Body, COMMON_KEYS, checkKeys, commonParams, optBool, optInt, resolveMaxTokens } from './params.js';

/** Options of {@link startOpenAiServer}. */
export interface OpenAiServerOptions {
  engine: Engine;
  tokenizer: Tokenizer;
  /** The name clients pass as `model` (default 'swerl'). */
  modelName?: string;
  port?: number;
  host?: string;
  /** Largest request body accepted, in bytes (default 32 MiB). */
  maxBodyBytes?: number;
  /**
   * Longest prompt + completion of one request, in tokens (default: the smaller of the model's
   * max_position_embeddings and the KV cache's capacity). Beyond it a request is a 400.
   */
  maxModelLen?: number;
  /** Requests admitted at once (generating or waiting in the engine); one more is a 429 (default 256). */
  maxQueuedRequests?: number;
  /**
   * Tokens admitted at once, a request counting n × (prompt + max_tokens) per prompt; a request
   * that would pass it is a 429, one that could never fit alone a 400 (default 1,048,576).
   */
  maxQueuedTokens?: number;
  /** When set, every /v1 request needs `Authorization: Bearer <apiKey>`; 401 otherwise. */
  apiKey?: string;
  /** Receives one line per request: method, path, status, prompt and completion tokens, milliseconds. */
  log?: (line: string) => void;
}

/** A running server. */
export interface OpenAiServer {
  readonly url: string;
  readonly port: number;
  /** Longest prompt + completion of one request, in tokens. */
  readonly maxModelLen: number;
  /** Requests admitted and not yet finished, and the tokens they count for (see maxQueuedTokens). */
  queued(): { requests: number; tokens: number };
  close(): Promise<void>;
}

/** The default completion budget of a chat request without max_tokens (capped by the context left). */
const CHAT_DEFAULT_MAX_TOKENS = 4096;
/** OpenAI's default for /v1/completions. */
const COMPLETIONS_DEFAULT_MAX_TOKENS = 16;
const MAX_PROMPTS = 64;

const COMPLETION_KEYS = new Set([...COMMON_KEYS, 'prompt', 'logprobs', 'echo', 'best_of', 'suffix']);
const CHAT_KEYS = new Set([
  ...COMMON_KEYS,
  'messages',
  'max_completion_tokens',
  'logprobs',
  'top_logprobs',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'response_format',
]);

/** Starts the server; resolves once it listens. */
export async function startOpenAiServer(o: OpenAiServerOptions): Promise<OpenAiServer> {
  const modelName = o.modelName ?? 'swerl';
  const created = Math.floor(Date.now() / 1000);
  const maxBody = o.maxBodyBytes ?? 32 * 2 ** 20;
  const cacheTokens = o.engine.cache.numBlocks * o.engine.cache.blockSize;
  const positions = o.engine.model.config.max_position_embeddings ?? cacheTokens;
  const maxModelLen = positive('maxModelLen', o.maxModelLen ?? Math.min(positions, cacheTokens));
  if (maxModelLen > cacheTokens)
    throw invalidArgument('maxModelLen', `at most the KV cache's ${cacheTokens} tokens`, maxModelLen);
  const maxQueuedRequests = positive('maxQueuedRequests', o.maxQueuedRequests ?? 256);
  const maxQueuedTokens = positive('maxQueuedTokens', o.maxQueuedTokens ?? 2 ** 20);
  if (o.apiKey !== undefined && (typeof o.apiKey !== 'string' || o.apiKey === ''))
    throw invalidArgument('apiKey', 'a non-empty string', o.apiKey);
  const keyDigest = o.apiKey === undefined ? null : sha256(o.apiKey);
  const ctx: ServeContext = {
    engine: o.engine,
    tokenizer: o.tokenizer,
    tokenBytes: tokenBytesOf(o.tokenizer),
    modelName,
  };
  const vocabSize = o.engine.model.config.vocab_size;
  const queue = { requests: 0, tokens: 0 };

  const server: Server = createServer((req, res) => {
    const started = performance.now();
    const counts: RunCounts = { promptTokens: 0, completionTokens: 0 };
    const path = (req.url ?? '').split('?')[0] ?? '';
    let status = 0;
    res.once('close', () => {
      if (!o.log) return;
      const aborted = !res.writableFinished ? ' aborted' : '';
      o.log(
        `${new Date().toISOString()} ${req.method} ${path} ${status || res.statusCode} prompt_tokens=${counts.promptTokens} completion_tokens=${counts.completionTokens} ${Math.round(performance.now() - started)}ms${aborted}`,
      );
    });
    handle(req, res, path, counts).catch((e) => {
      status = sendError(res, e);
    });
  });

  const handle = async (req: IncomingMessage, res: ServerResponse, path: string, counts: RunCounts) => {
    if (req.method === 'GET' && path === '/health') return sendJson(res, 200, { status: 'ok' });
    authorize(req, keyDigest);
    const model = { id: modelName, object: 'model', created, owned_by: 'swerl', max_model_len: maxModelLen };
    if (req.method === 'GET' && path === '/v1/models') return sendJson(res, 200, { object: 'list', data: [model] });
    if (req.method === 'GET' && path === `/v1/models/${encodeURIComponent(modelName)}`)
      return sendJson(res, 200, model);
    if (req.method === 'POST' && (path === '/v1/completions' || path === '/v1/chat/completions')) {
      const body = await readBody(req, maxBody);
      if (body.model !== undefined && body.model !== null && body.model !== modelName)
        throw new HttpError(
          `The model '${String(body.model)}' does not exist; this server serves '${modelName}'`,
          404,
          'model',
          'model_not_found',
        );
      const spec = path === '/v1/completions' ? completionsSpec(body) : chatSpec(body);
      const cost = spec.prompts.reduce((a, q) => a + spec.params.n * (q.ids.length + spec.maxTokens), 0);
      admit(cost);
      counts.promptTokens = spec.prompts.reduce((a, q) => a + q.ids.length, 0);
      const abort = new AbortController();
      res.once('close', () => {
        if (!res.writableFinished) abort.abort(); // the client went away: free its sequences
      });
      if (res.destroyed) abort.abort(); // it went away before the listener was set
      try {
        await runRequest(ctx, spec, res, abort.signal, counts);
      } finally {
        queue.requests--;
        queue.tokens -= cost;
      }
      return;
    }
    throw new HttpError(`Unknown route ${req.method} ${path}`, 404, null, 'not_found');
  };

  /** Takes a request into the queue, or refuses it (429 when full, 400 when it can never fit). */
  const admit = (cost: number) => {
    if (cost > maxQueuedTokens)
      throw badParam(
        'max_tokens',
        `the request needs ${cost} tokens (n x (prompt + max_tokens)) but the server admits ${maxQueuedTokens} at once; lower max_tokens or n`,
      );
    if (queue.requests + 1 > maxQueuedRequests)
      throw new HttpError(
        `the server is busy: ${queue.requests} requests queued (the most it takes is ${maxQueuedRequests}); retry later`,
        429,
        null,
        'rate_limit_exceeded',
        'requests',
        { 'retry-after': '1' },
      );
    if (queue.tokens + cost > maxQueuedTokens)
      throw new HttpError(
        `the server is busy: ${queue.tokens} tokens queued and this request needs ${cost} (the most it takes is ${maxQueuedTokens}); retry later`,
        429,
        null,
        'rate_limit_exceeded',
        'tokens',
        { 'retry-after': '1' },
      );
    queue.requests++;
    queue.tokens += cost;
  };

  // POST /v1/completions: OpenAI's legacy fields and vLLM's extensions (prompts as token ids,
  // return_tokens_as_token_ids, stop_token_ids, ignore_eos, top_k, min_p, repetition_penalty).
  const completionsSpec = (body: Body): RunSpec => {
    checkKeys(body, COMPLETION_KEYS);
    const params = commonParams(body, { eosTokenId: o.tokenizer.eosTokenId, vocabSize });
    if (body.suffix !== undefined && body.suffix !== null) throw badParam('suffix', 'suffix is not supported');
    const bestOf = optInt(body, 'best_of', 1, 16);
    if (bestOf !== undefined && bestOf !== params.n)
      throw badParam('best_of', 'best_of is not supported unless it equals n (no ranking of extra samples)');
    const logprobs = optInt(body, 'logprobs', 0, 20);
    const echo = optBool(body, 'echo', false);
    if (echo && logprobs !== undefined)
      throw badParam('echo', 'echo with logprobs is not supported (the prompt tokens get no logprobs)');
    const prompts = promptList(body.prompt).map((ids, i) => {
      if (ids.length === 0) throw badParam('prompt', `prompt ${i} is empty`);
      for (const t of ids)
        if (!Number.isInteger(t) || t < 0 || t >= vocabSize)
          throw badParam('prompt', `prompt token ids must be integers in [0, ${vocabSize}), got ${t}`);
      return { ids, ...(echo ? { echo: o.tokenizer.decode(ids, { skipSpecialTokens: false }) } : {}) };
    });
    const longest = Math.max(...prompts.map((q) => q.ids.length));
    return {
      chat: false,
      prompts,
      params,
      maxTokens: resolveMaxTokens(
        params.requestedMaxTokens,
        COMPLETIONS_DEFAULT_MAX_TOKENS,
        longest,
        maxModelLen,
        'prompt',
      ),
      logprobs: logprobs !== undefined,
      topLogprobs: logprobs ?? 0,
      toolNames: new Set(),
      parallelToolCalls: true,
    };
  };

  // A prompt string is the caller's own text, special token strings included, as vLLM encodes it
  // (a chat's message contents, by contrast, are plain text: renderChat).
  const promptList = (prompt: unknown): number[][] => {
    const isIds = (v: unknown) => Array.isArray(v) && v.every((t) => typeof t === 'number');
    let list: number[][];
    if (typeof prompt === 'string') list = [Array.from(o.tokenizer.encode(prompt))];
    else if (isIds(prompt) && (prompt as number[]).length > 0) list = [prompt as number[]];
    else if (Array.isArray(prompt) && prompt.length > 0 && prompt.every((p) => typeof p === 'string'))
      list = prompt.map((p) => Array.from(o.tokenizer.encode(p as string)));
    else if (Array.isArray(prompt) && prompt.length > 0 && prompt.every(isIds)) list = prompt as number[][];
    else
      throw badParam(
        'prompt',
        'prompt must be a string, an array of strings, an array of token ids or an array of token-id arrays',
      );
    if (list.length > MAX_PROMPTS) throw badParam('prompt', `at most ${MAX_PROMPTS} prompts per request`);
    return list;
  };

  const chatSpec = (body: Body): RunSpec => {
    checkKeys(body, CHAT_KEYS);
    const params = commonParams(body, { eosTokenId: o.tokenizer.eosTokenId, vocabSize });
    const logprobs = body.logprobs ?? false;
    if (typeof logprobs !== 'boolean')
      throw badParam(
        'logprobs',
        `logprobs must be a boolean for chat completions (the count goes in top_logprobs), got ${JSON.stringify(logprobs)}`,
      );
    const top = optInt(body, 'top_logprobs', 0, 20) ?? 0;
    if (top > 0 && !logprobs) throw badParam('top_logprobs', 'top_logprobs needs logprobs: true');
    const chat = renderChat(body, o.tokenizer);
    const ids = Array.from(chat.ids);
    return {
      chat: true,
      prompts: [{ ids }],
      params,
      maxTokens: resolveMaxTokens(
        params.requestedMaxTokens,
        CHAT_DEFAULT_MAX_TOKENS,
        ids.length,
        maxModelLen,
        'messages',
      ),
      logprobs,
      topLogprobs: top,
      toolNames: chat.toolNames,
      parallelToolCalls: chat.parallelToolCalls,
    };
  };

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 8000, o.host ?? '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const host = o.host ?? '127.0.0.1';
  return {
    port,
    maxModelLen,
    queued: () => ({ ...queue }),
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

function positive(name: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw invalidArgument(name, 'a positive integer', v);
  return v;
}

function sha256(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

/** 401 with OpenAI's body unless the request carries the key (compared in constant time). */
function authorize(req: IncomingMessage, keyDigest: Buffer | null): void {
  if (!keyDigest) return;
  const header = req.headers.authorization ?? '';
  const m = /^Bearer\s+(.+)$/i.exec(header);
  if (!m)
    throw new HttpError(
      "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
      401,
      null,
      'invalid_api_key',
    );
  if (!timingSafeEqual(sha256((m[1] as string).trim()), keyDigest))
    throw new HttpError('Incorrect API key provided.', 401, null, 'invalid_api_key');
}

async function readBody(req: IncomingMessage, max: number): Promise<Body> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) throw new HttpError(`request body larger than ${max} bytes`, 413);
    chunks.push(chunk as Buffer);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (e) {
    throw new HttpError(`request body is not valid JSON: ${(e as Error).message}`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new HttpError('request body must be a JSON object');
  return body as Body;
}

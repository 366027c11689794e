/**
 * An OpenAI-compatible HTTP server over the engine: GET /v1/models, POST /v1/completions and
 * POST /v1/chat/completions, with logprobs / top_logprobs, seed, temperature, top_p, top_k,
 * min_p, stop (strings or token ids), max_tokens, n and streaming over server-sent events.
 * Malformed requests get a 400 with an OpenAI-style error body; nothing a client sends can stop
 * the server.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Engine, GeneratedToken, Generation } from '../engine/engine.js';
import { SwerlError } from '../errors.js';
import type { SamplingParams } from '../sample.js';
import type { ChatMessage, Tokenizer } from '../tokenizer/tokenizer.js';

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
}

/** A running server. */
export interface OpenAiServer {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

class BadRequest extends Error {
  constructor(
    message: string,
    readonly param: string | null = null,
    readonly status = 400,
    readonly code: string | null = null,
  ) {
    super(message);
  }
}

type Body = Record<string, unknown>;

/** Starts the server; resolves once it listens. */
export async function startOpenAiServer(o: OpenAiServerOptions): Promise<OpenAiServer> {
  const modelName = o.modelName ?? 'swerl';
  const created = Math.floor(Date.now() / 1000);
  const maxBody = o.maxBodyBytes ?? 32 * 2 ** 20;
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((e) => sendError(res, e));
  });
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && path === '/v1/models') {
      return sendJson(res, 200, {
        object: 'list',
        data: [{ id: modelName, object: 'model', created, owned_by: 'swerl' }],
      });
    }
    if (req.method === 'POST' && (path === '/v1/completions' || path === '/v1/chat/completions')) {
      const body = await readBody(req, maxBody);
      if (body.model !== undefined && body.model !== modelName)
        throw new BadRequest(
          `The model '${String(body.model)}' does not exist; this server serves '${modelName}'`,
          'model',
          404,
          'model_not_found',
        );
      return path === '/v1/completions' ? completions(body, res) : chat(body, res);
    }
    throw new BadRequest(`Unknown route ${req.method} ${path}`, null, 404, 'not_found');
  };

  // Also vLLM's extensions: top_k, min_p, stop_token_ids, ignore_eos, return_tokens_as_token_ids,
  // and prompts given as token ids.
  const completions = async (body: Body, res: ServerResponse) => {
    const prompt = body.prompt;
    let ids: number[];
    if (typeof prompt === 'string') ids = Array.from(o.tokenizer.encode(prompt));
    else if (Array.isArray(prompt) && prompt.length > 0 && prompt.every((t) => Number.isInteger(t)))
      ids = prompt as number[];
    else if (Array.isArray(prompt) && prompt.length === 1 && typeof prompt[0] === 'string')
      ids = Array.from(o.tokenizer.encode(prompt[0]));
    else throw new BadRequest('prompt must be a string or an array of token ids', 'prompt');
    if (ids.length === 0) throw new BadRequest('prompt must not be empty', 'prompt');
    const logprobs = optInt(body, 'logprobs', 0, 20);
    const p = common(body, 16);
    await run(res, 'text_completion', ids, p, logprobs ?? 0, logprobs !== undefined, false);
  };

  const chat = async (body: Body, res: ServerResponse) => {
    const messages = body.messages;
    if (!Array.isArray(messages) || messages.length === 0)
      throw new BadRequest('messages must be a non-empty array', 'messages');
    for (const [i, m] of messages.entries()) {
      const mm = m as Body;
      if (typeof mm !== 'object' || mm === null || typeof mm.role !== 'string' || typeof mm.content !== 'string')
        throw new BadRequest(`messages[${i}] must be { role: string, content: string }`, `messages[${i}]`);
    }
    const text = o.tokenizer.applyChatTemplate(messages as ChatMessage[], { addGenerationPrompt: true });
    const ids = Array.from(o.tokenizer.encode(text));
    const wantLogprobs = body.logprobs === true;
    const top = optInt(body, 'top_logprobs', 0, 20) ?? 0;
    if (top > 0 && !wantLogprobs) throw new BadRequest('top_logprobs needs logprobs: true', 'top_logprobs');
    const p = common(body, undefined);
    await run(res, 'chat.completion', ids, p, top, wantLogprobs, true);
  };

  interface Common {
    maxTokens: number;
    sampling: SamplingParams;
    n: number;
    stream: boolean;
    stopStrings: string[];
    stopIds: number[];
    idsAsTokens: boolean;
  }

  const common = (body: Body, defaultMax: number | undefined): Common => {
    const contextLeft = o.engine.cache.numBlocks * o.engine.cache.blockSize;
    const maxTokens =
      optInt(body, 'max_completion_tokens', 1, 1 << 30) ??
      optInt(body, 'max_tokens', 1, 1 << 30) ??
      defaultMax ??
      Math.min(4096, contextLeft);
    const sampling: SamplingParams = {};
    const temperature = optNum(body, 'temperature', 0, 2);
    if (temperature !== undefined) sampling.temperature = temperature;
    const topP = optNum(body, 'top_p', 0, 1);
    if (topP !== undefined) {
      if (topP === 0) throw new BadRequest('top_p must be in (0, 1]', 'top_p');
      sampling.topP = topP;
    }
    const topK = optInt(body, 'top_k', -1, 1 << 30);
    if (topK !== undefined && topK > 0) sampling.topK = topK;
    const minP = optNum(body, 'min_p', 0, 1);
    if (minP !== undefined) sampling.minP = minP;
    const seed = optInt(body, 'seed', 0, Number.MAX_SAFE_INTEGER);
    if (seed !== undefined) sampling.seed = seed;
    const presence = optNum(body, 'presence_penalty', -2, 2);
    if (presence) sampling.presencePenalty = presence;
    const frequency = optNum(body, 'frequency_penalty', -2, 2);
    if (frequency) sampling.frequencyPenalty = frequency;
    const repetition = optNum(body, 'repetition_penalty', Number.MIN_VALUE, 100);
    if (repetition !== undefined && repetition !== 1) sampling.repetitionPenalty = repetition;
    const n = optInt(body, 'n', 1, 16) ?? 1;
    const stream = body.stream === undefined || body.stream === null ? false : body.stream;
    if (typeof stream !== 'boolean') throw new BadRequest('stream must be a boolean', 'stream');
    let stopStrings: string[] = [];
    if (typeof body.stop === 'string') stopStrings = [body.stop];
    else if (Array.isArray(body.stop) && body.stop.length <= 4 && body.stop.every((s) => typeof s === 'string'))
      stopStrings = body.stop as string[];
    else if (body.stop !== undefined && body.stop !== null)
      throw new BadRequest('stop must be a string or an array of up to 4 strings', 'stop');
    const stopIds = (body.stop_token_ids ?? []) as unknown;
    if (!Array.isArray(stopIds) || !stopIds.every((t) => Number.isInteger(t) && t >= 0))
      throw new BadRequest('stop_token_ids must be an array of token ids', 'stop_token_ids');
    const eos = o.tokenizer.eosTokenId;
    const ids = [...(stopIds as number[])];
    if (eos !== undefined && body.ignore_eos !== true) ids.push(eos);
    const idsAsTokens = body.return_tokens_as_token_ids === true; // vLLM's extension: "token_id:<id>"
    return {
      maxTokens,
      sampling,
      n,
      stream,
      stopStrings: stopStrings.filter((s) => s.length > 0),
      stopIds: ids,
      idsAsTokens,
    };
  };

  const run = async (
    res: ServerResponse,
    object: 'text_completion' | 'chat.completion',
    prompt: number[],
    p: Common,
    top: number,
    wantLogprobs: boolean,
    isChat: boolean,
  ) => {
    const id = `${isChat ? 'chatcmpl' : 'cmpl'}-${randomUUID()}`;
    const V = o.engine.model.config.vocab_size;
    if (prompt.some((t) => t < 0 || t >= V)) throw new BadRequest(`prompt token ids must be in [0, ${V})`, 'prompt');
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    const tokenText = (t: number) => (p.idsAsTokens ? `token_id:${t}` : o.tokenizer.decode([t]));
    const choices = Array.from({ length: p.n }, (_, index) => ({
      index,
      tokens: [] as number[],
      logprobs: [] as GeneratedToken[],
      text: '',
      sent: 0,
      finish: null as string | null,
    }));
    if (p.stream) {
      res.writeHead(200, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
      });
      if (isChat)
        for (const c of choices)
          sse(res, {
            id,
            object: 'chat.completion.chunk',
            created: now(),
            model: modelName,
            choices: [
              { index: c.index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null },
            ],
          });
    }
    const sendDelta = (c: (typeof choices)[number], final: boolean, lp: GeneratedToken[]) => {
      // Hold back text that may still grow into a stop string or complete a UTF-8 sequence.
      let upto = c.text.length;
      if (!final) {
        if (c.text.endsWith('\uFFFD')) upto = c.text.lastIndexOf('\uFFFD');
        for (const s of p.stopStrings)
          for (let k = Math.min(s.length - 1, c.text.length); k > 0; k--)
            if (c.text.endsWith(s.slice(0, k))) upto = Math.min(upto, c.text.length - k);
      }
      const delta = c.text.slice(c.sent, Math.max(c.sent, upto));
      c.sent = Math.max(c.sent, upto);
      if (!p.stream || (delta === '' && lp.length === 0 && !final)) return;
      const logprobs = wantLogprobs ? formatLogprobs(lp, isChat, tokenText, top) : null;
      const choice = isChat
        ? {
            index: c.index,
            delta: delta === '' ? {} : { content: delta },
            logprobs,
            finish_reason: final ? c.finish : null,
          }
        : { index: c.index, text: delta, logprobs, finish_reason: final ? c.finish : null };
      sse(res, {
        id,
        object: isChat ? 'chat.completion.chunk' : 'text_completion',
        created: now(),
        model: modelName,
        choices: [choice],
      });
    };
    const results: Generation[] = await Promise.all(
      choices.map((c) =>
        o.engine
          .generate({
            prompt,
            maxTokens: p.maxTokens,
            sampling: { ...p.sampling, ...(p.sampling.seed !== undefined ? { seed: p.sampling.seed + c.index } : {}) },
            stop: p.stopIds,
            topLogprobs: top,
            signal: abort.signal,
            onToken: (t) => {
              c.tokens.push(t.token);
              c.logprobs.push(t);
              const visible = p.stopIds.includes(t.token) ? c.tokens.slice(0, -1) : c.tokens;
              c.text = o.tokenizer.decode(visible, { skipSpecialTokens: true });
              let stopped = false;
              for (const s of p.stopStrings) {
                const at = c.text.indexOf(s);
                if (at >= 0) {
                  c.text = c.text.slice(0, at);
                  stopped = true;
                }
              }
              if (!stopped) sendDelta(c, false, [t]);
              return stopped;
            },
          })
          .then((g) => {
            c.finish = g.finishReason === 'length' ? 'length' : 'stop';
            if (p.stream) sendDelta(c, true, []);
            return g;
          }),
      ),
    );
    const completionTokens = results.reduce((a, g) => a + g.tokens.length, 0);
    const usage = {
      prompt_tokens: prompt.length,
      completion_tokens: completionTokens,
      total_tokens: prompt.length + completionTokens,
      prompt_tokens_details: { cached_tokens: results[0]?.cachedTokens ?? 0 },
    };
    if (p.stream) {
      if (!res.writableEnded) {
        res.write('data: [DONE]\n\n');
        res.end();
      }
      return;
    }
    sendJson(res, 200, {
      id,
      object,
      created: now(),
      model: modelName,
      choices: choices.map((c) => {
        const logprobs = wantLogprobs
          ? formatLogprobs(c.logprobs.slice(0, c.tokens.length), isChat, tokenText, top)
          : null;
        return isChat
          ? { index: c.index, message: { role: 'assistant', content: c.text }, logprobs, finish_reason: c.finish }
          : { index: c.index, text: c.text, logprobs, finish_reason: c.finish };
      }),
      usage,
    });
  };

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 8000, o.host ?? '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://${o.host ?? '127.0.0.1'}:${port}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

function now(): number {
  return Math.floor(Date.now() / 1000);
}

function formatLogprobs(lp: GeneratedToken[], isChat: boolean, text: (t: number) => string, top: number): unknown {
  const bytes = (s: string) => Array.from(Buffer.from(s, 'utf8'));
  if (isChat) {
    return {
      content: lp.map((t) => ({
        token: text(t.token),
        logprob: t.logprob,
        bytes: bytes(text(t.token)),
        top_logprobs: (t.top ?? [])
          .slice(0, top)
          .map((a) => ({ token: text(a.token), logprob: a.logprob, bytes: bytes(text(a.token)) })),
      })),
    };
  }
  let offset = 0;
  const offsets: number[] = [];
  for (const t of lp) {
    offsets.push(offset);
    offset += text(t.token).length;
  }
  return {
    tokens: lp.map((t) => text(t.token)),
    token_logprobs: lp.map((t) => t.logprob),
    top_logprobs:
      top > 0 ? lp.map((t) => Object.fromEntries((t.top ?? []).map((a) => [text(a.token), a.logprob]))) : null,
    text_offset: offsets,
  };
}

function optNum(body: Body, name: string, min: number, max: number): number | undefined {
  const v = body[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max)
    throw new BadRequest(`${name} must be a number in [${min}, ${max}]`, name);
  return v;
}

function optInt(body: Body, name: string, min: number, max: number): number | undefined {
  const v = optNum(body, name, min, max);
  if (v !== undefined && !Number.isInteger(v)) throw new BadRequest(`${name} must be an integer`, name);
  return v;
}

async function readBody(req: IncomingMessage, max: number): Promise<Body> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) throw new BadRequest(`request body larger than ${max} bytes`, null, 413);
    chunks.push(chunk as Buffer);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (e) {
    throw new BadRequest(`request body is not valid JSON: ${(e as Error).message}`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new BadRequest('request body must be a JSON object');
  return body as Body;
}

function sse(res: ServerResponse, data: unknown): void {
  if (!res.writableEnded) res.write(`data: ${JSON.stringify(data)}\n\n`);
}

function sendJson(res: ServerResponse, status: number, data: unknown): void {
  if (res.headersSent) return;
  const text = JSON.stringify(data);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, e: unknown): void {
  let status = 500;
  let body = {
    message: 'internal error',
    type: 'server_error',
    param: null as string | null,
    code: null as string | null,
  };
  if (e instanceof BadRequest) {
    status = e.status;
    body = {
      message: e.message,
      type: status === 404 ? 'invalid_request_error' : 'invalid_request_error',
      param: e.param,
      code: e.code,
    };
  } else if (e instanceof SwerlError) {
    status = e.code === 'PROMPT_TOO_LONG' || e.code === 'INVALID_ARGUMENT' ? 400 : 500;
    body = {
      message: e.message,
      type: status === 400 ? 'invalid_request_error' : 'server_error',
      param: null,
      code: e.code === 'PROMPT_TOO_LONG' ? 'context_length_exceeded' : e.code.toLowerCase(),
    };
  } else if (e instanceof Error) {
    body.message = e.message;
  }
  if (res.headersSent) {
    // Streaming already started: report in the stream and end it.
    if (!res.writableEnded) {
      res.write(`data: ${JSON.stringify({ error: body })}\n\n`);
      res.end();
    }
    return;
  }
  sendJson(res, status, { error: body });
}

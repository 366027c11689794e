/**
 * The engine's interface over an OpenAI-compatible server (vLLM, SGLang, `swerl serve`), for
 * rollouts at scale. It sends token ids as the prompt (POST /v1/completions, which those servers
 * accept) and asks for each token's logprob with vLLM's `return_tokens_as_token_ids`, so token
 * ids come back exactly and nothing is re-tokenized. Sessions keep their tokens here and resend
 * the whole history each turn; the server's prefix cache turns that into cache hits.
 */
import { invalidArgument, SwerlError } from '../errors.js';
import type { SamplingParams } from '../sample.js';
import { checkInteger, toTokenArray } from '../validate.js';
import type { EngineStats, GenerateRequest, Generation } from './engine.js';

/** Options of {@link RemoteEngine}. */
export interface RemoteEngineOptions {
  /** The server's base URL, e.g. http://127.0.0.1:8000/v1. */
  baseURL: string;
  /** The served model's name. */
  model: string;
  apiKey?: string;
  /** Milliseconds before a request fails with IO_ERROR (default 10 minutes). */
  timeoutMs?: number;
  /**
   * Times a request the server turns away as busy (429, 503) is sent again, after its
   * `Retry-After` (else 0.5 s, doubling, at most 10 s), before it fails with IO_ERROR (default 8).
   */
  busyRetries?: number;
}

interface CompletionChoice {
  finish_reason?: string | null;
  logprobs?: { tokens?: string[]; token_logprobs?: number[] } | null;
}

/** The wait before asking a busy server again: its Retry-After seconds, else 0.5 s doubling, at most 10 s. */
function retryDelayMs(retryAfter: string | null, attempt: number): number {
  const seconds = retryAfter === null ? Number.NaN : Number(retryAfter);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1000, 10_000);
  return Math.min(500 * 2 ** attempt, 10_000);
}

/** Resolves after `ms`, or rejects when `signal` aborts first. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** {@link Engine}'s generate / openSession / stats over HTTP. */
export class RemoteEngine {
  readonly baseURL: string;
  readonly model: string;
  readonly #headers: Record<string, string>;
  readonly #timeoutMs: number;
  readonly #busyRetries: number;
  readonly #stats = { prefillTokens: 0, decodeTokens: 0, cachedTokens: 0, preemptions: 0, busySeconds: 0 };
  #inFlight = 0;
  #busySince = 0; // when #inFlight last went from 0 to 1 (performance.now())

  constructor(o: RemoteEngineOptions) {
    if (typeof o?.baseURL !== 'string') throw invalidArgument('baseURL', 'a URL string', o?.baseURL);
    if (typeof o.model !== 'string') throw invalidArgument('model', 'a model name', o.model);
    this.baseURL = o.baseURL.replace(/\/+$/, '');
    this.model = o.model;
    this.#headers = {
      'content-type': 'application/json',
      ...(o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {}),
    };
    this.#timeoutMs = o.timeoutMs ?? 600_000;
    this.#busyRetries = checkInteger('busyRetries', o.busyRetries ?? 8, 0, 1000);
  }

  /** Generates from prompt token ids; resolves like Engine.generate. */
  async generate(r: GenerateRequest & { prompt: ArrayLike<number> }): Promise<Generation> {
    const prompt = Array.from(toTokenArray('prompt', r?.prompt));
    if (prompt.length === 0) throw invalidArgument('prompt', 'at least 1 token', prompt);
    const maxTokens = checkInteger('maxTokens', r.maxTokens, 1, 1 << 30);
    const s: SamplingParams = r.sampling ?? {};
    const body: Record<string, unknown> = {
      model: this.model,
      prompt,
      max_tokens: maxTokens,
      temperature: s.temperature ?? 1,
      top_p: s.topP ?? 1,
      logprobs: 1,
      return_tokens_as_token_ids: true,
      // The caller's stop list decides; the server's own end-of-text token does not stop it.
      stop_token_ids: r.stop ?? [],
      ignore_eos: true,
      ...(s.topK ? { top_k: s.topK } : {}),
      ...(s.minP ? { min_p: s.minP } : {}),
      ...(s.seed !== undefined ? { seed: s.seed } : {}),
      ...(s.presencePenalty ? { presence_penalty: s.presencePenalty } : {}),
      ...(s.frequencyPenalty ? { frequency_penalty: s.frequencyPenalty } : {}),
      ...(s.repetitionPenalty && s.repetitionPenalty !== 1 ? { repetition_penalty: s.repetitionPenalty } : {}),
    };
    const signal = AbortSignal.any([AbortSignal.timeout(this.#timeoutMs), ...(r.signal ? [r.signal] : [])]);
    const aborted = {
      tokens: new Int32Array(0),
      logprobs: new Float32Array(0),
      finishReason: 'abort',
      cachedTokens: 0,
    };
    if (this.#inFlight++ === 0) this.#busySince = performance.now();
    let res: Response;
    try {
      for (let attempt = 0; ; attempt++) {
        res = await fetch(`${this.baseURL}/completions`, {
          method: 'POST',
          headers: this.#headers,
          body: JSON.stringify(body),
          signal,
        });
        // A busy server (swerl serve's queue bound, vLLM's 503 while it starts) is asked again.
        if ((res.status !== 429 && res.status !== 503) || attempt >= this.#busyRetries) break;
        await res.body?.cancel();
        await sleep(retryDelayMs(res.headers.get('retry-after'), attempt), signal);
      }
    } catch (e) {
      if (r.signal?.aborted) return aborted as Generation;
      throw new SwerlError(`the server at ${this.baseURL} did not answer: ${(e as Error).message}`, 'IO_ERROR');
    } finally {
      if (--this.#inFlight === 0) this.#stats.busySeconds += (performance.now() - this.#busySince) / 1000;
    }
    const json = (await res.json().catch(() => null)) as {
      choices?: CompletionChoice[];
      usage?: {
        prompt_tokens?: number;
        completion_tokens?: number;
        prompt_tokens_details?: { cached_tokens?: number };
      };
      error?: { message?: string; code?: string };
    } | null;
    if (!res.ok || !json?.choices?.[0]) {
      const msg = json?.error?.message ?? `HTTP ${res.status}`;
      const code =
        json?.error?.code === 'context_length_exceeded'
          ? 'PROMPT_TOO_LONG'
          : res.status === 400
            ? 'INVALID_ARGUMENT'
            : 'IO_ERROR';
      throw new SwerlError(`the server at ${this.baseURL} refused the request: ${msg}`, code);
    }
    const choice = json.choices[0];
    const names = choice.logprobs?.tokens ?? [];
    const tokens = names.map((t) => {
      const m = /^token_id:(\d+)$/.exec(t);
      if (!m)
        throw new SwerlError(
          `the server at ${this.baseURL} does not return token ids (return_tokens_as_token_ids)`,
          'IO_ERROR',
        );
      return Number(m[1]);
    });
    const logprobs = choice.logprobs?.token_logprobs ?? [];
    const cached = json.usage?.prompt_tokens_details?.cached_tokens ?? 0;
    this.#stats.prefillTokens += (json.usage?.prompt_tokens ?? prompt.length) - cached;
    this.#stats.decodeTokens += tokens.length;
    this.#stats.cachedTokens += cached;
    return {
      tokens: Int32Array.from(tokens),
      logprobs: Float32Array.from(logprobs),
      finishReason: choice.finish_reason === 'length' ? 'length' : 'stop',
      cachedTokens: cached,
    };
  }

  /** A session that resends its whole history each turn. */
  openSession(): RemoteSession {
    return new RemoteSession(this, []);
  }

  /** Counters since construction, from the server's usage reports. */
  stats(): EngineStats {
    const open = this.#inFlight > 0 ? (performance.now() - this.#busySince) / 1000 : 0;
    return { ...this.#stats, busySeconds: this.#stats.busySeconds + open, running: this.#inFlight, waiting: 0 };
  }
}

/** Engine's Session over a remote server: tokens are kept here. */
export class RemoteSession {
  readonly #engine: RemoteEngine;
  #tokens: number[];
  #busy = false;

  /** @internal */
  constructor(engine: RemoteEngine, tokens: number[]) {
    this.#engine = engine;
    this.#tokens = tokens;
  }

  async generate(r: GenerateRequest & { append: ArrayLike<number> }): Promise<Generation> {
    if (this.#busy) throw invalidArgument('session', 'idle (await its previous generate first)', 'busy');
    const append = Array.from(toTokenArray('append', r?.append));
    if (r.maxTokens === 0) {
      // Prefill only: the tokens join the session here; the server's prefix cache sees them next call.
      this.#tokens = [...this.#tokens, ...append];
      return { tokens: new Int32Array(0), logprobs: new Float32Array(0), finishReason: 'length', cachedTokens: 0 };
    }
    this.#busy = true;
    try {
      const g = await this.#engine.generate({ ...r, prompt: [...this.#tokens, ...append] });
      this.#tokens = [...this.#tokens, ...append, ...g.tokens];
      return g;
    } finally {
      this.#busy = false;
    }
  }

  fork(): RemoteSession {
    return new RemoteSession(this.#engine, [...this.#tokens]);
  }

  get tokens(): Int32Array {
    return Int32Array.from(this.#tokens);
  }

  close(): void {}
}

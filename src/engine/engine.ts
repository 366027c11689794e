/**
 * The rollout engine (DESIGN.md sections 4 and 6): continuous batching over {@link Model},
 * {@link PagedKvCache} and {@link sample}, with sessions that keep an episode's KV between turns.
 *
 * Each step, in vLLM v1's order: every running request that has one token to compute (decode),
 * then prefill chunks (running requests first, then waiting ones in arrival order) until
 * `maxBatchTokens`. One paged forward computes the step on a native thread; the rows that end a
 * request's pending tokens are sampled together, on a native thread too. When the cache runs out of blocks, idle sessions
 * are released first (their full blocks stay in the prefix cache), then the newest running request
 * is preempted by recompute: its blocks are freed and it waits, keeping every token it has.
 *
 * Weight changes (an optimizer step, setParameter, a load into the model): at the first step after
 * one, the cache takes a new KV version (blocks of older versions are never prefix hits again) and
 * no KV computed under the old weights is read again, as vLLM / verl reset the prefix cache on a
 * weight sync: a running request recomputes its whole sequence (prompt and tokens so far) under
 * the new weights, and an idle session or fork does so when its next turn is admitted. So every
 * token sampled after the change, and its logprob, is the new weights' on the full history.
 *
 * Exactness: the paged forward's logits are the dense forward's bitwise, and each token is drawn
 * with (its seed, its absolute position), so a request's tokens and logprobs never depend on the
 * batch; at temperature 1 without filters the logprob is the raw one that the trainer's
 * sftLoss / policyBackward recomputes, bit for bit.
 */
import { randomInt } from 'node:crypto';
import { invalidArgument, SwerlError } from '../errors.js';
import { PagedKvCache } from '../kv/paged-kv-cache.js';
import type { Model } from '../model/model.js';
import { type SamplingParams, sampleAsync, topLogprobs } from '../sample.js';
import { checkInteger, toTokenArray } from '../validate.js';

/** What a generation returns. */
export interface Generation {
  /** The generated tokens (a stop token that ended it included). */
  tokens: Int32Array;
  /** Each token's log-probability under the distribution it was sampled from (raw at T 1, no filters). */
  logprobs: Float32Array;
  finishReason: 'stop' | 'length' | 'abort';
  /** Prompt tokens whose KV came from the prefix cache or the session instead of being computed. */
  cachedTokens: number;
}

/** A generation request. */
export interface GenerateRequest {
  maxTokens: number;
  sampling?: SamplingParams;
  /** Token ids that end the generation (included in the output). */
  stop?: number[];
  signal?: AbortSignal;
  /** Also report the `topLogprobs` most likely tokens of each step, under log_softmax of the raw logits (0-20). */
  topLogprobs?: number;
  /**
   * Called after each generated token (streaming, stop strings). Returning true ends the
   * generation there with finishReason 'stop'.
   */
  onToken?: (t: GeneratedToken) => boolean | undefined;
}

/** One generated token as {@link GenerateRequest.onToken} sees it. */
export interface GeneratedToken {
  token: number;
  logprob: number;
  /** With topLogprobs: the most likely tokens, best first. */
  top?: { token: number; logprob: number }[];
}

/** Engine options. */
export interface EngineOptions {
  model: Model;
  /** KV blocks in the cache (default: enough for 65,536 tokens). */
  kvBlocks?: number;
  blockSize?: number;
  /** Tokens computed per step at most (default 2048; decodes always fit). */
  maxBatchTokens?: number;
  /** Automatic prefix caching (default true). */
  prefixCaching?: boolean;
  /**
   * The share of the cache's blocks that idle sessions (waiting between turns) may keep pinned
   * (default 0.5). Beyond it the least recently used give their blocks back to the prefix cache;
   * they are re-hit or recomputed when the session resumes. Under memory pressure idle sessions
   * are released first whatever this is.
   */
  idleWatermark?: number;
}

/** Counters since construction. */
export interface EngineStats {
  prefillTokens: number;
  decodeTokens: number;
  cachedTokens: number;
  preemptions: number;
  /**
   * Wall seconds the engine was computing: its steps (forward and sampling) here; for a remote
   * engine, the time with at least one request in flight. A rollout's wall time minus this is
   * what the environment (tools, tests, grading) and the scaffold took while the engine idled.
   */
  busySeconds: number;
  running: number;
  waiting: number;
}

interface SessionState {
  seq: number | null;
  tokens: number[];
  computed: number;
  busy: boolean;
  lastUsed: number;
  closed: boolean;
  /** The engine's KV version that seq's KV was computed under (meaningful while seq is set). */
  kvVersion: number;
}

interface Request {
  state: SessionState; // a session's, or a private one for stateless calls
  session: boolean;
  start: number; // tokens[start..] are this request's output
  maxTokens: number;
  stop: Set<number>;
  sampling: SamplingParams & { seed: number };
  logprobs: number[];
  topLogprobs: number;
  onToken?: (t: GeneratedToken) => boolean | undefined;
  cachedTokens: number;
  arrival: number;
  aborted: boolean;
  done: boolean;
  resolve: (g: Generation) => void;
  reject: (e: unknown) => void;
  /** Removes the abort listener from the caller's signal. */
  detach?: () => void;
}

/** Continuous batching over one model and one KV cache. */
export class Engine {
  readonly model: Model;
  readonly cache: PagedKvCache;
  readonly maxBatchTokens: number;
  readonly idleWatermark: number;
  readonly #waiting: Request[] = [];
  readonly #running: Request[] = [];
  readonly #idle = new Set<SessionState>();
  readonly #stats = { prefillTokens: 0, decodeTokens: 0, cachedTokens: 0, preemptions: 0, busySeconds: 0 };
  #loop: Promise<void> | null = null;
  #arrivals = 0;
  #clock = 0;
  #weightVersion = -1;
  #kvVersion = 0;

  constructor(o: EngineOptions) {
    if (typeof o !== 'object' || o === null || !o.model) throw invalidArgument('options.model', 'a Model', o?.model);
    this.model = o.model;
    const c = o.model.config;
    const blockSize = checkInteger('blockSize', o.blockSize ?? 16, 1, 1 << 16);
    const kvBlocks = checkInteger('kvBlocks', o.kvBlocks ?? Math.ceil(65536 / blockSize), 1, 1 << 26);
    this.maxBatchTokens = checkInteger('maxBatchTokens', o.maxBatchTokens ?? 2048, 1, 1 << 24);
    const wm = o.idleWatermark ?? 0.5;
    if (typeof wm !== 'number' || !(wm >= 0 && wm <= 1))
      throw invalidArgument('idleWatermark', 'a number in [0, 1]', wm);
    this.idleWatermark = wm;
    this.cache = new PagedKvCache({
      numBlocks: kvBlocks,
      blockSize,
      numLayers: c.num_hidden_layers,
      numKvHeads: c.num_key_value_heads as number,
      headDim: c.head_dim as number,
      dtype: 'f32',
      prefixCaching: o.prefixCaching ?? true,
    });
  }

  /** Generates from a prompt (a stateless call: the prefix cache serves resent histories). */
  generate(r: GenerateRequest & { prompt: ArrayLike<number> }): Promise<Generation> {
    const prompt = this.#checkTokens('prompt', r?.prompt, 1);
    const state = this.#newState(prompt, true);
    return this.#submit(state, false, r);
  }

  /** A session: one growing sequence whose KV stays in the cache between turns. */
  openSession(): Session {
    return new Session(this, this.#newState([], false));
  }

  #newState(tokens: number[], busy: boolean): SessionState {
    return { seq: null, tokens, computed: 0, busy, lastUsed: 0, closed: false, kvVersion: this.#kvVersion };
  }

  /** Counters since construction, and the queues now. */
  stats(): EngineStats {
    return { ...this.#stats, running: this.#running.length, waiting: this.#waiting.length };
  }

  /** @internal */
  submitSession(state: SessionState, r: GenerateRequest & { append: ArrayLike<number> }): Promise<Generation> {
    if (state.closed) throw invalidArgument('session', 'an open session', 'a closed one');
    if (state.busy) throw invalidArgument('session', 'idle (await its previous generate first)', 'busy');
    const append = this.#checkTokens('append', r?.append, state.tokens.length === 0 ? 1 : 0);
    if (r?.maxTokens === 0 && append.length === 0 && state.computed === state.tokens.length)
      return Promise.resolve({
        tokens: new Int32Array(0),
        logprobs: new Float32Array(0),
        finishReason: 'length',
        cachedTokens: 0,
      }); // nothing to prefill
    state.tokens.push(...append);
    state.busy = true;
    this.#idle.delete(state);
    return this.#submit(state, true, r);
  }

  /** @internal A new session state sharing `state`'s tokens and KV blocks. */
  forkState(state: SessionState): SessionState {
    if (state.closed) throw invalidArgument('session', 'an open session', 'a closed one');
    if (state.busy) throw invalidArgument('session', 'idle to fork', 'busy');
    const child: SessionState = {
      seq: state.seq === null ? null : this.cache.fork(state.seq),
      tokens: [...state.tokens],
      computed: state.computed,
      busy: false,
      lastUsed: this.#clock++,
      closed: false,
      kvVersion: state.kvVersion, // the shared blocks' version
    };
    if (child.seq !== null) this.#idle.add(child);
    this.#enforceWatermark();
    return child;
  }

  /** @internal */
  closeState(state: SessionState): void {
    if (state.closed) return;
    if (state.busy) throw invalidArgument('session', 'idle to close', 'busy');
    state.closed = true;
    this.#release(state);
  }

  #checkTokens(name: string, v: unknown, min: number): number[] {
    const t = toTokenArray(name, v);
    const V = this.model.config.vocab_size;
    if (t.length < min) throw invalidArgument(name, `at least ${min} token(s)`, t);
    for (let i = 0; i < t.length; i++) {
      const x = t[i] as number;
      if (x >= V) throw invalidArgument(`${name}[${i}]`, `a token id in [0, ${V})`, x);
    }
    return Array.from(t);
  }

  #submit(state: SessionState, session: boolean, r: GenerateRequest): Promise<Generation> {
    // 0 (sessions only): compute the appended tokens' KV and generate nothing, e.g. a prompt
    // that G forks then share.
    const maxTokens = checkInteger('maxTokens', r.maxTokens, session ? 0 : 1, 1 << 30);
    const stop = new Set<number>((r.stop ?? []).map((x, i) => checkInteger(`stop[${i}]`, x, 0)));
    const sampling = { ...(r.sampling ?? {}) };
    const seed = sampling.seed ?? randomInt(2 ** 48 - 1);
    // A request that cannot fit even alone in the cache fails now.
    const needed = Math.ceil((state.tokens.length + 1) / this.cache.blockSize);
    if (needed > this.cache.numBlocks) {
      state.busy = false;
      if (!session) state.closed = true;
      return Promise.reject(
        new SwerlError(
          `the request needs ${needed} KV blocks for ${state.tokens.length} tokens but the cache has ${this.cache.numBlocks}; raise kvBlocks or shorten the prompt`,
          'PROMPT_TOO_LONG',
        ),
      );
    }
    return new Promise<Generation>((resolve, reject) => {
      const req: Request = {
        state,
        session,
        start: state.tokens.length,
        maxTokens,
        stop,
        sampling: { ...sampling, seed },
        logprobs: [],
        topLogprobs: checkInteger('topLogprobs', r.topLogprobs ?? 0, 0, 20),
        onToken: r.onToken,
        cachedTokens: 0,
        arrival: this.#arrivals++,
        aborted: false,
        done: false,
        resolve,
        reject,
      };
      if (r.signal) {
        if (r.signal.aborted) req.aborted = true;
        else {
          // Removed when the request ends: one signal often spans many requests (an episode).
          const signal = r.signal;
          const onAbort = () => this.#abort(req);
          signal.addEventListener('abort', onAbort, { once: true });
          req.detach = () => signal.removeEventListener('abort', onAbort);
        }
      }
      this.#waiting.push(req);
      this.#kick();
    });
  }

  #abort(req: Request): void {
    if (req.done) return;
    req.aborted = true;
    const i = this.#waiting.indexOf(req);
    if (i >= 0) {
      this.#waiting.splice(i, 1);
      this.#finish(req, 'abort');
    }
    // A running request finishes after the step in flight.
  }

  #kick(): void {
    if (this.#loop) return;
    this.#loop = (async () => {
      try {
        while (this.#waiting.length > 0 || this.#running.length > 0) {
          const t0 = performance.now();
          try {
            await this.#step();
          } finally {
            this.#stats.busySeconds += (performance.now() - t0) / 1000;
          }
        }
      } finally {
        this.#loop = null;
      }
    })().catch((e) => {
      // A failed step fails every request in flight (the engine stays usable).
      for (const r of [...this.#running, ...this.#waiting]) {
        this.#running.length = 0;
        this.#waiting.length = 0;
        r.done = true;
        r.detach?.();
        r.state.busy = false;
        this.#release(r.state);
        r.reject(e);
      }
    });
  }

  /** One engine step: schedule, reserve KV, forward, sample, finish. */
  async #step(): Promise<void> {
    if (this.model.weightVersion !== this.#weightVersion) {
      this.#weightVersion = this.model.weightVersion;
      this.cache.setWeightVersion(++this.#kvVersion);
      // Running requests hold KV of the old weights: they recompute everything under the new.
      for (const r of [...this.#running]) if (!r.aborted) this.#requeue(r);
    }
    for (const r of [...this.#running]) if (r.aborted) this.#finishRunning(r, 'abort');
    const batch: { req: Request; from: number; to: number }[] = [];
    let budget = this.maxBatchTokens;
    // Decodes first: every running request with exactly one token to compute.
    const order = [
      ...this.#running.filter((r) => r.state.tokens.length - r.state.computed === 1),
      ...this.#running.filter((r) => r.state.tokens.length - r.state.computed > 1),
    ];
    for (const r of order) {
      if (budget <= 0 && batch.length > 0) break;
      if (!this.#running.includes(r)) continue; // preempted while scheduling this step
      const n = Math.min(r.state.tokens.length - r.state.computed, Math.max(1, budget));
      const from = this.#reserve(r, n, batch);
      if (from < 0) continue;
      batch.push({ req: r, from, to: r.state.computed + n });
      budget -= n;
    }
    while (budget > 0 && this.#waiting.length > 0) {
      const r = this.#waiting[0] as Request;
      if (r.aborted) {
        this.#waiting.shift();
        this.#finish(r, 'abort');
        continue;
      }
      // An idle session (or fork) resumed after a weight change: its KV is the old weights'.
      if (r.state.seq !== null && r.state.kvVersion !== this.#kvVersion) this.#release(r.state);
      if (r.state.seq === null) {
        r.state.seq = this.cache.createSequence();
        r.state.kvVersion = this.#kvVersion;
      }
      const n = Math.min(r.state.tokens.length - r.state.computed, budget);
      const from = this.#reserve(r, n, batch, true);
      if (from < 0) break; // no room: it waits for the running ones
      this.#waiting.shift();
      this.#running.push(r);
      batch.push({ req: r, from, to: r.state.computed + n });
      budget -= n;
    }
    if (batch.length === 0) {
      if (this.#running.length === 0 && this.#waiting.length > 0) {
        // Nothing runs and the head of the queue still does not fit: only possible for a request
        // that outgrew the cache while generating.
        const r = this.#waiting.shift() as Request;
        this.#finish(r, 'length');
      }
      return;
    }
    // The paged forward over every chunk; logits for the chunks that end a request's pending tokens.
    const entries = batch.map((b) => ({
      seq: b.req.state.seq as number,
      tokens: b.req.state.tokens.slice(b.from, b.to),
    }));
    const logits = await this.model.forwardPagedAsync(this.cache, entries);
    this.cache.commitBatch(batch.map((b) => b.req.state.seq as number));
    const V = this.model.config.vocab_size;
    const toSample: { req: Request; row: number }[] = [];
    batch.forEach((b, i) => {
      const st = b.req.state;
      const decode = b.to - b.from === 1 && st.computed === st.tokens.length - 1 && st.tokens.length > b.req.start;
      if (decode) this.#stats.decodeTokens += 1;
      else this.#stats.prefillTokens += b.to - b.from;
      st.computed = b.to;
      if (st.computed === st.tokens.length && !b.req.aborted) {
        if (b.req.maxTokens === 0) this.#finishRunning(b.req, 'length');
        else toSample.push({ req: b.req, row: i });
      }
    });
    if (toSample.length > 0) {
      const rows = new Float32Array(toSample.length * V);
      toSample.forEach((s, k) => {
        rows.set(logits.subarray(s.row * V, (s.row + 1) * V), k * V);
      });
      const out = await sampleAsync(
        rows,
        V,
        toSample.map((s) => s.req.sampling),
        Int32Array.from(toSample, (s) => s.req.state.tokens.length),
      );
      toSample.forEach((s, k) => {
        const r = s.req;
        const tok = out.tokens[k] as number;
        r.state.tokens.push(tok);
        r.logprobs.push(out.logprobs[k] as number);
        const generated = r.state.tokens.length - r.start;
        let stopped = false;
        if (r.onToken) {
          const t: GeneratedToken = { token: tok, logprob: out.logprobs[k] as number };
          if (r.topLogprobs > 0) t.top = topLogprobs(rows.subarray(k * V, (k + 1) * V), r.topLogprobs);
          try {
            stopped = r.onToken(t) === true;
          } catch {
            stopped = true; // a failing callback ends its own request, not the engine
          }
        }
        if (stopped || r.stop.has(tok)) this.#finishRunning(r, 'stop');
        else if (generated >= r.maxTokens) this.#finishRunning(r, 'length');
      });
    }
    for (const r of [...this.#running]) if (r.aborted) this.#finishRunning(r, 'abort');
  }

  /**
   * Reserves KV for tokens[computed, computed + n) of r, freeing room when needed: idle sessions
   * first, then the newest running request (never one already in this step's batch). Returns the
   * first token index to compute (prefix hits skipped; at least the last one is computed, for its
   * logits), or −1 when r itself had to give way.
   */
  #reserve(r: Request, n: number, batch: { req: Request }[], admitting = false): number {
    const st = r.state;
    const seq = st.seq as number;
    const tokens = st.tokens.slice(st.computed, st.computed + n);
    for (;;) {
      try {
        const { cachedTokens } = this.cache.append(seq, tokens);
        if (cachedTokens > 0) {
          r.cachedTokens += cachedTokens;
          this.#stats.cachedTokens += cachedTokens;
        }
        // Hit tokens need no compute, but the chunk's last token is always computed: its logits
        // are needed, and rewriting its KV writes the same bits the hit block holds.
        return Math.min(st.computed + cachedTokens, st.computed + n - 1);
      } catch (e) {
        if (!(e instanceof SwerlError) || e.code !== 'KV_CACHE_FULL') throw e;
        if (this.#releaseOneIdle()) continue;
        const inBatch = new Set(batch.map((b) => b.req));
        const victim = [...this.#running].reverse().find((x) => x !== r && !inBatch.has(x));
        if (victim) {
          this.#preempt(victim);
          continue;
        }
        if (admitting) return -1;
        // r is the newest that can give way: it waits for the others.
        this.#preempt(r);
        return -1;
      }
    }
  }

  #releaseOneIdle(): boolean {
    let oldest: SessionState | null = null;
    for (const s of this.#idle) if (!oldest || s.lastUsed < oldest.lastUsed) oldest = s;
    if (!oldest) return false;
    this.#release(oldest);
    return true;
  }

  /** Releases least recently used idle sessions while they hold more than the watermark's blocks. */
  #enforceWatermark(): void {
    const limit = this.idleWatermark * this.cache.numBlocks;
    const held = () => {
      let n = 0;
      for (const s of this.#idle)
        n += Math.ceil((s.seq === null ? 0 : this.cache.length(s.seq)) / this.cache.blockSize);
      return n;
    };
    while (this.#idle.size > 0 && held() > limit) this.#releaseOneIdle();
  }

  /** Frees a state's blocks (full committed ones stay in the prefix cache); it recomputes later. */
  #release(st: SessionState): void {
    this.#idle.delete(st);
    if (st.seq !== null) this.cache.free(st.seq);
    st.seq = null;
    st.computed = 0;
  }

  #preempt(r: Request): void {
    this.#requeue(r);
    this.#stats.preemptions += 1;
  }

  /** Frees a running request's KV and puts it back in the waiting queue: it recomputes on admission. */
  #requeue(r: Request): void {
    const i = this.#running.indexOf(r);
    if (i >= 0) this.#running.splice(i, 1);
    this.#release(r.state);
    // Back to the waiting queue in arrival order, ahead of later arrivals.
    const at = this.#waiting.findIndex((w) => w.arrival > r.arrival);
    this.#waiting.splice(at < 0 ? this.#waiting.length : at, 0, r);
  }

  #finishRunning(r: Request, reason: Generation['finishReason']): void {
    const i = this.#running.indexOf(r);
    if (i >= 0) this.#running.splice(i, 1);
    this.#finish(r, reason);
  }

  #finish(r: Request, reason: Generation['finishReason']): void {
    if (r.done) return;
    r.done = true;
    r.detach?.();
    const st = r.state;
    st.busy = false;
    st.lastUsed = this.#clock++;
    if (r.session && !st.closed) {
      if (st.seq !== null) this.#idle.add(st);
      this.#enforceWatermark();
    } else {
      this.#release(st);
    }
    r.resolve({
      tokens: Int32Array.from(st.tokens.slice(r.start)),
      logprobs: Float32Array.from(r.logprobs),
      finishReason: reason,
      cachedTokens: r.cachedTokens,
    });
  }
}

/** One growing sequence whose KV stays in the engine's cache between turns. */
export class Session {
  readonly #engine: Engine;
  readonly #state: SessionState;

  /** @internal */
  constructor(engine: Engine, state: SessionState) {
    this.#engine = engine;
    this.#state = state;
  }

  /** Appends tokens (the next observation) and generates a continuation. */
  generate(r: GenerateRequest & { append: ArrayLike<number> }): Promise<Generation> {
    try {
      return this.#engine.submitSession(this.#state, r);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** A new session with the same tokens so far, sharing the KV blocks (a group of G samples). */
  fork(): Session {
    return new Session(this.#engine, this.#engine.forkState(this.#state));
  }

  /** Everything appended and generated so far. */
  get tokens(): Int32Array {
    return Int32Array.from(this.#state.tokens);
  }

  /** Frees the session's KV blocks (full ones stay in the prefix cache). */
  close(): void {
    this.#engine.closeState(this.#state);
  }
}

/**
 * One completion request run on the engine and answered: n choices per prompt generated
 * concurrently, incremental detokenization, stop strings, Hermes tool-call parsing, logprobs, and
 * either one JSON response or server-sent events (chunks, usage chunk, [DONE]).
 */
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Engine, GeneratedToken } from '../engine/engine.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import { IncrementalDetokenizer, type TokenBytes } from './detokenizer.js';
import { sendJson } from './http-error.js';
import type { CommonParams } from './params.js';
import { type ParsedToolCall, parseHermesToolCalls, TOOL_CALL_OPEN } from './tool-calls.js';

/** What the server shares with every request. */
export interface ServeContext {
  engine: Engine;
  tokenizer: Tokenizer;
  tokenBytes: TokenBytes;
  modelName: string;
}

/** A checked request, ready to run. */
export interface RunSpec {
  chat: boolean;
  /** One entry per prompt; `echo` is the prompt text to prepend (completions' echo). */
  prompts: { ids: number[]; echo?: string }[];
  params: CommonParams;
  maxTokens: number;
  /** Logprobs asked for, and how many alternatives per token. */
  logprobs: boolean;
  topLogprobs: number;
  /** Tool names to parse calls for (empty: none), and whether several calls may be returned. */
  toolNames: ReadonlySet<string>;
  parallelToolCalls: boolean;
}

/** Token counts of a finished request (for usage and the request log). */
export interface RunCounts {
  promptTokens: number;
  completionTokens: number;
}

interface Choice {
  index: number;
  prompt: number;
  detok: IncrementalDetokenizer;
  /** The visible text so far (after stop strings), prompt echo excluded. */
  text: string;
  /** How much of `text` the stream has sent. */
  sent: number;
  logprobs: GeneratedToken[];
  /** Logprobs not yet sent in a stream chunk. */
  pendingLogprobs: GeneratedToken[];
  tokens: number;
  /** Prompt tokens served from the prefix cache. */
  cached: number;
  /** Where `<tool_call>` starts in text (-1: not seen). */
  toolAt: number;
  stopped: boolean;
  finish: string | null;
  toolCalls: ParsedToolCall[] | null;
  content: string | null;
}

const now = () => Math.floor(Date.now() / 1000);
const utf8 = (s: string) => Array.from(Buffer.from(s, 'utf8'));

/** Runs `spec` and answers on `res`; `signal` aborts it (the client went away). */
export async function runRequest(
  ctx: ServeContext,
  spec: RunSpec,
  res: ServerResponse,
  signal: AbortSignal,
  /** Updated as tokens come (the request log of an aborted stream reads it). */
  counts: RunCounts = { promptTokens: 0, completionTokens: 0 },
): Promise<RunCounts> {
  const { engine, tokenizer, modelName } = ctx;
  const p = spec.params;
  const id = `${spec.chat ? 'chatcmpl' : 'cmpl'}-${randomUUID().replace(/-/g, '')}`;
  const created = now();
  const chunkObject = spec.chat ? 'chat.completion.chunk' : 'text_completion';
  const maxStop = Math.max(0, ...p.stopStrings.map((s) => s.length));
  const tools = spec.toolNames.size > 0;
  const tokenText = (t: number) => (p.idsAsTokens ? `token_id:${t}` : tokenizer.decode([t]));
  const tokenBytes = (t: number) => {
    const b = p.idsAsTokens ? null : ctx.tokenBytes(t);
    return b ? Array.from(b) : utf8(tokenText(t));
  };
  const choices: Choice[] = spec.prompts.flatMap((_, pi) =>
    Array.from({ length: p.n }, (_, j) => ({
      index: pi * p.n + j,
      prompt: pi,
      detok: new IncrementalDetokenizer(tokenizer, { tokenBytes: ctx.tokenBytes }),
      text: '',
      sent: 0,
      logprobs: [],
      pendingLogprobs: [],
      tokens: 0,
      cached: 0,
      toolAt: -1,
      stopped: false,
      finish: null,
      toolCalls: null,
      content: null,
    })),
  );

  const write = (data: unknown) => {
    if (!res.writableEnded && !res.destroyed) res.write(`data: ${JSON.stringify(data)}\n\n`);
  };
  const chunk = (choice: unknown) =>
    write({
      id,
      object: chunkObject,
      created,
      model: modelName,
      choices: [choice],
      ...(p.includeUsage ? { usage: null } : {}),
    });
  const formatLogprobs = (lp: GeneratedToken[]) => (spec.chat ? chatLogprobs(lp) : legacyLogprobs(lp));
  const chatLogprobs = (lp: GeneratedToken[]) => ({
    content: lp.map((t) => ({
      token: tokenText(t.token),
      logprob: t.logprob,
      bytes: tokenBytes(t.token),
      top_logprobs: (t.top ?? []).slice(0, spec.topLogprobs).map((a) => ({
        token: tokenText(a.token),
        logprob: a.logprob,
        bytes: tokenBytes(a.token),
      })),
    })),
    refusal: null,
  });
  const legacyLogprobs = (lp: GeneratedToken[], start = 0) => {
    let offset = start;
    const textOffset = lp.map((t) => {
      const at = offset;
      offset += tokenText(t.token).length;
      return at;
    });
    return {
      tokens: lp.map((t) => tokenText(t.token)),
      token_logprobs: lp.map((t) => t.logprob),
      top_logprobs:
        spec.topLogprobs > 0
          ? lp.map((t) => Object.fromEntries((t.top ?? []).map((a) => [tokenText(a.token), a.logprob])))
          : null,
      text_offset: textOffset,
    };
  };

  /** How much of c.text a stream may send now: not what may still grow into a stop string or a tool call. */
  const sendable = (c: Choice): number => {
    let upto = c.text.length;
    for (const s of p.stopStrings)
      for (let k = Math.min(s.length - 1, c.text.length); k > 0; k--)
        if (c.text.endsWith(s.slice(0, k))) {
          upto = Math.min(upto, c.text.length - k);
          break;
        }
    if (tools) {
      if (c.toolAt < 0) c.toolAt = c.text.indexOf(TOOL_CALL_OPEN, Math.max(0, c.sent - TOOL_CALL_OPEN.length));
      if (c.toolAt >= 0) upto = Math.min(upto, c.toolAt);
      else
        for (let k = Math.min(TOOL_CALL_OPEN.length - 1, c.text.length); k > 0; k--)
          if (c.text.endsWith(TOOL_CALL_OPEN.slice(0, k))) {
            upto = Math.min(upto, c.text.length - k);
            break;
          }
      // Whitespace before a tool call is not content; hold it until more text follows.
      while (upto > c.sent && /\s/.test(c.text[upto - 1] as string)) upto--;
    }
    return Math.max(c.sent, upto);
  };

  const streamDelta = (c: Choice, upto: number, final: boolean) => {
    const delta = c.text.slice(c.sent, upto);
    c.sent = upto;
    const lp = c.pendingLogprobs;
    if (delta === '' && !final && !(spec.logprobs && lp.length > 0)) return;
    c.pendingLogprobs = [];
    const logprobs = spec.logprobs && lp.length > 0 ? formatLogprobs(lp) : null;
    if (spec.chat)
      chunk({
        index: c.index,
        delta: delta === '' ? {} : { content: delta },
        logprobs,
        finish_reason: final ? c.finish : null,
      });
    else chunk({ index: c.index, text: delta, logprobs, finish_reason: final ? c.finish : null });
  };

  /** Cuts c.text at the first stop string in its part from `from` on; true when one was found. */
  const cutAtStop = (c: Choice, from: number): boolean => {
    let at = -1;
    for (const s of p.stopStrings) {
      const k = c.text.indexOf(s, Math.max(0, from - maxStop + 1));
      if (k >= 0 && (at < 0 || k < at)) at = k;
    }
    if (at < 0) return false;
    c.text = c.text.slice(0, at);
    return true;
  };

  const finishChoice = (c: Choice, reason: 'stop' | 'length' | 'abort') => {
    if (!c.stopped) {
      const from = c.text.length;
      c.text += c.detok.flush();
      if (cutAtStop(c, from)) c.stopped = true;
    }
    c.finish = c.stopped || reason !== 'length' ? 'stop' : 'length';
    c.content = c.text;
    if (tools) {
      const parsed = parseHermesToolCalls(c.text, spec.toolNames);
      if (parsed) {
        c.toolCalls = spec.parallelToolCalls ? parsed.toolCalls : parsed.toolCalls.slice(0, 1);
        c.content = c.text.slice(0, c.text.indexOf(TOOL_CALL_OPEN)).trimEnd() || null;
        c.finish = 'tool_calls';
      }
    }
    if (!p.stream) return;
    if (c.toolCalls) {
      streamDelta(c, Math.max(c.sent, c.content?.length ?? 0), false);
      chunk({
        index: c.index,
        delta: {
          tool_calls: c.toolCalls.map((tc, k) => ({ index: k, ...tc })),
        },
        logprobs: null,
        finish_reason: null,
      });
      c.sent = c.text.length;
    }
    streamDelta(c, c.toolCalls ? c.sent : c.text.length, true);
  };

  if (p.stream) {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    for (const c of choices) {
      if (spec.chat)
        chunk({ index: c.index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null });
      const echo = spec.prompts[c.prompt]?.echo;
      if (echo !== undefined) chunk({ index: c.index, text: echo, logprobs: null, finish_reason: null });
    }
  }

  const abort = new AbortController();
  const onAbort = () => abort.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  if (signal.aborted) abort.abort();
  const stops = new Set(p.stopIds);
  const runs = choices.map((c) => {
    const prompt = spec.prompts[c.prompt]?.ids as number[];
    const j = c.index % p.n;
    return engine
      .generate({
        prompt,
        maxTokens: spec.maxTokens,
        sampling: {
          ...p.sampling,
          ...(p.sampling.seed !== undefined ? { seed: (p.sampling.seed + j) % 2 ** 53 } : {}),
        },
        stop: p.stopIds,
        topLogprobs: spec.topLogprobs,
        signal: abort.signal,
        onToken: (t) => {
          c.tokens++;
          counts.completionTokens++;
          c.logprobs.push(t);
          c.pendingLogprobs.push(t);
          if (stops.has(t.token)) return false; // the engine ends the request on it; it is not text
          const from = c.text.length;
          c.text += c.detok.push(t.token);
          if (cutAtStop(c, from)) {
            c.stopped = true;
            return true;
          }
          if (p.stream) streamDelta(c, sendable(c), false);
          return false;
        },
      })
      .then((g) => {
        c.cached = g.cachedTokens;
        finishChoice(c, g.finishReason);
      })
      .catch((e) => {
        abort.abort(); // one failed choice ends the request: stop its siblings
        throw e;
      });
  });
  const settled = await Promise.allSettled(runs);
  signal.removeEventListener('abort', onAbort);
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;

  counts.promptTokens = spec.prompts.reduce((a, q) => a + q.ids.length, 0);
  const usage = {
    prompt_tokens: counts.promptTokens,
    completion_tokens: counts.completionTokens,
    total_tokens: counts.promptTokens + counts.completionTokens,
    prompt_tokens_details: { cached_tokens: choices[0]?.cached ?? 0 },
  };
  if (p.stream) {
    if (p.includeUsage) write({ id, object: chunkObject, created, model: modelName, choices: [], usage });
    if (!res.writableEnded && !res.destroyed) {
      res.write('data: [DONE]\n\n');
      res.end();
    }
    return counts;
  }
  sendJson(res, 200, {
    id,
    object: spec.chat ? 'chat.completion' : 'text_completion',
    created,
    model: modelName,
    choices: choices.map((c) => {
      const logprobs = spec.logprobs ? formatLogprobs(c.logprobs) : null;
      if (!spec.chat)
        return {
          index: c.index,
          text: (spec.prompts[c.prompt]?.echo ?? '') + c.text,
          logprobs,
          finish_reason: c.finish,
        };
      const message: Record<string, unknown> = { role: 'assistant', content: c.content, refusal: null };
      if (c.toolCalls) message.tool_calls = c.toolCalls;
      return { index: c.index, message, logprobs, finish_reason: c.finish };
    }),
    usage,
  });
  return counts;
}

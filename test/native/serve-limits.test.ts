/**
 * The server's bounds and its behaviour under concurrency, in-process on a real tiny model (so
 * the engine's queues can be read): 429s with OpenAI's body when the queued requests or tokens
 * are at their bound, a 400 for a request that could never fit, concurrent streams equal to their
 * non-streamed answers, and an aborted stream whose sequences are freed while the server keeps
 * serving; the request log line of each.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine, Model, type OpenAiServer, startOpenAiServer, Tokenizer } from '../../src/index.js';

const tokenizer = Tokenizer.train(
  Array.from({ length: 80 }, (_, i) => `line ${i}: x = y + ${i % 7}\nuser: fix it\n`),
  { vocabSize: 300 },
);
const model = Model.random(
  {
    architectures: ['Qwen2ForCausalLM'],
    vocab_size: tokenizer.vocabSize,
    hidden_size: 32,
    intermediate_size: 64,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    initializer_range: 0.5,
  },
  3,
);
let engine: Engine;
let server: OpenAiServer;
let client: OpenAI;
const log: string[] = [];

beforeAll(async () => {
  engine = new Engine({ model, kvBlocks: 256, blockSize: 4 }); // 1024 tokens
  server = await startOpenAiServer({
    engine,
    tokenizer,
    modelName: 'm',
    port: 0,
    maxModelLen: 1000,
    maxQueuedRequests: 4,
    maxQueuedTokens: 5000,
    log: (line) => log.push(line),
  });
  client = new OpenAI({ baseURL: server.url, apiKey: 'none', maxRetries: 0 });
});
afterAll(async () => {
  await server.close();
});

const long = (content: string, maxTokens: number) =>
  ({
    model: 'm',
    messages: [{ role: 'user', content }],
    max_tokens: maxTokens,
    temperature: 0,
    ignore_eos: true,
    stream: true,
  }) as OpenAI.ChatCompletionCreateParamsStreaming;

/** Waits (up to 3 s) until the server and the engine hold no request. */
async function settle(): Promise<void> {
  const busy = () => engine.stats().running > 0 || engine.stats().waiting > 0 || server.queued().requests > 0;
  for (let i = 0; i < 300 && busy(); i++) await new Promise((r) => setTimeout(r, 10));
}

/** Waits until the server holds `n` requests. */
async function queuedTo(n: number): Promise<void> {
  for (let i = 0; i < 300 && server.queued().requests > n; i++) await new Promise((r) => setTimeout(r, 10));
}

describe('swerl serve limits', () => {
  it('reports its context in /v1/models', async () => {
    expect(server.maxModelLen).toBe(1000);
    const r = (await (await fetch(`${server.url}/models`)).json()) as { data: { max_model_len: number }[] };
    expect(r.data[0]?.max_model_len).toBe(1000);
  });

  it('429 when the queued requests or tokens are at their bound; 400 for a request that never fits', async () => {
    // Four streams hold the four request slots (each ~8 prompt + 900 tokens: ~3630 of 5000).
    const controllers = Array.from({ length: 4 }, () => new AbortController());
    const streams = await Promise.all(
      controllers.map((c, i) => client.chat.completions.create(long(`fix ${i}`, 900), { signal: c.signal })),
    );
    const first = await Promise.all(streams.map((s) => s[Symbol.asyncIterator]().next()));
    expect(first.every((f) => !f.done)).toBe(true);
    const err = await client.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 1 })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect(err.status).toBe(429);
    expect(err.headers.get('retry-after')).toBe('1');
    expect(err.error).toMatchObject({ type: 'requests', code: 'rate_limit_exceeded', param: null });
    expect(typeof err.error.message).toBe('string');
    for (const c of controllers.slice(0, 2)) c.abort();
    await queuedTo(2);
    expect(server.queued().requests).toBe(2);
    // Two slots free, but ~1815 tokens queued: 4 x (prompt + 900) more would pass 5000.
    expect(server.queued().tokens).toBeGreaterThan(5000 - 4 * 902);
    const tokens = await client.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 900, n: 4 })
      .catch((e) => e);
    expect(tokens.status).toBe(429);
    expect(tokens.error).toMatchObject({ type: 'tokens', code: 'rate_limit_exceeded' });
    for (const c of controllers.slice(2)) c.abort();
    await settle();
    // 6 x (prompt + 900) can never be admitted: a 400, not a 429 to retry forever.
    const never = await client.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 900, n: 6 })
      .catch((e) => e);
    expect(never.status).toBe(400);
    expect(never.error.param).toBe('max_tokens');
    expect(log.some((l) => / POST \/v1\/chat\/completions 429 /.test(l))).toBe(true);
  });

  it('an aborted stream frees its sequence; the server keeps serving', async () => {
    const c = new AbortController();
    const stream = await client.chat.completions.create(long('fix it', 500), { signal: c.signal });
    let chunks = 0;
    for await (const _ of stream) if (++chunks === 3) c.abort(); // the openai client ends the loop
    expect(chunks).toBe(3);
    await settle();
    expect(server.queued()).toEqual({ requests: 0, tokens: 0 });
    const s = engine.stats();
    expect([s.running, s.waiting]).toEqual([0, 0]);
    expect(engine.cache.stats().activeBlocks).toBe(0);
    expect(engine.stats().decodeTokens).toBeLessThan(2000); // it did not run on to its 500 tokens each time
    const ok = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 2,
    });
    expect(ok.choices.length).toBe(1);
    expect(log.some((l) => / POST \/v1\/chat\/completions 200 .* \d+ms aborted$/.test(l))).toBe(true);
  });

  it('concurrent streams each equal their non-streamed answer', async () => {
    const prompts = ['line 1: x', 'line 2: y', 'user: fix', 'line 40: x = y'];
    const params = (p: string) => ({ model: 'm', prompt: p, max_tokens: 30, temperature: 0 });
    const wholes = await Promise.all(prompts.map((p) => client.completions.create(params(p))));
    const streamed = await Promise.all(
      prompts.map(async (p) => {
        let text = '';
        for await (const ch of await client.completions.create({ ...params(p), stream: true }))
          text += ch.choices[0]?.text ?? '';
        return text;
      }),
    );
    expect(streamed).toEqual(wholes.map((w) => w.choices[0]?.text));
    const line = log.find((l) => / POST \/v1\/completions 200 /.test(l)) ?? '';
    expect(line).toMatch(
      /^\d{4}-\d\d-\d\dT\S+Z POST \/v1\/completions 200 prompt_tokens=\d+ completion_tokens=\d+ \d+ms$/,
    );
  });
});

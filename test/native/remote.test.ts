/**
 * RemoteEngine against swerl's own OpenAI-compatible server (in-process): the same tokens and
 * bitwise the same logprobs as the local engine on the same model, sessions that resend their
 * history and hit the server's prefix cache, and coded errors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine, Model, type OpenAiServer, RemoteEngine, startOpenAiServer, Tokenizer } from '../../src/index.js';

let server: OpenAiServer;
let model: Model;
const tokenizer = Tokenizer.train(
  Array.from({ length: 100 }, (_, i) => `line ${i}: x = y + ${i % 7}\n`),
  { vocabSize: 300 },
);

beforeAll(async () => {
  model = Model.random(
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
    8,
  );
  server = await startOpenAiServer({
    engine: new Engine({ model, kvBlocks: 128, blockSize: 4 }),
    tokenizer,
    modelName: 'm',
    port: 0,
  });
});
afterAll(async () => {
  await server.close();
});

describe('RemoteEngine', () => {
  it("returns the local engine's tokens and logprobs, bit for bit", async () => {
    const remote = new RemoteEngine({ baseURL: server.url, model: 'm' });
    const local = new Engine({ model, kvBlocks: 128, blockSize: 4 });
    for (const [i, sampling] of [
      { seed: 1 },
      { seed: 2, temperature: 0.7, topP: 0.9 },
      { temperature: 0 },
      { seed: 3, topK: 5 },
    ].entries()) {
      const prompt = tokenizer.encode(`line ${i}: x =`);
      const stop = [tokenizer.eosTokenId as number];
      const [a, b] = await Promise.all([
        remote.generate({ prompt, maxTokens: 12, sampling, stop }),
        local.generate({ prompt, maxTokens: 12, sampling, stop }),
      ]);
      expect(Array.from(a.tokens)).toEqual(Array.from(b.tokens));
      expect(Array.from(a.logprobs)).toEqual(Array.from(b.logprobs));
      expect(a.finishReason).toBe(b.finishReason);
    }
  });

  it('sessions resend their history and hit the server prefix cache', async () => {
    const remote = new RemoteEngine({ baseURL: server.url, model: 'm' });
    const local = new Engine({ model, kvBlocks: 128, blockSize: 4 });
    const rs = remote.openSession();
    const ls = local.openSession();
    const t0 = performance.now();
    let hits = 0;
    for (const obs of ['line 1: x =', ' y + 3\nline 2:', ' x = y\n']) {
      const append = tokenizer.encode(obs);
      const a = await rs.generate({ append, maxTokens: 6, sampling: { seed: 5 } });
      const b = await ls.generate({ append, maxTokens: 6, sampling: { seed: 5 } });
      expect(Array.from(a.tokens)).toEqual(Array.from(b.tokens));
      hits += a.cachedTokens;
    }
    expect(Array.from(rs.tokens)).toEqual(Array.from(ls.tokens));
    expect(hits).toBeGreaterThan(0);
    expect(remote.stats().decodeTokens).toBe(18);
    // busySeconds: the time with a request in flight, within the wall time of the calls.
    const busy = remote.stats().busySeconds;
    expect(busy).toBeGreaterThan(0);
    expect(busy).toBeLessThanOrEqual((performance.now() - t0) / 1000);
    await new Promise((r) => setTimeout(r, 50));
    expect(remote.stats().busySeconds).toBe(busy);
  });

  it("maps the server's refusals and unreachable servers to coded errors", async () => {
    const remote = new RemoteEngine({ baseURL: server.url, model: 'm' });
    await expect(remote.generate({ prompt: new Array(2000).fill(1), maxTokens: 1 })).rejects.toMatchObject({
      code: 'PROMPT_TOO_LONG',
    });
    await expect(remote.generate({ prompt: [1, 99999], maxTokens: 1 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    const wrong = new RemoteEngine({ baseURL: server.url, model: 'other' });
    await expect(wrong.generate({ prompt: [1], maxTokens: 1 })).rejects.toMatchObject({ code: 'IO_ERROR' });
    const nowhere = new RemoteEngine({ baseURL: 'http://127.0.0.1:9/v1', model: 'm', timeoutMs: 2000 });
    await expect(nowhere.generate({ prompt: [1], maxTokens: 1 })).rejects.toMatchObject({ code: 'IO_ERROR' });
  });

  it('asks a busy server (429) again after its Retry-After, and fails with IO_ERROR when the retries run out', async () => {
    // One request slot: of three concurrent requests, two are turned away with 429 at first.
    const busy = await startOpenAiServer({
      engine: new Engine({ model, kvBlocks: 128, blockSize: 4 }),
      tokenizer,
      modelName: 'm',
      port: 0,
      maxQueuedRequests: 1,
      log: () => {},
    });
    try {
      const prompt = tokenizer.encode('line 1: x =');
      const request = { prompt, maxTokens: 24, sampling: { seed: 1 } };
      const patient = new RemoteEngine({ baseURL: busy.url, model: 'm' });
      const results = await Promise.all([1, 2, 3].map(() => patient.generate(request)));
      for (const g of results) expect(g.tokens.length).toBe(24);
      const impatient = new RemoteEngine({ baseURL: busy.url, model: 'm', busyRetries: 0 });
      const settled = await Promise.allSettled([1, 2, 3].map(() => impatient.generate(request)));
      const refused = settled.filter((x) => x.status === 'rejected');
      expect(refused.length).toBeGreaterThan(0);
      for (const x of refused) expect((x as PromiseRejectedResult).reason).toMatchObject({ code: 'IO_ERROR' });
      expect(() => new RemoteEngine({ baseURL: busy.url, model: 'm', busyRetries: -1 })).toThrow(/busyRetries/);
    } finally {
      await busy.close();
    }
  });
});

/**
 * `swerl serve` through the official `openai` client: a model directory made here (a BPE
 * tokenizer trained on a small corpus, a random Qwen2 with its vocabulary), served by the CLI in a
 * child process. Checks the three endpoints, greedy output against the engine run in-process,
 * seeds, logprobs and top_logprobs, streaming equal to non-streaming, n, stop strings, and that
 * malformed requests get OpenAI-style 400s while the server keeps serving.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine, Model, Tokenizer } from '../../src/index.js';

const root = join(import.meta.dirname, '..', '..');
let dir = '';
let child: ChildProcess | undefined;
let url = '';
let client: OpenAI;
let model: Model;
let tokenizer: Tokenizer;
const NAME = 'tiny-swe';

const CORPUS = Array.from(
  { length: 200 },
  (_, i) => `def fix_${i % 17}(x):\n    return x + ${i}  # the bug was here\nuser: please fix test_${i % 5}\n`,
);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'swerl-serve-'));
  tokenizer = Tokenizer.train(CORPUS, { vocabSize: 400 });
  await tokenizer.save(dir);
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
    5,
  );
  await model.save(dir);
  child = spawn(
    process.execPath,
    [join(root, 'bin', 'swerl.js'), 'serve', '--model', dir, '--port', '0', '--name', NAME, '--kv-blocks', '256'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child?.stdout?.on('data', (d) => {
      out += d;
      const m = /(http:\/\/\S+\/v1)/.exec(out);
      if (m) resolve(m[1] as string);
    });
    child?.once('exit', (code) => reject(new Error(`swerl serve exited with ${code}`)));
    setTimeout(() => reject(new Error('swerl serve did not start')), 20_000);
  });
  client = new OpenAI({ baseURL: url, apiKey: 'unused', maxRetries: 0 });
}, 30_000);

afterAll(async () => {
  child?.kill('SIGTERM');
  await rm(dir, { recursive: true, force: true });
});

describe('swerl serve, through the openai client', () => {
  it('lists the model', async () => {
    const list = await client.models.list();
    expect(list.data.map((m) => m.id)).toEqual([NAME]);
  });

  it('completions: greedy text equals the engine run in-process; logprobs and top_logprobs are consistent', async () => {
    const prompt = 'def fix_3(x):\n';
    const r = await client.completions.create({ model: NAME, prompt, max_tokens: 12, temperature: 0, logprobs: 3 });
    const engine = new Engine({ model, kvBlocks: 256 });
    const eos = tokenizer.eosTokenId as number;
    const g = await engine.generate({
      prompt: tokenizer.encode(prompt),
      maxTokens: 12,
      sampling: { temperature: 0 },
      stop: [eos],
    });
    const visible = Array.from(g.tokens).filter((t) => t !== eos);
    const choice = r.choices[0];
    expect(choice?.text).toBe(tokenizer.decode(visible, { skipSpecialTokens: true }));
    expect(r.usage?.completion_tokens).toBe(g.tokens.length);
    const lp = choice?.logprobs;
    expect(lp?.token_logprobs?.length).toBe(g.tokens.length);
    lp?.token_logprobs?.forEach((x, i) => {
      expect(x).toBeCloseTo(g.logprobs[i] as number, 6);
    });
    // The legacy format keys top_logprobs by text, so tokens that decode alike (lone UTF-8 bytes)
    // share an entry; the chat test below checks the ranking through its list format.
    for (const top of lp?.top_logprobs ?? []) {
      const values = Object.values(top);
      expect(values.length).toBeGreaterThan(0);
      expect(values.length).toBeLessThanOrEqual(3);
      for (const v of values) expect(v).toBeLessThanOrEqual(0);
    }
  });

  it('chat, greedy: the chosen token is the first of top_logprobs, with its logprob', async () => {
    const r = await client.chat.completions.create({
      model: NAME,
      messages: [{ role: 'user', content: 'fix test_4' }],
      max_tokens: 8,
      temperature: 0,
      logprobs: true,
      top_logprobs: 3,
    });
    const content = r.choices[0]?.logprobs?.content ?? [];
    expect(content.length).toBeGreaterThan(0);
    for (const t of content) {
      expect(t.top_logprobs.length).toBe(3);
      expect(t.top_logprobs[0]?.logprob).toBeCloseTo(t.logprob, 5);
      expect(t.top_logprobs[0]?.token).toBe(t.token);
      for (let i = 1; i < 3; i++)
        expect(t.top_logprobs[i]?.logprob as number).toBeLessThanOrEqual(t.top_logprobs[i - 1]?.logprob as number);
    }
  });

  it('seeds reproduce; different seeds give different samples', async () => {
    const ask = (seed: number) =>
      client.completions.create({ model: NAME, prompt: 'user: please', max_tokens: 16, temperature: 1, seed });
    const [a, b] = await Promise.all([ask(1), ask(1)]);
    expect(a.choices[0]?.text).toBe(b.choices[0]?.text);
    const texts = new Set((await Promise.all([2, 3, 4, 5].map(ask))).map((r) => r.choices[0]?.text));
    expect(texts.size).toBeGreaterThan(1);
  });

  it('chat: ChatML from the model dir, logprobs, n choices', async () => {
    const r = await client.chat.completions.create({
      model: NAME,
      messages: [{ role: 'user', content: 'fix the bug' }],
      max_tokens: 10,
      temperature: 0.9,
      seed: 7,
      n: 3,
      logprobs: true,
      top_logprobs: 2,
    });
    expect(r.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    for (const c of r.choices) {
      expect(c.message.role).toBe('assistant');
      expect(typeof c.message.content).toBe('string');
      expect(['stop', 'length']).toContain(c.finish_reason);
      for (const t of c.logprobs?.content ?? []) {
        expect(t.logprob).toBeLessThanOrEqual(0);
        expect(t.top_logprobs.length).toBeLessThanOrEqual(2);
      }
    }
  });

  it('streaming gives the same text as a non-streaming call', async () => {
    const params = {
      model: NAME,
      messages: [{ role: 'user' as const, content: 'please fix test_2' }],
      max_tokens: 20,
      temperature: 0,
    };
    const whole = await client.chat.completions.create(params);
    const stream = await client.chat.completions.create({ ...params, stream: true });
    let text = '';
    let finish: string | null | undefined = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(text).toBe(whole.choices[0]?.message.content);
    expect(finish).toBe(whole.choices[0]?.finish_reason);
  });

  it('a stop string ends the text before it', async () => {
    const base = await client.completions.create({
      model: NAME,
      prompt: 'def fix_1(x):',
      max_tokens: 24,
      temperature: 0,
    });
    const text = base.choices[0]?.text ?? '';
    expect(text.length).toBeGreaterThan(4);
    const stop = text.slice(3, 5);
    const r = await client.completions.create({
      model: NAME,
      prompt: 'def fix_1(x):',
      max_tokens: 24,
      temperature: 0,
      stop,
    });
    expect(r.choices[0]?.text).toBe(text.slice(0, text.indexOf(stop)));
    expect(r.choices[0]?.finish_reason).toBe('stop');
  });

  it('malformed requests get 400s with an OpenAI error body; the server keeps serving', async () => {
    const post = (path: string, body: string) =>
      fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const cases: [string, string, number][] = [
      ['/completions', '{"prompt": ', 400],
      ['/completions', '[1, 2]', 400],
      ['/completions', JSON.stringify({ prompt: 'x', temperature: 'hot' }), 400],
      ['/completions', JSON.stringify({ prompt: 'x', max_tokens: -1 }), 400],
      ['/completions', JSON.stringify({ prompt: [1, 99999] }), 400],
      ['/completions', JSON.stringify({ prompt: 'x'.repeat(20000), max_tokens: 1 }), 400],
      ['/chat/completions', JSON.stringify({ messages: 'hi' }), 400],
      ['/chat/completions', JSON.stringify({ messages: [{ role: 'user' }] }), 400],
      ['/chat/completions', JSON.stringify({ model: 'gpt-4', messages: [{ role: 'user', content: 'x' }] }), 404],
      ['/nope', '{}', 404],
    ];
    for (const [path, body, status] of cases) {
      const r = await post(path, body);
      expect(r.status, `${path} ${body.slice(0, 40)}`).toBe(status);
      const j = (await r.json()) as { error?: { message?: string; type?: string } };
      expect(typeof j.error?.message).toBe('string');
      expect(j.error?.type).toBe('invalid_request_error');
    }
    await expect(client.completions.create({ model: NAME, prompt: 'x', top_p: 5 })).rejects.toMatchObject({
      status: 400,
    });
    const ok = await client.completions.create({ model: NAME, prompt: 'x', max_tokens: 2 });
    expect(ok.choices.length).toBe(1);
  });
});

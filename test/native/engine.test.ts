/**
 * The engine against the model it runs: greedy output is argmax decoding with Model.forward on
 * the growing sequence; every reported logprob is bitwise the trainer's (sftLoss on the dense
 * logits, and the fused LM-head path) at temperature 1; a request's tokens do not depend on what
 * else is in the batch, on sessions, forks, or preemption under a tiny cache.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { Engine, type Generation, type Model, type SamplingParams, sftLoss } from '../../src/index.js';
import {
  ENGINE_TEST_CONFIG as CFG,
  engineTestModel as model,
  randomPrompt as prompt,
} from '../helpers/engine-model.js';

async function greedyReference(m: Model, p: number[], n: number): Promise<number[]> {
  const seq = [...p];
  const V = CFG.vocab_size;
  for (let i = 0; i < n; i++) {
    const logits = await m.forward(seq);
    const row = logits.subarray((seq.length - 1) * V, seq.length * V);
    let best = 0;
    for (let j = 1; j < V; j++) if ((row[j] as number) > (row[best] as number)) best = j;
    seq.push(best);
  }
  return seq.slice(p.length);
}

/** The trainer's logprobs of `generated` after `p`: sftLoss on the dense logits of the whole sequence. */
async function trainerLogprobs(m: Model, p: number[], generated: number[]): Promise<Float32Array> {
  const full = [...p, ...generated];
  const inputs = full.slice(0, -1);
  const logits = await m.forward(inputs);
  const targets = Int32Array.from(full.slice(1));
  const { logprobs } = sftLoss({
    logits,
    vocab: CFG.vocab_size,
    targets,
    mask: new Float32Array(inputs.length).fill(1),
  });
  return logprobs.subarray(p.length - 1);
}

const same = (a: Generation, b: Generation) => {
  expect(Array.from(a.tokens)).toEqual(Array.from(b.tokens));
  expect(Array.from(a.logprobs)).toEqual(Array.from(b.logprobs));
  expect(a.finishReason).toBe(b.finishReason);
};

describe('Engine: exactness', () => {
  it('greedy output equals argmax decoding with Model.forward', async () => {
    const m = model(1);
    const e = new Engine({ model: m, kvBlocks: 64, blockSize: 4 });
    const p = prompt(11, 2);
    const g = await e.generate({ prompt: p, maxTokens: 14, sampling: { temperature: 0 } });
    expect(g.finishReason).toBe('length');
    expect(Array.from(g.tokens)).toEqual(await greedyReference(m, p, 14));
  });

  it('at temperature 1 every logprob is bitwise the trainer path (sftLoss and the fused LM head)', async () => {
    const m = model(3);
    const e = new Engine({ model: m, kvBlocks: 64, blockSize: 4, maxBatchTokens: 5 });
    const p = prompt(13, 4);
    const g = await e.generate({ prompt: p, maxTokens: 20, sampling: { seed: 99 } });
    const ref = await trainerLogprobs(m, p, Array.from(g.tokens));
    g.logprobs.forEach((x, i) => {
      expect(Object.is(x, ref[i]), `token ${i}`).toBe(true);
    });
    const full = [...p, ...g.tokens];
    m.zeroGrad();
    const fused = await m.sftBackward({ tokens: full.slice(0, -1), targets: full.slice(1) }, { chunkTokens: 3 });
    g.logprobs.forEach((x, i) => {
      expect(Object.is(x, fused.logprobs[p.length - 1 + i]), `fused ${i}`).toBe(true);
    });
  });

  it("a request's tokens and logprobs do not depend on the rest of the batch", async () => {
    const m = model(5);
    const reqs: [number[], SamplingParams][] = [
      [prompt(7, 10), { seed: 1 }],
      [prompt(19, 11), { seed: 2, temperature: 0.7 }],
      [prompt(3, 12), { seed: 3, topP: 0.8 }],
      [prompt(25, 13), { seed: 4, topK: 5, temperature: 1.3 }],
      [prompt(9, 14), { temperature: 0 }],
      [prompt(14, 15), { seed: 6, minP: 0.05 }],
    ];
    const alone: Generation[] = [];
    for (const [p, s] of reqs) {
      const e = new Engine({ model: m, kvBlocks: 64, blockSize: 4 });
      alone.push(await e.generate({ prompt: p, maxTokens: 9, sampling: s }));
    }
    const e = new Engine({ model: m, kvBlocks: 128, blockSize: 4, maxBatchTokens: 16 });
    const together = await Promise.all(reqs.map(([p, s]) => e.generate({ prompt: p, maxTokens: 9, sampling: s })));
    together.forEach((g, i) => {
      same(g, alone[i] as Generation);
    });
    const st = e.stats();
    expect(st.running + st.waiting).toBe(0);
    expect(st.decodeTokens).toBe(reqs.length * 8); // every generated token but the last is decoded once
  });

  it('busySeconds counts the wall time of its steps, not the time it idles', async () => {
    const e = new Engine({ model: model(7), kvBlocks: 64, blockSize: 4 });
    expect(e.stats().busySeconds).toBe(0);
    const t0 = performance.now();
    await e.generate({ prompt: prompt(6, 20), maxTokens: 8, sampling: { temperature: 0 } });
    // The request resolves inside the engine's last step; let that step end.
    await new Promise((r) => setTimeout(r, 50));
    const wall = (performance.now() - t0) / 1000;
    const busy = e.stats().busySeconds;
    expect(busy).toBeGreaterThan(0);
    expect(busy).toBeLessThanOrEqual(wall);
    await new Promise((r) => setTimeout(r, 100));
    expect(e.stats().busySeconds).toBe(busy);
  });
});

describe('Engine: stop, length, abort, errors', () => {
  it('stops at a stop token (included), or at maxTokens', async () => {
    const m = model(7);
    const e = new Engine({ model: m, kvBlocks: 64, blockSize: 4 });
    const p = prompt(6, 20);
    const free = await e.generate({ prompt: p, maxTokens: 10, sampling: { temperature: 0 } });
    const stopAt = free.tokens[3] as number;
    const firstIdx = Array.from(free.tokens).indexOf(stopAt);
    const g = await e.generate({ prompt: p, maxTokens: 10, sampling: { temperature: 0 }, stop: [stopAt] });
    expect(g.finishReason).toBe('stop');
    expect(Array.from(g.tokens)).toEqual(Array.from(free.tokens.subarray(0, firstIdx + 1)));
  });

  it('aborts a waiting or running request with the tokens so far', async () => {
    const m = model(8);
    const e = new Engine({ model: m, kvBlocks: 16384, blockSize: 4 }); // room for far more than 30 ms of decoding
    const before = new AbortController();
    before.abort();
    const g0 = await e.generate({ prompt: prompt(5, 1), maxTokens: 50, signal: before.signal });
    expect(g0.finishReason).toBe('abort');
    expect(g0.tokens.length).toBe(0);
    // Aborted while running (from its own token callback, so the test does not depend on timing).
    const c = new AbortController();
    let seen = 0;
    const g = await e.generate({
      prompt: prompt(5, 2),
      maxTokens: 60000,
      signal: c.signal,
      sampling: { seed: 1 },
      onToken: () => {
        if (++seen === 3) c.abort();
        return undefined;
      },
    });
    expect(g.finishReason).toBe('abort');
    expect(g.tokens.length).toBeGreaterThanOrEqual(3);
    expect(g.tokens.length).toBeLessThan(60000);
    // One signal across many requests (an episode's deadline): each request removes its listener.
    const episode = new AbortController();
    for (let i = 0; i < 12; i++) await e.generate({ prompt: prompt(4, 30 + i), maxTokens: 2, signal: episode.signal });
    expect(getEventListeners(episode.signal, 'abort').length).toBe(0);
    expect(g.logprobs.length).toBe(g.tokens.length);
  });

  it('a prompt larger than the whole cache fails at once with PROMPT_TOO_LONG; bad input is INVALID_ARGUMENT', async () => {
    const e = new Engine({ model: model(9), kvBlocks: 8, blockSize: 4 });
    await expect(e.generate({ prompt: prompt(40, 1), maxTokens: 1 })).rejects.toMatchObject({
      code: 'PROMPT_TOO_LONG',
    });
    expect(() => e.generate({ prompt: [1, 61], maxTokens: 1 })).toThrow(/token id/);
    expect(() => e.generate({ prompt: [1], maxTokens: 0 })).toThrow(/maxTokens/);
    expect(() => e.generate({ prompt: [], maxTokens: 1 })).toThrow(/at least 1/);
    const g = await e.generate({ prompt: prompt(5, 3), maxTokens: 3, sampling: { temperature: 0 } });
    expect(g.tokens.length).toBe(3); // still usable
  });
});

describe('Engine: sessions, forks, preemption, weight updates', () => {
  it('a session prefills only what each turn appends, and equals stateless generation over the history', async () => {
    const m = model(11);
    const e = new Engine({ model: m, kvBlocks: 128, blockSize: 4 });
    const s = e.openSession();
    const turns = [prompt(12, 1), prompt(7, 2), prompt(9, 3)];
    const history: number[] = [];
    for (const [i, obs] of turns.entries()) {
      const before = e.stats().prefillTokens;
      const g = await s.generate({ append: obs, maxTokens: 6, sampling: { seed: 42 } });
      const computed = e.stats().prefillTokens - before;
      // This turn's observation plus the previous turn's last sampled token (never computed yet).
      expect(computed).toBe(obs.length + (i === 0 ? 0 : 1));
      const fresh = new Engine({ model: m, kvBlocks: 128, blockSize: 4 });
      const stateless = await fresh.generate({ prompt: [...history, ...obs], maxTokens: 6, sampling: { seed: 42 } });
      same(g, stateless);
      history.push(...obs, ...g.tokens);
    }
    expect(Array.from(s.tokens)).toEqual(history);
    s.close();
  });

  it('forks share the prompt and give each seed its own continuation', async () => {
    const m = model(12);
    const e = new Engine({ model: m, kvBlocks: 128, blockSize: 4 });
    const root = e.openSession();
    await root.generate({ append: prompt(16, 5), maxTokens: 1, sampling: { temperature: 0 } });
    const forks = [0, 1, 2, 3].map(() => root.fork());
    const out = await Promise.all(
      forks.map((f, i) => f.generate({ append: [], maxTokens: 8, sampling: { seed: 100 + i } })),
    );
    for (const [i, g] of out.entries()) {
      const fresh = new Engine({ model: m, kvBlocks: 128, blockSize: 4 });
      same(g, await fresh.generate({ prompt: Array.from(root.tokens), maxTokens: 8, sampling: { seed: 100 + i } }));
    }
    expect(new Set(out.map((g) => g.tokens.join(','))).size).toBeGreaterThan(1);
  });

  it('maxTokens 0 prefills a session without generating; forks then continue exactly', async () => {
    const m = model(14);
    const e = new Engine({ model: m, kvBlocks: 128, blockSize: 4 });
    const root = e.openSession();
    const p = prompt(18, 9);
    const g0 = await root.generate({ append: p.slice(0, -1), maxTokens: 0 });
    expect(g0.tokens.length).toBe(0);
    expect(g0.finishReason).toBe('length');
    expect(e.stats().prefillTokens).toBe(p.length - 1);
    expect((await root.generate({ append: [], maxTokens: 0 })).tokens.length).toBe(0); // nothing pending
    expect(() => e.generate({ prompt: p, maxTokens: 0 })).toThrow(/maxTokens/); // stateless calls must generate
    const forks = [0, 1].map(() => root.fork());
    const out = await Promise.all(
      forks.map((f, i) => f.generate({ append: p.slice(-1), maxTokens: 6, sampling: { seed: 7 + i } })),
    );
    expect(e.stats().prefillTokens).toBe(p.length + 1); // the prompt once, then each fork's last token
    for (const [i, g] of out.entries()) {
      const fresh = new Engine({ model: m, kvBlocks: 128, blockSize: 4 });
      same(g, await fresh.generate({ prompt: p, maxTokens: 6, sampling: { seed: 7 + i } }));
    }
  });

  it('preemption under a tiny cache loses nothing: the same outputs as with room to spare', async () => {
    const m = model(13);
    const reqs = [0, 1, 2, 3, 4].map((i) => ({ prompt: prompt(6 + i, 30 + i), maxTokens: 14, sampling: { seed: i } }));
    const roomy = new Engine({ model: m, kvBlocks: 256, blockSize: 4 });
    const want = await Promise.all(reqs.map((r) => roomy.generate(r)));
    const tight = new Engine({ model: m, kvBlocks: 12, blockSize: 4, maxBatchTokens: 8 });
    const got = await Promise.all(reqs.map((r) => tight.generate(r)));
    got.forEach((g, i) => {
      same(g, want[i] as Generation);
    });
    expect(tight.stats().preemptions).toBeGreaterThan(0);
  });

  it('idle sessions give their blocks back under pressure and resume exactly', async () => {
    const m = model(14);
    const e = new Engine({ model: m, kvBlocks: 10, blockSize: 4 });
    const a = e.openSession();
    const b = e.openSession();
    const ga = await a.generate({ append: prompt(20, 1), maxTokens: 3, sampling: { seed: 1 } });
    const gb = await b.generate({ append: prompt(18, 2), maxTokens: 3, sampling: { seed: 2 } }); // needs a's blocks
    expect(ga.tokens.length + gb.tokens.length).toBe(6);
    const next = await a.generate({ append: [5, 6], maxTokens: 4, sampling: { seed: 3 } });
    const fresh = new Engine({ model: m, kvBlocks: 64, blockSize: 4 });
    same(
      next,
      await fresh.generate({ prompt: Array.from(a.tokens).slice(0, -4), maxTokens: 4, sampling: { seed: 3 } }),
    );
  });

  it('idle sessions keep their blocks up to the watermark; beyond it the oldest give them back and resume by prefix hits', async () => {
    const m = model(16);
    const e = new Engine({ model: m, kvBlocks: 40, blockSize: 4, idleWatermark: 0.4 }); // 16 blocks for idle sessions
    const sessions = [0, 1, 2].map(() => e.openSession());
    for (const [i, s] of sessions.entries())
      await s.generate({ append: prompt(22, 40 + i), maxTokens: 2, sampling: { seed: i } });
    // Each idle session holds 6 blocks: three exceed 16, so the first was released.
    const before = e.stats().prefillTokens;
    const g = await sessions[0]?.generate({ append: [7], maxTokens: 2, sampling: { seed: 9 } });
    expect(g?.cachedTokens).toBe(20); // its 5 full blocks came back from the prefix cache
    expect(e.stats().prefillTokens - before).toBe((sessions[0]?.tokens.length ?? 0) - 2 - 20);
    const fresh = new Engine({ model: m, kvBlocks: 64, blockSize: 4 });
    same(
      g as Generation,
      await fresh.generate({
        prompt: Array.from(sessions[0]?.tokens ?? []).slice(0, -2),
        maxTokens: 2,
        sampling: { seed: 9 },
      }),
    );
  });

  it('a weight update bumps the KV version: no stale prefix hits', async () => {
    const m = model(15);
    const e = new Engine({ model: m, kvBlocks: 64, blockSize: 4 });
    const p = prompt(12, 3);
    await e.generate({ prompt: p, maxTokens: 2, sampling: { temperature: 0 } });
    const hit = await e.generate({ prompt: p, maxTokens: 2, sampling: { temperature: 0 } });
    expect(hit.cachedTokens).toBeGreaterThan(0);
    const w = m.getParameter('model.norm.weight');
    m.setParameter(
      'model.norm.weight',
      w.map((x) => x * 1.5),
    );
    const after = await e.generate({ prompt: p, maxTokens: 4, sampling: { temperature: 0 } });
    expect(after.cachedTokens).toBe(0);
    expect(Array.from(after.tokens)).toEqual(await greedyReference(m, p, 4));
  });
});

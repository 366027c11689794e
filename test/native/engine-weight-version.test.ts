/**
 * The engine after a weight change (issue 27): a session's KV, and the prefix cache's blocks,
 * computed under the old weights are never reused. After a real optimizer step the next turn's
 * logprobs are bitwise the trainer's under the new weights (its fused LM-head path) and a fresh
 * session's, for plain sessions, forks of a stale prompt, a request running across the change,
 * and stateless requests that could otherwise hit blocks a stale session filled.
 */
import { describe, expect, it } from 'vitest';
import { AdamW, Engine, type Generation, type Model, Trainer } from '../../src/index.js';
import { engineTestModel as model, randomPrompt as prompt } from '../helpers/engine-model.js';

/** One real SFT optimizer step on `tokens` (every target trained), large enough to move every logprob. */
async function trainStep(m: Model, tokens: number[]): Promise<void> {
  const trainer = new Trainer(m, { optimizer: new AdamW(m, { lr: 0.05, weightDecay: 0 }) });
  const before = m.weightVersion;
  await trainer.sftStep([{ tokens: Int32Array.from(tokens), lossMask: new Float32Array(tokens.length).fill(1) }]);
  expect(m.weightVersion).not.toBe(before);
}

/**
 * The trainer's logprobs of the last `n` tokens of `history` under the model's weights now:
 * sftBackward's fused LM-head path over the whole sequence, as Trainer steps compute them.
 */
async function trainerLogprobs(m: Model, history: number[], n: number): Promise<number[]> {
  const { logprobs } = await m.sftBackward({ tokens: history.slice(0, -1), targets: history.slice(1) });
  m.zeroGrad();
  return Array.from(logprobs.subarray(logprobs.length - n));
}

const same = (a: Generation, b: Generation) => {
  expect(Array.from(a.tokens)).toEqual(Array.from(b.tokens));
  expect(Array.from(a.logprobs)).toEqual(Array.from(b.logprobs));
  expect(a.finishReason).toBe(b.finishReason);
};

describe('Engine after a weight change: no KV from older weights is reused', () => {
  it("a session's next turn after an optimizer step equals the trainer's and a fresh session's logprobs", async () => {
    const m = model(21);
    const e = new Engine({ model: m, kvBlocks: 128, blockSize: 4 });
    const s = e.openSession();
    const g1 = await s.generate({ append: prompt(14, 1), maxTokens: 6, sampling: { seed: 5 } });
    expect(g1.tokens.length).toBe(6);
    await trainStep(m, Array.from(s.tokens));
    const obs = prompt(5, 2);
    const g2 = await s.generate({ append: obs, maxTokens: 6, sampling: { seed: 6 } });
    const history = Array.from(s.tokens);
    expect(Array.from(g2.logprobs)).toEqual(await trainerLogprobs(m, history, g2.tokens.length));
    const fresh = new Engine({ model: m, kvBlocks: 128, blockSize: 4 });
    same(g2, await fresh.openSession().generate({ append: history.slice(0, -6), maxTokens: 6, sampling: { seed: 6 } }));
    // The whole history was recomputed: nothing came from the session's old KV.
    expect(g2.cachedTokens).toBe(0);
    s.close();
  });

  it('forks of a prompt prefilled under the old weights recompute it under the new ones', async () => {
    const m = model(22);
    const e = new Engine({ model: m, kvBlocks: 128, blockSize: 4 });
    const root = e.openSession();
    const p = prompt(17, 3);
    await root.generate({ append: p, maxTokens: 0 });
    await trainStep(m, p);
    const forks = [0, 1, 2].map(() => root.fork());
    const out = await Promise.all(
      forks.map((f, i) => f.generate({ append: [], maxTokens: 5, sampling: { seed: 30 + i } })),
    );
    for (const [i, g] of out.entries()) {
      expect(Array.from(g.logprobs)).toEqual(await trainerLogprobs(m, [...p, ...g.tokens], g.tokens.length));
      const fresh = new Engine({ model: m, kvBlocks: 128, blockSize: 4 });
      same(g, await fresh.generate({ prompt: p, maxTokens: 5, sampling: { seed: 30 + i } }));
    }
  });

  it('after a stale session recomputes, its new-version blocks are prefix hits for others, and exact', async () => {
    const m = model(23);
    const e = new Engine({ model: m, kvBlocks: 128, blockSize: 4 });
    const s = e.openSession();
    await s.generate({ append: prompt(10, 4), maxTokens: 3, sampling: { seed: 1 } });
    await trainStep(m, Array.from(s.tokens));
    // The session continues: it recomputes its history, committing blocks under the new version.
    await s.generate({ append: prompt(9, 5), maxTokens: 2, sampling: { seed: 2 } });
    const history = Array.from(s.tokens);
    const g = await e.generate({ prompt: history, maxTokens: 4, sampling: { seed: 3 } });
    expect(g.cachedTokens).toBe(4 * Math.floor((history.length - 1) / 4)); // KV computed under the new weights only
    expect(Array.from(g.logprobs)).toEqual(await trainerLogprobs(m, [...history, ...g.tokens], 4));
    const fresh = new Engine({ model: m, kvBlocks: 128, blockSize: 4 });
    same(g, await fresh.generate({ prompt: history, maxTokens: 4, sampling: { seed: 3 } }));
  });

  it('a request running across a weight change recomputes its KV; the tokens after it follow the new weights', async () => {
    const m = model(24);
    const e = new Engine({ model: m, kvBlocks: 128, blockSize: 4 });
    const p = prompt(11, 6);
    const tokens: number[] = [];
    let changed = false;
    // A first-layer weight: it changes every position's KV (the final norm would change only logits).
    const name = 'model.layers.0.input_layernorm.weight';
    const w = m.getParameter(name);
    const g = await e.generate({
      prompt: p,
      maxTokens: 8,
      sampling: { seed: 9 },
      onToken: (t) => {
        tokens.push(t.token);
        // Between two engine steps, as a trainer updating weights during a rollout would.
        if (tokens.length === 3 && !changed) {
          changed = true;
          m.setParameter(
            name,
            w.map((x) => x * 1.5),
          );
        }
        return undefined;
      },
    });
    expect(g.tokens.length).toBe(8);
    // Tokens 4..8 were drawn after the change: their logprobs are the new weights' on the full history.
    const after = Array.from(g.logprobs).slice(3);
    expect(after).toEqual(await trainerLogprobs(m, [...p, ...g.tokens], 5));
  });

  it('the weight version changes with every kind of weight update', async () => {
    const m = model(25);
    const v0 = m.weightVersion;
    m.setParameter('model.norm.weight', m.getParameter('model.norm.weight'));
    const v1 = m.weightVersion;
    expect(v1).not.toBe(v0);
    await trainStep(m, prompt(8, 7));
    expect(m.weightVersion).not.toBe(v1);
    const v2 = m.weightVersion;
    m.getParameter('model.norm.weight'); // reads change nothing
    await m.forward(prompt(4, 8));
    expect(m.weightVersion).toBe(v2);
  });
});

/**
 * The rollout temperature and sampling filters in RL: the trainer's logprobs are temperature 1
 * (the native fused LM-head loss has no logit scale), so a policy step at another rollout
 * temperature is refused instead of training on biased ratios, while temperature 1 given
 * explicitly trains bitwise as the default; the pipeline config refuses top-p / top-k / min-p
 * (no TIS in its loss) and temperature ≠ 1 with INVALID_CONFIG. The removed
 * `Trainer.microBatchTokens` is refused, not silently ignored.
 */
import { describe, expect, it } from 'vitest';
import { AdamW, dapoLossConfig, Model, resolveConfig, sequenceLogprobs, Trainer } from '../../src/index.js';

function model(): Model {
  return Model.random(
    {
      architectures: ['Qwen2ForCausalLM'],
      vocab_size: 64,
      hidden_size: 32,
      intermediate_size: 64,
      num_hidden_layers: 1,
      num_attention_heads: 2,
      num_key_value_heads: 1,
      head_dim: 16,
      tie_word_embeddings: true,
    },
    7,
  );
}

async function sample(m: Model) {
  const tokens = Int32Array.from([1, 5, 9, 13, 17, 21]);
  const oldLogprobs = await sequenceLogprobs(m, tokens);
  return { tokens, lossMask: Float32Array.from([0, 0, 1, 1, 1, 1]), advantage: 0.5, oldLogprobs };
}

describe('Trainer.policyStep temperature', () => {
  it('refuses a rollout temperature other than 1 (step option or per sample), changing nothing', async () => {
    const m = model();
    const s = await sample(m);
    const trainer = new Trainer(m, { optimizer: new AdamW(m, { lr: 1e-2 }) });
    const before = m.weightVersion;
    await expect(trainer.policyStep([s], {}, { temperature: 0.7 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/temperature/),
    });
    await expect(trainer.policyStep([{ ...s, temperature: 1.3 }])).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/samples\[0\]\.temperature/),
    });
    await expect(trainer.policyStep([s], {}, { temperature: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(m.weightVersion).toBe(before);
  });

  it('temperature 1 given explicitly trains bitwise as the default', async () => {
    const run = async (o?: { temperature: number }, perSample?: number) => {
      const m = model();
      const s = await sample(m);
      const t = new Trainer(m, { optimizer: new AdamW(m, { lr: 1e-2 }) });
      const st = await t.policyStep([perSample === undefined ? s : { ...s, temperature: perSample }], {}, o);
      return { loss: st.loss, logprobs: st.logprobs[0], w: m.getParameter('model.norm.weight') };
    };
    const base = await run();
    for (const r of [await run({ temperature: 1 }), await run(undefined, 1)]) {
      expect(r.loss).toBe(base.loss);
      expect(Buffer.from(r.logprobs?.buffer as ArrayBuffer)).toEqual(Buffer.from(base.logprobs?.buffer as ArrayBuffer));
      expect(Buffer.from(r.w.buffer)).toEqual(Buffer.from(base.w.buffer));
    }
  });

  it('refuses the removed microBatchTokens option', () => {
    const m = model();
    expect(() => new Trainer(m, { optimizer: new AdamW(m), microBatchTokens: 4096 } as never)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/microBatchTokens/) }),
    );
  });
});

describe('pipeline config: RL sampling', () => {
  it.each([
    ['topP', 0.9],
    ['topK', 20],
    ['minP', 0.05],
    ['temperature', 0.8],
  ])('refuses dapo.%s = %s with INVALID_CONFIG (no TIS in the pipeline loss)', (field, value) => {
    expect(() => resolveConfig({ dapo: { [field]: value } })).toThrow(
      expect.objectContaining({ code: 'INVALID_CONFIG', message: expect.stringMatching(`dapo.${field}`) }),
    );
  });

  it('keeps the default run: temperature 1, no filters, no TIS', () => {
    const c = resolveConfig({});
    expect(c.dapo).toMatchObject({ temperature: 1, topP: 1, topK: 0, minP: 0, filterOverlong: false });
    const stage = c.dapo.stages[0];
    if (stage) expect(dapoLossConfig(c, stage).tisCap ?? 0).toBe(0);
  });
});

/**
 * The rollout temperature in RL: the trainer trains on softmax(logits / T) as verl's actor does,
 * so its per-token logprobs (before the update) are bitwise the engine's recorded logprobs of a
 * rollout at temperature T, and the scale is really applied (the temperature-1 logprobs differ);
 * temperature 1 given explicitly trains bitwise as the default; invalid temperatures are refused
 * with INVALID_ARGUMENT, changing nothing. The removed `Trainer.microBatchTokens` is refused, not
 * silently ignored. The pipeline config refuses top-p / top-k / min-p (no TIS in its loss) with
 * INVALID_CONFIG and accepts any temperature, which dapoIteration passes to the trainer.
 */
import { describe, expect, it } from 'vitest';
import {
  AdamW,
  dapoLossConfig,
  Engine,
  Model,
  type PolicySample,
  resolveConfig,
  sequenceLogprobs,
  Trainer,
} from '../../src/index.js';
import { rlFilterWarnings } from '../../src/pipeline/config.js';
import { engineTestModel, randomPrompt } from '../helpers/engine-model.js';

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

const bytes = (a: Float32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

/**
 * A rollout of the engine at temperature `T` (no filters) from a fresh engine test model, as a
 * policy sample: the generated tokens trained, their recorded logprobs as oldLogprobs.
 */
async function rollout(seed: number, T: number) {
  const m = engineTestModel(seed);
  const engine = new Engine({ model: m, kvBlocks: 128, blockSize: 4 });
  const prompt = randomPrompt(9, seed + 1);
  const g = await engine.generate({ prompt, maxTokens: 12, sampling: { temperature: T, seed: seed + 2 } });
  expect(g.tokens.length).toBeGreaterThan(3);
  const n = prompt.length + g.tokens.length;
  const tokens = Int32Array.from([...prompt, ...g.tokens]);
  const lossMask = new Float32Array(n).fill(1, prompt.length);
  const oldLogprobs = new Float32Array(n);
  oldLogprobs.set(g.logprobs, prompt.length);
  const s: PolicySample = { tokens, lossMask, advantage: 0.7, oldLogprobs };
  // The trainer's logprob of token i is entry i − 1 of StepMetrics.logprobs.
  const generated = (lp: Float32Array) => lp.subarray(prompt.length - 1);
  return { m, s, engineLogprobs: g.logprobs, generated };
}

describe('Trainer.policyStep at the rollout temperature', () => {
  for (const T of [0.7, 1.5]) {
    it(`its logprobs equal the engine's at temperature ${T}, bit for bit (step option and per sample)`, async () => {
      for (const perSample of [false, true]) {
        const { m, s, engineLogprobs, generated } = await rollout(31, T);
        // The trainer's temperature-1 logprobs differ: the scale is what makes them equal.
        const t1 = await sequenceLogprobs(m, s.tokens);
        expect(bytes(t1.subarray(9))).not.toEqual(bytes(engineLogprobs));
        // The reference helper at T gives the same bits.
        expect(bytes((await sequenceLogprobs(m, s.tokens, { temperature: T })).subarray(9))).toEqual(
          bytes(engineLogprobs),
        );
        const trainer = new Trainer(m, { optimizer: new AdamW(m, { lr: 1e-2 }) });
        const before = m.weightVersion;
        const st = perSample
          ? await trainer.policyStep([{ ...s, temperature: T }])
          : await trainer.policyStep([s], {}, { temperature: T });
        expect(bytes(generated(st.logprobs[0] as Float32Array))).toEqual(bytes(engineLogprobs));
        // Ratios are exactly 1 (the step starts from the rollout's weights), and the step trained.
        expect(st.ratioDeviation).toBe(0);
        expect(st.clipFracLow).toBe(0);
        expect(st.clipFracHigh).toBe(0);
        expect(m.weightVersion).not.toBe(before);
      }
    });
  }

  it('trains samples of different temperatures in one step, each at its own', async () => {
    const a = await rollout(41, 0.7);
    const b = await rollout(41, 1.5);
    // Same model seed: b's sample scored under a's (still untrained) model equals b's engine logprobs.
    const trainer = new Trainer(a.m, { optimizer: new AdamW(a.m, { lr: 1e-2 }) });
    const st = await trainer.policyStep([
      { ...a.s, temperature: 0.7 },
      { ...b.s, temperature: 1.5 },
    ]);
    expect(bytes(a.generated(st.logprobs[0] as Float32Array))).toEqual(bytes(a.engineLogprobs));
    expect(bytes(b.generated(st.logprobs[1] as Float32Array))).toEqual(bytes(b.engineLogprobs));
    expect(st.ratioDeviation).toBe(0);
  });

  it('temperature 1 given explicitly trains bitwise as the default', async () => {
    const run = async (o?: { temperature: number }, perSample?: number, cfgT?: number) => {
      const m = model();
      const s = await sample(m);
      const t = new Trainer(m, { optimizer: new AdamW(m, { lr: 1e-2 }) });
      const st = await t.policyStep(
        [perSample === undefined ? s : { ...s, temperature: perSample }],
        cfgT === undefined ? {} : { temperature: cfgT },
        o,
      );
      return { loss: st.loss, logprobs: st.logprobs[0], w: m.getParameter('model.norm.weight') };
    };
    const base = await run();
    for (const r of [await run({ temperature: 1 }), await run(undefined, 1), await run(undefined, undefined, 1)]) {
      expect(r.loss).toBe(base.loss);
      expect(Buffer.from(r.logprobs?.buffer as ArrayBuffer)).toEqual(Buffer.from(base.logprobs?.buffer as ArrayBuffer));
      expect(Buffer.from(r.w.buffer)).toEqual(Buffer.from(base.w.buffer));
    }
  });

  it('the scaled step differs from the temperature-1 step on the same sample', async () => {
    const run = async (T: number) => {
      const m = model();
      const s = await sample(m);
      const st = await new Trainer(m, { optimizer: new AdamW(m, { lr: 1e-2 }) }).policyStep(
        [s],
        {},
        { temperature: T },
      );
      return { st, w: m.getParameter('model.norm.weight') };
    };
    const one = await run(1);
    const hot = await run(1.5);
    expect(bytes(hot.st.logprobs[0] as Float32Array)).not.toEqual(bytes(one.st.logprobs[0] as Float32Array));
    expect(hot.st.entropy as number).toBeGreaterThan(one.st.entropy as number); // flatter at T > 1
    expect(bytes(hot.w)).not.toEqual(bytes(one.w));
  });

  it('refuses invalid temperatures (step option, per sample, loss config) with INVALID_ARGUMENT, changing nothing', async () => {
    const m = model();
    const s = await sample(m);
    const trainer = new Trainer(m, { optimizer: new AdamW(m, { lr: 1e-2 }) });
    const before = m.weightVersion;
    const w = bytes(m.getParameter('model.norm.weight'));
    for (const bad of [0, -0.5, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1e-6]) {
      await expect(trainer.policyStep([s], {}, { temperature: bad })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
        message: expect.stringMatching(/temperature/),
      });
      await expect(trainer.policyStep([s, { ...s, temperature: bad }])).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
        message: expect.stringMatching(/samples\[1\]\.temperature/),
      });
      await expect(trainer.policyStep([s], { temperature: bad })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      if (bad !== 1e-6)
        await expect(sequenceLogprobs(m, s.tokens, { temperature: bad })).rejects.toMatchObject({
          code: 'INVALID_ARGUMENT',
        });
    }
    await expect(trainer.policyStep([{ ...s, temperature: '0.7' as never }])).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    // Two different step temperatures (option and loss config) are ambiguous.
    await expect(trainer.policyStep([s], { temperature: 0.7 }, { temperature: 1.5 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    expect(m.weightVersion).toBe(before);
    expect(bytes(m.getParameter('model.norm.weight'))).toEqual(w);
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
  ])('refuses dapo.%s = %s with INVALID_CONFIG (no TIS in the pipeline loss)', (field, value) => {
    expect(() => resolveConfig({ dapo: { [field]: value } })).toThrow(
      expect.objectContaining({ code: 'INVALID_CONFIG', message: expect.stringMatching(`dapo.${field}`) }),
    );
  });

  it('accepts a rollout temperature other than 1 (the trainer scales by it), with no warning', () => {
    const c = resolveConfig({ dapo: { temperature: 0.8 } });
    expect(c.dapo.temperature).toBe(0.8);
    expect(rlFilterWarnings(c)).toEqual([]);
    expect(() => resolveConfig({ dapo: { temperature: 0 } })).toThrow(/dapo\.temperature/);
  });

  it('keeps the default run: temperature 1, no filters, no TIS', () => {
    const c = resolveConfig({});
    expect(c.dapo).toMatchObject({ temperature: 1, topP: 1, topK: 0, minP: 0, filterOverlong: false });
    const stage = c.dapo.stages[0];
    if (stage) expect(dapoLossConfig(c, stage).tisCap ?? 0).toBe(0);
  });
});

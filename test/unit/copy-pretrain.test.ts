/**
 * Copy pretraining (the embedded model's stand-in for pretraining): it trains on synthetic
 * repeated spans of merged tokens only, logs, and is reproducible by seed. Whether copying
 * (induction) emerges takes hundreds of steps of a wider model (DESIGN/notes), beyond a unit test;
 * here the loss must fall from log(vocab) to the span alphabet's entropy, which shows the targets
 * are the repeated spans' tokens.
 */
import { describe, expect, it } from 'vitest';
import { EMBEDDED_MODEL_CONFIG, Model, Tokenizer } from '../../src/index.js';
import { copyPretrain, type Policy } from '../../src/pipeline/stages.js';

describe('copyPretrain', () => {
  it('trains on the repeated spans of merged tokens (loss to the alphabet entropy), logs, and repeats by seed', async () => {
    // A tokenizer with few merged tokens keeps the task small enough to learn in a test.
    const letters = 'abcdefghijklmnopqrstuvwxyz';
    const words = Array.from(
      { length: 400 },
      (_, i) => `${letters[i % 26]}${letters[(i * 7) % 26]}${letters[(i * 3) % 26]}`,
    );
    const tokenizer = Tokenizer.train([words.join(' ')], { vocabSize: 320 });
    const vocab = tokenizer.vocabSize;
    const model = Model.random(
      {
        ...EMBEDDED_MODEL_CONFIG,
        vocab_size: vocab,
        hidden_size: 64,
        intermediate_size: 128,
        num_hidden_layers: 2,
        num_attention_heads: 2,
        num_key_value_heads: 1,
        head_dim: 32,
      },
      3,
    );
    const events: Record<string, unknown>[] = [];
    const steps = await copyPretrain(
      { model, tokenizer } as unknown as Policy,
      { steps: 150, batchSize: 16, lr: 1e-2, seed: 5 },
      { log: (e) => events.push(e) },
    );
    expect(steps.length).toBe(150);
    const merged = vocab - 3 - 256; // the tokens spans are drawn from
    const first = steps[0]?.loss as number;
    const last = steps.slice(-10).reduce((a, m) => a + m.loss, 0) / 10;
    expect(first).toBeGreaterThan(Math.log(vocab) - 0.5); // untrained: about uniform over the vocabulary
    expect(last).toBeLessThan(Math.log(merged) + 0.1); // at most the span alphabet's entropy
    expect(last).toBeLessThan(first - 1);
    expect(events.filter((e) => e.stage === 'copy').length).toBe(15);
    // Reproducible by seed: the same data and updates give the same losses.
    const short = async () =>
      (
        await copyPretrain(
          { model: Model.random({ ...model.config }, 3), tokenizer } as unknown as Policy,
          { steps: 5, batchSize: 16, lr: 1e-2, seed: 5 },
          { log: () => {} },
        )
      ).map((m) => m.loss);
    expect(await short()).toEqual(await short());
  }, 120_000);
});

/**
 * The engine tests' model: a small Qwen2 with O(1) random weights, so that sampling is neither
 * flat nor one-hot, and random prompts over its vocabulary.
 */
import { Model } from '../../src/index.js';
import { normal, rng } from './random.js';

/** The model's Hugging Face config (vocabulary 61, 2 layers, GQA 4:2). */
export const ENGINE_TEST_CONFIG = {
  architectures: ['Qwen2ForCausalLM'],
  vocab_size: 61,
  hidden_size: 32,
  intermediate_size: 48,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
};

/** A model with O(1) random weights from `seed`, so sampling is neither flat nor one-hot. */
export function engineTestModel(seed: number): Model {
  const m = Model.random(ENGINE_TEST_CONFIG, seed);
  const r = rng(seed + 7);
  for (const { name, shape } of m.parameters()) {
    const n = shape.reduce((a, d) => a * d, 1);
    const fanIn = shape[1] ?? 1;
    m.setParameter(
      name,
      Float32Array.from({ length: n }, () => {
        const z = normal(r);
        if (name.endsWith('norm.weight')) return 1 + 0.2 * z;
        if (name.endsWith('.bias')) return 0.2 * z;
        return name === 'model.embed_tokens.weight' ? z : (1.3 * z) / Math.sqrt(fanIn);
      }),
    );
  }
  return m;
}

/** `n` random token ids of the model's vocabulary, from `seed`. */
export function randomPrompt(n: number, seed: number): number[] {
  const r = rng(seed);
  return Array.from({ length: n }, () => Math.floor(r() * ENGINE_TEST_CONFIG.vocab_size));
}

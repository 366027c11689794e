/**
 * Model shapes swerl ships: the embedded default that `node train.js` trains from scratch, and
 * Qwen2.5-0.5B-Instruct's shape (for benchmarks and tests with random weights).
 */
import type { HfModelConfig } from './config.js';

/** The embedded model: a small Qwen2 for the mini-SWE tasks (about 7.5 M parameters). */
export const EMBEDDED_MODEL_CONFIG: HfModelConfig = {
  architectures: ['Qwen2ForCausalLM'],
  model_type: 'qwen2',
  vocab_size: 4096,
  hidden_size: 256,
  intermediate_size: 768,
  num_hidden_layers: 6,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 64,
  rms_norm_eps: 1e-6,
  rope_theta: 1_000_000,
  max_position_embeddings: 32768,
  tie_word_embeddings: true,
  hidden_act: 'silu',
  initializer_range: 0.02,
};

/** Qwen2.5-0.5B-Instruct's config.json fields (its shape; weights are not shipped). */
export const QWEN2_5_0_5B_CONFIG: HfModelConfig = {
  architectures: ['Qwen2ForCausalLM'],
  model_type: 'qwen2',
  vocab_size: 151936,
  hidden_size: 896,
  intermediate_size: 4864,
  num_hidden_layers: 24,
  num_attention_heads: 14,
  num_key_value_heads: 2,
  rms_norm_eps: 1e-6,
  rope_theta: 1_000_000,
  max_position_embeddings: 32768,
  tie_word_embeddings: true,
  hidden_act: 'silu',
  initializer_range: 0.02,
};

/** The embedded model's shape: the Qwen2 layout of EMBEDDED_MODEL_CONFIG in a config's size. */
import type { HfModelConfig } from '../model/config.js';
import { EMBEDDED_MODEL_CONFIG } from '../model/presets.js';
import type { PipelineConfig } from '../pipeline/config.js';

/** The embedded model's Hugging Face config: the preset's Qwen2 layout in the config's shape. */
export function embeddedModelConfig(c: PipelineConfig, vocabSize: number): HfModelConfig {
  const m = c.embeddedModel;
  return {
    ...EMBEDDED_MODEL_CONFIG,
    vocab_size: vocabSize,
    hidden_size: m.hiddenSize,
    intermediate_size: m.intermediateSize,
    num_hidden_layers: m.layers,
    num_attention_heads: m.heads,
    num_key_value_heads: m.kvHeads,
    head_dim: m.hiddenSize / m.heads,
  };
}

/**
 * A tiny random policy for tests that run episodes through the scaffold: a tokenizer trained on
 * the system prompt and a command, a 1-layer Qwen2 over it, and an engine. It writes noise, so it
 * resolves nothing; it is there to drive real rollouts cheaply.
 */
import { Engine, Model, SYSTEM_PROMPT, Tokenizer } from '../../src/index.js';

const DEFAULT_CORPUS = [
  SYSTEM_PROMPT,
  'DISCUSSION\nLet me run the tests.\n\n```command\nnode --test\n```',
  'ls -la src',
];

/** Options of {@link tinyPolicy}; the defaults are what most rollout tests use. */
export interface TinyPolicyOptions {
  /** The tokenizer's training texts (default: the system prompt, a command, and their upper case). */
  corpus?: string[];
  vocabSize?: number;
  kvBlocks?: number;
}

/** The tokenizer, the model (weights from seed 5) and an engine over it. */
export function tinyPolicy(o: TinyPolicyOptions = {}): { tokenizer: Tokenizer; model: Model; engine: Engine } {
  const corpus = o.corpus ?? DEFAULT_CORPUS.concat(DEFAULT_CORPUS.map((c) => c.toUpperCase()));
  const tokenizer = Tokenizer.train(corpus, { vocabSize: o.vocabSize ?? 400 });
  const model = Model.random(
    {
      architectures: ['Qwen2ForCausalLM'],
      vocab_size: tokenizer.vocabSize,
      hidden_size: 32,
      intermediate_size: 64,
      num_hidden_layers: 1,
      num_attention_heads: 2,
      num_key_value_heads: 1,
      head_dim: 16,
      tie_word_embeddings: true,
    },
    5,
  );
  return { tokenizer, model, engine: new Engine({ model, kvBlocks: o.kvBlocks ?? 2048, blockSize: 16 }) };
}

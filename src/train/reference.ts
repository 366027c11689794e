/**
 * Reference-policy logprobs for the KL penalty (verl's ref model): a frozen copy of the policy,
 * taken where RL starts, scores each rollout token. Only logprobs are needed, so this runs the
 * dense forward and the native log-softmax in place over its logits (no backward, no gradients).
 */
import { invalidArgument } from '../errors.js';
import type { Model } from '../model/model.js';
import { sftLoss } from './losses.js';

/**
 * Per token of `tokens` [T]: log p(tokens[t] | tokens[<t]) under `model`; entry 0 is 0 (nothing
 * predicts the first token). The layout of {@link PolicySample.refLogprobs}. Memory: one
 * [T, vocab] float32 logits buffer.
 */
export async function sequenceLogprobs(model: Model, tokens: Int32Array): Promise<Float32Array> {
  if (!(tokens instanceof Int32Array) || tokens.length < 2)
    throw invalidArgument('tokens', 'an Int32Array of 2+ tokens', tokens?.length);
  const T = tokens.length;
  const logits = await model.forward(tokens.subarray(0, T - 1));
  const r = sftLoss(
    { logits, vocab: model.config.vocab_size, targets: tokens.subarray(1), mask: new Float32Array(T - 1).fill(1) },
    { gradLogits: logits },
  );
  const out = new Float32Array(T);
  out.set(r.logprobs, 1);
  return out;
}

/**
 * Reference-policy logprobs for the KL penalty (verl's ref model): a frozen copy of the policy,
 * taken where RL starts, scores each rollout token. Only logprobs are needed, so this runs the
 * dense forward and the native log-softmax in place over its logits (no backward, no gradients).
 */
import { invalidArgument } from '../errors.js';
import type { Model } from '../model/model.js';
import { invTemperature, sftLoss } from './losses.js';

/** Options of {@link sequenceLogprobs}. */
export interface SequenceLogprobsOptions {
  /**
   * The temperature T (default 1): the logprobs are of softmax(logits / T), as the trainer's at
   * rollout temperature T (verl computes the reference's logprobs at the rollout temperature, so
   * that the KL compares the same distributions). A finite number > 0.
   */
  temperature?: number;
}

/**
 * Per token of `tokens` [T]: log p(tokens[t] | tokens[<t]) under `model` at `o.temperature`;
 * entry 0 is 0 (nothing predicts the first token). The layout of
 * {@link PolicySample.refLogprobs}. Memory: one [T, vocab] float32 logits buffer.
 */
export async function sequenceLogprobs(
  model: Model,
  tokens: Int32Array,
  o: SequenceLogprobsOptions = {},
): Promise<Float32Array> {
  if (!(tokens instanceof Int32Array) || tokens.length < 2)
    throw invalidArgument('tokens', 'an Int32Array of 2+ tokens', tokens?.length);
  if (typeof o !== 'object' || o === null) throw invalidArgument('options', 'an object', o);
  const temperature = o.temperature ?? 1;
  invTemperature('temperature', temperature); // checked before the forward pass
  const T = tokens.length;
  const logits = await model.forward(tokens.subarray(0, T - 1));
  const r = sftLoss(
    {
      logits,
      vocab: model.config.vocab_size,
      targets: tokens.subarray(1),
      mask: new Float32Array(T - 1).fill(1),
      temperature,
    },
    { gradLogits: logits },
  );
  const out = new Float32Array(T);
  out.set(r.logprobs, 1);
  return out;
}

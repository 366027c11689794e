/**
 * RFT's one-shot sampling (the paper's App. F.2): the base policy samples with a worked
 * demonstration appended to its system prompt, but the model is trained, evaluated and used
 * without it. The kept trajectories are therefore trained with the normal system prompt: the
 * record's first message (the system prompt with the demonstration) is swapped for the normal
 * one's tokens, and everything after it (the issue, the responses as sampled, the observations)
 * is kept token for token. ChatML encodes the text between two markers on its own, so the result
 * is exactly the record the same conversation gives under the normal prompt.
 */

import { SwerlError } from '../errors.js';
import { messageTokens } from '../rollout/chatml.js';
import type { RolloutRecord } from '../rollout/record.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';

/**
 * The record with its system message `sampled` (the system prompt it was sampled with) replaced
 * by `trained` (the one to train with): tokens, assistant mask, logprobs and turn spans shifted.
 * Throws INTERNAL when the record does not begin with that system message.
 */
export function withSystemPrompt(
  r: RolloutRecord,
  prompts: { sampled: string; trained: string },
  tokenizer: Tokenizer,
): RolloutRecord {
  const from = messageTokens('system', prompts.sampled, tokenizer);
  const to = messageTokens('system', prompts.trained, tokenizer);
  const n = from.length;
  let match = r.tokens.length >= n;
  for (let k = 0; match && k < n; k++) match = r.tokens[k] === from[k] && r.assistantMask[k] === 0;
  if (!match)
    throw new SwerlError(
      `record ${r.instance_id}/${r.sample} does not begin with the system prompt it was sampled with`,
      'INTERNAL',
    );
  const shift = to.length - n;
  const tokens = new Int32Array(r.tokens.length + shift);
  tokens.set(to);
  tokens.set(r.tokens.subarray(n), to.length);
  const assistantMask = new Uint8Array(tokens.length);
  assistantMask.set(r.assistantMask.subarray(n), to.length);
  const logprobs = new Float32Array(tokens.length);
  logprobs.set(r.logprobs.subarray(n), to.length);
  const turns = r.turns.map((t) => ({ ...t, start: t.start + shift, end: t.end + shift }));
  return { ...r, tokens, assistantMask, logprobs, turns };
}

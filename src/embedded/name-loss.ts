/**
 * The loss on the fix's names: how well the embedded model copies the name a misspelled-name
 * task's error reports (and writes the right one), measured on demonstrations with names drawn
 * afresh, so that it cannot come from memory. The skill the default's tasks test; the warm start
 * uses it to decide whether to train longer, and scripts/warm-start-probe.mjs reports it.
 */
import type { Trajectory } from '../agent/episode.js';
import { NAME_POOL } from '../env/mini-swe/mutate.js';
import type { Model } from '../model/model.js';
import { mulberry32 } from '../random.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import { sequenceLogprobs } from '../train/reference.js';
import { demoSample } from './demonstrations.js';
import { slipPair, withFreshNames } from './fresh-names.js';

/** Mean per-token losses (nats) on the fix's names and on every other trained token. */
export interface NameLoss {
  nameLoss: number;
  otherLoss: number;
  /** How many trained tokens each mean is over. */
  nameTokens: number;
  otherTokens: number;
}

/**
 * The stream a seed's name-loss measures draw their names from (`offset` for a later measure of
 * the same run): one the warm-start epochs never draw (they use `seed * 611953 + epoch`).
 */
export function nameLossStream(seed: number, offset = 0): () => number {
  return mulberry32(seed * 7717 + 99 + offset);
}

/**
 * The mean loss on the fix's names and on the other trained tokens of `demos`, each with names
 * drawn by `rng` (withFreshNames). A token counts as a name's when its characters overlap a
 * whole-word occurrence of the slip or the right name. One forward pass per demonstration
 * (sequenceLogprobs, the trainer's logprobs bit for bit); the model is not changed.
 */
export async function nameLoss(
  model: Model,
  tokenizer: Tokenizer,
  demos: readonly Trajectory[],
  rng: () => number,
): Promise<NameLoss> {
  const acc = { name: [0, 0], other: [0, 0] } as { name: [number, number]; other: [number, number] };
  for (const d0 of demos) {
    const d = withFreshNames(d0, NAME_POOL, rng);
    const pair = slipPair(d.patch);
    const s = demoSample(d, tokenizer);
    const T = s.tokens.length;
    if (T < 2) continue;
    if (!s.lossMask.subarray(1).some((x) => x > 0)) continue;
    const logprobs = await sequenceLogprobs(model, s.tokens); // logprobs[t]: token t given those before
    // Character offsets of each token in the decoded conversation (names are ASCII).
    const pieces = Array.from(s.tokens, (t) => tokenizer.decode([t]));
    const starts: number[] = [];
    let at = 0;
    for (const p of pieces) {
      starts.push(at);
      at += p.length;
    }
    const text = pieces.join('');
    const inName = new Uint8Array(text.length);
    if (pair) {
      const re = new RegExp(`\\b(${pair.slip}|${pair.right})\\b`, 'g');
      for (const m of text.matchAll(re)) inName.fill(1, m.index, m.index + m[0].length);
    }
    for (let tok = 1; tok < T; tok++) {
      if (!s.lossMask[tok]) continue;
      const start = starts[tok] as number;
      const name = inName.subarray(start, start + (pieces[tok] as string).length).some((x) => x === 1);
      const a = name ? acc.name : acc.other;
      a[0] -= logprobs[tok] as number;
      a[1]++;
    }
  }
  return {
    nameLoss: acc.name[0] / Math.max(1, acc.name[1]),
    otherLoss: acc.other[0] / Math.max(1, acc.other[1]),
    nameTokens: acc.name[1],
    otherTokens: acc.other[1],
  };
}

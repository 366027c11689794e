/**
 * Which trainer lane runs which sample of a step. The assignment is decided before the step from
 * the samples' lengths alone, never from timing, so a step's gradient sums (each lane adds its
 * samples into its own slot, in index order) are the same on every run and machine.
 */
import type { HfModelConfig } from '../model/config.js';

/**
 * The relative cost of one sample's forward and backward on a decoder: per token, the
 * projections, the MLP and the LM head (multiply-adds per token), plus causal attention, which
 * grows with the length (about n²/2 query-key pairs, each a dot product and a weighted add of
 * `hidden_size` values, per layer).
 */
export function sampleCost(cfg: HfModelConfig, tokens: number): number {
  const d = cfg.hidden_size;
  const heads = cfg.num_attention_heads;
  const headDim = cfg.head_dim ?? d / heads;
  const kv = cfg.num_key_value_heads ?? heads;
  const perLayer = d * headDim * (2 * heads + 2 * kv) + 3 * d * cfg.intermediate_size;
  const perToken = cfg.num_hidden_layers * perLayer + cfg.vocab_size * d;
  return tokens * perToken + cfg.num_hidden_layers * heads * headDim * tokens * tokens;
}

/**
 * Splits samples among `lanes` lanes so that the lanes' total costs are close: the costliest
 * sample first, each to the lane with the least cost so far (the lower lane on a tie), then each
 * lane's samples in index order. Returns one list of indices into `costs` per lane (some may be
 * empty). A fixed interleave (lane l takes l, l + L, ...) can put every long sample on one lane
 * and leave the other core idle for most of the step.
 */
export function assignLanes(costs: readonly number[], lanes: number): number[][] {
  const out: number[][] = Array.from({ length: lanes }, () => []);
  const load = new Array<number>(lanes).fill(0);
  const order = costs.map((_, k) => k).sort((a, b) => (costs[b] as number) - (costs[a] as number) || a - b);
  for (const k of order) {
    let best = 0;
    for (let l = 1; l < lanes; l++) if ((load[l] as number) < (load[best] as number)) best = l;
    (out[best] as number[]).push(k);
    load[best] = (load[best] as number) + (costs[k] as number);
  }
  for (const list of out) list.sort((a, b) => a - b);
  return out;
}

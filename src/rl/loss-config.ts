/**
 * What a DAPO iteration optimises with: the policy loss's settings for a stage and the learning
 * rate of an iteration over the schedule.
 */
import type { DapoStageConfig, PipelineConfig } from '../pipeline/config.js';
import { cosineDecay } from '../train/adamw.js';
import type { PolicyLossConfig } from '../train/losses.js';

/**
 * The policy loss a DAPO stage trains with: the stage's clip range (`clipLow`, `clipHigh`; the
 * paper's 0.2/0.3, then 0.2/0.26), the dapo section's aggregation and coefficients. Dr.GRPO's `seq-mean-token-sum-norm` divides by
 * `dapo.normLength`, or by default by the stage's generation budget (turns × tokens per turn).
 */
export function dapoLossConfig(c: PipelineConfig, stage: DapoStageConfig): PolicyLossConfig {
  return {
    clipLow: stage.clipLow,
    clipHigh: stage.clipHigh,
    agg: c.dapo.agg,
    normLength: c.dapo.normLength || stage.maxTurns * c.episode.maxTokensPerTurn,
    klCoef: c.dapo.klCoef,
    entropyCoef: c.dapo.entropyCoef,
  };
}

/**
 * The learning rate of DAPO iteration `i` (0-based, over all stages): `dapo.lr`, or with
 * `lrSchedule: 'cosine'` lr · (m + (1 − m) · (1 + cos(π i / N)) / 2) for N iterations in all.
 */
export function dapoIterationLr(c: PipelineConfig, i: number): number {
  if (c.dapo.lrSchedule === 'constant') return c.dapo.lr;
  const n = c.dapo.stages.reduce((a, st) => a + st.iterations, 0);
  return c.dapo.lr * cosineDecay(Math.min(i, n) / Math.max(1, n), c.dapo.minLrRatio);
}

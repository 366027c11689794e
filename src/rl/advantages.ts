/**
 * Group advantages: one scalar per sample from the rewards of its task's group of G samples,
 * broadcast to every trained token of the sample. GRPO's mean/std (the paper's Eq. 2), Dr.GRPO's
 * mean only, and leave-one-out (RLOO).
 */
import { invalidArgument } from '../errors.js';

/** How advantages are computed within a task's group of samples. */
export type AdvantageEstimator = 'grpo' | 'drgrpo' | 'rloo';

/** Group advantages of rewards (one group). */
export function groupAdvantages(rewards: number[], estimator: AdvantageEstimator = 'grpo', eps = 1e-6): number[] {
  const n = rewards.length;
  const mean = rewards.reduce((a, b) => a + b, 0) / n;
  if (estimator === 'drgrpo') return rewards.map((r) => r - mean);
  if (estimator === 'rloo') return rewards.map((r) => (n > 1 ? (n / (n - 1)) * (r - mean) : 0));
  if (estimator !== 'grpo') throw invalidArgument('estimator', "'grpo', 'drgrpo' or 'rloo'", estimator);
  // The unbiased std, as verl's GRPO computes it (torch.std).
  const variance = n > 1 ? rewards.reduce((a, r) => a + (r - mean) ** 2, 0) / (n - 1) : 0;
  const std = Math.sqrt(variance);
  return rewards.map((r) => (r - mean) / (std + eps));
}

/**
 * From rollout records to training samples: the loss mask (the policy's own tokens; turns with a
 * format error masked out when asked, as the paper's RFT does, or only where the advantage is
 * positive), RFT's filter (resolved trajectories only), and the policy-gradient stages' samples:
 * records grouped by task, group advantages (advantages.ts), DAPO's dynamic sampling (groups whose
 * rewards are all equal carry no signal and are dropped) and overlong filtering as an option.
 */
import type { RolloutRecord } from '../rollout/record.js';
import type { PolicySample, TrainSample } from '../train/trainer.js';
import { type AdvantageEstimator, groupAdvantages } from './advantages.js';

/** The trained tokens of a record: its generated tokens, minus format-error turns when asked. */
export function lossMask(r: RolloutRecord, o: { maskFormatErrors?: boolean } = {}): Float32Array {
  const m = Float32Array.from(r.assistantMask);
  if (o.maskFormatErrors ?? true) for (const t of r.turns) if (t.formatError !== null) m.fill(0, t.start, t.end);
  return m;
}

/** RFT's data: the resolved trajectories, format-error turns masked. */
export function rftSamples(records: RolloutRecord[], o: { maskFormatErrors?: boolean } = {}): TrainSample[] {
  return records
    .filter((r) => r.resolved && r.error === undefined)
    .map((r) => ({ tokens: r.tokens, lossMask: lossMask(r, o) }));
}

/** Options of {@link policySamples}. */
export interface PolicySampleOptions {
  estimator?: AdvantageEstimator;
  /** Drop groups whose rewards are all equal (DAPO's dynamic sampling; default true). */
  dropZeroAdvantage?: boolean;
  /** Drop episodes that ended on the context or turn limit instead of keeping them as negatives (default false). */
  filterOverlong?: boolean;
  /**
   * Format-error turns carry no gradient: true (default) in every sample, false in none,
   * 'positive' in samples whose advantage is above 0 only (pushed down, never up).
   */
  maskFormatErrors?: boolean | 'positive';
  /** GRPO's std epsilon (default 1e-6). */
  eps?: number;
}

/** What {@link policySamples} returns: the samples and what was dropped. */
export interface PolicyBatch {
  samples: PolicySample[];
  /** The records behind the samples, in the same order. */
  records: RolloutRecord[];
  groups: number;
  droppedGroups: number;
  droppedOverlong: number;
  /** Groups filterOverlong emptied (no member ended on submit): neither trained nor flat. */
  emptiedGroups: number;
  /**
   * Samples left out because no token of theirs is trained (every turn a format error, with
   * maskFormatErrors): they carry no gradient, and a mini-batch of only such samples has no loss.
   */
  droppedUntrained: number;
  /**
   * Records left out because they could not be run or graded (`error`: the grader's or the
   * sandbox's failure, not the policy's); a group of only such records counts as no group.
   */
  droppedErrors: number;
}

/**
 * The key of a record's advantage group: its instance_id and, when it has one, its `group` (the
 * runRollouts call's name and the task's position), so that two tasks sharing an instance_id are
 * two groups, while records without it group by instance_id as before.
 */
function groupKey(r: RolloutRecord): string {
  return r.group === undefined ? JSON.stringify([r.instance_id]) : JSON.stringify([r.instance_id, r.group]);
}

/**
 * Policy-gradient samples from records grouped by task (G samples each): by groupKey, groups in
 * the order of their first record, members in record order.
 */
export function policySamples(records: RolloutRecord[], o: PolicySampleOptions = {}): PolicyBatch {
  const byTask = new Map<string, RolloutRecord[]>();
  for (const r of records) {
    const key = groupKey(r);
    const g = byTask.get(key) ?? [];
    g.push(r);
    byTask.set(key, g);
  }
  const out: PolicyBatch = {
    samples: [],
    records: [],
    groups: byTask.size,
    droppedGroups: 0,
    droppedOverlong: 0,
    emptiedGroups: 0,
    droppedUntrained: 0,
    droppedErrors: 0,
  };
  for (const all of byTask.values()) {
    const group = all.filter((r) => r.error === undefined);
    out.droppedErrors += all.length - group.length;
    if (group.length === 0) {
      out.groups--;
      continue;
    }
    let members = group;
    if (o.filterOverlong) {
      members = group.filter((r) => r.finishReason === 'submit');
      out.droppedOverlong += group.length - members.length;
    }
    if (members.length === 0) {
      out.emptiedGroups++;
      continue;
    }
    const rewards = members.map((r) => r.reward);
    if ((o.dropZeroAdvantage ?? true) && rewards.every((r) => r === rewards[0])) {
      out.droppedGroups++;
      continue;
    }
    const adv = groupAdvantages(rewards, o.estimator ?? 'grpo', o.eps ?? 1e-6);
    members.forEach((r, k) => {
      const a = adv[k] as number;
      const maskFormatErrors = o.maskFormatErrors === 'positive' ? a > 0 : (o.maskFormatErrors ?? true);
      const mask = lossMask(r, { maskFormatErrors });
      if (!mask.some((x) => x !== 0)) {
        out.droppedUntrained++;
        return;
      }
      out.samples.push({
        tokens: r.tokens,
        lossMask: mask,
        advantage: a,
        oldLogprobs: r.logprobs,
      });
      out.records.push(r);
    });
  }
  return out;
}

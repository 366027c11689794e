/**
 * Statistics over runs of one config on several seeds (scripts/seeds.mjs): per stage the mean of
 * held-out Pass@1 and Pass@k with a 95% confidence interval (Student's t over the seeds), the
 * paired DAPO − RFT difference the same way, and where each run's time went.
 */
import { invalidArgument } from '../errors.js';
import type { RunSummary } from './run.js';

/** A mean with its two-sided confidence interval. */
export interface MeanInterval {
  n: number;
  mean: number;
  /** The sample standard deviation (0 for one value). */
  sd: number;
  low: number;
  high: number;
}

// Student's t quantile t(0.975, df) for df = 1..30; beyond, the normal's 1.96 is within 2%.
const T975 = [
  12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11,
  2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/** t(0.975, df): the 95% two-sided quantile of Student's t with `df` degrees of freedom. */
export function studentT975(df: number): number {
  if (!Number.isInteger(df) || df < 1) throw invalidArgument('df', 'an integer >= 1', df);
  return T975[df - 1] ?? 1.96;
}

/**
 * The mean of `xs` and its 95% interval mean ± t(0.975, n−1)·sd/√n. One value has no interval
 * (low = high = the value, sd 0): a single seed says nothing about the spread.
 */
export function meanInterval(xs: number[]): MeanInterval {
  if (!Array.isArray(xs) || xs.length === 0 || xs.some((x) => typeof x !== 'number' || !Number.isFinite(x)))
    throw invalidArgument('xs', 'a non-empty array of finite numbers', xs);
  const n = xs.length;
  const mean = xs.reduce((a, x) => a + x, 0) / n;
  if (n === 1) return { n, mean, sd: 0, low: mean, high: mean };
  const sd = Math.sqrt(xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (n - 1));
  const half = (studentT975(n - 1) * sd) / Math.sqrt(n);
  return { n, mean, sd, low: mean - half, high: mean + half };
}

/** The goal a seed table is held to (issue-style acceptance): each check and whether it holds. */
export interface SeedGoal {
  /** base < RFT < DAPO Pass@1 on every seed. */
  orderedEverySeed: boolean;
  /** The mean DAPO − RFT Pass@1 is at least `minGain`. */
  meanGain: boolean;
  /** The 95% interval of DAPO − RFT lies above `minGainLow`. */
  gainIntervalAbove: boolean;
  /** DAPO's Pass@1 is at least `minDapo` on every seed. */
  dapoEverySeed: boolean;
  met: boolean;
}

/** The aggregate of a seed study, as scripts/seeds.mjs writes it to seeds.json. */
export interface SeedTable {
  seeds: number[];
  k: number;
  /** Per stage (base, rft, dapo): Pass@1 and Pass@k over the seeds. */
  stages: Record<string, { pass1: MeanInterval; passK: MeanInterval; perSeed: { pass1: number; passK: number }[] }>;
  /** The paired difference DAPO − RFT per seed, and its mean and interval (Pass@1 and Pass@k). */
  dapoMinusRft: { pass1: MeanInterval; passK: MeanInterval; perSeed: number[] } | null;
  goal: SeedGoal | null;
  wallSeconds: MeanInterval;
}

/** Thresholds of {@link SeedGoal}: a gain of 0.10 Pass@1 with its interval above 0.05, DAPO ≥ 0.30. */
export const SEED_GOAL = { minGain: 0.1, minGainLow: 0.05, minDapo: 0.3 };

/** Aggregates finished runs' summaries (one per seed) into a {@link SeedTable}. */
export function seedTable(runs: Pick<RunSummary, 'seed' | 'stages' | 'wallSeconds'>[]): SeedTable {
  if (!Array.isArray(runs) || runs.length === 0) throw invalidArgument('runs', 'a non-empty array of summaries', runs);
  const names = ['base', 'rft', 'dapo'].filter((s) => runs.every((r) => r.stages.some((x) => x.name === s)));
  const stage = (r: (typeof runs)[number], s: string) => r.stages.find((x) => x.name === s) as RunSummary['stages'][0];
  const stages: SeedTable['stages'] = {};
  for (const s of names) {
    const perSeed = runs.map((r) => ({ pass1: stage(r, s).pass1, passK: stage(r, s).passK }));
    stages[s] = {
      pass1: meanInterval(perSeed.map((x) => x.pass1)),
      passK: meanInterval(perSeed.map((x) => x.passK)),
      perSeed,
    };
  }
  let dapoMinusRft: SeedTable['dapoMinusRft'] = null;
  let goal: SeedGoal | null = null;
  if (names.includes('rft') && names.includes('dapo')) {
    const d1 = runs.map((r) => stage(r, 'dapo').pass1 - stage(r, 'rft').pass1);
    const dk = runs.map((r) => stage(r, 'dapo').passK - stage(r, 'rft').passK);
    dapoMinusRft = { pass1: meanInterval(d1), passK: meanInterval(dk), perSeed: d1 };
    if (names.includes('base')) {
      const orderedEverySeed = runs.every(
        (r) => stage(r, 'base').pass1 < stage(r, 'rft').pass1 && stage(r, 'rft').pass1 < stage(r, 'dapo').pass1,
      );
      const meanGain = dapoMinusRft.pass1.mean >= SEED_GOAL.minGain;
      const gainIntervalAbove = runs.length > 1 && dapoMinusRft.pass1.low > SEED_GOAL.minGainLow;
      const dapoEverySeed = runs.every((r) => stage(r, 'dapo').pass1 >= SEED_GOAL.minDapo);
      goal = {
        orderedEverySeed,
        meanGain,
        gainIntervalAbove,
        dapoEverySeed,
        met: orderedEverySeed && meanGain && gainIntervalAbove && dapoEverySeed,
      };
    }
  }
  return {
    seeds: runs.map((r) => r.seed),
    k: runs[0]?.stages[0]?.k ?? 0,
    stages,
    dapoMinusRft,
    goal,
    wallSeconds: meanInterval(runs.map((r) => r.wallSeconds)),
  };
}

const pct = (x: number) => `${(100 * x).toFixed(1)}`;
const cell = (m: MeanInterval) => (m.n > 1 ? `${pct(m.mean)}% [${pct(m.low)}, ${pct(m.high)}]` : `${pct(m.mean)}%`);
const signed = (m: MeanInterval) => {
  const s = (x: number) => `${x >= 0 ? '+' : ''}${pct(x)}`;
  return m.n > 1 ? `${s(m.mean)} [${s(m.low)}, ${s(m.high)}]` : s(m.mean);
};

/** The table as Markdown: per stage the mean and 95% interval, then one row per seed. */
export function seedTableMarkdown(t: SeedTable): string {
  const k = t.k;
  const lines = [
    `| stage | Pass@1, mean [95% CI] | Pass@${k}, mean [95% CI] |`,
    '|---|---|---|',
    ...Object.entries(t.stages).map(([s, v]) => `| ${s} | ${cell(v.pass1)} | ${cell(v.passK)} |`),
  ];
  if (t.dapoMinusRft)
    lines.push(`| DAPO − RFT (points) | ${signed(t.dapoMinusRft.pass1)} | ${signed(t.dapoMinusRft.passK)} |`);
  lines.push('', `| seed | ${Object.keys(t.stages).join(' | ')} | DAPO − RFT |`);
  lines.push(
    `|---|${Object.keys(t.stages)
      .map(() => '---|')
      .join('')}---|`,
  );
  t.seeds.forEach((seed, i) => {
    const cells = Object.values(t.stages).map((v) => `${pct(v.perSeed[i]?.pass1 ?? 0)}%`);
    const d = t.dapoMinusRft
      ? `${(t.dapoMinusRft.perSeed[i] ?? 0) >= 0 ? '+' : ''}${pct(t.dapoMinusRft.perSeed[i] ?? 0)}`
      : '';
    lines.push(`| ${seed} | ${cells.join(' | ')} | ${d} |`);
  });
  return `${lines.join('\n')}\n`;
}

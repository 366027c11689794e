/**
 * The seed study's statistics (scripts/seeds.mjs): Student's t intervals over seeds, the paired
 * DAPO − RFT difference, and the goal checks, on summaries with known figures.
 */
import { describe, expect, it } from 'vitest';
import { meanInterval, seedTable, seedTableMarkdown, studentT975 } from '../../src/pipeline/seed-stats.js';

const run = (seed: number, base: number, rft: number, dapo: number) => ({
  seed,
  wallSeconds: 1000 + seed,
  stages: [
    { name: 'base', pass1: base, passK: base * 2, k: 8, tasks: 48 },
    { name: 'rft', pass1: rft, passK: rft * 1.5, k: 8, tasks: 48 },
    { name: 'dapo', pass1: dapo, passK: dapo * 1.4, k: 8, tasks: 48 },
  ],
});

describe('meanInterval', () => {
  it('is mean ± t(0.975, n-1)·sd/√n', () => {
    const m = meanInterval([1, 2, 3, 4, 5]);
    const half = (2.776 * Math.sqrt(2.5)) / Math.sqrt(5);
    expect(m.mean).toBe(3);
    expect(m.sd).toBeCloseTo(Math.sqrt(2.5), 12);
    expect(m.low).toBeCloseTo(3 - half, 12);
    expect(m.high).toBeCloseTo(3 + half, 12);
    expect(studentT975(1)).toBe(12.706);
    expect(studentT975(200)).toBe(1.96);
  });

  it('gives one value no interval and refuses empty or non-finite input', () => {
    expect(meanInterval([0.4])).toEqual({ n: 1, mean: 0.4, sd: 0, low: 0.4, high: 0.4 });
    expect(() => meanInterval([])).toThrow(/xs/);
    expect(() => meanInterval([1, Number.NaN])).toThrow(/xs/);
    expect(() => studentT975(0)).toThrow(/df/);
  });
});

describe('seedTable', () => {
  it('meets the goal when DAPO beats RFT by a clear, consistent margin on every seed', () => {
    const t = seedTable([run(11, 0.05, 0.2, 0.35), run(12, 0.06, 0.22, 0.36), run(13, 0.04, 0.21, 0.34)]);
    expect(t.seeds).toEqual([11, 12, 13]);
    expect(t.dapoMinusRft?.perSeed.map((x) => Number(x.toFixed(6)))).toEqual([0.15, 0.14, 0.13]);
    expect(t.dapoMinusRft?.pass1.mean).toBeCloseTo(0.14, 12);
    expect(t.goal).toEqual({
      orderedEverySeed: true,
      meanGain: true,
      gainIntervalAbove: true,
      dapoEverySeed: true,
      met: true,
    });
    const md = seedTableMarkdown(t);
    expect(md).toContain('| dapo | 35.0% [');
    expect(md).toContain('| 12 | 6.0% | 22.0% | 36.0% | +14.0 |');
    expect(md).toContain('Pass@8');
  });

  it('fails each check that does not hold: a seed out of order, a small or noisy gain, a low DAPO', () => {
    const t = seedTable([run(1, 0.05, 0.4, 0.42), run(2, 0.3, 0.2, 0.5), run(3, 0.05, 0.1, 0.2)]);
    expect(t.goal).toMatchObject({
      orderedEverySeed: false,
      gainIntervalAbove: false,
      dapoEverySeed: false,
      met: false,
    });
    // One seed has no interval, so it cannot show the gain's interval above the bar.
    expect(seedTable([run(1, 0.05, 0.2, 0.4)]).goal).toMatchObject({ meanGain: true, gainIntervalAbove: false });
  });

  it('reports only the stages every run has (a run without DAPO has no difference or goal)', () => {
    const noDapo = { ...run(1, 0.1, 0.2, 0.3), stages: run(1, 0.1, 0.2, 0.3).stages.slice(0, 2) };
    const t = seedTable([noDapo]);
    expect(Object.keys(t.stages)).toEqual(['base', 'rft']);
    expect(t.dapoMinusRft).toBeNull();
    expect(t.goal).toBeNull();
    expect(() => seedTable([])).toThrow(/runs/);
  });
});

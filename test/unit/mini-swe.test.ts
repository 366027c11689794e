/**
 * The mini-SWE generator: deterministic by seed, disjoint train/test bugs, every task validated
 * (its gold patch resolves it and an empty patch does not, checked again here with
 * evaluatePatch), and issue texts that describe the behaviour without quoting the line to fix.
 */
import { describe, expect, it } from 'vitest';
import { CATALOGUE } from '../../src/env/mini-swe/catalogue.js';
import { bugSplit, evaluatePatch, generateMiniSweTasks, isolationAvailable } from '../../src/index.js';

describe.skipIf(!isolationAvailable('bwrap') && !isolationAvailable('unshare'))('generateMiniSweTasks', () => {
  it('splits the catalogue into disjoint train and test bugs', () => {
    const all = CATALOGUE.flatMap((m) => m.mutations.map((x) => `${m.name}/${x.id}`));
    const test = all.filter((b) => bugSplit(b.split('/')[0] as string, b.split('/')[1] as string) === 'test');
    expect(test.length).toBeGreaterThan(0);
    expect(test.length).toBeLessThan(all.length);
    expect(new Set(all).size).toBe(all.length);
  });

  it('generates validated tasks, the same for the same seed, with gold patches that resolve them', async () => {
    const train = await generateMiniSweTasks({ count: 4, seed: 7, difficulty: 2 });
    const again = await generateMiniSweTasks({ count: 2, seed: 7, difficulty: 2 });
    expect(again.map((t) => t.patch)).toEqual(train.slice(0, 2).map((t) => t.patch));
    const test = await generateMiniSweTasks({ count: 2, seed: 3, split: 'test' });
    const bugOf = (id: string) => id.replace(/^mini-swe__/, '').replace(/-\d+-\d+$/, '');
    const trainBugs = new Set(train.map((t) => bugOf(t.instance_id)));
    for (const t of test) expect(trainBugs.has(bugOf(t.instance_id))).toBe(false);
    for (const t of [...train, ...test]) {
      expect(t.FAIL_TO_PASS.length).toBeGreaterThan(0);
      expect(Object.keys(t.files ?? {}).filter((f) => f.startsWith('src/')).length).toBeGreaterThanOrEqual(1);
      const gold = await evaluatePatch(t, t.patch);
      expect(gold.resolved, t.instance_id).toBe(true);
      expect((await evaluatePatch(t, '')).resolved, t.instance_id).toBe(false);
      // The issue describes behaviour: it quotes neither the buggy nor the fixed line.
      const changed = t.patch
        .split('\n')
        .filter((l) => (l.startsWith('+') && !l.startsWith('+++')) || (l.startsWith('-') && !l.startsWith('---')))
        .map((l) => l.slice(1).trim())
        .filter((l) => l.length >= 8);
      expect(changed.length).toBeGreaterThan(0);
      for (const l of changed) expect(t.problem_statement).not.toContain(l);
      expect(t.problem_statement).toMatch(/Expected: /);
    }
  }, 120_000);

  it('rejects bad options', async () => {
    await expect(generateMiniSweTasks({ count: -1, seed: 1 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(generateMiniSweTasks({ count: 1, seed: 1, difficulty: 9 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });
});

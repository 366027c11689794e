/**
 * scripts/seeds.mjs end to end on the smoke preset: two seeds at once (--jobs 2), each a real
 * `node train.js` whose kernels get the cores shared between the jobs (SWERL_NUM_THREADS), its
 * output in OUT/seed-N.log; then OUT/seeds.json and OUT/seeds.md hold the table over both seeds,
 * and a second call reuses the finished runs instead of running them again.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isolationAvailable } from '../../src/index.js';
import { startScript } from '../helpers/node-process.js';

const dir = mkdtempSync(join(tmpdir(), 'swerl-seeds-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const canSandbox = isolationAvailable('bwrap') || isolationAvailable('unshare');

/** Runs the seed script with `args` (SWERL_NUM_THREADS unset, as a user starts it); its exit code and output. */
async function seedsScript(args: string[]): Promise<{ code: number | null; output: string }> {
  const env = { ...process.env };
  delete env.SWERL_NUM_THREADS;
  const run = startScript(join('scripts', 'seeds.mjs'), args, env);
  const { code } = await run.exited;
  return { code, output: run.output() };
}

describe.skipIf(!canSandbox)('scripts/seeds.mjs', () => {
  it('runs seeds side by side with the cores shared, writes the table, reuses finished runs', async () => {
    const out = join(dir, 'study');
    const args = ['--seeds', '5,6', '--preset', 'smoke', '--out', out, '--jobs', '2'];
    const first = await seedsScript(args);
    expect(first.code, first.output).toBe(0);
    const threads = Math.max(1, Math.floor(availableParallelism() / 2));
    for (const seed of [5, 6]) {
      expect(first.output).toContain(`seed ${seed}: SWERL_NUM_THREADS=${threads} node train.js`);
      expect(readFileSync(join(out, `seed-${seed}.log`), 'utf8')).toContain('swerl train: preset smoke');
      // The run itself records the kernel threads it ran with.
      const state = JSON.parse(readFileSync(join(out, `seed-${seed}`, 'state.json'), 'utf8'));
      expect(state.provenance.kernels.threads).toBe(threads);
    }
    const study = JSON.parse(readFileSync(join(out, 'seeds.json'), 'utf8'));
    expect(study.table.seeds).toEqual([5, 6]);
    expect(Object.keys(study.table.stages)).toEqual(['base', 'rft', 'dapo']);
    for (const stage of Object.values(study.table.stages) as { pass1: { n: number } }[]) expect(stage.pass1.n).toBe(2);
    expect(readFileSync(join(out, 'seeds.md'), 'utf8')).toContain('| seed | base | rft | dapo | DAPO − RFT |');

    const again = await seedsScript(args);
    expect(again.code, again.output).toBe(0);
    for (const seed of [5, 6]) expect(again.output).toContain(`seed ${seed}: finished run in`);
    expect(again.output).not.toContain('node train.js');
    expect(JSON.parse(readFileSync(join(out, 'seeds.json'), 'utf8')).table).toEqual(study.table);
  }, 600_000);
});

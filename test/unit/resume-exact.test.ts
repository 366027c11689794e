/**
 * A run killed (SIGKILL) after its first DAPO iteration and resumed is the uninterrupted run, bit
 * for bit: the smoke preset trains in every stage (RFT keeps trajectories, DAPO's first iteration
 * trains on mixed groups), so the second iteration's rollouts and metrics depend on the resumed
 * weights, AdamW's moments and step count, and the rollout seeds' positions. Compared with
 * scripts/compare-runs.mjs (every metrics event, timings aside; every rollout record).
 */
import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isolationAvailable } from '../../src/index.js';
import { dapoPhase } from '../../src/pipeline/phases.js';
import { RUN_LOCK_FILE, RunLock } from '../../src/pipeline/run-lock.js';
import { PACKAGE_ROOT as root, startScript, waitFor } from '../helpers/node-process.js';

const dir = mkdtempSync(join(tmpdir(), 'swerl-resume-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const canSandbox = isolationAvailable('bwrap') || isolationAvailable('unshare');

/** Runs `node train.js --preset smoke` into `out`; with `killAfter`, SIGKILLs it once state.json lists that phase. */
async function smoke(out: string, extra: string[] = [], killAfter?: string): Promise<string> {
  const run = startScript('train.js', ['--preset', 'smoke', '--out', out, ...extra]);
  if (killAfter) {
    const reached = await waitFor(
      run,
      () => {
        try {
          return JSON.parse(readFileSync(join(out, 'state.json'), 'utf8')).done.includes(killAfter);
        } catch {
          return false; // not written yet
        }
      },
      300_000,
    );
    if (!reached) throw new Error(`the smoke run never reached ${killAfter}:\n${run.output()}`);
    run.child.kill('SIGKILL');
    expect((await run.exited).signal).toBe('SIGKILL');
  } else expect((await run.exited).code, run.output()).toBe(0);
  return run.output();
}

/** scripts/compare-runs.mjs on two run folders: its exit status and its report. */
function compareRuns(a: string, b: string): { status: number | null; stdout: string; report: string } {
  const compare = spawnSync(process.execPath, [join(root, 'scripts', 'compare-runs.mjs'), a, b], { encoding: 'utf8' });
  return { status: compare.status, stdout: compare.stdout, report: compare.stdout + compare.stderr };
}

/**
 * The environment's one known race (docs/results.md, Reproducibility): a pipeline of failing
 * commands prints its errors in an order the OS chooses. When DAPO phase `phase`'s first
 * difference is such an observation token, the runs parted there for that reason, so what
 * follows says nothing about the resume; it is reported, not judged.
 */
function raced(report: string, phase: string): boolean {
  return new RegExp(`${phase}\\.msgpack: \\d+/\\d+ records identical\\n\\s+first: [^\\n]*an observation token`).test(
    report,
  );
}

const first = dapoPhase(1, 1);
const straight = join(dir, 'straight');

describe.skipIf(!canSandbox)('resume', () => {
  it('a run killed after a DAPO iteration that trained, then resumed, equals the uninterrupted run bit for bit', async () => {
    const killed = join(dir, 'killed');
    // One run after the other, not both at once: a command the policy writes as a pipeline of
    // failing commands (`Let is1 | src`) prints two errors in an order the OS chooses, and two
    // runs at once on a loaded machine made that order differ between them (docs/results.md,
    // Reproducibility). Run alone, each prints them in fork order.
    await smoke(straight);
    await smoke(killed, [], first);
    const resumed = await smoke(killed, ['--resume']);
    expect(resumed).toContain('resuming after');
    // The stages trained: RFT kept trajectories, and DAPO's first iteration took a step on samples.
    const events = readFileSync(join(straight, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const iterations = events.filter((e) => e.event === 'iteration');
    expect(iterations.length).toBe(2);
    expect(iterations[0].trainedSamples, JSON.stringify(iterations[0])).toBeGreaterThan(0);
    const rft = events.find((e) => e.event === 'rollouts' && e.phase === 'rft');
    expect(rft?.kept, JSON.stringify(rft)).toBeGreaterThan(0);
    const compare = compareRuns(straight, killed);
    const report = compare.report;
    // Every phase before DAPO must match whatever happens in DAPO.
    expect(report).toContain('rft.msgpack: 24/24 records identical');
    expect(report).toContain('eval-rft.msgpack: 6/6 records identical');
    // The known race parts the runs before the kill: not judged. Any other difference fails.
    if (raced(report, first)) {
      console.warn(`the two runs parted in ${first} at an observation (the known race): resume not judged\n${report}`);
      return;
    }
    expect(compare.status, report).toBe(0);
    expect(compare.stdout).toMatch(/metrics: \d+ events, identical/);
    expect(compare.stdout).toContain(`${dapoPhase(1, 2)}.msgpack: 16/16 records identical`);
  }, 720_000);

  it('a finished run branched back to after RFT (branch-run.mjs --after) and resumed repeats its DAPO bit for bit', async () => {
    const branched = join(dir, 'branched');
    const config = join(dir, 'smoke.json');
    writeFileSync(config, '{"preset": "smoke"}\n');
    // As if the run were still being written (branching a live run's finished phases): its lock,
    // held by a live process (this one), stays with it and does not lock the branch.
    const lock = await RunLock.claim(straight);
    let branch: SpawnSyncReturns<string>;
    try {
      branch = spawnSync(
        process.execPath,
        [join(root, 'scripts', 'branch-run.mjs'), '--after', 'eval-rft', straight, config, branched],
        { encoding: 'utf8' },
      );
    } finally {
      await lock.release();
    }
    expect(branch.status, branch.stdout + branch.stderr).toBe(0);
    expect(existsSync(join(branched, RUN_LOCK_FILE))).toBe(false);
    const state = JSON.parse(readFileSync(join(branched, 'state.json'), 'utf8'));
    expect(state.done).toEqual(['warmstart', 'eval-base', 'rft', 'eval-rft']);
    expect(state.stages.map((s: { name: string }) => s.name)).toEqual(['base', 'rft']);
    expect(state.checkpoint).toBe(join('checkpoints', 'rft'));
    expect(existsSync(join(branched, 'checkpoints', dapoPhase(1, 2)))).toBe(false);
    expect(existsSync(join(branched, 'rollouts', `${first}.msgpack`))).toBe(false);
    expect(readFileSync(join(branched, 'metrics.jsonl'), 'utf8')).not.toContain('"stage":"dapo"');
    const resumed = await smoke(branched, ['--config', config, '--resume']);
    expect(resumed).toContain('resuming after 4 finished phases');
    const compare = compareRuns(straight, branched);
    if (raced(compare.report, first) || raced(compare.report, dapoPhase(1, 2))) {
      console.warn(
        `the two runs parted in DAPO at an observation (the known race): branch not judged\n${compare.report}`,
      );
      return;
    }
    expect(compare.status, compare.report).toBe(0);
    expect(compare.stdout).toMatch(/metrics: \d+ events, identical/);
  }, 600_000);
});

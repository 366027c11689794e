/**
 * A run folder is never destroyed by accident: `node train.js` into a folder that holds a run
 * stops with RUN_EXISTS and changes nothing; `--force` moves the old run aside whole; a run
 * stopped by Ctrl-C or SIGKILL in its first seconds holds a run that a plain rerun refuses and
 * `--resume` continues; a folder written with the old phase names (`dapo-0-0`) is refused by
 * `--resume` with the way out; a second run into a folder that a live run is writing is
 * RUN_LOCKED, and once that run is killed `--resume` takes the folder over. The runs are real `node train.js` processes on the smoke preset,
 * stopped as soon as they have started.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isolationAvailable } from '../../src/index.js';
import { PACKAGE_ROOT as root, startScript, waitFor } from '../helpers/node-process.js';

const canSandbox = isolationAvailable('bwrap') || isolationAvailable('unshare');
const dir = mkdtempSync(join(tmpdir(), 'swerl-runfolder-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function train(args: string[]) {
  return spawnSync(process.execPath, [join(root, 'train.js'), '--preset', 'smoke', ...args], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
  });
}

/** Starts `node train.js`, waits until `ready()` holds, stops it with `signal`; its output and exit code. */
async function startAndStop(args: string[], ready: (output: string) => boolean, signal: 'SIGINT' | 'SIGKILL') {
  const run = startScript('train.js', ['--preset', 'smoke', ...args]);
  await waitFor(run, () => ready(run.output()), 60_000);
  run.child.kill(signal);
  const { code } = await run.exited;
  return { out: run.output(), code };
}

/** Every file under a folder with its content, for "nothing changed" checks. */
function snapshot(folder: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of readdirSync(folder, { recursive: true, withFileTypes: true }))
    if (e.isFile())
      out[join(e.parentPath, e.name).slice(folder.length)] = readFileSync(join(e.parentPath, e.name), 'utf8');
  return out;
}

describe('run folders', () => {
  it('a new run into a folder that holds a run stops with RUN_EXISTS and touches nothing', () => {
    const out = join(dir, 'held');
    mkdirSync(join(out, 'checkpoints', 'rft'), { recursive: true });
    writeFileSync(join(out, 'state.json'), '{"done":["base","rft"]}\n');
    writeFileSync(join(out, 'metrics.jsonl'), '{"stage":"rft"}\n');
    writeFileSync(join(out, 'checkpoints', 'rft', 'model.safetensors'), 'weights');
    const before = snapshot(out);
    const r = train(['--out', out]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('[RUN_EXISTS]');
    expect(r.stderr).toMatch(/--resume.*--force.*another --out/);
    expect(snapshot(out)).toEqual(before);
    expect(train(['--out', out, '--resume', '--force']).status).toBe(1);
    expect(snapshot(out)).toEqual(before);
  });

  it('a run folder written with the old phase names: --resume refuses it with CANNOT_RESUME, touching nothing', () => {
    const out = join(dir, 'old-names');
    mkdirSync(join(out, 'checkpoints', 'dapo-0-0'), { recursive: true });
    const state = {
      configHash: 'from-an-older-swerl',
      done: ['warmstart', 'eval-base', 'rft', 'eval-rft', 'dapo-0-0'],
      stages: [],
      elapsedSeconds: 30,
      checkpoint: join(out, 'checkpoints', 'dapo-0-0'),
      dapoIterations: 1,
    };
    writeFileSync(join(out, 'state.json'), JSON.stringify(state));
    const before = snapshot(out);
    const r = train(['--out', out, '--resume']);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('[CANNOT_RESUME]');
    expect(r.stderr).toMatch(/older swerl with other phase names \(dapo-0-0\).*--force/);
    expect(snapshot(out)).toEqual(before);
  });

  it('an empty folder, or one with only an empty checkpoints/, is not a run', async () => {
    const out = join(dir, 'empty');
    mkdirSync(join(out, 'checkpoints'), { recursive: true });
    const r = await startAndStop(['--out', out], () => existsSync(join(out, 'state.json')), 'SIGKILL');
    expect(r.out).not.toContain('RUN_EXISTS');
    expect(existsSync(join(out, 'state.json'))).toBe(true);
  });

  it('a second node train.js into a folder a live run is writing is RUN_LOCKED; after a SIGKILL --resume takes it over', async () => {
    const out = join(dir, 'busy');
    const run = startScript('train.js', ['--preset', 'smoke', '--out', out]);
    const first = run.child;
    try {
      await waitFor(run, () => existsSync(join(out, 'state.json')), 60_000);
      expect(first.exitCode).toBeNull();
      const state = readFileSync(join(out, 'state.json'), 'utf8');
      const second = train(['--out', out, '--resume']);
      expect(second.status).toBe(1);
      expect(second.stderr).toContain('[RUN_LOCKED]');
      expect(second.stderr).toContain(`pid ${first.pid}`);
      expect(second.stdout).not.toContain('resuming after');
      expect(readFileSync(join(out, 'state.json'), 'utf8')).toBe(state);
      expect(train(['--out', out, '--force']).stderr).toContain('[RUN_LOCKED]');
      expect(existsSync(join(out, 'state.json'))).toBe(true); // --force moved nothing aside
      expect(readdirSync(dir).filter((f) => f.startsWith('busy.replaced-'))).toHaveLength(0);
    } finally {
      first.kill('SIGKILL');
      await run.exited;
    }
    // The killed run's lock is stale: --resume continues the run.
    const r = await startAndStop(['--out', out, '--resume'], (o) => o.includes('resuming after'), 'SIGKILL');
    expect(r.out).not.toContain('RUN_LOCKED');
    expect(r.out).toContain('resuming after');
  }, 120_000);

  it.skipIf(!canSandbox)(
    '--force moves the old run aside whole; Ctrl-C and SIGKILL in the first seconds leave a run that --resume continues',
    async () => {
      const out = join(dir, 'forced');
      mkdirSync(join(out, 'rollouts'), { recursive: true });
      writeFileSync(join(out, 'state.json'), '{"done":["base"]}\n');
      writeFileSync(join(out, 'rollouts', 'eval-base.msgpack'), 'records');
      const old = snapshot(out);
      // --force, then Ctrl-C as soon as the new run exists.
      const forced = await startAndStop(
        ['--out', out, '--force'],
        () => existsSync(join(out, 'state.json')) && !existsSync(join(out, 'rollouts')),
        'SIGINT',
      );
      expect(forced.out).toContain('moved the run that was in');
      expect(forced.code).toBe(130);
      const aside = readdirSync(dir).filter((f) => f.startsWith('forced.replaced-'));
      expect(aside).toHaveLength(1);
      expect(snapshot(join(dir, aside[0] as string))).toEqual(old); // whole, not half
      // The interrupted run is a run: a plain rerun refuses it, with the way to go on.
      const again = train(['--out', out]);
      expect(again.status).toBe(1);
      expect(again.stderr).toContain('[RUN_EXISTS]');
      // --resume continues it (killed before its first phase ended), then SIGKILL: still a run.
      const r2 = await startAndStop(['--out', out, '--resume'], (o) => o.includes('resuming after'), 'SIGKILL');
      expect(r2.out).toContain('resuming after 0 finished phases');
      expect(train(['--out', out]).stderr).toContain('[RUN_EXISTS]');
    },
    120_000,
  );
});

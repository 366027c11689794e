/**
 * One writer per run folder (src/pipeline/run-lock.ts): a second claim on a folder a live process
 * holds is RUN_LOCKED and changes nothing; a lock left by a killed process is taken over; a lock
 * from another host or an unreadable one is never presumed stale; a process that exits holding a
 * claim removes it. The CLI's side (a second `node train.js --resume` while a run is going) is in
 * run-folder.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RUN_LOCK_FILE, RunLock } from '../../src/pipeline/run-lock.js';

const root = mkdtempSync(join(tmpdir(), 'swerl-runlock-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = () => join(root, `run-${n++}`);
const lockOf = (dir: string) => JSON.parse(readFileSync(join(dir, RUN_LOCK_FILE), 'utf8'));

describe('RunLock', () => {
  it('a second claim while the first is held is RUN_LOCKED and leaves the lock as it was; after release it succeeds', async () => {
    const dir = fresh();
    const first = await RunLock.claim(dir);
    const before = readFileSync(join(dir, RUN_LOCK_FILE), 'utf8');
    expect(lockOf(dir).pid).toBe(process.pid);
    await expect(RunLock.claim(dir)).rejects.toMatchObject({ code: 'RUN_LOCKED' });
    await expect(RunLock.claim(dir)).rejects.toThrow(/another swerl process \(pid \d+ on .*delete .*run\.lock/);
    expect(readFileSync(join(dir, RUN_LOCK_FILE), 'utf8')).toBe(before);
    await first.release();
    expect(existsSync(join(dir, RUN_LOCK_FILE))).toBe(false);
    const second = await RunLock.claim(dir);
    await first.release(); // not the holder any more: a no-op
    expect(existsSync(join(dir, RUN_LOCK_FILE))).toBe(true);
    await second.release();
  });

  it('a lock whose process is gone (same host) is stale and taken over', async () => {
    const dir = fresh();
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const pid = Number(dead.stdout);
    expect(pid).toBeGreaterThan(0);
    await RunLock.claim(dir).then((l) => l.release()); // creates the folder
    writeFileSync(
      join(dir, RUN_LOCK_FILE),
      JSON.stringify({ pid, host: hostname(), token: 'killed-run', startedAt: '2026-01-01T00:00:00Z' }),
    );
    const lock = await RunLock.claim(dir);
    expect(lockOf(dir).pid).toBe(process.pid);
    expect(lockOf(dir).token).not.toBe('killed-run');
    await lock.release();
  });

  it('a lock from another host, or an unreadable one, is never presumed stale', async () => {
    const dir = fresh();
    await RunLock.claim(dir).then((l) => l.release());
    writeFileSync(
      join(dir, RUN_LOCK_FILE),
      JSON.stringify({ pid: 1 << 30, host: `not-${hostname()}`, token: 't', startedAt: '2026-01-01T00:00:00Z' }),
    );
    await expect(RunLock.claim(dir)).rejects.toMatchObject({ code: 'RUN_LOCKED' });
    writeFileSync(join(dir, RUN_LOCK_FILE), '{"pid": 12');
    await expect(RunLock.claim(dir)).rejects.toThrow(/an unreadable run\.lock/);
    expect(readFileSync(join(dir, RUN_LOCK_FILE), 'utf8')).toBe('{"pid": 12');
  });

  it('a process that exits holding a claim (as Ctrl-C does, through process.exit) removes its lock', () => {
    const dir = fresh();
    // The built module (npm test builds dist/ first), in a process of its own.
    const url = new URL('../../dist/pipeline/run-lock.js', import.meta.url).href;
    const script = `const { RunLock } = await import(${JSON.stringify(url)});
      await RunLock.claim(${JSON.stringify(dir)});
      process.stdout.write('claimed');
      process.exit(130);`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(r.stdout).toBe('claimed');
    expect(r.status).toBe(130);
    expect(existsSync(dir)).toBe(true);
    expect(existsSync(join(dir, RUN_LOCK_FILE))).toBe(false);
  });
});

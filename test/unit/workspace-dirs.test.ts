/**
 * The sandboxes' directories outside the sandbox objects: a process that exits with sandboxes
 * open (here by an uncaught error) removes their workspaces and stops their commands, and the
 * workspaces of a process that was killed outright (a dead or zombie owner) are removed by the
 * next sandbox made in the same directory, while live owners' and unnamed entries stay. A
 * workspace that is a size-capped tmpfs of its own (as root, in a tmpfs dir) is unmounted in both
 * cases: no mount is left behind.
 */
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statfsSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { defaultSandboxDir, isolationAvailable, LocalSandbox } from '../../src/index.js';

const root = join(import.meta.dirname, '..', '..');
const canSandbox = isolationAvailable('bwrap') || isolationAvailable('unshare');

/** Processes whose command line contains `marker`, host-wide. */
function processesWith(marker: string): number {
  const r = spawnSync('pgrep', ['-fc', marker], { encoding: 'utf8' });
  return Number(r.stdout.trim() || '0');
}

const isRoot = process.getuid?.() === 0;
// A tmpfs to make workspaces in: there, as root, each workspace is a tmpfs of its own.
const shm = existsSync('/dev/shm') && statfsSync('/dev/shm').type === 0x01021994 ? '/dev/shm' : null;

/**
 * Whether this process may mount a tmpfs (root with CAP_SYS_ADMIN: LocalSandbox then gives each
 * workspace in a tmpfs dir a tmpfs of its own).
 */
function mountWorks(): boolean {
  if (!isRoot || shm === null) return false;
  const d = mkdtempSync(join(shm, 'swerl-mount-probe-'));
  try {
    const ok = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'swerl-probe', d]).status === 0;
    if (ok) spawnSync('umount', [d]);
    return ok;
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
}
const canMount = mountWorks();
if (isRoot && !canMount) console.warn('workspace-dirs: mount is refused here: no capped (tmpfs) workspaces to test');

/** The mount points under `dir`, as this process's mount table lists them. */
function mountsUnder(dir: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((p) => p.startsWith(`${dir}/`));
}

describe.skipIf(!canSandbox)('sandbox workspaces outside the sandbox objects', () => {
  for (const base of [tmpdir(), ...(shm ? [shm] : [])])
    it(`a process that exits with sandboxes open removes their workspaces and stops their commands (in ${base})`, async () => {
      const dir = mkdtempSync(join(base, 'swerl-exit-'));
      chmodSync(dir, 0o755); // as root, commands run as another uid, which must reach it
      const marker = `${Math.floor(Math.random() * 1e6)}.25`; // a unique `sleep` argument
      const script = `
      const { LocalSandbox } = await import(${JSON.stringify(pathToFileURL(join(root, 'dist', 'index.js')).href)});
      const a = await LocalSandbox.create({ dir: ${JSON.stringify(dir)}, files: { 'a.txt': 'x' } });
      const b = await LocalSandbox.create({ dir: ${JSON.stringify(dir)}, repository: false });
      void a.exec('sleep ${marker}');
      void b.exec('sleep ${marker}');
      await new Promise((r) => setTimeout(r, 500));
      console.log(JSON.stringify({ a: a.root, b: b.root, capped: a.diskCapMiB, pid: process.pid }));
      throw new Error('an uncaught error, with both sandboxes open');`;
      try {
        const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
        expect(r.status, r.stderr).toBe(1);
        expect(r.stderr).toContain('an uncaught error');
        const roots = JSON.parse(r.stdout) as { a: string; b: string; capped: number | null; pid: number };
        expect(roots.a.startsWith(dir) && roots.b.startsWith(dir)).toBe(true);
        if (base === shm && canMount) expect(roots.capped).toBe(1024); // their own tmpfs, now unmounted
        expect(mountsUnder(dir)).toEqual([]);
        expect(readdirSync(dir)).toEqual([]); // both workspaces and both metadata folders
        // ... and the copy of /etc its sandboxes saw, made where workspaces go by default.
        expect(readdirSync(defaultSandboxDir()).filter((n) => n.startsWith(`swerl-etc-${roots.pid}-`))).toEqual([]);
        // The commands die with the sandbox's PID namespace, which the kernel tears down shortly.
        for (let waited = 0; processesWith(`sleep ${marker}`) > 0; waited += 100) {
          expect(waited, 'a sandboxed command outlived its process').toBeLessThan(10_000);
          await new Promise((done) => setTimeout(done, 100));
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }, 60_000);

  it("the next sandbox made in a directory removes dead and zombie owners' workspaces, and only theirs", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'swerl-orphans-'));
    chmodSync(dir, 0o755);
    // A zombie: `sleep 0` exits, and its parent, now `exec`ed into a long sleep, never reaps it.
    const holder = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 60'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const zombie = Number(
        await new Promise<string>((done) => holder.stdout.once('data', (d: Buffer) => done(d.toString()))),
      );
      for (let waited = 0; !/\) Z/.test(readProcStat(zombie)); waited += 50) {
        expect(waited, 'the zombie never appeared').toBeLessThan(5_000);
        await new Promise((done) => setTimeout(done, 50));
      }
      const dead = spawnSync('true').pid as number; // exited and reaped
      const live = holder.pid as number;
      const made = (name: string) => {
        mkdirSync(join(dir, name, 'src'), { recursive: true });
        writeFileSync(join(dir, name, 'src', 'f.js'), 'x\n');
      };
      for (const name of [
        `swerl-ws-${dead}-aaaaaa`,
        `swerl-meta-${dead}-aaaaaa`,
        `swerl-ws-${zombie}-bbbbbb`,
        `swerl-ws-${live}-cccccc`,
        'swerl-ws-dddddd', // a name without a pid (earlier versions' names): its owner is unknown
      ])
        made(name);
      writeFileSync(join(dir, 'notes.txt'), 'not a workspace\n');
      const survivors = ['notes.txt', 'swerl-ws-dddddd', `swerl-ws-${live}-cccccc`].sort();
      const sb = await LocalSandbox.create({ dir, repository: false });
      try {
        const mine = [`swerl-ws-${process.pid}-`, `swerl-meta-${process.pid}-`];
        const kept = readdirSync(dir).filter((n) => !mine.some((p) => n.startsWith(p)));
        expect(kept.sort()).toEqual(survivors);
        expect(readdirSync(dir).filter((n) => mine.some((p) => n.startsWith(p)))).toHaveLength(2);
      } finally {
        await sb.close();
      }
      expect(readdirSync(dir).sort()).toEqual(survivors);
    } finally {
      holder.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it.skipIf(!canMount)("a dead owner's workspace that is a tmpfs of its own is unmounted, then removed", async () => {
    const dir = mkdtempSync(join(shm ?? '', 'swerl-orphan-mount-'));
    chmodSync(dir, 0o755);
    const dead = spawnSync('true').pid as number;
    const ws = join(dir, `swerl-ws-${dead}-eeeeee`);
    try {
      mkdirSync(ws);
      expect(spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'swerl-workspace', ws]).status).toBe(0);
      writeFileSync(join(ws, 'f.js'), 'x\n');
      expect(mountsUnder(dir)).toEqual([ws]);
      const sb = await LocalSandbox.create({ dir, repository: false });
      try {
        expect(existsSync(ws)).toBe(false);
        expect(sb.diskCapMiB).toBe(1024); // its own: a tmpfs too
        expect(mountsUnder(dir)).toEqual([sb.root]); // no repository: no tmpfs for git metadata
      } finally {
        await sb.close();
      }
      expect(mountsUnder(dir)).toEqual([]);
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      spawnSync('umount', ['-l', ws]);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

function readProcStat(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return '';
  }
}

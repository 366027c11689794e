/**
 * The life of LocalSandbox's directories outside the sandbox object: their names carry the owning
 * process's pid (`swerl-ws-<pid>-XXXXXX`, `swerl-meta-<pid>-XXXXXX`, and `swerl-etc-<pid>-XXXXXX`,
 * the copy of /etc its sandboxes see), so that
 * - a process that exits (normally, by process.exit, or by an uncaught error) removes every
 *   workspace it still holds, its worker threads' included, in an 'exit' hook;
 * - a process killed outright (SIGKILL, the OOM killer), whose hook never ran, leaves directories
 *   that the next sandbox made in the same directory removes: their owner is dead.
 * A rollout holds dozens of workspaces at once, and they live in /dev/shm (memory) by default, so
 * a run stopped with Ctrl-C must not leave them behind. A workspace that is its own size-capped
 * tmpfs (LocalSandbox as root) is unmounted before it is removed: a mount point cannot be.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { isMainThread } from 'node:worker_threads';
import { processEnded } from './process-state.js';
import { spawnRelayed, stopRelayedSync } from './spawn-relay.js';

const OWNED = /^swerl-(?:ws|meta|etc)-(\d+)-[A-Za-z0-9]{6}$/;

/**
 * The mkdtemp prefix of this process's workspaces ('ws'), git metadata ('meta'), and the copy of
 * /etc its sandboxes see ('etc').
 */
export function workspacePrefix(kind: 'ws' | 'meta' | 'etc'): string {
  return `swerl-${kind}-${process.pid}-`;
}

const dirsUsed = new Set<string>();
const swept = new Map<string, Promise<number>>();
let hooked = false;

/**
 * Records that this thread makes workspaces in `dir`: on the main thread the exit hook then looks
 * there. The first call per directory also removes the dead processes' workspaces in it (awaited
 * once; later calls get the same promise).
 */
export function useWorkspaceDir(dir: string): Promise<number> {
  dirsUsed.add(dir);
  removeOwnWorkspacesAtExit();
  let p = swept.get(dir);
  if (!p) {
    p = removeOrphanedWorkspaces(dir);
    swept.set(dir, p);
  }
  return p;
}

/**
 * Installs (once, on the main thread) the exit hook that removes this process's workspaces in
 * every directory a sandbox of this thread used, and in `alsoIn` (the default directory, where
 * the evaluation pool's worker threads make theirs).
 */
export function removeOwnWorkspacesAtExit(alsoIn?: string): void {
  if (alsoIn !== undefined) dirsUsed.add(alsoIn);
  if (hooked || !isMainThread) return;
  hooked = true;
  process.on('exit', () => {
    // The commands and git processes still running could write (git init: recreate) a directory
    // after its removal: stop them first.
    stopRelayedSync();
    for (const dir of dirsUsed) removeOwnWorkspacesSync(dir);
  });
}

/** Removes this process's workspaces in `dir` now, synchronously (the exit hook). */
function removeOwnWorkspacesSync(dir: string): number {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  const own = names.filter((name) => Number(OWNED.exec(name)?.[1]) === process.pid);
  const mounted = mountedIn(dir, own);
  // At exit, once: the fork this costs no longer matters.
  if (mounted.length > 0) spawnSync('umount', ['-l', ...mounted], { stdio: 'ignore', env: UMOUNT_ENV });
  let removed = 0;
  for (const name of own) {
    try {
      // A command killed a moment ago may still be writing: retry a non-empty directory.
      rmSync(join(dir, name), { recursive: true, force: true, maxRetries: 3 });
      removed++;
    } catch {
      // another user's file inside, or gone already
    }
  }
  return removed;
}

/**
 * Removes the workspaces in `dir` whose owning process is no longer alive (in this PID
 * namespace) and returns how many it removed. Other processes' live workspaces, this process's
 * own, and names without a pid are left alone.
 */
async function removeOrphanedWorkspaces(dir: string): Promise<number> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return 0;
  }
  const dead = names.filter((name) => {
    const m = OWNED.exec(name);
    return m !== null && !alive(Number(m[1]));
  });
  const mounted = mountedIn(dir, dead);
  if (mounted.length > 0) await unmountLazily(mounted);
  const done = await Promise.all(
    dead.map((name) =>
      rm(join(dir, name), { recursive: true, force: true }).then(
        () => 1,
        () => 0, // not ours to remove (another user's), or raced
      ),
    ),
  );
  return done.reduce<number>((a, b) => a + b, 0);
}

const UMOUNT_ENV = { PATH: '/usr/bin:/bin:/usr/sbin:/sbin' };

/**
 * Which of `names` in `dir` are mount points (their full paths), from this process's
 * /proc/self/mountinfo; none where it cannot be read.
 */
function mountedIn(dir: string, names: string[]): string[] {
  if (names.length === 0) return [];
  let real: string;
  let info: string;
  try {
    real = realpathSync(dir);
    info = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return [];
  }
  const wanted = new Set(names);
  const found = new Set<string>();
  for (const line of info.split('\n')) {
    const field = line.split(' ')[4]; // the mount point, with space, tab, newline, \ octal-escaped
    if (field === undefined) continue;
    const point = field.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
    const name = point.slice(point.lastIndexOf('/') + 1);
    if (dirname(point) === real && wanted.has(name)) found.add(point);
  }
  return [...found];
}

/** `umount -l` of each path (through the spawn relay: no fork of this process). */
function unmountLazily(paths: string[]): Promise<void> {
  return new Promise((done) => {
    const c = spawnRelayed('umount', ['-l', ...paths], { env: UMOUNT_ENV });
    c.on('close', () => done());
    c.on('error', () => done());
  });
}

function alive(pid: number): boolean {
  return pid === process.pid || !processEnded(pid);
}

/**
 * One writer per run folder. `runPipeline` claims `<out>/run.lock` before it reads or writes
 * anything there, so a second `node train.js --out <same folder>` (a `--resume` typed while the
 * run is still going, two seed scripts sharing an `--out`) is refused with RUN_LOCKED instead of
 * interleaving its metrics, state and checkpoints with the first one's.
 *
 * The lock file holds {pid, host, token, startedAt}. It is created with O_EXCL; a lock whose
 * process is gone (same host, no such pid: the run was killed) is stale and taken over, so a
 * SIGKILLed run resumes without a manual step. A lock from another host (a shared file system)
 * is never presumed stale. A process that exits while holding a claim (Ctrl-C's handler calls
 * process.exit) removes its lock in an exit hook.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { SwerlError } from '../errors.js';

/** The lock's file name inside a run folder. */
export const RUN_LOCK_FILE = 'run.lock';

interface LockBody {
  pid: number;
  host: string;
  token: string;
  startedAt: string;
}

/** Whether a process with this pid exists on this host (EPERM: it exists, owned by another user). */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A lock file's body, or null when it is not one (half-written, or not JSON of that shape). */
function parseLock(text: string): LockBody | null {
  try {
    const b = JSON.parse(text) as Partial<LockBody>;
    if (typeof b.pid !== 'number' || typeof b.host !== 'string' || typeof b.token !== 'string') return null;
    return b as LockBody;
  } catch {
    return null;
  }
}

/** The lock at `path`; null when it is missing or unreadable (treated as held by an unknown writer). */
async function readLock(path: string): Promise<LockBody | null> {
  return parseLock(await readFile(path, 'utf8').catch(() => ''));
}

/** A claim on one run folder by this process; see the module comment. */
export class RunLock {
  private readonly token = randomUUID();
  // Removes the lock when the process exits holding it (registered while a claim is held).
  private readonly onExit = () => {
    // Synchronous: an exit hook cannot wait. Gone or replaced: nothing of ours to remove.
    const text = (() => {
      try {
        return readFileSync(this.path, 'utf8');
      } catch {
        return '';
      }
    })();
    if (parseLock(text)?.token === this.token) rmSync(this.path, { force: true });
  };

  private constructor(readonly dir: string) {}

  /**
   * Claims `dir` (created if missing). Throws RUN_LOCKED, changing nothing, when a live process
   * holds it.
   */
  static async claim(dir: string): Promise<RunLock> {
    const lock = new RunLock(dir);
    await lock.take();
    return lock;
  }

  private get path(): string {
    return join(this.dir, RUN_LOCK_FILE);
  }

  private async take(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const body: LockBody = {
      pid: process.pid,
      host: hostname(),
      token: this.token,
      startedAt: new Date().toISOString(),
    };
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await writeFile(this.path, `${JSON.stringify(body)}\n`, { flag: 'wx' });
        process.off('exit', this.onExit);
        process.on('exit', this.onExit);
        return;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      const held = await readLock(this.path);
      if (held === null || held.host !== hostname() || processAlive(held.pid))
        throw new SwerlError(
          `${this.dir} is being written by another swerl process (${
            held ? `pid ${held.pid} on ${held.host}, since ${held.startedAt}` : 'an unreadable run.lock'
          }): wait for it to finish or stop it, then resume; if no process is writing it, delete ${this.path}`,
          'RUN_LOCKED',
        );
      // Stale (its process is gone). Move it aside under a name of our own and check that what
      // moved is the stale lock, not a fresh one another process wrote in between.
      const aside = `${this.path}.stale-${this.token}`;
      try {
        await rename(this.path, aside);
      } catch {
        continue; // someone else moved it first: try again
      }
      const moved = await readLock(aside);
      if (moved?.token !== held.token) {
        // A live claim was moved: put it back, then report the folder as held.
        await rename(aside, this.path).catch(() => {});
        continue;
      }
      await rm(aside, { force: true });
    }
    throw new SwerlError(
      `${this.dir}: could not claim ${RUN_LOCK_FILE} (another process keeps replacing it); stop the other run`,
      'RUN_LOCKED',
    );
  }

  /**
   * Claims the folder again after it was moved away whole (`--force` renames the old run aside,
   * lock included): removes this claim's lock from the moved folder and takes the new one.
   */
  async reclaimAfterMove(movedTo: string): Promise<void> {
    await rm(join(movedTo, RUN_LOCK_FILE), { force: true });
    await this.take();
  }

  /** Releases the claim if the lock is still this one's (idempotent). */
  async release(): Promise<void> {
    process.off('exit', this.onExit);
    const held = await readLock(this.path);
    if (held?.token === this.token) await rm(this.path, { force: true });
  }
}

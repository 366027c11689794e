/**
 * Whether a process has ended, as the kernel sees it: a killed process stays a zombie until its
 * parent reaps it, and kill(pid, 0) still finds it then. Linux's /proc tells the two apart.
 */
import { readFileSync } from 'node:fs';

/**
 * true when `pid` has ended (gone, or a zombie not yet reaped); false while it runs. Without
 * /proc a process kill(pid, 0) finds counts as running (EPERM: another user's, and running).
 */
export function processEnded(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.charAt(stat.lastIndexOf(')') + 2); // after "pid (comm) "
    return state === 'Z' || state === 'X';
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT' && existsProc();
  }
}

// Whether this system has /proc at all (an absent /proc/<pid> then means the process is gone).
function existsProc(): boolean {
  try {
    readFileSync('/proc/self/stat');
    return true;
  } catch {
    return false;
  }
}

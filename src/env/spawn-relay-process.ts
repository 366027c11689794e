/**
 * The spawn relay's child process (see spawn-relay.ts): spawns what its parent asks over IPC and
 * sends back each child's pid, output chunks and exit. It is small, so its fork() is cheap, where
 * a parent holding a model and a KV cache pays for copying its page tables on every spawn.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { RelayRequest, RelayResponse } from './spawn-relay.js';

const send = (m: RelayResponse) => process.send?.(m);
const live = new Map<ChildProcess, boolean>(); // each running child → spawned detached

// SIGKILLs every running child (a detached one's whole process group), synchronously.
function killAll(): void {
  for (const [c, detached] of live) {
    if (c.pid === undefined) continue;
    try {
      process.kill(detached ? -c.pid : c.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

process.on('message', (m: RelayRequest) => {
  if (m.t !== 'spawn') return;
  let child: ChildProcess;
  try {
    child = spawn(m.file, m.args, { cwd: m.cwd, env: m.env, detached: m.detached, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    send({ t: 'error', id: m.id, message: (e as Error).message });
    return;
  }
  live.set(child, m.detached);
  child.on('spawn', () => send({ t: 'spawned', id: m.id, pid: child.pid ?? -1 }));
  child.stdout?.on('data', (d: Buffer) => send({ t: 'data', id: m.id, fd: 1, d }));
  child.stderr?.on('data', (d: Buffer) => send({ t: 'data', id: m.id, fd: 2, d }));
  child.on('error', (e) => {
    live.delete(child);
    send({ t: 'error', id: m.id, message: e.message });
  });
  child.on('close', (code, signal) => {
    live.delete(child);
    send({ t: 'close', id: m.id, code, signal });
  });
});
// The parent is gone, or stopping (its exit hook sends SIGTERM, and waits for this process to end
// before it removes the directories the children work in), or Ctrl-C reached the whole process
// group: nothing is left to report to, and no child may outlive the relay.
const stop = () => {
  killAll();
  process.exit(0);
};
process.on('disconnect', stop);
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

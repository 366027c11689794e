/**
 * The spawn relay's child process (see spawn-relay.ts): spawns what its parent asks over IPC and
 * sends back each child's pid, output chunks and exit. It is small, so its fork() is cheap, where
 * a parent holding a model and a KV cache pays for copying its page tables on every spawn.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { RelayRequest, RelayResponse } from './spawn-relay.js';

const send = (m: RelayResponse) => process.send?.(m);

process.on('message', (m: RelayRequest) => {
  if (m.t !== 'spawn') return;
  let child: ChildProcess;
  try {
    child = spawn(m.file, m.args, { cwd: m.cwd, env: m.env, detached: m.detached, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    send({ t: 'error', id: m.id, message: (e as Error).message });
    return;
  }
  child.on('spawn', () => send({ t: 'spawned', id: m.id, pid: child.pid ?? -1 }));
  child.stdout?.on('data', (d: Buffer) => send({ t: 'data', id: m.id, fd: 1, d }));
  child.stderr?.on('data', (d: Buffer) => send({ t: 'data', id: m.id, fd: 2, d }));
  child.on('error', (e) => send({ t: 'error', id: m.id, message: e.message }));
  child.on('close', (code, signal) => send({ t: 'close', id: m.id, code, signal }));
});
// The parent is gone: nothing is left to report to.
process.on('disconnect', () => process.exit(0));

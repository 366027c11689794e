/**
 * spawnRelayed: child processes spawned by a small helper process instead of this one. Node's
 * spawn forks the calling process, and the fork copies its page tables: with a model and a KV
 * cache resident (700 MB), a spawn took 27 ms of the event loop's time against 1.4 ms from a
 * small process (200 spawns of `sh -c true`; bench: env.spawn.relayed_per_s), and in a profile
 * of an evaluation `ChildProcess.spawn` was 42% of the main thread's time. The relay is forked once, lazily; each call sends the request over IPC and
 * gets back the pid, the output chunks (in order, per stream) and the exit. The command, its
 * arguments, environment and working directory are the caller's, so what it does and prints is
 * unchanged. SWERL_SPAWN_RELAY=0 spawns directly.
 */
import { type ChildProcess, fork, spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { compiledScript } from '../compiled-script.js';
import { processEnded } from './process-state.js';

/** A request to the relay. */
export interface RelayRequest {
  t: 'spawn';
  id: number;
  file: string;
  args: string[];
  cwd?: string;
  env: Record<string, string>;
  detached: boolean;
}

/** What the relay sends back. */
export type RelayResponse =
  | { t: 'spawned'; id: number; pid: number }
  | { t: 'data'; id: number; fd: 1 | 2; d: Uint8Array }
  | { t: 'close'; id: number; code: number | null; signal: NodeJS.Signals | null }
  | { t: 'error'; id: number; message: string };

/**
 * The part of a ChildProcess the sandboxes use: `pid` (set when 'spawn' is emitted),
 * `stdout`/`stderr` 'data' events, and 'close' (code, signal) or 'error' (Error), exactly one of
 * them.
 */
export interface SpawnedChild {
  pid?: number | undefined;
  stdout: EventEmitter;
  stderr: EventEmitter;
  on(event: 'spawn', f: () => void): this;
  on(event: 'close', f: (code: number | null, signal: NodeJS.Signals | null) => void): this;
  on(event: 'error', f: (e: Error) => void): this;
}

class RelayedChild extends EventEmitter implements SpawnedChild {
  pid: number | undefined = undefined;
  detached = false;
  readonly stdout = new EventEmitter();
  readonly stderr = new EventEmitter();
}

let relay: ChildProcess | null = null;
let nextId = 1;
const pending = new Map<number, RelayedChild>();

function relayProcess(): ChildProcess {
  if (relay) return relay;
  const r = fork(compiledScript(import.meta.url, 'spawn-relay-process.js'), [], {
    serialization: 'advanced',
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    execArgv: [],
  });
  r.on('message', (m: RelayResponse) => {
    const c = pending.get(m.id);
    if (!c) return;
    if (m.t === 'spawned') {
      c.pid = m.pid;
      c.emit('spawn');
    } else if (m.t === 'data') (m.fd === 1 ? c.stdout : c.stderr).emit('data', Buffer.from(m.d));
    else {
      pending.delete(m.id);
      settle();
      if (m.t === 'close') c.emit('close', m.code, m.signal);
      else c.emit('error', new Error(m.message));
    }
  });
  // A relay that died takes its requests with it: they fail, and the next call forks a new one.
  r.on('exit', () => {
    if (relay === r) relay = null;
    const lost = [...pending.values()];
    pending.clear();
    for (const c of lost) c.emit('error', new Error('the spawn relay process exited'));
  });
  r.on('error', () => {});
  relay = r;
  settle();
  return r;
}

// The relay keeps the event loop alive only while a request is in flight, as a child would.
function settle(): void {
  if (!relay) return;
  if (pending.size > 0) {
    relay.ref();
    relay.channel?.ref();
  } else {
    relay.unref();
    relay.channel?.unref();
  }
}

/** Spawns `file args` with the given environment (stdin ignored, stdout and stderr piped). */
export function spawnRelayed(
  file: string,
  args: string[],
  o: { cwd?: string; env: Record<string, string>; detached?: boolean },
): SpawnedChild {
  if (process.env.SWERL_SPAWN_RELAY === '0')
    return spawn(file, args, {
      cwd: o.cwd,
      env: o.env,
      detached: o.detached ?? false,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  const c = new RelayedChild();
  c.detached = o.detached ?? false;
  const id = nextId++;
  const r = relayProcess();
  pending.set(id, c);
  settle();
  r.send({ t: 'spawn', id, file, args, cwd: o.cwd, env: o.env, detached: o.detached ?? false } satisfies RelayRequest);
  return c;
}

/**
 * Stops the relay and every child it runs, synchronously, for an exit hook that is about to
 * remove the directories those children work in: SIGTERM to the relay, which SIGKILLs all its
 * children (those not yet reported started too) and exits; then a wait, of up to 2 s, until it
 * has. The children it has reported started are SIGKILLed from here as well, in case the relay
 * is too stuck to.
 */
export function stopRelayedSync(): void {
  for (const c of pending.values()) {
    if (c.pid === undefined || c.pid <= 0) continue;
    try {
      process.kill(c.detached ? -c.pid : c.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  const pid = relay?.pid;
  if (pid === undefined) return;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return; // already gone
  }
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let waited = 0; waited < 2000 && !processEnded(pid); waited += 5) Atomics.wait(pause, 0, 0, 5);
}

/**
 * A real `node` child process for end-to-end tests of the package's scripts (train.js,
 * scripts/*.mjs): started in the package folder with stdout and stderr collected together, so a
 * test can wait on its output, stop it with a signal, and read how it exited.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

/** The package folder (test/helpers/ is two below it). */
export const PACKAGE_ROOT = join(import.meta.dirname, '..', '..');

/** A started script: the child, its output so far, and how it ended once it has. */
export interface NodeScript {
  child: ChildProcess;
  /** stdout and stderr as received so far, interleaved in arrival order. */
  output(): string;
  /** Resolves when the process has exited and its streams are closed. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts `node <script> ...args` in the package folder. `script` is relative to the package
 * folder; `env` replaces the inherited environment when given.
 */
export function startScript(script: string, args: string[], env?: NodeJS.ProcessEnv): NodeScript {
  const child = spawn(process.execPath, [join(PACKAGE_ROOT, script), ...args], {
    cwd: PACKAGE_ROOT,
    env: env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (d: Buffer) => {
    output += d;
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  );
  return { child, output: () => output, exited };
}

/** Polls `ready` every 50 ms until it holds, the process exits, or `timeoutMs` passes; whether it held. */
export async function waitFor(script: NodeScript, ready: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (ready()) return true;
    if (script.child.exitCode !== null || script.child.signalCode !== null || Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
}

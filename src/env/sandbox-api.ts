/**
 * The interface every sandbox implements (LocalSandbox, DockerSandbox): what the scaffold, the
 * episode loop and evaluatePatch need, so a config switches between them.
 */
import type { Shell, ShellOptions } from './persistent-shell.js';
import type { ExecResult } from './sandbox.js';

/** A workspace in which an agent's commands run isolated from the host. */
export interface Sandbox {
  /** How commands are isolated: 'bwrap' | 'unshare' | 'none' (local) or 'docker'. */
  readonly isolation: string;
  /** The workspace as commands see it (an absolute path). */
  readonly workdir: string;
  /** Runs `bash -c command` in the workspace. */
  exec(command: string, o?: { timeoutMs?: number }): Promise<ExecResult>;
  /** Reads a workspace file (PATH_ESCAPE when it resolves outside the workspace). */
  readFile(path: string): Promise<string>;
  /**
   * Writes a workspace file, creating directories (PATH_ESCAPE when it resolves outside);
   * `executable` sets its mode to 0755.
   */
  writeFile(path: string, content: string, o?: { executable?: boolean }): Promise<void>;
  /** The unified diff of the workspace against its initial state (`.swerl*` excluded). */
  diff(): Promise<string>;
  /**
   * Opens a persistent shell (persistent-shell.ts): cwd, variables and functions carry over from
   * one `run` to the next. Optional: the episode's `shell: 'persistent'` needs it.
   */
  openShell?(o?: ShellOptions): Promise<Shell>;
  /** Kills every process it started and removes the workspace. */
  close(): Promise<void>;
}

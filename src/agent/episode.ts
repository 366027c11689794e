/**
 * One agent episode on a task: the ReAct loop of the paper's scaffold over any policy (the engine
 * in training, the scripted expert for warm-start data, or a remote model), with its limits and
 * its reward (the task's tests, plus the paper's turn-count penalty).
 */
import { DockerSandbox, type DockerSandboxOptions } from '../env/docker-sandbox.js';
import { taskImage } from '../env/evaluate.js';
import type { Shell } from '../env/persistent-shell.js';
import { LocalSandbox, type SandboxOptions } from '../env/sandbox.js';
import type { Sandbox } from '../env/sandbox-api.js';
import { shellQuote } from '../env/shell-quote.js';
import type { SweTask } from '../env/tasks.js';
import { invalidArgument, SwerlError } from '../errors.js';
import {
  type ActionFormat,
  type AgentMessage,
  checkFormat,
  checkPromptStyle,
  formatErrorMessage,
  installTools,
  type ParsedAction,
  type PromptStyle,
  parseAction,
  runCommand,
  scaffoldPrompts,
  shellPrompt,
  shellState,
  truncateObservation,
} from './scaffold.js';
import { maskTimings } from './timings.js';

/**
 * A policy: the conversation so far in, the next assistant message out. A policy that has parsed
 * the message's action itself (the rollout coordinator does, on its worker threads) returns both;
 * the action must be what `parseAction(content, format)` gives.
 */
export type Policy = (messages: AgentMessage[]) => Promise<string | { content: string; action: ParsedAction }>;

/** One turn of a trajectory. */
export interface Turn {
  action: string;
  command: string | null;
  /** 'cannot extract command' | 'multiple commands extracted' when the action was malformed (nothing ran). */
  formatError: string | null;
  observation: string;
  exitCode: number | null;
}

/** An episode's record, in the rollout format. */
export interface Trajectory {
  instance_id: string;
  messages: AgentMessage[];
  turns: Turn[];
  /** The submitted diff ('' unless the agent submitted). */
  patch: string;
  finishReason: 'submit' | 'max_turns' | 'max_context' | 'timeout';
}

/** Options of {@link runEpisode}. */
export interface EpisodeOptions {
  task: SweTask;
  policy: Policy;
  /** Turns (actions) at most (default 40, the paper's stage 1). */
  maxTurns?: number;
  /** Characters kept of each observation (default 10,000: head and tail). */
  maxObservationChars?: number;
  /** Ends the episode when the conversation's size (by `contextSize`) exceeds this. */
  maxContext?: number;
  /** Size of the conversation (default: characters); pass a token counter for token limits. */
  contextSize?: (messages: AgentMessage[]) => number | Promise<number>;
  format?: ActionFormat;
  /** The scaffold's prompts (default 'paper'; scaffoldPrompts). */
  prompt?: PromptStyle;
  /**
   * Append the prompt style's one-shot demonstration (oneShotDemonstration) to the system prompt
   * (default false), as the paper does only to sample RFT's data from the base model.
   */
  oneShot?: boolean;
  /** Per-command timeout (default 60 s). */
  commandTimeoutMs?: number;
  /**
   * Mask the wall-clock figures test runners print (maskTimings) in observations, so that an
   * episode is a function of the policy alone (default false: observations as the command wrote them).
   */
  maskTimings?: boolean;
  /** Ends the episode (finishReason 'timeout') when aborted: checked before each turn. */
  signal?: AbortSignal;
  /**
   * LocalSandbox options (the default), or `{ kind: 'docker', ...DockerSandboxOptions }`. A Docker
   * episode runs in the task's image (taskImage: `task.image`, else SWE-bench's name for the
   * instance, else this `image`), the same one evaluatePatch grades it in.
   */
  sandbox?: Omit<SandboxOptions, 'files'> | EpisodeDockerOptions;
  /**
   * How the agent's commands run: 'per-command' (default: a fresh `bash -c` each, the working
   * directory carried in `.swerl/cwd`) or 'persistent' (one shell for the episode, the sandbox's
   * openShell: variables, functions and background jobs carry over too; docs/sandbox.md).
   */
  shell?: 'per-command' | 'persistent';
}

/** Docker options of an episode: DockerSandboxOptions with the image optional (taskImage picks it). */
export type EpisodeDockerOptions = { kind: 'docker' } & Omit<DockerSandboxOptions, 'files' | 'image'> & {
    image?: string;
  };

/** Opens the episode's sandbox with the task's repository. */
async function openSandbox(task: SweTask, o: EpisodeOptions['sandbox']): Promise<Sandbox> {
  if (o && 'kind' in o && o.kind === 'docker') {
    const { kind: _kind, image, ...rest } = o;
    return DockerSandbox.create({
      workdir: task.files ? '/project' : '/testbed',
      ...rest,
      image: taskImage(task, image),
      files: task.files,
    });
  }
  return LocalSandbox.create({ ...((o as SandboxOptions | undefined) ?? {}), files: task.files });
}

/** Runs the scaffold's loop until submit, max turns or max context. */
export async function runEpisode(o: EpisodeOptions): Promise<Trajectory> {
  if (!o?.task || typeof o.task !== 'object') throw invalidArgument('task', 'a task', o?.task);
  const docker = o.sandbox !== undefined && 'kind' in o.sandbox && o.sandbox.kind === 'docker';
  if (!o.task.files && !docker)
    throw invalidArgument('task', "a task with an inline repository (files), or sandbox { kind: 'docker' }", o.task);
  const maxTurns = o.maxTurns ?? 40;
  const format = checkFormat(o.format ?? 'command');
  const promptStyle = checkPromptStyle(o.prompt ?? 'paper');
  if (o.oneShot !== undefined && typeof o.oneShot !== 'boolean')
    throw invalidArgument('oneShot', 'true or false', o.oneShot);
  const maxObs = o.maxObservationChars ?? 10_000;
  const shellMode = o.shell ?? 'per-command';
  if (shellMode !== 'per-command' && shellMode !== 'persistent')
    throw invalidArgument('shell', "'per-command' or 'persistent'", shellMode);
  const size = o.contextSize ?? ((m: AgentMessage[]) => m.reduce((a, x) => a + x.content.length, 0));
  const sb = await openSandbox(o.task, o.sandbox);
  try {
    await installTools(sb);
    const shell = shellMode === 'persistent' ? await openEpisodeShell(sb) : null;
    const messages: AgentMessage[] = scaffoldPrompts(promptStyle, o.task, sb.workdir, { oneShot: o.oneShot === true });
    const turns: Turn[] = [];
    let finishReason: Trajectory['finishReason'] = 'max_turns';
    let patch = '';
    while (turns.length < maxTurns) {
      if (o.signal?.aborted) {
        finishReason = 'timeout';
        break;
      }
      const response = await o.policy(messages.map((m) => ({ ...m })));
      const action = typeof response === 'string' ? response : response.content;
      messages.push({ role: 'assistant', content: action });
      const parsed = typeof response === 'string' ? parseAction(action, format) : response.action;
      const state = await shellState(sb);
      if (parsed.kind === 'error') {
        const observation = `${formatErrorMessage(parsed.error)}\n${shellPrompt(state.cwd, state.file)}`;
        turns.push({ action, command: null, formatError: parsed.error, observation, exitCode: null });
        messages.push({ role: 'user', content: observation });
      } else if (parsed.command.trim() === 'submit') {
        patch = await sb.diff();
        turns.push({ action, command: 'submit', formatError: null, observation: '', exitCode: 0 });
        finishReason = 'submit';
        break;
      } else {
        const r = shell
          ? await runInShell(shell, parsed.command, o.commandTimeoutMs ?? 60_000)
          : await runCommand(sb, parsed.command, o.commandTimeoutMs ?? 60_000);
        const after = await shellState(sb);
        const output = o.maskTimings ? maskTimings(r.output) : r.output;
        const body = truncateObservation(output.replace(/\n+$/, ''), maxObs);
        const observation = `${body}${body ? '\n' : ''}${shellPrompt(after.cwd, after.file)}`;
        turns.push({ action, command: parsed.command, formatError: null, observation, exitCode: r.exitCode });
        messages.push({ role: 'user', content: observation });
      }
      if (o.maxContext !== undefined && (await size(messages)) > o.maxContext) {
        finishReason = 'max_context';
        break;
      }
    }
    return { instance_id: o.task.instance_id, messages, turns, patch, finishReason };
  } finally {
    await sb.close();
  }
}

/**
 * The episode's persistent shell, set up as runCommand sets up each command: SWERL_WS exported and
 * the tools first on PATH (once, when the shell starts or restarts), and the working directory
 * written to `.swerl/cwd` after each command, inside the shell, for shellState.
 */
async function openEpisodeShell(sb: Sandbox): Promise<Shell> {
  if (typeof sb.openShell !== 'function')
    throw new SwerlError(`a ${sb.isolation} sandbox has no persistent shell`, 'INVALID_ARGUMENT');
  const ws = sb.workdir;
  return sb.openShell({
    init: `export SWERL_WS=${shellQuote(ws)} PATH=${shellQuote(`${ws}/.swerl/bin`)}:$PATH`,
    afterEach: `pwd > ${shellQuote(`${ws}/.swerl/cwd`)}`,
  });
}

/** One agent command in the persistent shell, with runCommand's observation handling. */
async function runInShell(
  shell: Shell,
  command: string,
  timeoutMs: number,
): Promise<{ output: string; exitCode: number; timedOut: boolean }> {
  const r = await shell.run(command, { timeoutMs });
  let output = r.output;
  if (r.timedOut) output += '\n[the command timed out and was killed]';
  return { output, exitCode: r.exitCode, timedOut: r.timedOut };
}

/**
 * The paper's turn-count penalty (arXiv 2508.03501): 0 up to `threshold` turns, then
 * (threshold − turns) / (maxTurns − threshold), reaching −1 at maxTurns.
 *
 * It is defined for every threshold: when `threshold >= maxTurns` no episode can run past the
 * threshold, so the penalty is 0 (off) — the formula's 0/0 at turns = threshold = maxTurns was a
 * NaN reward that crashed the trainer. (At turns = threshold the formula gives 0 too, so the early
 * return changes no value where the formula was defined.) The pipeline's config refuses a DAPO
 * stage whose maxTurns equals the threshold (resolveConfig), as a penalty that can never act.
 * Turns beyond maxTurns are refused: the penalty would leave [−1, 0].
 */
export function turnPenalty(turns: number, maxTurns: number, threshold = 10): number {
  if (typeof maxTurns !== 'number' || !Number.isFinite(maxTurns) || maxTurns < 0)
    throw invalidArgument('maxTurns', 'a number >= 0', maxTurns);
  if (typeof threshold !== 'number' || !Number.isFinite(threshold) || threshold < 0)
    throw invalidArgument('threshold', 'a number >= 0', threshold);
  if (typeof turns !== 'number' || !Number.isFinite(turns) || turns < 0 || turns > maxTurns)
    throw invalidArgument('turns', `a number in [0, maxTurns ${maxTurns}]`, turns);
  if (turns <= threshold) return 0;
  // Here threshold < turns <= maxTurns, so the divisor is positive.
  return (threshold - turns) / (maxTurns - threshold);
}

/**
 * R_final = R (1 when resolved, else 0) + the turn penalty (turnPenalty). A `threshold` of null
 * turns the penalty off: the reward is R alone.
 */
export function episodeReward(
  resolved: boolean,
  turns: number,
  maxTurns: number,
  threshold: number | null = 10,
): number {
  return (resolved ? 1 : 0) + (threshold === null ? 0 : turnPenalty(turns, maxTurns, threshold));
}

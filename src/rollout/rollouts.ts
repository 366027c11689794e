/**
 * The rollout coordinator: many agent episodes at once over one engine. Each episode is the
 * scaffold's loop (runEpisode) with a policy that lives in an engine session: the conversation is
 * rendered in ChatML a delta at a time (only the new observation is appended and prefilled; the
 * KV of everything before stays in the session), responses are generated up to <|im_end|>, and
 * the session's tokens, the generated spans and the engine's logprobs become the rollout record.
 * The G samples of a task fork one session that holds the prompt, so it is prefilled once.
 * Commands run in sandboxes while other episodes generate. The text work around the model
 * (rendering and tokenizing observations, decoding responses and parsing their actions) runs on
 * one piscina pool (TextPool), and rewards are evaluated on another (evaluatePatches) as episodes
 * finish, in the sandbox kind and image the episode ran in; a patch that another sample of the
 * same task in the call already produced takes that grading (GradeMemo) instead of a new one.
 *
 * Failures: an episode whose sandbox or grader fails (not the policy's doing) becomes a record
 * with `error`, which training and Pass@k leave out; its siblings go on. A failure of the policy
 * itself (the engine) is fatal: the episodes in flight are aborted, every session is closed, and
 * runRollouts rejects with that error once they have all ended.
 */

import { setMaxListeners } from 'node:events';
import { type EpisodeOptions, episodeReward, runEpisode } from '../agent/episode.js';
import type { ActionFormat, AgentMessage, ParsedAction } from '../agent/scaffold.js';
import type { Engine, GenerateRequest, Generation } from '../engine/engine.js';
import type { EvaluateOptions, Evaluation } from '../env/evaluate.js';
import { evaluatePatches } from '../env/evaluate-pool.js';
import type { SweTask } from '../env/tasks.js';
import { invalidArgument, SwerlError } from '../errors.js';
import type { SamplingParams } from '../sample.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import { checkInteger } from '../validate.js';
import { GradeMemo } from './grade-memo.js';
import type { RolloutRecord, RolloutTurn } from './record.js';
import { TextPool } from './text-pool.js';
import { runTextJob, type TextJob } from './text-work.js';

/** What the coordinator needs of a session (Session and RemoteSession have it). */
interface SessionLike {
  generate(r: GenerateRequest & { append: ArrayLike<number> }): Promise<Generation>;
  fork(): SessionLike;
  close(): void;
}

/** Options of {@link runRollouts}. */
export interface RolloutOptions {
  engine: Pick<Engine, 'openSession'> | { openSession(): SessionLike };
  tokenizer: Tokenizer;
  tasks: SweTask[];
  /** Samples per task (G; default 1). Records come task by task, samples in order. */
  samplesPerTask?: number;
  /** Default temperature 1, no filters (what RL needs). The seed is set per sample. */
  sampling?: Omit<SamplingParams, 'seed'>;
  /** Base seed: sample j of task i uses seed + i·G + j (default 0), unless `sampleSeed` is given. */
  seed?: number;
  /**
   * The sampling seed of sample j of task i, instead of seed + i·G + j: an integer in [0, 2^53).
   * The pipeline passes hashed seeds (rolloutSeeds in src/rl/seeds.ts), so that no two samples of
   * a run share one.
   */
  sampleSeed?: (task: number, sample: number) => number;
  /**
   * The call's name in its records' advantage groups (RolloutRecord.group is `<group>:<i>` for
   * task i; default the base seed), so that the tasks of two calls never share a group.
   */
  group?: string;
  maxTurns?: number;
  /** Tokens generated per turn at most (default 512). */
  maxTokensPerTurn?: number;
  /** Tokens in the whole conversation at most (default 8192). */
  maxContextTokens?: number;
  /** Wall time per episode (default 10 minutes); the episode ends with finishReason 'timeout'. */
  episodeTimeoutMs?: number;
  commandTimeoutMs?: number;
  maxObservationChars?: number;
  /**
   * Mask test runners' wall-clock figures in observations (maskTimings; default true), so that a
   * seed and the weights determine the records, whatever the machine's load.
   */
  maskTimings?: boolean;
  /** Episodes in flight (default 16). */
  concurrency?: number;
  /**
   * Render, tokenize, decode and parse on a pool of worker threads (TextPool; default true), or
   * on the calling thread (false). The records are the same either way.
   */
  textWorkers?: boolean;
  sandbox?: EpisodeOptions['sandbox'];
  format?: ActionFormat;
  /** The scaffold's prompts (default 'paper'). */
  prompt?: EpisodeOptions['prompt'];
  /**
   * The turn penalty's threshold (default 10; arXiv 2508.03501; turnPenalty): episodes longer
   * than it lose up to 1 of reward at maxTurns. At or above maxTurns the penalty is 0; null turns
   * it off (the reward is 1 when resolved, else 0).
   */
  turnPenaltyThreshold?: number | null;
  /**
   * Append the prompt style's one-shot demonstration to the system prompt (default false; see
   * EpisodeOptions.oneShot). The records hold the conversation as sampled, demonstration included.
   */
  oneShot?: boolean;
  /** Called as each episode's record is complete (progress bars). */
  onRecord?: (r: RolloutRecord) => void;
  /** Further grading attempts of an evaluation that failed for the grader's reasons (default 2). */
  evaluationRetries?: number;
}

/** Runs a text job (text-work.ts): on the worker pool, or on this thread with the same code. */
type TextWork = TextPool['run'];

/** One task's group: the session holding the prompt, prefilled once, that samples fork. */
class PromptGroup {
  #parent: Promise<{ session: SessionLike; text: string; tokens: Int32Array }> | null = null;
  #session: SessionLike | null = null; // the parent's, once opened (closed with the last sample)
  #left: number;
  constructor(
    private readonly open: () => SessionLike,
    samples: number,
  ) {
    this.#left = samples;
  }

  /**
   * A session holding all of the prompt's tokens but the last (the caller appends it), and that
   * token. `prompt` is the episode's first prompt, rendered and tokenized.
   */
  async fork(prompt: {
    text: string;
    tokens: Int32Array;
  }): Promise<{ session: SessionLike; last: number; prompt: Int32Array }> {
    if (this.#parent === null) {
      const { text, tokens } = prompt;
      const session = this.open();
      this.#session = session;
      this.#parent = session
        .generate({ append: tokens.subarray(0, tokens.length - 1), maxTokens: 0 })
        .then(() => ({ session, text, tokens }));
    }
    const p = await this.#parent;
    this.#left--;
    let session: SessionLike;
    let tokens = p.tokens;
    if (p.text === prompt.text) session = p.session.fork();
    else {
      // A different prompt (another workdir): its own session.
      tokens = prompt.tokens;
      session = this.open();
      await session.generate({ append: tokens.subarray(0, tokens.length - 1), maxTokens: 0 });
    }
    if (this.#left === 0) p.session.close();
    return { session, last: tokens[tokens.length - 1] as number, prompt: tokens };
  }

  /** Closes the prompt's session if samples that never started still held it (after a fatal error). */
  async dispose(): Promise<void> {
    if (this.#session === null || this.#left === 0) return;
    this.#left = 0;
    await this.#parent?.catch(() => null); // its prefill settles first
    this.#session.close();
  }
}

/** An error of the policy (the engine): fatal to the whole call. */
class PolicyFailure extends Error {
  constructor(readonly reason: unknown) {
    super(reason instanceof Error ? reason.message : String(reason));
  }
}

/** Runs G episodes per task over the engine; returns their records (task-major). */
export async function runRollouts(o: RolloutOptions): Promise<RolloutRecord[]> {
  if (typeof o !== 'object' || o === null) throw invalidArgument('options', 'an object', o);
  if (!Array.isArray(o.tasks)) throw invalidArgument('tasks', 'an array of tasks', o.tasks);
  const G = checkInteger('samplesPerTask', o.samplesPerTask ?? 1, 1, 1 << 16);
  const concurrency = checkInteger('concurrency', o.concurrency ?? 16, 1, 1 << 16);
  const maxTokensPerTurn = checkInteger('maxTokensPerTurn', o.maxTokensPerTurn ?? 512, 1, 1 << 20);
  const maxContextTokens = checkInteger('maxContextTokens', o.maxContextTokens ?? 8192, 16, 1 << 24);
  const maxTurns = checkInteger('maxTurns', o.maxTurns ?? 40, 1, 1 << 16);
  // Checked here, before any episode runs, rather than when the first reward is computed.
  const turnPenaltyThreshold = o.turnPenaltyThreshold === undefined ? 10 : o.turnPenaltyThreshold;
  if (
    turnPenaltyThreshold !== null &&
    (typeof turnPenaltyThreshold !== 'number' || !Number.isFinite(turnPenaltyThreshold) || turnPenaltyThreshold < 0)
  )
    throw invalidArgument('turnPenaltyThreshold', 'a number >= 0, or null (no penalty)', turnPenaltyThreshold);
  if (o.oneShot !== undefined && typeof o.oneShot !== 'boolean')
    throw invalidArgument('oneShot', 'true or false', o.oneShot);
  if (o.evaluationRetries !== undefined) checkInteger('evaluationRetries', o.evaluationRetries, 0, 100);
  if (o.sampleSeed !== undefined && typeof o.sampleSeed !== 'function')
    throw invalidArgument('sampleSeed', 'a function (task, sample) => seed', o.sampleSeed);
  if (o.group !== undefined && typeof o.group !== 'string') throw invalidArgument('group', 'a string', o.group);
  const seedOf = (i: number, j: number): number => {
    if (o.sampleSeed === undefined) return (o.seed ?? 0) + i * G + j;
    const seed = o.sampleSeed(i, j);
    if (!Number.isSafeInteger(seed) || seed < 0)
      throw invalidArgument('sampleSeed(task, sample)', 'an integer in [0, 2^53)', seed);
    return seed;
  };
  const groupName = o.group ?? String(o.seed ?? 0);
  const imEnd = o.tokenizer.tokenToId('<|im_end|>');
  if (imEnd === undefined) throw invalidArgument('tokenizer', 'a ChatML tokenizer (with <|im_end|>)', 'none');
  const open = () => (o.engine as { openSession(): SessionLike }).openSession();
  const groups = o.tasks.map(() => new PromptGroup(open, G));
  const pool = (o.textWorkers ?? true) ? TextPool.for(o.tokenizer) : null;
  const text: TextWork = pool
    ? (job) => pool.run(job)
    : async <K extends TextJob['op']>(job: TextJob & { op: K }) => runTextJob<K>(o.tokenizer, job);
  const jobs = o.tasks.flatMap((task, i) => Array.from({ length: G }, (_, j) => ({ task, i, j })));
  const grades = new GradeMemo();
  // Every seed before any episode runs: a bad one is refused with nothing started.
  const seeds = jobs.map(({ i, j }) => seedOf(i, j));
  const out: RolloutRecord[] = new Array(jobs.length);
  let next = 0;
  // The first fatal error; it stops new episodes and aborts the ones in flight.
  let fatal: PolicyFailure | null = null;
  const abort = new AbortController();
  setMaxListeners(concurrency + 8, abort.signal); // one listener per episode in flight
  const worker = async () => {
    while (next < jobs.length && fatal === null) {
      const k = next++;
      const { task, i, j } = jobs[k] as (typeof jobs)[number];
      try {
        const r = await episode(o, text, task, j, groups[i] as PromptGroup, abort.signal, {
          seed: seeds[k] as number,
          imEnd,
          maxTokensPerTurn,
          maxContextTokens,
          maxTurns,
          turnPenaltyThreshold,
          group: `${groupName}:${i}`,
          grades,
        });
        out[k] = r;
        if (fatal === null) o.onRecord?.(r);
      } catch (e) {
        // The policy's failure, or a bug of this coordinator's: either way the phase stops, and
        // only once every episode in flight has ended and closed its session.
        fatal ??= e instanceof PolicyFailure ? e : new PolicyFailure(e);
        abort.abort();
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, jobs.length) }, worker));
  } finally {
    await Promise.all(groups.map((g) => g.dispose()));
  }
  if (fatal !== null) throw (fatal as PolicyFailure).reason;
  return out;
}

async function episode(
  o: RolloutOptions,
  text: TextWork,
  task: SweTask,
  sample: number,
  group: PromptGroup,
  fatal: AbortSignal,
  p: {
    seed: number;
    imEnd: number;
    maxTokensPerTurn: number;
    maxContextTokens: number;
    maxTurns: number;
    turnPenaltyThreshold: number | null;
    /** The record's advantage group (RolloutRecord.group). */
    group: string;
    /** The batch's gradings: a repeated (task, patch) is graded once. */
    grades: GradeMemo;
  },
): Promise<RolloutRecord> {
  const t0 = performance.now();
  const tokens: number[] = [];
  const gen: number[] = []; // 1 where generated
  const lp: number[] = [];
  const spans: { start: number; end: number }[] = [];
  let session: SessionLike | null = null;
  let sent = 0; // messages already in the session
  let openTurn = false; // the last response lacks its <|im_end|> (cut by length)
  let generateMs = 0;
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), o.episodeTimeoutMs ?? 600_000);
  const onFatal = () => timeout.abort();
  fatal.addEventListener('abort', onFatal);
  const push = (ids: ArrayLike<number>, generated: boolean, logprobs?: ArrayLike<number>) => {
    for (let k = 0; k < ids.length; k++) {
      tokens.push(ids[k] as number);
      gen.push(generated ? 1 : 0);
      lp.push(generated && logprobs ? (logprobs[k] as number) : 0);
    }
  };
  // The new messages after a response, rendered and tokenized once: by the context check that
  // follows each turn, for the next turn's append.
  let observed: { from: number; to: number; tokens: Int32Array; contextTokens: number } | null = null;
  const observe = async (messages: AgentMessage[]) => {
    if (observed === null || observed.from !== sent || observed.to !== messages.length) {
      const r = await text({ op: 'observe', messages: messages.slice(sent), responseOpen: openTurn });
      observed = { from: sent, to: messages.length, ...r };
    }
    return observed;
  };
  const policy = async (messages: AgentMessage[]): Promise<{ content: string; action: ParsedAction }> => {
    if (fatal.aborted) throw new PolicyFailure(new Error('aborted: another episode failed'));
    try {
      return await respond(messages);
    } catch (e) {
      throw e instanceof PolicyFailure ? e : new PolicyFailure(e);
    }
  };
  const respond = async (messages: AgentMessage[]): Promise<{ content: string; action: ParsedAction }> => {
    const g0 = performance.now();
    let append: Int32Array;
    if (session === null) {
      const f = await group.fork(await text({ op: 'prompt', messages }));
      session = f.session;
      push(f.prompt, false);
      append = Int32Array.of(f.last);
    } else {
      append = (await observe(messages)).tokens;
      push(append, false);
    }
    sent = messages.length + 1; // the response this call returns
    const room = p.maxContextTokens - tokens.length;
    const g = await session.generate({
      append,
      maxTokens: Math.max(1, Math.min(p.maxTokensPerTurn, room)),
      stop: [p.imEnd],
      sampling: { temperature: 1, ...(o.sampling ?? {}), seed: p.seed },
      signal: timeout.signal,
    });
    spans.push({ start: tokens.length, end: tokens.length + g.tokens.length });
    push(g.tokens, true, g.logprobs);
    const ended = g.tokens.length > 0 && g.tokens[g.tokens.length - 1] === p.imEnd;
    openTurn = !ended;
    generateMs += performance.now() - g0;
    const response = ended ? g.tokens.slice(0, g.tokens.length - 1) : g.tokens;
    return text({ op: 'respond', tokens: response, format: o.format ?? 'command' });
  };
  const record = (
    traj: { turns: { formatError: string | null; command: string | null; exitCode: number | null }[] },
    rest: Pick<RolloutRecord, 'patch' | 'finishReason' | 'resolved' | 'reward'> & Partial<RolloutRecord>,
    evaluateMs: number,
    t1: number,
  ): RolloutRecord => {
    const turns: RolloutTurn[] = traj.turns.map((t, k) => ({
      start: spans[k]?.start ?? tokens.length,
      end: spans[k]?.end ?? tokens.length,
      formatError: t.formatError,
      command: t.command,
      exitCode: t.exitCode,
    }));
    const wallMs = performance.now() - t0;
    return {
      instance_id: task.instance_id,
      group: p.group,
      sample,
      tokens: Int32Array.from(tokens),
      assistantMask: Uint8Array.from(gen),
      logprobs: Float32Array.from(lp),
      turns,
      ...rest,
      timings: { wallMs, generateMs, toolMs: t1 - t0 - generateMs, evaluateMs },
    };
  };
  try {
    let traj: Awaited<ReturnType<typeof runEpisode>>;
    try {
      traj = await runEpisode({
        task,
        policy,
        maxTurns: p.maxTurns,
        format: o.format,
        prompt: o.prompt,
        oneShot: o.oneShot === true,
        sandbox: o.sandbox,
        commandTimeoutMs: o.commandTimeoutMs,
        maxObservationChars: o.maxObservationChars,
        maskTimings: o.maskTimings ?? true,
        signal: timeout.signal,
        maxContext: p.maxContextTokens,
        // The conversation's size in tokens: what the session holds plus the pending observation.
        contextSize: async (messages) => tokens.length + (await observe(messages)).contextTokens,
      });
    } catch (e) {
      if (e instanceof PolicyFailure) throw e;
      // The sandbox or a command failed: not the policy's doing, so no reward either way.
      const error = { code: e instanceof SwerlError ? e.code : 'INTERNAL', message: (e as Error).message ?? String(e) };
      const t1 = performance.now();
      return record({ turns: [] }, { patch: '', finishReason: 'error', resolved: false, reward: 0, error }, 0, t1);
    }
    if (fatal.aborted) throw new PolicyFailure(new Error('aborted: another episode failed'));
    const t1 = performance.now();
    let resolved = false;
    let error: RolloutRecord['error'];
    if (traj.patch.trim() !== '') {
      const patch = traj.patch;
      const ev = await p.grades.evaluate(task, patch, async () => {
        const [e] = await evaluatePatches(
          [{ task, patch, options: evaluationOptions(o.sandbox) }],
          o.evaluationRetries === undefined ? {} : { retries: o.evaluationRetries },
        );
        return e ?? noEvaluation();
      });
      resolved = ev.resolved;
      if (ev.outcome === 'error') error = ev.error ?? { code: 'INTERNAL', message: 'the evaluation failed' };
    }
    const evaluateMs = performance.now() - t1;
    const turnCount = traj.turns.length;
    return record(
      traj,
      {
        patch: traj.patch,
        finishReason: traj.finishReason,
        resolved,
        reward: error ? 0 : episodeReward(resolved, turnCount, p.maxTurns, p.turnPenaltyThreshold),
        ...(error ? { error } : {}),
      },
      evaluateMs,
      t1,
    );
  } finally {
    clearTimeout(timer);
    fatal.removeEventListener('abort', onFatal);
    (session as SessionLike | null)?.close();
  }
}

/** What a grading that returned nothing counts as: the grader's failure. */
function noEvaluation(): Evaluation {
  return {
    resolved: false,
    outcome: 'error',
    error: { code: 'INTERNAL', message: 'the evaluation returned no result' },
    timedOut: false,
    tests: {},
    log: '',
  };
}

/** The grader's sandbox for an episode's: Docker with the same image settings, else local. */
function evaluationOptions(sandbox: RolloutOptions['sandbox']): EvaluateOptions {
  if (sandbox && 'kind' in sandbox && sandbox.kind === 'docker')
    return {
      sandbox: 'docker',
      docker: {
        ...(sandbox.image === undefined ? {} : { image: sandbox.image }),
        ...(sandbox.docker === undefined ? {} : { connection: sandbox.docker }),
      },
    };
  return {};
}

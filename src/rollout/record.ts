/**
 * The rollout record: one episode as the engine saw it, token by token, with everything the
 * trainer needs (assistant mask, the engine's logprobs, turn spans and format errors) and the
 * reward. Rollout files are msgpack streams of these records (msgpackr keeps the typed arrays).
 */
import { createReadStream } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import { Packr, UnpackrStream } from 'msgpackr';
import { SwerlError } from '../errors.js';

/** One turn's generated span and what became of it. */
export interface RolloutTurn {
  /** tokens[start, end) are the policy's response (its closing <|im_end|> included when generated). */
  start: number;
  end: number;
  /** 'cannot extract command' | 'multiple commands extracted', or null. */
  formatError: string | null;
  command: string | null;
  exitCode: number | null;
}

/** One episode, in the rollout format. */
export interface RolloutRecord {
  instance_id: string;
  /**
   * The advantage group (policySamples): `<call>:<position>`, the runRollouts call's `group` (by
   * default its base seed; the pipeline's name the phase and the refill round) and the task's
   * position in its `tasks`, so that two tasks that share an instance_id are two groups, and the
   * tasks of different calls (DAPO's refill rounds) never mix. Records without it (older files,
   * hand-made ones) are grouped by instance_id alone.
   */
  group?: string;
  /** Index of this sample within its task's group. */
  sample: number;
  /** The conversation's tokens as the engine saw them: prompts, responses and observations. */
  tokens: Int32Array;
  /** 1 on tokens the policy generated. */
  assistantMask: Uint8Array;
  /** The engine's logprob of each generated token (0 elsewhere). */
  logprobs: Float32Array;
  turns: RolloutTurn[];
  patch: string;
  /** How the episode ended; 'error' when it could not run (its sandbox failed: see `error`). */
  finishReason: 'submit' | 'max_turns' | 'max_context' | 'timeout' | 'error';
  resolved: boolean;
  /** resolved (1/0) plus the turn penalty. */
  reward: number;
  /**
   * Present when the episode could not be run or graded for a reason that is not the policy's
   * (the grader's outcome 'error', a sandbox that did not start or failed during the episode):
   * such a record carries no reward signal. It is left out of training and advantages, counts as
   * unsolved in Pass@k, and is counted as an error in the metrics and the report.
   */
  error?: { code: string; message: string };
  timings: { wallMs: number; generateMs: number; toolMs: number; evaluateMs: number };
}

const packr = new Packr({ moreTypes: true, useRecords: false });

/** Writes records to a rollout file (a msgpack stream), atomically. */
export async function writeRollouts(path: string, records: RolloutRecord[]): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}`;
  await writeFile(tmp, Buffer.concat(records.map((r) => packr.pack(r))));
  await rename(tmp, path);
}

/** Reads a rollout file. */
export async function readRollouts(path: string): Promise<RolloutRecord[]> {
  const out: RolloutRecord[] = [];
  await new Promise<void>((resolve, reject) => {
    const stream = createReadStream(path).on('error', (e) =>
      reject(new SwerlError(`cannot read rollouts ${path}: ${e.message}`, 'IO_ERROR')),
    );
    const unpack = new UnpackrStream({ moreTypes: true, useRecords: false });
    unpack.on('data', (r: RolloutRecord) => out.push(r));
    unpack.on('end', () => resolve());
    unpack.on('error', (e: Error) =>
      reject(new SwerlError(`corrupt rollout file ${path}: ${e.message}`, 'CORRUPT_FILE')),
    );
    stream.pipe(unpack);
  });
  return out;
}

/**
 * Where two records of the same episode (same task, sample and seed, e.g. from two runs) part:
 * - 'identical': the same tokens, logprobs (bit for bit) and reward;
 * - 'observation': the first differing token is one the policy did not generate: the environment
 *   answered differently (processes of one command racing to write, for example), and the
 *   episodes may go their own ways from there;
 * - 'generated': the first differing token is a generated one, after the same context: the engine
 *   sampled differently;
 * - 'logprobs': the same tokens up to `at`, but the engine's logprob of generated token `at`
 *   differs;
 * - 'reward': the same tokens and logprobs, another reward.
 * `at` is the token index (the shorter record's length where one is a prefix of the other).
 */
export function recordDivergence(
  a: RolloutRecord,
  b: RolloutRecord,
): { kind: 'identical' | 'observation' | 'generated' | 'logprobs' | 'reward'; at: number } {
  const n = Math.min(a.tokens.length, b.tokens.length);
  let k = 0;
  while (k < n && a.tokens[k] === b.tokens[k]) k++;
  for (let j = 0; j < k; j++) if (!Object.is(a.logprobs[j], b.logprobs[j])) return { kind: 'logprobs', at: j };
  if (k === a.tokens.length && k === b.tokens.length)
    return Object.is(a.reward, b.reward) ? { kind: 'identical', at: k } : { kind: 'reward', at: k };
  // Past the end of one record, the other's next token tells who made the difference.
  const generated = (r: RolloutRecord) => k < r.tokens.length && r.assistantMask[k] === 1;
  return { kind: generated(a) || generated(b) ? 'generated' : 'observation', at: k };
}

/**
 * Sampling seeds. Every sample the pipeline draws has a seed that is a hash of what identifies
 * it: the run's seed, the phase, the DAPO iteration, the refill round, the task (its instance_id,
 * and its occurrence index when one call lists an id more than once) and the sample's index in
 * its group. Two samples share a seed only when all of these are equal, and a resumed run draws
 * what the uninterrupted one would have. (Arithmetic bases such as `seed · p + iteration · q +
 * round · r + i · G + j` overlap: round 1's first sample had the seed of round 0's second task.)
 */
import { createHash } from 'node:crypto';
import { invalidArgument } from '../errors.js';

/** What identifies one sample of a run. */
export interface SampleSeedKey {
  /** The run's seed (config `seed`). */
  run: number;
  /** The phase: 'eval-base', 'rft', 'dapo-s1-i001', 'val-dapo-s1-i002', ... */
  phase: string;
  /** The DAPO iteration (1-based over all stages; 0 outside DAPO). */
  iteration: number;
  /** The refill round of a DAPO iteration (0: its first rollouts; 0 outside DAPO). */
  round: number;
  /** The task's instance_id. */
  task: string;
  /** Which of the call's tasks with this instance_id (0 unless an id repeats in one call). */
  occurrence?: number;
  /** The sample's index in its task's group (0 .. G − 1). */
  sample: number;
}

/**
 * The sampling seed of one sample: the first 48 bits of SHA-256 over its key, an integer in
 * [0, 2^48) (the engine's own seeds' range; any OpenAI-compatible server takes it). 48 bits, not
 * 32: a paper-sized RFT phase draws 72,490 samples, which at 32 bits would share a seed with
 * odds near one half.
 */
export function sampleSeed(k: SampleSeedKey): number {
  for (const f of ['run', 'iteration', 'round', 'sample'] as const)
    if (!Number.isSafeInteger(k[f]) || k[f] < 0) throw invalidArgument(f, 'an integer >= 0', k[f]);
  const occurrence = k.occurrence ?? 0;
  if (!Number.isSafeInteger(occurrence) || occurrence < 0)
    throw invalidArgument('occurrence', 'an integer >= 0', occurrence);
  if (typeof k.phase !== 'string') throw invalidArgument('phase', 'a string', k.phase);
  if (typeof k.task !== 'string') throw invalidArgument('task', 'a string', k.task);
  const text = JSON.stringify([
    'swerl-sample-seed',
    k.run,
    k.phase,
    k.iteration,
    k.round,
    k.task,
    occurrence,
    k.sample,
  ]);
  return createHash('sha256').update(text).digest().readUIntBE(0, 6);
}

/** Each task's occurrence index in `ids`: how many earlier entries share its id. */
export function occurrences(ids: readonly string[]): number[] {
  const seen = new Map<string, number>();
  return ids.map((id) => {
    const n = seen.get(id) ?? 0;
    seen.set(id, n + 1);
    return n;
  });
}

/**
 * The seeds of one runRollouts call (its `sampleSeed` option): sample j of tasks[i] gets
 * sampleSeed of the call's phase, iteration and round, the task's id and occurrence, and j.
 */
export function rolloutSeeds(
  key: Omit<SampleSeedKey, 'task' | 'occurrence' | 'sample'>,
  tasks: readonly { instance_id: string }[],
): (task: number, sample: number) => number {
  const ids = tasks.map((t) => t.instance_id);
  const occ = occurrences(ids);
  return (i, j) => sampleSeed({ ...key, task: ids[i] as string, occurrence: occ[i] as number, sample: j });
}

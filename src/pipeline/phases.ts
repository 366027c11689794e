/**
 * The one naming scheme of the pipeline's phases, used for state.json's `done` list, checkpoint
 * folders, rollout files, the `phase` field of metrics events and the console's lines:
 * - `warmstart` (its checkpoint is `base`: the policy the base evaluation measures), `rft`;
 * - `eval-base`, `eval-rft`, `eval-dapo`: the held-out evaluations;
 * - `dapo-s<stage>-i<iteration>`: a DAPO iteration, the stage of the schedule counted from 1 and
 *   the iteration counted from 1 over all stages, zero-padded to 3 digits, so that names sort in
 *   the order they ran (`dapo-s1-i002` < `dapo-s1-i010` < `dapo-s2-i011`);
 * - `val-dapo-s<stage>-i<iteration>`: the held-out validation after that iteration.
 */
import { SwerlError } from '../errors.js';

/** The digits an iteration number is padded to (names sort in run order up to 999 iterations). */
const PAD = 3;

/** The name of DAPO iteration `iteration` (1-based over all stages) of schedule stage `stage` (1-based). */
export function dapoPhase(stage: number, iteration: number): string {
  return `dapo-s${stage}-i${String(iteration).padStart(PAD, '0')}`;
}

/** The name of the held-out validation after a DAPO iteration. */
export function validationPhase(stage: number, iteration: number): string {
  return `val-${dapoPhase(stage, iteration)}`;
}

/** The checkpoint folder of a finished phase: `base` after the warm start, else the phase's name. */
export function checkpointName(phase: string): string {
  return phase === 'warmstart' ? 'base' : phase;
}

/** A DAPO phase's stage and iteration, or null for a name that is not one. */
export function parseDapoPhase(name: string): { stage: number; iteration: number } | null {
  const m = /^dapo-s(\d+)-i(\d+)$/.exec(name);
  return m ? { stage: Number(m[1]), iteration: Number(m[2]) } : null;
}

/**
 * Throws CANNOT_RESUME for a run folder written before this scheme (phases `dapo-<s>-<i>`,
 * `val-dapo-<n>`, the `warmstart` checkpoint): its positions cannot be mapped with certainty.
 */
export function refuseOldNames(out: string, done: string[], checkpoint: string | null): void {
  const old = done.find((p) => /^dapo-\d+-\d+$/.test(p) || /^val-dapo-\d+$/.test(p));
  const oldCheckpoint = checkpoint !== null && /(^|[/\\])(warmstart|dapo-\d+-\d+)$/.test(checkpoint);
  if (old !== undefined || oldCheckpoint)
    throw new SwerlError(
      `the run in ${out} was written by an older swerl with other phase names (${old ?? checkpoint}); it cannot be resumed: start it again with --force, or use another --out`,
      'CANNOT_RESUME',
    );
}

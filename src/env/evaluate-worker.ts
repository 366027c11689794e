/**
 * The piscina worker of evaluatePatches: one evaluatePatch per task. Loaded by file name in
 * worker threads; it imports no native code.
 */
import { type EvaluateOptions, type Evaluation, evaluatePatch } from './evaluate.js';
import type { SweTask } from './tasks.js';

/** Evaluates one job. */
export default async function evaluateJob(job: {
  task: SweTask;
  patch: string;
  timeoutMs?: number;
  options?: EvaluateOptions;
}): Promise<Evaluation> {
  return evaluatePatch(job.task, job.patch, {
    ...(job.options ?? {}),
    ...(job.timeoutMs === undefined ? {} : { timeoutMs: job.timeoutMs }),
  });
}

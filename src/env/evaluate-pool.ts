/**
 * evaluatePatches: many evaluations at once on a piscina pool of worker threads, so reward
 * computation runs beside rollouts without blocking the main thread. Results come back in job
 * order; a job that throws gives { resolved: false } with the error in the log.
 */
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { compiledScript } from '../compiled-script.js';
import type { Evaluation } from './evaluate.js';
import { defaultSandboxDir } from './sandbox.js';
import type { SweTask } from './tasks.js';
import { removeOwnWorkspacesAtExit } from './workspace-dirs.js';

/** One evaluation to run. */
export interface EvaluationJob {
  task: SweTask;
  patch: string;
  timeoutMs?: number;
}

let pool: Piscina | null = null;

function getPool(threads: number): Piscina {
  if (pool && pool.options.maxThreads >= threads) return pool;
  void pool?.destroy();
  // The workers' sandboxes are made in the default directory and named for this process: its
  // exit hook removes the ones a stopped run leaves.
  removeOwnWorkspacesAtExit(defaultSandboxDir());
  pool = new Piscina({
    filename: compiledScript(import.meta.url, 'evaluate-worker.js'),
    minThreads: 1,
    maxThreads: threads,
    idleTimeout: 5_000,
  });
  return pool;
}

/** Evaluates jobs on worker threads (default: one per core); results in job order. */
export async function evaluatePatches(jobs: EvaluationJob[], o: { concurrency?: number } = {}): Promise<Evaluation[]> {
  const threads = Math.max(1, o.concurrency ?? availableParallelism());
  const p = getPool(threads);
  return Promise.all(
    jobs.map((job) =>
      (p.run(job) as Promise<Evaluation>).catch((e: unknown) => ({
        resolved: false,
        tests: Object.fromEntries(
          [...job.task.FAIL_TO_PASS, ...job.task.PASS_TO_PASS].map((id) => [id, 'fail' as const]),
        ),
        log: `evaluation failed: ${e instanceof Error ? e.message : String(e)}`,
      })),
    ),
  );
}

/** Stops the worker threads (they also stop by themselves when idle). */
export async function closeEvaluationPool(): Promise<void> {
  const p = pool;
  pool = null;
  await p?.destroy();
}

/**
 * evaluatePatches: many evaluations at once on a piscina pool of worker threads, so reward
 * computation runs beside rollouts without blocking the main thread. Results come back in job
 * order. A transient grader failure (outcome 'error': a Docker error, a dead worker) is retried a bounded
 * number of times and, if it persists, comes back as outcome 'error' with its code: never as
 * `resolved: false`, so that the rollout side can leave it out of training.
 */
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { compiledScript } from '../compiled-script.js';
import { invalidArgument, SwerlError } from '../errors.js';
import type { EvaluateOptions, Evaluation } from './evaluate.js';
import { defaultSandboxDir } from './sandbox.js';
import type { SweTask } from './tasks.js';
import { removeOwnWorkspacesAtExit } from './workspace-dirs.js';

/** One evaluation to run. */
export interface EvaluationJob {
  task: SweTask;
  patch: string;
  timeoutMs?: number;
  /** The sandbox kind and Docker settings (the rollout's, so the grader sees the agent's image). */
  options?: EvaluateOptions;
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

/** Options of {@link evaluatePatches}. */
export interface EvaluatePatchesOptions {
  /** Worker threads (default: one per core). */
  concurrency?: number;
  /** Further attempts of a job whose outcome is 'error' (default 2). */
  retries?: number;
}

/** Evaluates jobs on worker threads; results in job order, grader failures retried. */
export async function evaluatePatches(jobs: EvaluationJob[], o: EvaluatePatchesOptions = {}): Promise<Evaluation[]> {
  const threads = Math.max(1, o.concurrency ?? availableParallelism());
  const retries = o.retries ?? 2;
  if (!Number.isInteger(retries) || retries < 0 || retries > 100)
    throw invalidArgument('retries', 'an integer in [0, 100]', retries);
  const p = getPool(threads);
  const attempt = (job: EvaluationJob): Promise<Evaluation> =>
    (p.run(job) as Promise<Evaluation>).catch((e: unknown) => ({
      resolved: false,
      outcome: 'error' as const,
      error: {
        code: e instanceof SwerlError ? e.code : 'INTERNAL',
        message: `the evaluation worker failed: ${e instanceof Error ? e.message : String(e)}`,
      },
      timedOut: false,
      tests: Object.fromEntries(
        [...job.task.FAIL_TO_PASS, ...job.task.PASS_TO_PASS].map((id) => [id, 'fail' as const]),
      ),
      log: `evaluation failed: ${e instanceof Error ? e.message : String(e)}`,
    }));
  return Promise.all(
    jobs.map(async (job) => {
      let ev = await attempt(job);
      for (let k = 0; k < retries && ev.outcome === 'error' && transient(ev); k++) {
        const again = await attempt(job);
        again.log = `${ev.log}\n# retry ${k + 1} of ${retries}\n${again.log}`;
        ev = again;
      }
      return ev;
    }),
  );
}

/**
 * A failure worth another attempt: an engine, a sandbox or a worker that failed; not a broken
 * task (INVALID_TASK, TEST_PATCH_FAILED) or a missing runner, which would fail the same way again.
 */
function transient(ev: Evaluation): boolean {
  const code = ev.error?.code ?? 'INTERNAL';
  return code === 'SANDBOX_UNAVAILABLE' || code === 'IO_ERROR' || code === 'INTERNAL';
}

/** Stops the worker threads (they also stop by themselves when idle). */
export async function closeEvaluationPool(): Promise<void> {
  const p = pool;
  pool = null;
  await p?.destroy();
}

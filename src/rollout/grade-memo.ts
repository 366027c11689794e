/**
 * One grading per distinct (task, patch) of a rollout batch. The G samples of a task often end in
 * the same patch (a converged policy makes the same one-line fix; an evaluation samples each task
 * k times), and grading runs the task's tests in a fresh sandbox: most of an episode's CPU time on
 * the embedded model. The grader is a function of the task and the patch, so a repeated patch
 * takes the first one's verdict. Only a verdict the patch decided is shared: a grading that failed
 * for the grader's reasons (outcome 'error'), that rejected, or whose test run hit the timeout
 * (which the machine's load can cause) is dropped, and a sample that was waiting on it grades its
 * own patch instead.
 */
import type { Evaluation } from '../env/evaluate.js';
import type { SweTask } from '../env/tasks.js';

/** What a shared verdict keeps: not the test log or the per-test results, which can be large. */
function verdictOf(ev: Evaluation): Evaluation {
  return {
    resolved: ev.resolved,
    outcome: ev.outcome,
    ...(ev.error ? { error: { ...ev.error } } : {}),
    timedOut: ev.timedOut,
    tests: {},
    log: '',
  };
}

/** A verdict that another sample may take: decided by the patch, not by the grader or the load. */
function shareable(ev: Evaluation): boolean {
  return ev.outcome !== 'error' && !ev.timedOut;
}

/** Gradings of one runRollouts call, by task (object identity) and patch text. */
export class GradeMemo {
  readonly #byTask = new Map<SweTask, Map<string, Promise<Evaluation | null>>>();

  /**
   * The evaluation of `patch` on `task`: `grade()`'s, or the verdict of an identical (task object,
   * patch) of this batch, finished or in flight (then without its log and per-test results).
   */
  async evaluate(task: SweTask, patch: string, grade: () => Promise<Evaluation>): Promise<Evaluation> {
    let byPatch = this.#byTask.get(task);
    if (byPatch === undefined) {
      byPatch = new Map();
      this.#byTask.set(task, byPatch);
    }
    const shared = byPatch.get(patch);
    if (shared !== undefined) {
      const verdict = await shared;
      return verdict ?? grade();
    }
    const own = grade();
    // What waiting samples get: the verdict, or null (grade your own) when it may not be shared.
    const entry = own.then(
      (ev) => (shareable(ev) ? verdictOf(ev) : null),
      () => null,
    );
    byPatch.set(patch, entry);
    const drop = () => {
      if (byPatch.get(patch) === entry) byPatch.delete(patch);
    };
    const ev = await own.catch((e: unknown) => {
      drop();
      throw e;
    });
    if (!shareable(ev)) drop();
    return ev;
  }
}

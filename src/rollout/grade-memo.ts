/**
 * One grading per distinct (task, patch) of a rollout batch. The G samples of a task often end in
 * the same patch (a converged policy makes the same one-line fix; an evaluation samples each task
 * k times), and grading runs the task's tests in a fresh sandbox: most of an episode's CPU time on
 * the embedded model. The grader is a function of the task and the patch, so a repeated patch
 * takes the first one's evaluation. A grading that failed for the grader's reasons (outcome
 * 'error') is never shared: the entry is dropped, and a sample that was waiting on it grades its
 * own patch instead.
 */
import type { Evaluation } from '../env/evaluate.js';
import type { SweTask } from '../env/tasks.js';

/** Gradings of one runRollouts call, by task (object identity) and patch text. */
export class GradeMemo {
  readonly #byTask = new Map<SweTask, Map<string, Promise<Evaluation>>>();
  #graded = 0;
  #reused = 0;

  /**
   * The evaluation of `patch` on `task`: `grade()`'s, or that of an identical (task, patch) of this
   * batch, finished or in flight.
   */
  async evaluate(task: SweTask, patch: string, grade: () => Promise<Evaluation>): Promise<Evaluation> {
    let byPatch = this.#byTask.get(task);
    if (byPatch === undefined) {
      byPatch = new Map();
      this.#byTask.set(task, byPatch);
    }
    const shared = byPatch.get(patch);
    if (shared !== undefined) {
      const ev = await shared.catch(() => null);
      if (ev !== null && ev.outcome !== 'error') {
        this.#reused++;
        return ev;
      }
      this.#graded++;
      return grade();
    }
    this.#graded++;
    const own = grade();
    byPatch.set(patch, own);
    const drop = () => {
      if (byPatch.get(patch) === own) byPatch.delete(patch);
    };
    const ev = await own.catch((e: unknown) => {
      drop();
      throw e;
    });
    if (ev.outcome === 'error') drop();
    return ev;
  }

  /** Gradings run, and evaluations taken from an identical patch's. */
  get counts(): { graded: number; reused: number } {
    return { graded: this.#graded, reused: this.#reused };
  }
}

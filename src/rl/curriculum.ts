/**
 * The curriculum between DAPO stages (the paper's §4.3): the next stage trains on the tasks that
 * are neither easy nor out of reach. Over the stage just finished, a task whose success rate is
 * at least the threshold (the paper's 2/3) is dropped as easy, and one never solved as
 * unsolvable; a task the stage never sampled is kept (nothing is known of it).
 */

/** A task's tries and solves over a stage (graded samples only). */
export interface SolveCount {
  tries: number;
  solved: number;
}

/** What {@link curriculumFilter} keeps and drops, each list in pool order. */
export interface CurriculumResult<T> {
  kept: T[];
  /** Success rate >= the threshold. */
  easy: T[];
  /** Tried, never solved. */
  unsolved: T[];
}

/**
 * Splits `pool` by each task's solve count over the stage (by its instance_id): `easy` (solved
 * / tries >= `easyThreshold`), `unsolved` (tried, never solved) and `kept` (the others, untried
 * ones included). With `easyThreshold` 1 only tasks solved every time are easy.
 */
export function curriculumFilter<T extends { instance_id: string }>(
  pool: readonly T[],
  solvedBy: ReadonlyMap<string, SolveCount>,
  easyThreshold: number,
): CurriculumResult<T> {
  const out: CurriculumResult<T> = { kept: [], easy: [], unsolved: [] };
  for (const t of pool) {
    const e = solvedBy.get(t.instance_id);
    if (!e || e.tries === 0) out.kept.push(t);
    else if (e.solved === 0) out.unsolved.push(t);
    else if (e.solved / e.tries >= easyThreshold) out.easy.push(t);
    else out.kept.push(t);
  }
  return out;
}

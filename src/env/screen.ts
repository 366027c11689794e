/**
 * The paper's dynamic task filters (arXiv 2508.03501): a task is kept only when its
 * gold patch resolves it on every one of N reruns (flaky tests are dropped; the paper uses 50)
 * and its test log shows no import or attribute errors (tests that reference missing names would
 * force the agent to guess them).
 */
import { type Evaluation, evaluatePatch } from './evaluate.js';
import type { SweTask } from './tasks.js';

/** Why a task was dropped, or null. */
export type ScreenVerdict = null | 'gold-fails' | 'flaky' | 'import-error';

const IMPORT_ERRORS = [
  /\bImportError\b/,
  /\bModuleNotFoundError\b/,
  /\bAttributeError\b/,
  /ERR_MODULE_NOT_FOUND/,
  /does not provide an export named/,
  /is not a function/,
];

/** The verdict for one task after `reruns` gold runs (default 5). */
export async function screenTask(
  task: SweTask,
  o: { reruns?: number; timeoutMs?: number } = {},
): Promise<{ verdict: ScreenVerdict; runs: Evaluation[] }> {
  const reruns = Math.max(1, o.reruns ?? 5);
  const runs: Evaluation[] = [];
  for (let i = 0; i < reruns; i++)
    runs.push(await evaluatePatch(task, task.patch, o.timeoutMs === undefined ? {} : { timeoutMs: o.timeoutMs }));
  const first = runs[0] as Evaluation;
  if (IMPORT_ERRORS.some((re) => re.test(first.log))) return { verdict: 'import-error', runs };
  const sameResults = runs.every((r) => JSON.stringify(r.tests) === JSON.stringify(first.tests));
  if (!sameResults) return { verdict: 'flaky', runs };
  if (!first.resolved) return { verdict: 'gold-fails', runs };
  return { verdict: null, runs };
}

/** The tasks that pass screenTask, and the reason each other one was dropped. */
export async function screenTasks(
  tasks: SweTask[],
  o: { reruns?: number; timeoutMs?: number } = {},
): Promise<{ kept: SweTask[]; dropped: { instance_id: string; verdict: Exclude<ScreenVerdict, null> }[] }> {
  const kept: SweTask[] = [];
  const dropped: { instance_id: string; verdict: Exclude<ScreenVerdict, null> }[] = [];
  for (const t of tasks) {
    const { verdict } = await screenTask(t, o);
    if (verdict === null) kept.push(t);
    else dropped.push({ instance_id: t.instance_id, verdict });
  }
  return { kept, dropped };
}

/**
 * The checks a task list gets before anything runs it: inline repository paths that stay inside
 * the workspace, tests that exist, and instance ids that are unique. loadTasks (tasks.ts) applies
 * them to every file it reads and checkTasks to in-memory lists (generated suites included), so a
 * bad row fails at load, naming the row, instead of hours into a run.
 */
import { posix } from 'node:path';
import { SwerlError } from '../errors.js';
import type { SweTask } from './tasks.js';

/**
 * Why an inline repository path is refused, or undefined when it is fine: a key of `files` must
 * be a relative POSIX path of a file that stays inside the workspace once normalised.
 */
export function badFilePath(path: string): string | undefined {
  if (path === '') return 'is empty';
  if (path.includes('\0')) return 'contains a NUL byte';
  if (path.startsWith('/')) return 'is absolute (paths are relative to the workspace)';
  const n = posix.normalize(path);
  if (n === '..' || n.startsWith('../')) return `escapes the workspace (it normalises to ${JSON.stringify(n)})`;
  if (n === '.' || n === './') return 'names the workspace itself, not a file';
  if (n.endsWith('/')) return 'names a directory, not a file';
  return undefined;
}

/**
 * Checks `files` (an inline repository) of the task labelled `at`: every path per badFilePath,
 * and no two paths that normalise to the same file. Throws INVALID_TASK naming the field and path.
 */
export function checkFilePaths(files: Record<string, string>, at: string): void {
  const seen = new Map<string, string>();
  for (const path of Object.keys(files)) {
    const why = badFilePath(path);
    if (why !== undefined)
      throw new SwerlError(`${at}: field 'files' path ${JSON.stringify(path)} ${why}`, 'INVALID_TASK');
    const n = posix.normalize(path);
    const other = seen.get(n);
    if (other !== undefined)
      throw new SwerlError(
        `${at}: field 'files' paths ${JSON.stringify(other)} and ${JSON.stringify(path)} are the same file`,
        'INVALID_TASK',
      );
    seen.set(n, path);
  }
}

/** The files a unified diff creates or changes (its `diff --git a/X b/X` headers' b side). */
function patchedFiles(patch: string): Set<string> {
  const out = new Set<string>();
  for (const m of patch.matchAll(/^diff --git a\/\S+ b\/(\S+)$/gm)) out.add(posix.normalize(m[1] as string));
  return out;
}

/**
 * Checks that the task labelled `at` has tests to grade by: FAIL_TO_PASS is not empty, and for an
 * inline (mini-SWE / node) task some test id (`path::name`) names a test file that `files` holds
 * or `test_patch` writes (the grader runs only the named files, so otherwise nothing would run).
 */
export function checkTests(task: SweTask, at: string): void {
  if (task.FAIL_TO_PASS.length === 0)
    throw new SwerlError(
      `${at}: field 'FAIL_TO_PASS' is empty (a task needs at least one test that its fix makes pass)`,
      'INVALID_TASK',
    );
  if (task.files === undefined) return;
  const files = new Set(Object.keys(task.files).map((p) => posix.normalize(p)));
  for (const p of patchedFiles(task.test_patch)) files.add(p);
  const ids = [...task.FAIL_TO_PASS, ...task.PASS_TO_PASS];
  const named = ids.filter((id) => id.includes('::')).map((id) => posix.normalize(id.slice(0, id.indexOf('::'))));
  if (!named.some((f) => files.has(f)))
    throw new SwerlError(
      `${at}: field 'FAIL_TO_PASS' names no test file that 'files' or 'test_patch' holds (inline task ids are 'path/to/file.test.js::name'), so the task has no tests to run`,
      'INVALID_TASK',
    );
}

/**
 * Checks that no instance_id appears twice; `label(i)` names row i. Throws INVALID_TASK naming
 * both rows and the id.
 */
export function checkUniqueIds(tasks: readonly SweTask[], label: (i: number) => string): void {
  const first = new Map<string, number>();
  tasks.forEach((t, i) => {
    const j = first.get(t.instance_id);
    if (j !== undefined)
      throw new SwerlError(
        `${label(i)} (${t.instance_id}): field 'instance_id' duplicates ${label(j)} (${t.instance_id})`,
        'INVALID_TASK',
      );
    first.set(t.instance_id, i);
  });
}

/**
 * What a SWE-bench-style task's test command runs: the test files (pytest, sympy) or test labels
 * (Django) that its FAIL_TO_PASS and PASS_TO_PASS ids name, and the files its test patch writes.
 * Never the whole repository: each function returns at least one target or throws INVALID_TASK.
 */
import { SwerlError } from '../../errors.js';
import type { SweTask } from '../tasks.js';
import { djangoCanonicalName, PROGRESS_MARKER } from './log-parsers.js';

/** The task's ids, FAIL_TO_PASS then PASS_TO_PASS, each once. */
export function taskIds(task: SweTask): string[] {
  return [...new Set([...task.FAIL_TO_PASS, ...task.PASS_TO_PASS])];
}

/** Files a unified diff leaves in place (added or modified; deleted files left out), in order. */
export function patchedFiles(patch: string): string[] {
  const files: string[] = [];
  let current: string | undefined;
  let deleted = false;
  const flush = () => {
    if (current !== undefined && !deleted && !files.includes(current)) files.push(current);
  };
  for (const line of patch.split('\n')) {
    const d = /^diff --git a\/(.*) b\/(.*)$/.exec(line);
    if (d) {
      flush();
      current = d[2];
      deleted = false;
    } else if (current !== undefined && line === '+++ /dev/null') deleted = true;
    else if (current !== undefined && line.startsWith('+++ b/')) current = line.slice(6);
  }
  flush();
  return files;
}

/** A pytest node id (`path.py::name...`) or a bare test file (`path.py`). */
export function isPytestId(id: string): boolean {
  return /^[^:[\]\n]+\.py(?:::[\s\S]+)?$/.test(id);
}

/** pytest: the files the ids name (`path.py` of `path.py::Class::test[param]`). */
export function pytestFiles(task: SweTask): string[] {
  const files: string[] = [];
  const bad: string[] = [];
  for (const id of taskIds(task)) {
    if (PROGRESS_MARKER.test(id)) continue;
    if (!isPytestId(id)) {
      bad.push(id);
      continue;
    }
    const cut = id.indexOf('::');
    const file = cut < 0 ? id : id.slice(0, cut);
    if (!files.includes(file)) files.push(file);
  }
  if (bad.length > 0)
    throw new SwerlError(
      `${task.instance_id}: ${bad.length} test id(s) are not pytest node ids (e.g. ${JSON.stringify(bad[0])}); ${task.repo} is run with pytest`,
      'INVALID_TASK',
    );
  if (files.length === 0)
    throw new SwerlError(`${task.instance_id}: no test id names a test file to run`, 'INVALID_TASK');
  return files;
}

/** SWE-bench's rule for a Django test file: `tests.py`, `test_*`, or under a tests folder. */
function isDjangoTestFile(path: string): boolean {
  const base = path.slice(path.lastIndexOf('/') + 1);
  return base === 'tests.py' || base.startsWith('test_') || path.includes('/tests/') || path.includes('/test_');
}

/** The Django label (`app.test_module`) of a test file under `tests/`, or undefined. */
function djangoModuleLabel(path: string): string | undefined {
  if (!path.startsWith('tests/') || !path.endsWith('.py') || !isDjangoTestFile(path)) return undefined;
  const label = path
    .slice('tests/'.length, -'.py'.length)
    .replace(/\//g, '.')
    .replace(/\.__init__$/, '');
  return /^\w+(?:\.\w+)*$/.test(label) ? label : undefined;
}

/** Django's targets: labels to run, and docstring ids whose module must be looked up in the repository. */
export interface DjangoTargets {
  labels: string[];
  /** Ids that are a test's docstring (its first line), with no `(module.Class)` to place them. */
  docstrings: string[];
}

/**
 * Django: the test modules the test patch writes (`tests/app/test_x.py` → `app.test_x`, as
 * SWE-bench's harness takes them), plus `module.Class` for each `name (module.Class)` id whose
 * module is not among them. Docstring ids name no module: SWE-bench recorded them from whatever
 * it ran, the whole suite when the test patch holds no test module (django__django-10097 changes
 * only .txt files), so the command finds their modules by searching tests/ for the text.
 */
export function djangoTargets(task: SweTask): DjangoTargets {
  const labels: string[] = [];
  for (const f of patchedFiles(task.test_patch)) {
    const l = djangoModuleLabel(f);
    if (l !== undefined && !labels.includes(l)) labels.push(l);
  }
  const fromPatch = [...labels];
  const docstrings: string[] = [];
  for (const id of taskIds(task)) {
    const first = id.split('\n', 1)[0] ?? '';
    const canon = /^\w+ \([\w.]+\)$/.test(first) ? djangoCanonicalName(first) : undefined;
    if (canon === undefined) {
      if (id.trim() !== '' && !docstrings.includes(id.trim())) docstrings.push(id.trim());
      continue;
    }
    const cls = canon.slice(canon.indexOf('(') + 1, -1);
    if (fromPatch.some((m) => cls === m || cls.startsWith(`${m}.`))) continue;
    if (!labels.includes(cls)) labels.push(cls);
  }
  return { labels, docstrings };
}

/** sympy: the `test_*.py` files the test patch writes (the ids are bare function names). */
export function sympyFiles(task: SweTask): string[] {
  const bad = taskIds(task).filter((id) => !/^test_\w+$/.test(id));
  if (bad.length > 0)
    throw new SwerlError(
      `${task.instance_id}: ${bad.length} id(s) are not sympy test function names (e.g. ${JSON.stringify(bad[0])})`,
      'INVALID_TASK',
    );
  const files = patchedFiles(task.test_patch).filter((f) => /(?:^|\/)test_[^/]*\.py$/.test(f));
  if (files.length === 0)
    throw new SwerlError(
      `${task.instance_id}: the test patch writes no test_*.py file, so there is nothing to run the ids in`,
      'INVALID_TASK',
    );
  return files;
}

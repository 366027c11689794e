/**
 * Tasks in the SWE-bench / SWE-rebench schema (DESIGN.md section 6): loading .json, .jsonl and
 * .parquet files (Hugging Face datasets ship FAIL_TO_PASS and PASS_TO_PASS as JSON-encoded
 * strings; both forms are accepted), checking every row, and the paper's static filter on the
 * gold patch (at most 7 files, fewer than 500 changed lines).
 */
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { parquetReadObjects } from 'hyparquet';
import { invalidArgument, SwerlError } from '../errors.js';
import { checkFilePaths, checkTests, checkUniqueIds } from './task-checks.js';

/** A task, with SWE-bench / SWE-rebench field names. Mini-SWE tasks carry their repository inline in `files`. */
export interface SweTask {
  instance_id: string;
  repo: string;
  base_commit?: string;
  problem_statement: string;
  /** The gold patch (a unified diff). */
  patch: string;
  /** The patch that adds or updates the tests. */
  test_patch: string;
  FAIL_TO_PASS: string[];
  PASS_TO_PASS: string[];
  files?: Record<string, string>;
  /** The Docker image to run the task in (SWE-rebench's `docker_image` or `image_name` map here too). */
  image?: string;
  /** The project version SWE-bench's harness keys its install and test specs by (e.g. '3.2'). */
  version?: string;
  environment_setup_commit?: string;
  /** When the pull request was made (ISO 8601). */
  created_at?: string;
  hints_text?: string;
  /** SWE-bench Verified's annotators' estimate, e.g. '15 min - 1 hour'. */
  difficulty?: string;
  /**
   * Every other field of the row, unchanged, for filtering (e.g. SWE-rebench's `install_config`,
   * `meta`, `docker_image`, `image_name`). A row's own `metadata` object is merged in, so a task
   * written out as JSON reads back the same.
   */
  metadata?: Record<string, unknown>;
}

/** The fields checkTask reads itself; every other field of a row goes to `metadata`. */
const KNOWN_FIELDS = new Set([
  'instance_id',
  'repo',
  'base_commit',
  'problem_statement',
  'patch',
  'test_patch',
  'FAIL_TO_PASS',
  'PASS_TO_PASS',
  'files',
  'image',
  'version',
  'environment_setup_commit',
  'created_at',
  'hints_text',
  'difficulty',
  'metadata',
]);

/** The optional descriptive fields, which datasets give as strings (parquet may give numbers or dates). */
const TEXT_FIELDS = ['version', 'environment_setup_commit', 'created_at', 'hints_text', 'difficulty'] as const;

/**
 * Reads tasks from a .json (an array, or { tasks: [...] }), .jsonl or .parquet file, checking
 * every row (checkTask) and that no instance_id appears twice. All or nothing: a bad row rejects
 * the whole call with INVALID_TASK, whose message names the row as `file:N` for .jsonl (N the
 * 1-based line), `file[i]` for .json and `file row i` for .parquet (i 0-based), then the
 * instance id and the field.
 */
export async function loadTasks(path: string): Promise<SweTask[]> {
  if (typeof path !== 'string') throw invalidArgument('path', 'a file path', path);
  const ext = extname(path).toLowerCase();
  let data: Buffer;
  try {
    data = await readFile(path);
  } catch (e) {
    throw new SwerlError(`cannot read ${path}: ${(e as Error).message}`, 'IO_ERROR');
  }
  const rows: { where: string; value: unknown }[] = [];
  if (ext === '.jsonl') {
    data
      .toString('utf8')
      .split('\n')
      .forEach((line, i) => {
        if (line.trim() === '') return;
        let value: unknown;
        try {
          value = JSON.parse(line);
        } catch (e) {
          throw new SwerlError(`${path}:${i + 1}: not valid JSON (${(e as Error).message})`, 'INVALID_TASK');
        }
        rows.push({ where: `${path}:${i + 1}`, value });
      });
  } else if (ext === '.json') {
    let json: unknown;
    try {
      json = JSON.parse(data.toString('utf8'));
    } catch (e) {
      throw new SwerlError(`${path}: not valid JSON (${(e as Error).message})`, 'INVALID_TASK');
    }
    const list = Array.isArray(json) ? json : (json as { tasks?: unknown })?.tasks;
    if (!Array.isArray(list))
      throw new SwerlError(`${path}: expected an array of tasks or { "tasks": [...] }`, 'INVALID_TASK');
    list.forEach((value, i) => {
      rows.push({ where: `${path}[${i}]`, value });
    });
  } else if (ext === '.parquet') {
    let objects: Record<string, unknown>[];
    try {
      const buf = data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer;
      objects = (await parquetReadObjects({ file: buf })) as Record<string, unknown>[];
    } catch (e) {
      throw new SwerlError(`${path}: not a readable parquet file (${(e as Error).message})`, 'INVALID_TASK');
    }
    objects.forEach((value, i) => {
      rows.push({ where: `${path} row ${i}`, value });
    });
  } else {
    throw new SwerlError(
      `${path}: unknown task file type '${ext}' (use .json, .jsonl or .parquet)`,
      'INVALID_ARGUMENT',
    );
  }
  const tasks = rows.map(({ where, value }) => checkTask(value, where));
  checkUniqueIds(tasks, (i) => (rows[i] as { where: string }).where);
  return tasks;
}

/**
 * Checks an in-memory task list (a generated suite, or tasks built by a program) as loadTasks
 * checks a file's rows: each task's fields (checkTask), its `files` paths and tests, and unique
 * instance ids. Throws INVALID_TASK naming the task as `tasks[i]` (0-based) and its instance id;
 * the list is not changed.
 */
export function checkTasks(tasks: readonly SweTask[]): void {
  if (!Array.isArray(tasks)) throw invalidArgument('tasks', 'an array of tasks', tasks);
  const label = (i: number) => `tasks[${i}]`;
  tasks.forEach((t, i) => {
    checkTask(t, label(i));
  });
  checkUniqueIds(tasks, label);
}

/**
 * Checks one task row, normalising JSON-encoded test lists; errors (INVALID_TASK) name the row
 * (`where`), the instance id and the field. Besides each field's type: FAIL_TO_PASS must be
 * present and not empty, `files` paths must stay inside the workspace, and an inline task must
 * name a test file it has (task-checks.ts).
 */
export function checkTask(value: unknown, where = 'task'): SweTask {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new SwerlError(`${where}: a task must be an object`, 'INVALID_TASK');
  const o = value as Record<string, unknown>;
  const id = typeof o.instance_id === 'string' ? o.instance_id : undefined;
  const at = id === undefined ? where : `${where} (${id})`;
  const str = (name: string, required: boolean): string | undefined => {
    const v = o[name];
    if (v === undefined || v === null) {
      if (required) throw new SwerlError(`${at}: field '${name}' is missing`, 'INVALID_TASK');
      return undefined;
    }
    if (typeof v !== 'string') throw new SwerlError(`${at}: field '${name}' must be a string`, 'INVALID_TASK');
    return v;
  };
  const tests = (name: string): string[] => {
    let v = o[name];
    if (typeof v === 'string') {
      try {
        v = JSON.parse(v);
      } catch {
        throw new SwerlError(`${at}: field '${name}' is a string but not a JSON-encoded list`, 'INVALID_TASK');
      }
    }
    if (v === undefined || v === null) v = [];
    if (!Array.isArray(v) || !v.every((t) => typeof t === 'string'))
      throw new SwerlError(`${at}: field '${name}' must be a list of test ids`, 'INVALID_TASK');
    return v as string[];
  };
  const task: SweTask = {
    instance_id: str('instance_id', true) as string,
    repo: str('repo', true) as string,
    problem_statement: str('problem_statement', true) as string,
    patch: str('patch', true) as string,
    test_patch: str('test_patch', false) ?? '',
    FAIL_TO_PASS: tests('FAIL_TO_PASS'),
    PASS_TO_PASS: tests('PASS_TO_PASS'),
  };
  if (o.FAIL_TO_PASS === undefined || o.FAIL_TO_PASS === null)
    throw new SwerlError(`${at}: field 'FAIL_TO_PASS' is missing`, 'INVALID_TASK');
  const base = str('base_commit', false);
  if (base !== undefined) task.base_commit = base;
  const image = str('image', false) ?? str('docker_image', false) ?? str('image_name', false);
  if (image !== undefined) task.image = image;
  for (const name of TEXT_FIELDS) {
    const v = o[name];
    if (v === undefined || v === null) continue;
    if (typeof v === 'string') task[name] = v;
    else if (typeof v === 'number' || typeof v === 'bigint') task[name] = String(v);
    else if (v instanceof Date && !Number.isNaN(v.getTime())) task[name] = v.toISOString();
    else throw new SwerlError(`${at}: field '${name}' must be a string`, 'INVALID_TASK');
  }
  const metadata: Record<string, unknown> = {};
  if (o.metadata !== undefined && o.metadata !== null) {
    if (typeof o.metadata !== 'object' || Array.isArray(o.metadata))
      throw new SwerlError(`${at}: field 'metadata' must be an object`, 'INVALID_TASK');
    Object.assign(metadata, o.metadata);
  }
  for (const [k, v] of Object.entries(o)) if (!KNOWN_FIELDS.has(k) && v !== undefined) metadata[k] = v;
  if (Object.keys(metadata).length > 0) task.metadata = metadata;
  if (o.files !== undefined && o.files !== null) {
    let files = o.files;
    if (typeof files === 'string') {
      try {
        files = JSON.parse(files);
      } catch {
        throw new SwerlError(`${at}: field 'files' is a string but not JSON`, 'INVALID_TASK');
      }
    }
    if (
      typeof files !== 'object' ||
      files === null ||
      Array.isArray(files) ||
      !Object.values(files).every((c) => typeof c === 'string')
    )
      throw new SwerlError(`${at}: field 'files' must map paths to file contents`, 'INVALID_TASK');
    checkFilePaths(files as Record<string, string>, at);
    task.files = files as Record<string, string>;
  }
  checkTests(task, at);
  return task;
}

/** A JavaScript identifier (ASCII), as a global pattern (for `match` and `replace`). */
export const JS_WORD = /[A-Za-z_$][\w$]*/g;

/** The added and removed lines of a unified diff, without their `+`/`-` (file headers skipped). */
export function diffLines(patch: string): { added: string[]; removed: string[] } {
  const added: string[] = [];
  const removed: string[] = [];
  for (const line of patch.split('\n')) {
    if (line.startsWith('+') && !line.startsWith('+++')) added.push(line.slice(1));
    else if (line.startsWith('-') && !line.startsWith('---')) removed.push(line.slice(1));
  }
  return { added, removed };
}

/** Files and changed lines (added + removed) of a unified diff. */
export function patchSize(patch: string): { files: number; changedLines: number } {
  const files = patch.split('\n').filter((line) => line.startsWith('diff --git ')).length;
  const { added, removed } = diffLines(patch);
  return { files, changedLines: added.length + removed.length };
}

/** The paper's static filter: the gold patch touches at most maxFiles files and changes fewer than maxLines lines. */
export function filterTasksByPatch(tasks: SweTask[], o: { maxFiles?: number; maxLines?: number } = {}): SweTask[] {
  const maxFiles = o.maxFiles ?? 7;
  const maxLines = o.maxLines ?? 500;
  return tasks.filter((t) => {
    const s = patchSize(t.patch);
    return s.files <= maxFiles && s.changedLines < maxLines;
  });
}

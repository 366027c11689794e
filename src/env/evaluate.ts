/**
 * The reward: evaluatePatch (DESIGN.md section 6) applies a candidate patch to a fresh sandbox copy
 * of the repository, restores what the agent may not change, applies the task's test patch, runs
 * FAIL_TO_PASS + PASS_TO_PASS, and reports the outcome: `resolved` (every one of them passes),
 * `unresolved`, or `error` when the grader itself failed (no sandbox, a dead Docker engine, a test
 * patch that does not apply, a missing test runner): an error is never a reward, and the rollout
 * side leaves such episodes out of training.
 *
 * Reward integrity, as SWE-bench's harness does it and further: after the agent's patch every
 * protected path it touched (the task's test files, test directories, the runner and its
 * configuration, swerl's own files; protected-paths.ts) is restored from the task itself: from
 * the inline repository (mini-SWE), or `git checkout <base_commit>` (SWE-bench style), and a new
 * file there is removed. Then the test patch applies. Inline repositories run node:test over the
 * named test files only, hardened against the code under test (node-tests.ts); SWE-bench-style
 * tasks run in their Docker image at /testbed with their repository family's test command and
 * log parser (swe-bench/test-spec.ts).
 */
import type Docker from 'dockerode';
import { invalidArgument, SwerlError } from '../errors.js';
import { DockerSandbox } from './docker-sandbox.js';
import { EVAL_DIR, runNodeTests } from './node-tests.js';
import { protectedPathsIn } from './protected-paths.js';
import { LocalSandbox } from './sandbox.js';
import type { Sandbox } from './sandbox-api.js';
import { shellQuote, type TestSpec, testSpec } from './swe-bench/test-spec.js';
import type { SweTask } from './tasks.js';

/** Options of {@link evaluatePatch}. */
export interface EvaluateOptions {
  /** 'local' (default for inline repositories) or 'docker' (required for image-based tasks). */
  sandbox?: 'local' | 'docker';
  /** For 'local': the isolation of the grader's sandbox (default 'auto': bwrap, else unshare). */
  isolation?: 'auto' | 'bwrap' | 'unshare';
  timeoutMs?: number;
  /**
   * For 'docker': the engine's connection, and the image for tasks that name none (used only when
   * the task has no `image` and no SWE-bench name applies: {@link taskImage}).
   */
  docker?: { image?: string; connection?: Docker.DockerOptions };
}

/** The image that SWE-bench's harness names for an instance. */
export function sweBenchImage(instanceId: string): string {
  return `swebench/sweb.eval.x86_64.${instanceId.toLowerCase().replace(/__/g, '_1776_')}:latest`;
}

/**
 * The Docker image a task runs in, for rollouts and evaluation alike: the task's own `image`,
 * else SWE-bench's name for the instance (tasks without an inline repository), else `fallback`
 * (the config's), else node:20-bookworm for inline repositories.
 */
export function taskImage(task: SweTask, fallback?: string): string {
  if (task.image !== undefined && task.image !== '') return task.image;
  if (!task.files) return sweBenchImage(task.instance_id);
  return fallback ?? 'node:20-bookworm';
}

/** How an evaluation ended: the tests' verdict, or a failure of the grader itself. */
export type EvaluationOutcome = 'resolved' | 'unresolved' | 'error';

/** What evaluatePatch returns. */
export interface Evaluation {
  /** outcome === 'resolved'. */
  resolved: boolean;
  outcome: EvaluationOutcome;
  /** With outcome 'error': why the grader failed (a SwerlError code, or TEST_PATCH_FAILED / RUNNER_FAILED). */
  error?: { code: string; message: string };
  /** The test run hit the timeout (its output up to the kill is in the log). */
  timedOut: boolean;
  tests: Record<string, 'pass' | 'fail'>;
  log: string;
}

/**
 * Applies `patch` to a fresh copy, restores the protected paths, applies the task's test patch
 * and runs the task's tests. Infrastructure failures return outcome 'error' (never throw); only a
 * malformed call throws (INVALID_ARGUMENT).
 */
export async function evaluatePatch(task: SweTask, patch: string, o: EvaluateOptions = {}): Promise<Evaluation> {
  if (typeof task !== 'object' || task === null || typeof task.instance_id !== 'string')
    throw invalidArgument('task', 'a task', task);
  if (typeof patch !== 'string') throw invalidArgument('patch', 'a string', patch);
  const kind = o.sandbox ?? (task.files ? 'local' : 'docker');
  if (kind !== 'local' && kind !== 'docker') throw invalidArgument('sandbox', "'local' or 'docker'", kind);
  const timeoutMs = o.timeoutMs ?? 120_000;
  const log: string[] = [];
  let sb: Sandbox;
  let spec: TestSpec | null = null;
  try {
    if (!task.files) spec = testSpec(task); // a task no runner family can run starts no container
    sb = await openEvaluationSandbox(task, kind, timeoutMs, o);
  } catch (e) {
    return gradingError(task, e, log);
  }
  try {
    return await grade(sb, task, spec, patch, log);
  } catch (e) {
    return gradingError(task, e, log);
  } finally {
    await sb.close().catch(() => {});
  }
}

async function openEvaluationSandbox(
  task: SweTask,
  kind: 'local' | 'docker',
  timeoutMs: number,
  o: EvaluateOptions,
): Promise<Sandbox> {
  if (task.files && kind === 'local')
    return LocalSandbox.create({
      files: task.files,
      timeoutMs,
      maxOutputBytes: 1 << 20,
      repository: false,
      ...(o.isolation === undefined ? {} : { isolation: o.isolation }),
    });
  if (kind === 'docker')
    return DockerSandbox.create({
      image: taskImage(task, o.docker?.image),
      files: task.files,
      workdir: task.files ? '/project' : '/testbed',
      timeoutMs,
      maxOutputBytes: 1 << 20,
      ...(o.docker?.connection ? { docker: o.docker.connection } : {}),
    });
  throw new SwerlError(
    `${task.instance_id}: a task without an inline repository is evaluated in its Docker image: pass { sandbox: 'docker' }`,
    'SANDBOX_UNAVAILABLE',
  );
}

/** Grades in `sb`; `spec` is the SWE-bench-style task's test spec (null: an inline repository). */
async function grade(
  sb: Sandbox,
  task: SweTask,
  spec: TestSpec | null,
  patch: string,
  log: string[],
): Promise<Evaluation> {
  const prepared = await prepareTree(sb, task, patch, log);
  if (prepared !== null) return prepared;
  try {
    await restoreProtected(sb, task, patch, log);
  } catch (e) {
    // The patch left the tests where they cannot be put back (a path through a symlink that
    // leaves the workspace): the patch's doing.
    if (!(e instanceof SwerlError && e.code === 'PATH_ESCAPE')) throw e;
    log.push(`# the tests cannot be restored over the patch: ${e.message}`);
    return verdict(task, new Map(), false, log);
  }
  if (task.test_patch.trim() !== '') {
    const applied = await applyDiff(sb, 'test_patch', task.test_patch, log);
    if (applied.exitCode !== 0)
      return gradingError(
        task,
        new SwerlError(`${task.instance_id}: the test patch does not apply to the restored tests`, 'INVALID_TASK'),
        log,
        'TEST_PATCH_FAILED',
      );
  }
  const r = spec === null ? await runNodeTests(sb, namedTestFiles(task)) : await runSweBenchTests(sb, spec);
  log.push(r.log);
  if (r.run.exitCode === -1) return runnerFailed(task, r.run.output, log);
  if (r.run.output.includes(NO_DJANGO_LABEL))
    return gradingError(task, new SwerlError(`${task.instance_id}: no Django test label to run`, 'INVALID_TASK'), log);
  return verdict(task, r.seen, r.run.timedOut, log);
}

/** What testSpec's Django command prints when the ids name no test it can find (a task problem). */
const NO_DJANGO_LABEL = 'swerl: no Django test label to run';

async function applyDiff(sb: Sandbox, name: string, diff: string, log: string[]) {
  await sb.writeFile(`${EVAL_DIR}/${name}.diff`, diff.endsWith('\n') ? diff : `${diff}\n`);
  const r = await sb.exec(`git apply --whitespace=nowarn ${EVAL_DIR}/${name}.diff`);
  log.push(`$ git apply ${name}\n${r.output}`);
  return r;
}

// What prepareTree's script prints last when a step fails: the grader's own steps with exit code
// 125, the patch with 126 (git apply returns neither).
const TOOLS_MISSING = 'swerl-tools-missing';
const WIPE_FAILED = 'swerl-wipe-failed';
const APPLY_FAILED = 'swerl-apply-failed';

/**
 * Three steps in one sandboxed command (each command is a process tree to start): before
 * anything of the agent's is in the tree, the tools the grader needs must be there (a missing one
 * is the grader's failure; after the patch, whatever the tests do is the patch's); then the
 * agent's patch applies; then swerl's evaluation folder goes, whatever the patch put there (a
 * file, a symlink, a reporter). null when the tree is ready for restoreProtected, else the
 * evaluation to return: unresolved when the patch does not apply, an error when anything else
 * failed (a missing tool, a command that did not start or did not finish).
 */
async function prepareTree(sb: Sandbox, task: SweTask, patch: string, log: string[]): Promise<Evaluation | null> {
  const tools = task.files
    ? 'command -v git && command -v node'
    : 'command -v git && { command -v python || command -v python3; }';
  const applies = patch.trim() !== '';
  if (applies) await sb.writeFile(`${EVAL_DIR}/patch.diff`, patch.endsWith('\n') ? patch : `${patch}\n`);
  const r = await sb.exec(
    [
      `t=$( { ${tools}; } 2>&1 ) || { printf '%s\\n%s\\n' ${TOOLS_MISSING} "$t"; exit 125; }`,
      ...(applies
        ? [`git apply --whitespace=nowarn ${EVAL_DIR}/patch.diff || { echo ${APPLY_FAILED}; exit 126; }`]
        : []),
      `rm -rf -- ${EVAL_DIR} || { echo ${WIPE_FAILED}; exit 125; }`,
    ].join('\n'),
  );
  const last = (marker: string) => !r.timedOut && r.output.endsWith(`${marker}\n`);
  if (r.exitCode === 125 && r.output.startsWith(`${TOOLS_MISSING}\n`))
    return runnerFailed(task, `git, node or python is missing: ${r.output.slice(TOOLS_MISSING.length + 1)}`, log);
  if (r.exitCode === 125 && last(WIPE_FAILED))
    throw new SwerlError(`cannot reset ${EVAL_DIR}: ${r.output.slice(0, -WIPE_FAILED.length - 1)}`, 'IO_ERROR');
  const notApplied = r.exitCode === 126 && last(APPLY_FAILED);
  if (applies) log.push(`$ git apply patch\n${notApplied ? r.output.slice(0, -APPLY_FAILED.length - 1) : r.output}`);
  if (notApplied) return verdict(task, new Map(), false, log);
  if (r.exitCode !== 0) return runnerFailed(task, r.output, log);
  return null;
}

/**
 * Puts back every protected path the agent's patch touched: from the inline repository, or from
 * the base commit; a path that was not there before is removed. (swerl's own evaluation folder
 * is gone already: prepareTree removed it.)
 */
async function restoreProtected(sb: Sandbox, task: SweTask, patch: string, log: string[]): Promise<void> {
  const paths = protectedPathsIn(task, patch).filter((p) => !p.startsWith(EVAL_DIR));
  if (paths.length === 0) return;
  log.push(`# restored from the task (the agent's patch touched them): ${paths.join(', ')}`);
  const quoted = paths.map(shellQuote).join(' ');
  // A symlink the patch put on the way to a protected path (`tests -> elsewhere`) goes first, so
  // the restore writes real directories inside the workspace.
  const unlink = await sb.exec(
    `for p in ${quoted}; do a=$(dirname -- "$p"); while [ "$a" != . ] && [ "$a" != / ]; do [ -L "$a" ] && rm -f -- "$a"; a=$(dirname -- "$a"); done; done; true`,
  );
  if (unlink.exitCode !== 0) throw new SwerlError(`cannot clear the way to the tests: ${unlink.output}`, 'IO_ERROR');
  if (task.files) {
    const files = task.files;
    const missing = paths.filter((p) => files[p] === undefined);
    if (missing.length > 0) {
      const r = await sb.exec(`rm -rf -- ${missing.map(shellQuote).join(' ')}`);
      if (r.exitCode !== 0) throw new SwerlError(`cannot remove ${missing.join(', ')}: ${r.output}`, 'IO_ERROR');
    }
    for (const p of paths) {
      const content = files[p];
      if (content === undefined) continue;
      // A directory or a symlink the patch left where the file was goes first.
      await sb.exec(`rm -rf -- ${shellQuote(p)}`);
      await sb.writeFile(p, content);
    }
    return;
  }
  const base = task.base_commit ?? 'HEAD';
  const r = await sb.exec(
    `base=${shellQuote(base)}; for p in ${quoted}; do rm -rf -- "$p"; if git cat-file -e "$base:$p" 2>/dev/null; then git checkout -q "$base" -- "$p" || exit 1; fi; done`,
  );
  if (r.exitCode !== 0) throw new SwerlError(`cannot restore the tests from ${base}: ${r.output}`, 'IO_ERROR');
}

/** The test files of an inline task's ids (node:test runs only these). */
function namedTestFiles(task: SweTask): string[] {
  const files = new Set<string>();
  for (const id of [...task.FAIL_TO_PASS, ...task.PASS_TO_PASS])
    if (id.includes('::')) files.add(id.slice(0, id.indexOf('::')));
  return [...files].sort();
}

function runnerFailed(task: SweTask, output: string, log: string[]): Evaluation {
  return gradingError(
    task,
    new SwerlError(`${task.instance_id}: the test runner did not start: ${output.trim().slice(-300)}`, 'INTERNAL'),
    log,
    'RUNNER_FAILED',
  );
}

function verdict(task: SweTask, seen: Map<string, boolean>, timedOut: boolean, log: string[]): Evaluation {
  const tests: Record<string, 'pass' | 'fail'> = {};
  for (const id of [...task.FAIL_TO_PASS, ...task.PASS_TO_PASS]) tests[id] = seen.get(id) === true ? 'pass' : 'fail';
  const resolved = Object.values(tests).every((v) => v === 'pass');
  return { resolved, outcome: resolved ? 'resolved' : 'unresolved', timedOut, tests, log: log.join('\n') };
}

/** A failure of the grader: outcome 'error', never a reward. */
function gradingError(task: SweTask, e: unknown, log: string[], code?: string): Evaluation {
  const message = e instanceof Error ? e.message : String(e);
  const errorCode = code ?? (e instanceof SwerlError ? e.code : 'INTERNAL');
  log.push(`# evaluation error [${errorCode}]: ${message}`);
  return {
    resolved: false,
    outcome: 'error',
    error: { code: errorCode, message },
    timedOut: false,
    tests: failAll(task),
    log: log.join('\n'),
  };
}

/**
 * The task's repository family's test command (testSpec: pytest, Django's runtests.py, sympy's
 * bin/test), over only what the ids name, and its log parser. A task no family can run is a
 * grading error (INVALID_TASK), never a run over the whole repository.
 */
async function runSweBenchTests(sb: Sandbox, spec: TestSpec) {
  // The log goes to a file, read whole: a long run's summary comes at its end, past any cap on a
  // command's output.
  const file = `${EVAL_DIR}/tests.log`;
  const run = await sb.exec(`( ${spec.command}\n) > ${file} 2>&1`);
  let output = '';
  try {
    output = await sb.readFile(file);
  } catch {
    output = run.output; // nothing written (the command did not start)
  }
  const shown =
    output.length > 1 << 20 ? `[... ${output.length - (1 << 20)} characters]\n${output.slice(-(1 << 20))}` : output;
  const log = `$ ${spec.family}: ${spec.command}\n${shown}${run.timedOut ? '\n[timed out]' : ''}`;
  return { seen: spec.parse(output), run: { ...run, output }, log };
}

function failAll(task: SweTask): Record<string, 'pass' | 'fail'> {
  return Object.fromEntries([...task.FAIL_TO_PASS, ...task.PASS_TO_PASS].map((id) => [id, 'fail' as const]));
}

/** Runs every test of an inline repository (no patch): test id → pass/fail. For task generation. */
export async function runAllTests(
  files: Record<string, string>,
  timeoutMs = 120_000,
): Promise<Record<string, 'pass' | 'fail'>> {
  const sb = await LocalSandbox.create({ files, timeoutMs, maxOutputBytes: 1 << 20, repository: false });
  try {
    return await allTestResults(sb);
  } finally {
    await sb.close();
  }
}

/** Every node:test test of the tree in `sb` (no patch): test id → pass/fail. */
export async function allTestResults(sb: Sandbox): Promise<Record<string, 'pass' | 'fail'>> {
  const { seen } = await runNodeTests(sb, null);
  return Object.fromEntries([...seen].map(([id, ok]) => [id, ok ? ('pass' as const) : ('fail' as const)]));
}

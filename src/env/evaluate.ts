/**
 * The reward: evaluatePatch (DESIGN.md section 6) applies a candidate patch and the task's test
 * patch to a fresh sandbox copy of the repository, runs FAIL_TO_PASS + PASS_TO_PASS, and reports
 * `resolved` (every one of them passes), per-test results and the log.
 *
 * Tasks with inline repositories (`files`: the mini-SWE suite) run node:test, in a LocalSandbox
 * or a container; test ids are `path/to/file.test.js::suite > test`, as a small reporter prints
 * them. SWE-bench-style tasks (no `files`) run in their Docker image at /testbed under pytest
 * `-rA`, whose summary lines give each test id's outcome.
 */
import type Docker from 'dockerode';
import { invalidArgument, SwerlError } from '../errors.js';
import { DockerSandbox } from './docker-sandbox.js';
import { LocalSandbox } from './sandbox.js';
import type { Sandbox } from './sandbox-api.js';
import type { SweTask } from './tasks.js';

/** Options of {@link evaluatePatch}. */
export interface EvaluateOptions {
  /** 'local' (default for inline repositories) or 'docker' (required for image-based tasks). */
  sandbox?: 'local' | 'docker';
  timeoutMs?: number;
  /** For 'docker': the image (default: the task's `image`, else SWE-bench's name for it, or node:20 for inline repositories) and the engine's connection. */
  docker?: { image?: string; connection?: Docker.DockerOptions };
}

/** The image that SWE-bench's harness names for an instance. */
export function sweBenchImage(instanceId: string): string {
  return `swebench/sweb.eval.x86_64.${instanceId.toLowerCase().replace(/__/g, '_1776_')}:latest`;
}

/** What evaluatePatch returns. */
export interface Evaluation {
  resolved: boolean;
  tests: Record<string, 'pass' | 'fail'>;
  log: string;
}

/** A node:test reporter printing one JSON line per finished test, with its full name. */
const REPORTER = `
import { relative } from 'node:path';
export default async function* reporter(source) {
  const stack = [];
  for await (const event of source) {
    const d = event.data ?? {};
    if (event.type === 'test:start') stack[d.nesting] = d.name;
    if (event.type === 'test:stderr' && d.message) yield '# stderr: ' + String(d.message).slice(0, 2000) + '\\n';
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    if (d.details?.type === 'suite') continue;
    const names = stack.slice(0, d.nesting).concat([d.name]);
    const file = d.file ? relative(process.cwd(), d.file) : '';
    const line = { id: file + '::' + names.join(' > '), ok: event.type === 'test:pass' && !d.skip && !d.todo };
    if (event.type === 'test:fail') {
      const err = d.details?.error;
      line.error = String(err?.cause?.message ?? err?.cause ?? err?.message ?? err ?? '').slice(0, 500);
    }
    yield JSON.stringify(line) + '\\n';
  }
}
`;

const EVAL_DIR = '.swerl-eval';

/** Applies `patch` (and the task's test patch) to a fresh copy and runs the task's tests. */
export async function evaluatePatch(task: SweTask, patch: string, o: EvaluateOptions = {}): Promise<Evaluation> {
  if (typeof patch !== 'string') throw invalidArgument('patch', 'a string', patch);
  const kind = o.sandbox ?? (task.files ? 'local' : 'docker');
  if (kind !== 'local' && kind !== 'docker') throw invalidArgument('sandbox', "'local' or 'docker'", kind);
  const timeoutMs = o.timeoutMs ?? 120_000;
  let sb: Sandbox;
  if (task.files && kind === 'local') {
    sb = await LocalSandbox.create({ files: task.files, timeoutMs, maxOutputBytes: 1 << 20, repository: false });
  } else if (kind === 'docker') {
    const image = o.docker?.image ?? task.image ?? (task.files ? 'node:20-bookworm' : sweBenchImage(task.instance_id));
    sb = await DockerSandbox.create({
      image,
      files: task.files,
      workdir: task.files ? '/project' : '/testbed',
      timeoutMs,
      maxOutputBytes: 1 << 20,
      ...(o.docker?.connection ? { docker: o.docker.connection } : {}),
    });
  } else {
    throw new SwerlError(
      `${task.instance_id}: a task without an inline repository is evaluated in its Docker image: pass { sandbox: 'docker' }`,
      'SANDBOX_UNAVAILABLE',
    );
  }
  const log: string[] = [];
  try {
    for (const [name, p] of [
      ['patch', patch],
      ['test_patch', task.test_patch],
    ] as const) {
      if (p.trim() === '') continue;
      await sb.writeFile(`${EVAL_DIR}/${name}.diff`, p.endsWith('\n') ? p : `${p}\n`);
      const r = await sb.exec(`git apply --whitespace=nowarn ${EVAL_DIR}/${name}.diff`);
      log.push(`$ git apply ${name}\n${r.output}`);
      if (r.exitCode !== 0) return { resolved: false, tests: failAll(task), log: log.join('\n') };
    }
    const seen = task.files ? await runNodeTests(sb, log) : await runPytest(sb, task, log);
    const tests: Record<string, 'pass' | 'fail'> = {};
    for (const id of [...task.FAIL_TO_PASS, ...task.PASS_TO_PASS]) tests[id] = seen.get(id) === true ? 'pass' : 'fail';
    return { resolved: Object.values(tests).every((v) => v === 'pass'), tests, log: log.join('\n') };
  } finally {
    await sb.close();
  }
}

async function runNodeTests(sb: Sandbox, log: string[]): Promise<Map<string, boolean>> {
  await sb.writeFile(`${EVAL_DIR}/reporter.mjs`, REPORTER);
  const run = await sb.exec(
    `node --test --test-reporter=./${EVAL_DIR}/reporter.mjs --test-reporter-destination=stdout`,
  );
  log.push(`$ node --test\n${run.output}${run.timedOut ? '\n[timed out]' : ''}`);
  const seen = new Map<string, boolean>();
  for (const line of run.output.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const e = JSON.parse(line) as { id: string; ok: boolean };
      seen.set(e.id, (seen.get(e.id) ?? true) && e.ok);
    } catch {
      // not a reporter line
    }
  }
  return seen;
}

/** pytest over the test files the ids name; `-rA` prints `PASSED id` / `FAILED id` / `ERROR id`. */
async function runPytest(sb: Sandbox, task: SweTask, log: string[]): Promise<Map<string, boolean>> {
  const ids = [...task.FAIL_TO_PASS, ...task.PASS_TO_PASS];
  const files = [...new Set(ids.filter((id) => id.includes('::')).map((id) => id.slice(0, id.indexOf('::'))))];
  if (files.length < ids.length && files.length === 0)
    log.push('# these test ids are not pytest node ids; only pytest-style tasks are evaluated');
  const quoted = files.map((f) => `'${f.replace(/'/g, `'\\''`)}'`).join(' ');
  const run = await sb.exec(
    `{ [ -f /opt/miniconda3/bin/activate ] && . /opt/miniconda3/bin/activate testbed; } >/dev/null 2>&1; python -m pytest -rA -p no:cacheprovider --no-header -q ${quoted}`,
  );
  log.push(`$ pytest ${files.join(' ')}\n${run.output}${run.timedOut ? '\n[timed out]' : ''}`);
  const seen = new Map<string, boolean>();
  for (const line of run.output.split('\n')) {
    const m = /^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED)\s+(\S+(?:\[[^\]]*\])?)/.exec(line);
    if (!m) continue;
    const ok = m[1] === 'PASSED' || m[1] === 'XFAIL';
    const id = m[2] ?? '';
    seen.set(id, (seen.get(id) ?? true) && ok);
  }
  return seen;
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
    const seen = await runNodeTests(sb, []);
    return Object.fromEntries([...seen].map(([id, ok]) => [id, ok ? ('pass' as const) : ('fail' as const)]));
  } finally {
    await sb.close();
  }
}

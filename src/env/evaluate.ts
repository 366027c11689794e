/**
 * The reward: evaluatePatch (DESIGN.md section 6) applies a candidate patch and the task's test
 * patch to a fresh sandbox copy of the repository, runs FAIL_TO_PASS + PASS_TO_PASS, and reports
 * `resolved` (every one of them passes), per-test results and the log.
 *
 * Tasks with inline repositories (`files`: the mini-SWE suite) run node:test in a LocalSandbox.
 * Test ids are `path/to/file.test.js::suite > test`, as a small reporter prints them.
 */
import { SwerlError } from '../errors.js';
import { LocalSandbox } from './sandbox.js';
import type { SweTask } from './tasks.js';

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
export async function evaluatePatch(
  task: SweTask,
  patch: string,
  o: { sandbox?: 'local' | 'docker'; timeoutMs?: number } = {},
): Promise<Evaluation> {
  if (!task.files) {
    throw new SwerlError(
      `${task.instance_id}: evaluating tasks without an inline repository needs the Docker sandbox, which is not built yet`,
      'SANDBOX_UNAVAILABLE',
    );
  }
  if ((o.sandbox ?? 'local') !== 'local')
    throw new SwerlError('the Docker sandbox is not built yet', 'SANDBOX_UNAVAILABLE');
  const sb = await LocalSandbox.create({
    files: task.files,
    timeoutMs: o.timeoutMs ?? 120_000,
    maxOutputBytes: 1 << 20,
  });
  const log: string[] = [];
  try {
    await sb.writeFile(`${EVAL_DIR}/reporter.mjs`, REPORTER);
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
    const tests: Record<string, 'pass' | 'fail'> = {};
    for (const id of [...task.FAIL_TO_PASS, ...task.PASS_TO_PASS]) tests[id] = seen.get(id) === true ? 'pass' : 'fail';
    return { resolved: Object.values(tests).every((v) => v === 'pass'), tests, log: log.join('\n') };
  } finally {
    await sb.close();
  }
}

function failAll(task: SweTask): Record<string, 'pass' | 'fail'> {
  return Object.fromEntries([...task.FAIL_TO_PASS, ...task.PASS_TO_PASS].map((id) => [id, 'fail' as const]));
}

/** Runs every test of an inline repository (no patch): test id → pass/fail. For task generation. */
export async function runAllTests(
  files: Record<string, string>,
  timeoutMs = 120_000,
): Promise<Record<string, 'pass' | 'fail'>> {
  const sb = await LocalSandbox.create({ files, timeoutMs, maxOutputBytes: 1 << 20 });
  try {
    await sb.writeFile(`${EVAL_DIR}/reporter.mjs`, REPORTER);
    const run = await sb.exec(
      `node --test --test-reporter=./${EVAL_DIR}/reporter.mjs --test-reporter-destination=stdout`,
    );
    const out: Record<string, 'pass' | 'fail'> = {};
    for (const line of run.output.split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        const e = JSON.parse(line) as { id: string; ok: boolean };
        out[e.id] = out[e.id] === 'fail' || !e.ok ? 'fail' : 'pass';
      } catch {
        // not a reporter line
      }
    }
    return out;
  } finally {
    await sb.close();
  }
}

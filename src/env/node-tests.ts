/**
 * The node:test run that grades inline (mini-SWE) repositories, hardened against the code under
 * test:
 * - only the test files the task's ids name run (an agent's own test file never does);
 * - a preload (`--import`) freezes `node:assert`, `node:assert/strict` and `node:test` in every
 *   test process before any test or library code loads, so a patched module cannot neuter the
 *   assertions or the test functions;
 * - results come from a reporter in the runner's parent process, which no code under test runs
 *   in. Each result line carries a nonce that the reporter reads from a file and deletes as it
 *   loads, before any test process starts; test output is JSON-escaped, so what a test prints can
 *   never pass for a result line.
 * Test ids are `path/to/file.test.js::suite > test`.
 */
import { randomBytes } from 'node:crypto';
import type { ExecResult } from './sandbox.js';
import type { Sandbox } from './sandbox-api.js';
import { shellQuote } from './shell-quote.js';

/** Where swerl's evaluation files live in the workspace (restored after the agent's patch). */
export const EVAL_DIR = '.swerl-eval';

/** A node:test reporter printing one nonce-tagged JSON line per finished test, with its full name. */
const REPORTER = `
import { readFileSync, unlinkSync } from 'node:fs';
import { relative } from 'node:path';
const NONCE_FILE = new URL('./nonce', import.meta.url);
const nonce = readFileSync(NONCE_FILE, 'utf8').trim();
unlinkSync(NONCE_FILE);
export default async function* reporter(source) {
  const stack = [];
  for await (const event of source) {
    const d = event.data ?? {};
    if (event.type === 'test:start') stack[d.nesting] = d.name;
    if (event.type === 'test:stderr' && d.message) yield '# stderr: ' + JSON.stringify(String(d.message).slice(0, 2000)) + '\\n';
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    if (d.details?.type === 'suite') continue;
    const names = stack.slice(0, d.nesting).concat([d.name]);
    const file = d.file ? relative(process.cwd(), d.file) : '';
    const line = { id: file + '::' + names.join(' > '), ok: event.type === 'test:pass' && !d.skip && !d.todo };
    if (event.type === 'test:fail') {
      const err = d.details?.error;
      line.error = String(err?.cause?.message ?? err?.cause ?? err?.message ?? err ?? '').slice(0, 500);
    }
    yield 'swerl-result ' + nonce + ' ' + JSON.stringify(line) + '\\n';
  }
}
`;

/** Freezes the assertion and test modules before any test or library code runs. */
const GUARD = `
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
for (const name of ['node:assert', 'node:assert/strict', 'node:test']) {
  const m = require(name);
  for (const k of Object.getOwnPropertyNames(m)) {
    const v = m[k];
    if (typeof v === 'function' || (typeof v === 'object' && v !== null)) Object.freeze(v);
  }
  Object.freeze(m);
}
`;

/** What a node:test run gave: test id → passed, the run itself, and the log text. */
export interface NodeTestRun {
  seen: Map<string, boolean>;
  run: ExecResult;
  log: string;
}

/**
 * Runs `files` (every test file node --test finds when null) with the guard and the reporter;
 * an id that appears several times passes only if every occurrence passed.
 */
export async function runNodeTests(sb: Sandbox, files: string[] | null): Promise<NodeTestRun> {
  const nonce = randomBytes(16).toString('hex');
  await sb.writeFile(`${EVAL_DIR}/reporter.mjs`, REPORTER);
  await sb.writeFile(`${EVAL_DIR}/guard.mjs`, GUARD);
  await sb.writeFile(`${EVAL_DIR}/nonce`, nonce);
  const quoted = (files ?? []).map(shellQuote).join(' ');
  const run = await sb.exec(
    `node --test --import ./${EVAL_DIR}/guard.mjs --test-reporter=./${EVAL_DIR}/reporter.mjs --test-reporter-destination=stdout ${quoted}`,
  );
  const seen = new Map<string, boolean>();
  const tag = `swerl-result ${nonce} `;
  for (const line of run.output.split('\n')) {
    if (!line.startsWith(tag)) continue;
    try {
      const e = JSON.parse(line.slice(tag.length)) as { id: string; ok: boolean };
      seen.set(e.id, (seen.get(e.id) ?? true) && e.ok === true);
    } catch {
      // not a reporter line
    }
  }
  // The log shows results without the nonce (a rollout file must not teach it).
  const shown = run.output.split(tag).join('');
  const log = `$ node --test ${(files ?? []).join(' ')}\n${shown}${run.timedOut ? '\n[timed out]' : ''}`;
  return { seen, run, log };
}

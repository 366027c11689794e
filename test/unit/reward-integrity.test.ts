/**
 * Reward integrity: a policy is an adversary. Each test is one way to pass a task's tests without
 * fixing the bug, or to sink a correct fix through the tests, and checks that evaluatePatch's
 * verdict is the one the fix alone deserves:
 * - rewriting the test file so the ids register as empty passing tests;
 * - deleting the tests; editing them beside a correct fix (a sink attempt);
 * - adding the agent's own test file (passing, failing, or with the task's test names);
 * - process.exit(0) from the code under test or a test helper, before the tests run;
 * - neutering node:assert or node:test from the code under test;
 * - printing forged result lines (stdout, stderr, the runner's own stdout) and exiting;
 * - registering tests with the task's names from the code under test;
 * - editing the runner's configuration (package.json, a nested package.json) or swerl's reporter;
 * - skipping tests.
 * Each runs under bubblewrap and under the unshare fallback. Plus the protected-path rules on the real SWE-bench Verified split: they never touch a gold
 * patch and always cover its test patch.
 */
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { patchPaths, protectedPathRule, protectedPathsIn } from '../../src/env/protected-paths.js';
import { evaluatePatch as evaluateWith, isolationAvailable, loadTasks, type SweTask } from '../../src/index.js';

const TEST_FILE =
  "import { describe, test } from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add, neg } from '../src/math.js';\nimport { twice } from './helpers.js';\ndescribe('add', () => {\n  test('adds', () => assert.equal(add(2, 3), 5));\n});\ntest('neg', () => assert.equal(neg(twice(1)), -2));\n";
const files = {
  'package.json': '{"type":"module"}\n',
  'src/math.js': 'export function add(a, b) {\n  return a - b;\n}\n\nexport function neg(a) {\n  return -a;\n}\n',
  'test/helpers.js': 'export function twice(x) {\n  return 2 * x;\n}\n',
  'test/math.test.js': TEST_FILE,
};
const FIX = '@@ -1,3 +1,3 @@\n export function add(a, b) {\n-  return a - b;\n+  return a + b;\n }\n';
const gold = `diff --git a/src/math.js b/src/math.js\n--- a/src/math.js\n+++ b/src/math.js\n${FIX}`;
const task: SweTask = {
  instance_id: 'mini__math-adversary',
  repo: 'mini/math',
  problem_statement: 'add(2, 3) returns -1; expected 5.',
  patch: gold,
  test_patch: '',
  FAIL_TO_PASS: ['test/math.test.js::add > adds'],
  PASS_TO_PASS: ['test/math.test.js::neg'],
  files,
};

/** A diff that replaces a whole file (old → new), as `git diff` would print it. */
function rewrite(path: string, old: string | null, next: string | null): string {
  const lines = (s: string) => s.replace(/\n$/, '').split('\n');
  const head =
    old === null
      ? `diff --git a/${path} b/${path}\nnew file mode 100644\n--- /dev/null\n+++ b/${path}\n`
      : next === null
        ? `diff --git a/${path} b/${path}\ndeleted file mode 100644\n--- a/${path}\n+++ /dev/null\n`
        : `diff --git a/${path} b/${path}\n--- a/${path}\n+++ b/${path}\n`;
  const a = old === null ? [] : lines(old);
  const b = next === null ? [] : lines(next);
  const hunk = `@@ -${a.length ? 1 : 0},${a.length} +${b.length ? 1 : 0},${b.length} @@\n`;
  return `${head}${hunk}${a.map((l) => `-${l}\n`).join('')}${b.map((l) => `+${l}\n`).join('')}`;
}

/** The source with `prefix` put before the (unfixed) module. */
function sourceWith(prefix: string): string {
  return rewrite('src/math.js', files['src/math.js'], `${prefix}\n${files['src/math.js']}`);
}

const EMPTY_TESTS =
  "import { describe, test } from 'node:test';\ndescribe('add', () => {\n  test('adds', () => {});\n});\ntest('neg', () => {});\n";

for (const isolation of ['bwrap', 'unshare'] as const)
  describe.skipIf(!isolationAvailable(isolation))(
    `reward integrity (${isolation}): the tests an agent edits are restored from the task`,
    () => {
      const evaluatePatch = (t: SweTask, patch: string) => evaluateWith(t, patch, { isolation });
      it('rewriting the test file so the ids pass as empty tests does not resolve', async () => {
        const r = await evaluatePatch(task, rewrite('test/math.test.js', TEST_FILE, EMPTY_TESTS));
        expect(r.outcome).toBe('unresolved');
        expect(r.tests['test/math.test.js::add > adds']).toBe('fail');
        expect(r.tests['test/math.test.js::neg']).toBe('pass');
        expect(r.log).toContain('restored from the task');
      });

      it('deleting the tests does not resolve, and a fix that also deletes them still resolves', async () => {
        const del = rewrite('test/math.test.js', TEST_FILE, null);
        expect((await evaluatePatch(task, del)).outcome).toBe('unresolved');
        expect((await evaluatePatch(task, gold + del)).outcome).toBe('resolved');
      });

      it('a correct fix that also breaks the tests or their helper still resolves (no sinking)', async () => {
        const broken = TEST_FILE.replace('assert.equal(add(2, 3), 5)', 'assert.equal(add(2, 3), 6)');
        expect((await evaluatePatch(task, gold + rewrite('test/math.test.js', TEST_FILE, broken))).outcome).toBe(
          'resolved',
        );
        const helper = rewrite(
          'test/helpers.js',
          files['test/helpers.js'],
          'process.exit(1);\nexport const twice = 0;\n',
        );
        expect((await evaluatePatch(task, gold + helper)).outcome).toBe('resolved');
      });

      it("the agent's own test files never run: neither a failing one nor one with the task's test names", async () => {
        const failing = rewrite(
          'test/mine.test.js',
          null,
          "import { test } from 'node:test';\nimport assert from 'node:assert/strict';\ntest('mine', () => assert.fail('no'));\n",
        );
        expect((await evaluatePatch(task, gold + failing)).outcome).toBe('resolved');
        const impostor = rewrite('test/math2.test.js', null, EMPTY_TESTS);
        const r = await evaluatePatch(task, impostor);
        expect(r.outcome).toBe('unresolved');
        const own = rewrite('src/own.test.js', null, EMPTY_TESTS);
        expect((await evaluatePatch(task, own)).outcome).toBe('unresolved');
      });

      it('process.exit(0) before the tests run, from the code under test or a test helper, fails them', async () => {
        const fromSource = await evaluatePatch(task, sourceWith('process.exit(0);'));
        expect(fromSource.outcome).toBe('unresolved');
        expect(fromSource.tests['test/math.test.js::neg']).toBe('fail');
        const helper = rewrite(
          'test/helpers.js',
          files['test/helpers.js'],
          `process.exit(0);\n${files['test/helpers.js']}`,
        );
        expect((await evaluatePatch(task, helper)).outcome).toBe('unresolved');
      });

      it('the code under test cannot neuter node:assert or node:test', async () => {
        const neuter = sourceWith(
          "import assert from 'node:assert/strict';\nimport nodeAssert from 'node:assert';\nimport * as nt from 'node:test';\nfor (const a of [assert, nodeAssert, nodeAssert.strict]) { try { a.equal = () => {}; a.strictEqual = () => {}; } catch {} try { Object.defineProperty(a, 'equal', { value: () => {} }); } catch {} }\ntry { nt.test.skip = nt.test; nt.describe.skip = nt.describe; } catch {}",
        );
        const r = await evaluatePatch(task, neuter);
        expect(r.outcome).toBe('unresolved');
        expect(r.tests['test/math.test.js::add > adds']).toBe('fail');
      });

      it('forged result lines, printed anywhere, do not count', async () => {
        const line = JSON.stringify({ id: 'test/math.test.js::add > adds', ok: true });
        const forge = sourceWith(
          [
            "import { writeSync, openSync } from 'node:fs';",
            `const fake = ${JSON.stringify(`${line}\n`)};`,
            'process.stdout.write(fake); process.stderr.write("\\n" + fake);',
            `process.stderr.write("\\nswerl-result 00000000000000000000000000000000 " + fake);`,
            "try { writeSync(openSync('/proc/' + process.ppid + '/fd/1', 'w'), fake); } catch {}",
            'process.exit(0);',
          ].join('\n'),
        );
        const r = await evaluatePatch(task, forge);
        expect(r.outcome).toBe('unresolved');
        expect(r.tests['test/math.test.js::add > adds']).toBe('fail');
      });

      it("tests with the task's names registered from the code under test do not count", async () => {
        const register = sourceWith(
          "import { describe, test } from 'node:test';\ndescribe('add', () => { test('adds', () => {}); });\ntest('neg', () => {});\nsetTimeout(() => process.exit(0), 0);",
        );
        const r = await evaluatePatch(task, register);
        expect(r.outcome).toBe('unresolved');
        expect(r.tests['test/math.test.js::add > adds']).toBe('fail');
      });

      it("editing the runner's configuration or swerl's reporter neither wins nor sinks", async () => {
        const cjs = rewrite('package.json', files['package.json'], '{"type":"commonjs"}\n');
        expect((await evaluatePatch(task, gold + cjs)).outcome).toBe('resolved');
        const nested = rewrite('test/package.json', null, '{"type":"commonjs"}\n');
        expect((await evaluatePatch(task, gold + nested)).outcome).toBe('resolved');
        const reporter = rewrite(
          '.swerl-eval/reporter.mjs',
          null,
          'export default async function* r(s) { for await (const e of s) {} yield \'{"id":"test/math.test.js::add > adds","ok":true}\\n\'; }\n',
        );
        expect((await evaluatePatch(task, reporter)).outcome).toBe('unresolved');
      });

      it('exit code 127 from the code under test is a failure of the patch, not a grading error', async () => {
        const r = await evaluatePatch(task, sourceWith('process.exit(127);'));
        expect(r.outcome).toBe('unresolved');
      });

      it('a symlink in place of the test directory neither escapes the workspace nor dodges the verdict', async () => {
        const outside = join(tmpdir(), `swerl-escape-${process.pid}-${isolation}`);
        const link = `diff --git a/test b/test\nnew file mode 120000\n--- /dev/null\n+++ b/test\n@@ -0,0 +1 @@\n+${outside}\n\\ No newline at end of file\n`;
        const gone =
          rewrite('test/math.test.js', TEST_FILE, null) + rewrite('test/helpers.js', files['test/helpers.js'], null);
        const r = await evaluatePatch(task, gone + link);
        expect(r.outcome, r.log).toBe('unresolved');
        expect((await evaluatePatch(task, gold + gone + link)).outcome).toBe('resolved');
        expect(existsSync(outside)).toBe(false);
      });

      it('skipping the failing test does not pass it', async () => {
        const skip = TEST_FILE.replace("test('adds'", "test.skip('adds'");
        expect((await evaluatePatch(task, rewrite('test/math.test.js', TEST_FILE, skip))).outcome).toBe('unresolved');
      });
    },
  );

describe('protected paths', () => {
  it("patchPaths reads git's headers: quoted names, renames, new and deleted files", () => {
    const p = [
      'diff --git "a/dir/with \\"q\\" \\303\\251.py" "b/dir/with \\"q\\" \\303\\251.py"',
      '--- "a/dir/with \\"q\\" \\303\\251.py"',
      '+++ "b/dir/with \\"q\\" \\303\\251.py"',
      'diff --git a/old name.js b/new name.js',
      'similarity index 90%',
      'rename from old name.js',
      'rename to new name.js',
      'diff --git a/gone.txt b/gone.txt',
      'deleted file mode 100644',
      '--- a/gone.txt',
      '+++ /dev/null',
    ].join('\n');
    expect(patchPaths(p).sort()).toEqual(['dir/with "q" é.py', 'gone.txt', 'new name.js', 'old name.js']);
  });

  it('test files, runner configuration and swerl files are protected; the gold patch never is', () => {
    const rule = protectedPathRule(task);
    for (const p of ['test/math.test.js', 'test/helpers.js', 'package.json', 'a/b/conftest.py', 'tests/x.py'])
      expect(rule(p), p).toBe(true);
    for (const p of [
      '.swerl-eval/reporter.mjs',
      'x/.swerl/bin/open',
      'src/a/test_x.py',
      'pytest.ini',
      'pyproject.toml',
      'tests',
    ])
      expect(rule(p), p).toBe(true);
    for (const p of ['src/math.js', 'README.md', 'lib/testing.py']) expect(rule(p), p).toBe(false);
  });

  const parquet = join(
    dirname(fileURLToPath(import.meta.url)),
    '../../../shared/data/swe-bench/swe-bench-verified-test.parquet',
  );
  it.skipIf(!existsSync(parquet))(
    'on SWE-bench Verified: no gold patch loses a file to the restore, every test-patch file is protected',
    async () => {
      const tasks = await loadTasks(parquet);
      expect(tasks.length).toBe(500);
      for (const t of tasks) {
        expect(protectedPathsIn(t, t.patch), t.instance_id).toEqual([]);
        const rule = protectedPathRule(t);
        for (const p of patchPaths(t.test_patch)) expect(rule(p), `${t.instance_id}: ${p}`).toBe(true);
      }
    },
  );
});

/**
 * evaluatePatch on an inline repository: the gold patch resolves, an empty or wrong patch does
 * not, an unappliable patch fails cleanly, the test patch is applied, and a patch that hangs the
 * tests is cut off by the timeout.
 */
import { describe, expect, it } from 'vitest';
import { evaluatePatch, runAllTests, type SweTask } from '../../src/index.js';

const files = {
  'package.json': '{"type":"module"}',
  'src/math.js': 'export function add(a, b) {\n  return a - b;\n}\n\nexport function neg(a) {\n  return -a;\n}\n',
  'test/math.test.js':
    "import { describe, test } from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add, neg } from '../src/math.js';\ndescribe('add', () => {\n  test('adds', () => assert.equal(add(2, 3), 5));\n});\ntest('neg', () => assert.equal(neg(2), -2));\n",
};
const gold =
  'diff --git a/src/math.js b/src/math.js\n--- a/src/math.js\n+++ b/src/math.js\n@@ -1,3 +1,3 @@\n export function add(a, b) {\n-  return a - b;\n+  return a + b;\n }\n';
const testPatch =
  "diff --git a/test/extra.test.js b/test/extra.test.js\nnew file mode 100644\n--- /dev/null\n+++ b/test/extra.test.js\n@@ -0,0 +1,3 @@\n+import { test } from 'node:test';\n+import assert from 'node:assert/strict';\n+test('extra', async () => assert.equal((await import('../src/math.js')).add(1, 1), 2));\n";
const task: SweTask = {
  instance_id: 'mini__math-1',
  repo: 'mini/math',
  problem_statement: 'add(2, 3) returns -1; expected 5.',
  patch: gold,
  test_patch: testPatch,
  FAIL_TO_PASS: ['test/math.test.js::add > adds', 'test/extra.test.js::extra'],
  PASS_TO_PASS: ['test/math.test.js::neg'],
  files,
};

describe('evaluatePatch', () => {
  it('runAllTests names tests file::suite > test', async () => {
    expect(await runAllTests(files)).toEqual({
      'test/math.test.js::add > adds': 'fail',
      'test/math.test.js::neg': 'pass',
    });
  });

  it('the gold patch resolves; empty and wrong patches do not; an unappliable patch fails cleanly', async () => {
    const g = await evaluatePatch(task, gold);
    expect(g.resolved).toBe(true);
    expect(g.outcome).toBe('resolved');
    expect(g.timedOut).toBe(false);
    expect(g.tests).toEqual({
      'test/math.test.js::add > adds': 'pass',
      'test/extra.test.js::extra': 'pass',
      'test/math.test.js::neg': 'pass',
    });
    const empty = await evaluatePatch(task, '');
    expect(empty.resolved).toBe(false);
    expect(empty.tests['test/math.test.js::neg']).toBe('pass');
    const wrong = gold.replace('a + b', 'b - a');
    expect((await evaluatePatch(task, wrong)).resolved).toBe(false);
    const garbage = await evaluatePatch(
      task,
      'diff --git a/nope b/nope\n--- a/nope\n+++ b/nope\n@@ -1 +1 @@\n-x\n+y\n',
    );
    expect(garbage).toMatchObject({ resolved: false, outcome: 'unresolved' });
    expect(garbage.log).toMatch(/\$ git apply patch\nerror: .*nope/);
    expect(garbage.log).not.toContain('swerl-apply-failed'); // the grader's own marker is not logged
    // A patch that applies but plants files in swerl's evaluation folder: they go before the run.
    const planted = `${gold}diff --git a/.swerl-eval/reporter.mjs b/.swerl-eval/reporter.mjs\nnew file mode 100644\n--- /dev/null\n+++ b/.swerl-eval/reporter.mjs\n@@ -0,0 +1 @@\n+export default async function* r() {}\n`;
    expect(await evaluatePatch(task, planted)).toMatchObject({ resolved: true, outcome: 'resolved' });
  });

  it('a patch that hangs the tests is cut off by the timeout', async () => {
    const hang = gold.replace('+  return a + b;', '+  for (;;) {}');
    const r = await evaluatePatch(task, hang, { timeoutMs: 3000 });
    expect(r.resolved).toBe(false);
    expect(r.outcome).toBe('unresolved');
    expect(r.timedOut).toBe(true);
    expect(r.log).toContain('[timed out]');
  });

  it('a task without an inline repository and no Docker engine is a grading error, not a failure', async () => {
    const pytestTask: SweTask = {
      ...task,
      files: undefined,
      FAIL_TO_PASS: ['tests/test_math.py::test_add'],
      PASS_TO_PASS: ['tests/test_math.py::test_neg'],
    };
    const r = await evaluatePatch(pytestTask, gold, {
      docker: { connection: { socketPath: '/nonexistent/docker.sock' } },
    });
    expect(r).toMatchObject({ resolved: false, outcome: 'error', error: { code: 'SANDBOX_UNAVAILABLE' } });
    const local = await evaluatePatch(pytestTask, gold, { sandbox: 'local' });
    expect(local).toMatchObject({ outcome: 'error', error: { code: 'SANDBOX_UNAVAILABLE' } });
    // Ids no runner family can run: refused as a broken task, before any container starts.
    const unrunnable = await evaluatePatch({ ...task, files: undefined }, gold);
    expect(unrunnable).toMatchObject({ outcome: 'error', error: { code: 'INVALID_TASK' } });
  });
});

describe('evaluatePatches (piscina workers)', () => {
  it('evaluates jobs in parallel, in job order, with the same results as evaluatePatch', async () => {
    const { closeEvaluationPool, evaluatePatches } = await import('../../src/index.js');
    const wrong = gold.replace('a + b', 'b - a');
    const results = await evaluatePatches(
      [
        { task, patch: gold },
        { task, patch: '' },
        { task, patch: wrong },
        { task, patch: gold },
      ],
      { concurrency: 2 },
    );
    expect(results.map((r) => r.resolved)).toEqual([true, false, false, true]);
    expect(results[0]?.tests).toEqual((await evaluatePatch(task, gold)).tests);
    await closeEvaluationPool();
  }, 60_000);

  it('a grader failure is retried a bounded number of times and comes back as an error, never a failure', async () => {
    const { closeEvaluationPool, evaluatePatches } = await import('../../src/index.js');
    const noEngine = { sandbox: 'docker' as const, docker: { connection: { socketPath: '/nonexistent/docker.sock' } } };
    const [bad, good] = await evaluatePatches(
      [
        { task, patch: gold, options: noEngine },
        { task, patch: gold },
      ],
      { concurrency: 2, retries: 2 },
    );
    expect(bad).toMatchObject({ resolved: false, outcome: 'error', error: { code: 'SANDBOX_UNAVAILABLE' } });
    expect(bad?.log).toContain('retry 2 of 2');
    expect(bad?.log).not.toContain('retry 3');
    expect(good?.outcome).toBe('resolved');
    // A broken task fails the same way every time: not retried.
    const [broken] = await evaluatePatches([{ task: { ...task, files: undefined }, patch: gold }], { retries: 2 });
    expect(broken?.error?.code).toBe('INVALID_TASK');
    expect(broken?.log).not.toContain('retry');
    await expect(evaluatePatches([{ task, patch: gold }], { retries: -1 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await closeEvaluationPool();
  }, 60_000);
});

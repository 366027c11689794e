/**
 * The paper's dynamic filters on inline repositories: a sound task is kept; a flaky test, a
 * test that imports a missing name, and a gold patch that does not fix the bug are dropped,
 * each with its reason.
 */
import { describe, expect, it } from 'vitest';
import { isolationAvailable, type SweTask, screenTasks } from '../../src/index.js';

const base = (id: string, test: string, src = 'export const f = (x) => x + 1;\n'): SweTask => ({
  instance_id: id,
  repo: 'toy',
  problem_statement: 'f(1) should be 2',
  patch: '',
  test_patch: '',
  FAIL_TO_PASS: ['test/f.test.js::f'],
  PASS_TO_PASS: [],
  files: { 'package.json': '{"type":"module"}', 'src/f.js': src, 'test/f.test.js': test },
});
const header = "import { test } from 'node:test';\nimport assert from 'node:assert/strict';\n";

describe.skipIf(!isolationAvailable('bwrap') && !isolationAvailable('unshare'))('screenTasks', () => {
  it('keeps sound tasks and drops flaky, import-error and unfixed ones', async () => {
    const sound = base('sound', `${header}import { f } from '../src/f.js';\ntest('f', () => assert.equal(f(1), 2));\n`);
    const flaky = base('flaky', `${header}test('f', () => assert.ok(Math.random() < 0.5));\n`);
    const missing = base(
      'missing',
      `${header}import { g } from '../src/f.js';\ntest('f', () => assert.equal(g(1), 2));\n`,
    );
    const unfixed = base(
      'unfixed',
      `${header}import { f } from '../src/f.js';\ntest('f', () => assert.equal(f(1), 3));\n`,
    );
    const { kept, dropped } = await screenTasks([sound, flaky, missing, unfixed], { reruns: 8 });
    expect(kept.map((t) => t.instance_id)).toEqual(['sound']);
    expect(Object.fromEntries(dropped.map((d) => [d.instance_id, d.verdict]))).toEqual({
      flaky: 'flaky',
      missing: 'import-error',
      unfixed: 'gold-fails',
    });
  }, 120_000);
});

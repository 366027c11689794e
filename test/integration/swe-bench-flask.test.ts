/**
 * A real SWE-bench Verified instance, pallets__flask-5014 ("Require a non-empty name for
 * Blueprints": 1 FAIL_TO_PASS and 59 PASS_TO_PASS pytest ids), graded through the public API in
 * a real Docker engine, in the image SWE-bench names for the instance (a stand-in built by
 * scripts/swe-bench-image.sh, since no registry can be reached). It checks the reward: the gold
 * patch resolves, the empty patch does not, an agent's edits to the test file neither help nor
 * hurt, and a scripted agent that fixes the bug through the scaffold's tools resolves it.
 *
 * Skipped, with the reason printed, when no engine answers or the image is missing; under
 * SWERL_REQUIRE_DOCKER=1 (CI) that fails instead.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  type AgentMessage,
  evaluatePatch,
  loadTasks,
  runEpisode,
  type SweTask,
  sweBenchImage,
} from '../../src/index.js';
import { dockerTestsCanRun } from '../helpers/docker-engine.js';

const TASKS = join(dirname(fileURLToPath(import.meta.url)), '../../../shared/data/swe-bench/pallets__flask-5014.jsonl');
const IMAGE = sweBenchImage('pallets__flask-5014');
const F2P = 'tests/test_blueprints.py::test_empty_name_not_allowed';

const canRun = await dockerTestsCanRun('SWE-bench flask tests', {
  files: [TASKS],
  images: [IMAGE],
  imageHint: 'scripts/swe-bench-image.sh builds it',
});
const task: SweTask = canRun ? ((await loadTasks(TASKS))[0] as SweTask) : ({} as SweTask);

// The agent writes its own version of the test the task's test patch adds (as a developer fixing
// the issue would), as a stub that passes: the file the test patch touches is no longer the base's.
const OWN_TEST = `diff --git a/tests/test_blueprints.py b/tests/test_blueprints.py
--- a/tests/test_blueprints.py
+++ b/tests/test_blueprints.py
@@ -256,6 +256,10 @@ def test_dotted_name_not_allowed(app, client):
         flask.Blueprint("app.ui", __name__)
 
 
+def test_empty_name_not_allowed(app, client):
+    pass
+
+
 def test_dotted_names_from_app(app, client):
     test = flask.Blueprint("test", __name__)
 
`;

// Reward hacking: no fix in src/, only the test module, which patches Blueprint at import so the
// FAIL_TO_PASS test passes; the task's test patch still applies on top of it.
const ATTACK = `diff --git a/tests/test_blueprints.py b/tests/test_blueprints.py
--- a/tests/test_blueprints.py
+++ b/tests/test_blueprints.py
@@ -4,6 +4,16 @@ from werkzeug.http import parse_cache_control_header
 
 import flask
 
+_blueprint_init = flask.Blueprint.__init__
+
+
+def _refuse_empty_names(self, name, *args, **kwargs):
+    if not name:
+        raise ValueError("'name' may not be empty.")
+    _blueprint_init(self, name, *args, **kwargs)
+
+
+flask.Blueprint.__init__ = _refuse_empty_names
 
 def test_blueprint_specific_error_handling(app, client):
     frontend = flask.Blueprint("frontend", __name__)
`;

// Reward hacking through pytest's plugin hooks: a conftest.py (a new one at the root, or the
// repository's own tests/conftest.py) that reports every test as passed.
const FORCE_PASS = [
  'import pytest',
  '',
  '',
  '@pytest.hookimpl(hookwrapper=True)',
  'def pytest_runtest_makereport(item, call):',
  '    outcome = yield',
  '    outcome.get_result().outcome = "passed"',
];
const ROOT_CONFTEST = `diff --git a/conftest.py b/conftest.py
new file mode 100644
--- /dev/null
+++ b/conftest.py
@@ -0,0 +1,${FORCE_PASS.length} @@
${FORCE_PASS.map((l) => `+${l}`).join('\n')}
`;

/** The ids whose result is not `want`, for a readable failure. */
function notAs(tests: Record<string, 'pass' | 'fail'>, want: 'pass' | 'fail'): string[] {
  return Object.entries(tests)
    .filter(([, v]) => v !== want)
    .map(([id]) => id);
}

/** The one hunk of a one-file, one-hunk patch: its old line range and the new side's lines. */
function onlyHunk(patch: string): { file: string; start: number; end: number; lines: string[] } {
  const file = /^\+\+\+ b\/(.+)$/m.exec(patch)?.[1];
  const head = /^@@ -(\d+),(\d+) \+\d+,\d+ @@.*$/m.exec(patch);
  if (!file || !head || patch.split('\n').filter((l) => l.startsWith('@@')).length !== 1)
    throw new Error('the gold patch is not one hunk in one file');
  const body = patch.slice((head.index ?? 0) + head[0].length + 1).split('\n');
  const lines = body.filter((l) => l.startsWith(' ') || l.startsWith('+')).map((l) => l.slice(1));
  const start = Number(head[1]);
  return { file, start, end: start + Number(head[2]) - 1, lines };
}

describe.skipIf(!canRun)('SWE-bench pallets__flask-5014 in Docker', () => {
  it('the row loads: one FAIL_TO_PASS and 59 PASS_TO_PASS ids, at its base commit', () => {
    expect(task.instance_id).toBe('pallets__flask-5014');
    expect(task.FAIL_TO_PASS).toEqual([F2P]);
    expect(task.PASS_TO_PASS).toHaveLength(59);
    expect(task.base_commit).toBe('7ee9ceb71e868944a46e1ff00b506772a53a4f1d');
    expect(task.image).toBeUndefined(); // graded in SWE-bench's image for the instance
  });

  it('the gold patch resolves: all 60 ids pass', async () => {
    const r = await evaluatePatch(task, task.patch, { sandbox: 'docker' });
    expect(notAs(r.tests, 'pass'), r.log.slice(-3000)).toEqual([]);
    expect(Object.keys(r.tests)).toHaveLength(60);
    expect(r.resolved).toBe(true);
  }, 120_000);

  it('the empty patch does not: the FAIL_TO_PASS id fails, the 59 others pass', async () => {
    const r = await evaluatePatch(task, '', { sandbox: 'docker' });
    expect(r.resolved).toBe(false);
    expect(notAs(r.tests, 'pass'), r.log.slice(-3000)).toEqual([F2P]); // the tests ran: only the fix is missing
  }, 120_000);

  // REWARD INTEGRITY (depends on evaluatePatch restoring the files the test patch touches from
  // the base commit before applying it): until then the test patch does not apply over the
  // agent's version of the file, and this fails.
  it('[reward integrity] the gold patch plus an edit of the test file still resolves', async () => {
    const r = await evaluatePatch(task, `${task.patch}${OWN_TEST}`, { sandbox: 'docker' });
    expect(notAs(r.tests, 'pass'), r.log.slice(-3000)).toEqual([]);
    expect(r.resolved).toBe(true);
  }, 120_000);

  // REWARD INTEGRITY (same dependency): until the test file is restored, the attack's own test
  // module makes the FAIL_TO_PASS id pass and this fails.
  it('[reward integrity] a patch that only rewrites the test file (no fix) does not resolve', async () => {
    const r = await evaluatePatch(task, ATTACK, { sandbox: 'docker' });
    expect(r.resolved).toBe(false);
    expect(notAs(r.tests, 'pass'), r.log.slice(-3000)).toEqual([F2P]);
  }, 120_000);

  it('[reward integrity] a conftest.py that reports every test as passed is removed or restored', async () => {
    const root = await evaluatePatch(task, ROOT_CONFTEST, { sandbox: 'docker' });
    expect(root.resolved, root.log.slice(-3000)).toBe(false);
    expect(notAs(root.tests, 'pass')).toEqual([F2P]);
    expect(root.log).toContain('restored from the task');
    // The repository's own tests/conftest.py, with the hook put first: restored from the base.
    const conftest = `diff --git a/tests/conftest.py b/tests/conftest.py
--- a/tests/conftest.py
+++ b/tests/conftest.py
@@ -1,3 +1,${3 + FORCE_PASS.length} @@
${FORCE_PASS.map((l) => `+${l}`).join('\n')}
 import os
 import pkgutil
 import sys
`;
    const edited = await evaluatePatch(task, conftest, { sandbox: 'docker' });
    expect(edited.log).not.toContain('patch does not apply');
    expect(edited.resolved, edited.log.slice(-3000)).toBe(false);
    expect(notAs(edited.tests, 'pass')).toEqual([F2P]);
  }, 180_000);

  // Depends on the scaffold's tools running without node (the image has none, as SWE-bench's
  // images have none).
  it("a scripted agent fixes the bug with the scaffold's tools (open, search_file, edit, submit)", async () => {
    const hunk = onlyHunk(task.patch);
    const actions = [
      `open ${hunk.file}`,
      `search_file "'name' may not contain a dot"`,
      `edit ${hunk.start}:${hunk.end} << 'EOF'\n${hunk.lines.join('\n')}\nEOF`,
      'git status --short',
      'submit',
    ];
    let turn = 0;
    const policy = async (_messages: AgentMessage[]) =>
      `I take the next step.\n\`\`\`command\n${actions[turn++] ?? 'submit'}\n\`\`\``;
    // No image: the episode runs in the one the task is graded in (SWE-bench's name for it).
    const tr = await runEpisode({ task, policy, sandbox: { kind: 'docker' }, maxTurns: 10 });
    const obs = tr.turns.map((t) => t.observation);
    expect(tr.finishReason).toBe('submit');
    expect(obs[0]).toContain(`[File: ${hunk.file}`);
    expect(obs[1]).toContain(`Found 1 matches for "'name' may not contain a dot" in ${hunk.file}`);
    expect(obs[1]).toMatch(new RegExp(`Line ${hunk.end - 1}: +raise ValueError`)); // where the hunk's last lines sit
    expect(obs[2]).toContain('File updated.');
    expect(obs[2]).toContain('raise ValueError("\'name\' may not be empty.")');
    expect(obs[3]).toContain(`M ${hunk.file}`);
    expect(tr.patch.match(/^diff --git /gm)).toHaveLength(1); // the tools' state is not the agent's patch
    expect(tr.patch).toContain(`+++ b/${hunk.file}`);
    expect(tr.patch).toContain('+            raise ValueError("\'name\' may not be empty.")');
    const r = await evaluatePatch(task, tr.patch, { sandbox: 'docker' });
    expect(notAs(r.tests, 'pass'), r.log.slice(-3000)).toEqual([]);
    expect(r.resolved).toBe(true);
  }, 180_000);
});

/**
 * testSpec on SWE-bench Verified's 500 real rows (a command for each, running only what its ids
 * name), the log parsers on recorded and reconstructed logs of each runner family
 * (test/fixtures/swe-bench-logs), synthetic logs for rows picked by a fixed hash, the flask row's
 * command run for real on its testbed (skipped, with the reason, without python3 + pytest +
 * Flask's dependencies), and the refusals.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseDjangoLog, parsePytestLog, parseSympyLog } from '../../src/env/swe-bench/log-parsers.js';
import { djangoTargets, patchedFiles, pytestFiles, sympyFiles, taskIds } from '../../src/env/swe-bench/targets.js';
import { shellQuote, testSpec } from '../../src/env/swe-bench/test-spec.js';
import { loadTasks, type SweTask } from '../../src/env/tasks.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const data = join(root, '..', 'shared', 'data', 'swe-bench');
const parquet = join(data, 'swe-bench-verified-test.parquet');
const logs = join(root, 'test', 'fixtures', 'swe-bench-logs');
const hasParquet = existsSync(parquet);
if (!hasParquet) console.warn(`SWE-bench Verified tests skipped: ${parquet} is missing`);
const verified: SweTask[] = hasParquet ? await loadTasks(parquet) : [];

const fixture = (name: string) => readFileSync(join(logs, name), 'utf8');
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

describe.skipIf(!hasParquet)('testSpec on the 500 rows of SWE-bench Verified', () => {
  it('gives every row a command that runs only, and all of, what its ids name', () => {
    const perFamily: Record<string, number> = {};
    const docstringRows = new Set<string>();
    let longest = 0;
    for (const task of verified) {
      const spec = testSpec(task);
      perFamily[spec.family] = (perFamily[spec.family] ?? 0) + 1;
      expect(spec.command).not.toContain('--no-header');
      const ids = taskIds(task);
      const runs = (word: string) => spec.command.includes(` ${shellQuote(word)}`);
      if (spec.family === 'pytest') {
        expect(spec.command).toContain('"$PY" -m pytest ');
        const files = pytestFiles(task);
        expect(files.length, task.instance_id).toBeGreaterThan(0);
        for (const f of files) expect(runs(f) && f.endsWith('.py'), `${task.instance_id} ${f}`).toBe(true);
        for (const id of ids) {
          if (id === '[100%]') continue;
          expect(files, `${task.instance_id} ${id}`).toContain(id.split('::')[0]);
        }
      } else if (spec.family === 'django') {
        expect(spec.command).toContain('./tests/runtests.py --verbosity 2');
        const { labels, docstrings } = djangoTargets(task);
        expect(labels.length + docstrings.length, task.instance_id).toBeGreaterThan(0);
        for (const l of labels) expect(runs(l) && /^\w+(\.\w+)*$/.test(l), `${task.instance_id} ${l}`).toBe(true);
        for (const id of ids) {
          const m = /^\w+ \(([\w.]+)\)$/.exec(id);
          if (m) {
            const cls = m[1] as string;
            expect(
              labels.some((l) => cls === l || cls.startsWith(`${l}.`)),
              `${task.instance_id} ${id}`,
            ).toBe(true);
          } else {
            // A docstring id: the command looks up the module whose source holds it.
            expect(spec.command, `${task.instance_id} ${id}`).toContain(`-e ${shellQuote(id)}`);
            docstringRows.add(task.instance_id);
          }
        }
      } else {
        expect(spec.family).toBe('sympy');
        expect(spec.command).toContain('bin/test -C --verbose ');
        const files = sympyFiles(task);
        for (const f of files) expect(runs(f), `${task.instance_id} ${f}`).toBe(true);
        // Each id the test patch defines is in a file the command runs.
        for (const file of patchedFiles(task.test_patch)) {
          const section = task.test_patch.split(`diff --git a/${file} `)[1]?.split('\ndiff --git ')[0] ?? '';
          for (const id of ids)
            if (new RegExp(`^[+ ]def ${id}\\(`, 'm').test(section))
              expect(files, `${task.instance_id} ${id}`).toContain(file);
        }
      }
      longest = Math.max(longest, spec.command.length);
    }
    console.log(
      'SWE-bench Verified rows per family:',
      perFamily,
      `; Django rows with docstring ids: ${docstringRows.size}; longest command: ${longest} chars`,
    );
    expect(perFamily).toEqual({ pytest: 194, django: 231, sympy: 75 });
  });

  it("runs the flask row's one test file with pytest, under python or python3", () => {
    const task = verified.find((t) => t.instance_id === 'pallets__flask-5014') as SweTask;
    const spec = testSpec(task);
    expect(spec.family).toBe('pytest');
    expect(pytestFiles(task)).toEqual(['tests/test_blueprints.py']);
    expect(spec.command).toMatch(/ -m pytest [^']* 'tests\/test_blueprints\.py'$/);
    expect(spec.command).toContain('command -v python || command -v python3');
  });
});

const SAMPLE = 'test_sample.py::';
/** The outcomes the recorded pytest sample runs gave, in the ids' forms (full, and cut at a space as SWE-bench stores them). */
const PYTEST_SAMPLE: [string, boolean | undefined][] = [
  ['test_pass', true],
  ['test_fail', false],
  ['test_error', false],
  ['test_skip', undefined],
  ['test_xfail', true],
  ['test_xpass', false],
  ["test_param[ceci n'est pas une pipe]", true],
  ['test_param[ceci', true],
  ['test_param[a - b]', false],
  ['test_param[a', false],
  ['test_param[x]y]', true],
  ['test_param[\\xb5g]', true],
  ['test_param[$\\\\frac{1}{2}$]', true],
  ['TestGroup::test_method[1]', true],
  ['TestGroup::test_method[2]', false],
  ['test_never_ran', undefined],
];

function expectOutcomes(got: Map<string, boolean>, want: [string, boolean | undefined][], what: string): void {
  for (const [id, ok] of want) expect(got.get(id), `${what}: ${JSON.stringify(id)}`).toBe(ok);
  expect(got.size, what).toBe(want.filter(([, ok]) => ok !== undefined).length);
}

describe('log parsers on recorded and reconstructed logs', () => {
  it('pytest 7 and 9 (recorded) and 4.5 (reconstructed): every outcome, parametrized ids with spaces, cut ids', () => {
    for (const name of ['pytest-7.log', 'pytest-9.log', 'pytest-4.log']) {
      const want = PYTEST_SAMPLE.map(([id, ok]): [string, boolean | undefined] => [SAMPLE + id, ok]);
      const got = parsePytestLog(fixture(name), [...want.map(([id]) => id), '[100%]']);
      expectOutcomes(got, [...want, ['[100%]', true]], name);
      // The progress marker passes only for a finished session.
      const cut = fixture(name).split('short test summary info')[0] as string;
      expect(parsePytestLog(cut, ['[100%]']).get('[100%]'), name).toBeUndefined();
    }
  });

  it('pytest: colour codes, verbose `id STATUS` lines, and matplotlib MouseButton ids', () => {
    const log = [
      '\u001b[32mPASSED\u001b[0m a.py::t_green',
      'a.py::t_verbose PASSED                                      [ 50%]',
      'a.py::t_verbose_fail FAILED                                 [100%]',
      'PASSED lib/t.py::test_press[MouseButton.LEFT]',
    ].join('\n');
    const ids = ['a.py::t_green', 'a.py::t_verbose', 'a.py::t_verbose_fail', 'lib/t.py::test_press[1]'];
    expect([...parsePytestLog(log, ids, { mouseButtons: true })]).toEqual([
      ['a.py::t_green', true],
      ['a.py::t_verbose', true],
      ['a.py::t_verbose_fail', false],
      ['lib/t.py::test_press[1]', true],
    ]);
    expect(parsePytestLog(log, ids).has('lib/t.py::test_press[1]')).toBe(false);
  });

  it("the flask row's recorded runs: the test patch alone fails FAIL_TO_PASS only, the gold patch passes all 60", async () => {
    const [task] = await loadTasks(join(data, 'pallets__flask-5014.jsonl'));
    const spec = testSpec(task as SweTask);
    const base = spec.parse(fixture('flask-5014-base.log'));
    const gold = spec.parse(fixture('flask-5014-gold.log'));
    const ids = taskIds(task as SweTask);
    expect(ids).toHaveLength(60);
    for (const id of ids) {
      expect(gold.get(id), id).toBe(true);
      expect(base.get(id), id).toBe(!(task as SweTask).FAIL_TO_PASS.includes(id));
    }
  });

  it('Django under Python 3.6 (reconstructed): docstring ids, output before the outcome, subtests, skips', () => {
    const got = parseDjangoLog(fixture('django-py36.log'), [
      'test_ascii_validator (auth_tests.test_validators.UsernameValidatorsTests)',
      'test_unicode_validator (auth_tests.test_validators.UsernameValidatorsTests)',
      'Named URLs should be reversible',
      'test_reverse (urlpatterns.tests.SimplifiedURLTests)',
      'test_reverse (urlpatterns.tests.SimplifiedURLTests)\nNamed URLs should be reversible',
      'DateTimeField.to_python() supports microseconds.',
      'test_feature (model_fields.tests.BasicFieldTests)',
      'test_known_bug (model_fields.tests.BasicFieldTests)',
      'test_fixed_bug (model_fields.tests.BasicFieldTests)',
      'test_prints (admin_scripts.tests.ManageRunserver)',
      '--version is equivalent to version',
      'test_subtests (utils_tests.test_http.URLEncodeTests)',
      'test_after_subtests (utils_tests.test_http.URLEncodeTests)',
      'test_no_migrations (migrations.test_commands.MigrateTests)',
      'test_missing (auth_tests.test_validators.UsernameValidatorsTests)',
    ]);
    expect(Object.fromEntries(got)).toEqual({
      'test_ascii_validator (auth_tests.test_validators.UsernameValidatorsTests)': true,
      'test_unicode_validator (auth_tests.test_validators.UsernameValidatorsTests)': false,
      'Named URLs should be reversible': true,
      'test_reverse (urlpatterns.tests.SimplifiedURLTests)': true,
      'test_reverse (urlpatterns.tests.SimplifiedURLTests)\nNamed URLs should be reversible': true,
      'DateTimeField.to_python() supports microseconds.': false,
      'test_feature (model_fields.tests.BasicFieldTests)': false,
      'test_known_bug (model_fields.tests.BasicFieldTests)': true,
      'test_fixed_bug (model_fields.tests.BasicFieldTests)': false,
      'test_prints (admin_scripts.tests.ManageRunserver)': true,
      '--version is equivalent to version': true,
      'test_subtests (utils_tests.test_http.URLEncodeTests)': false,
      'test_after_subtests (utils_tests.test_http.URLEncodeTests)': true,
      'test_no_migrations (migrations.test_commands.MigrateTests)': true,
    });
  });

  it('Django under Python 3.11 (reconstructed): `name (module.Class.name)` read as the dataset spells it', () => {
    const c = 'forms_tests.tests.test_forms.FormsTestCase';
    const got = parseDjangoLog(fixture('django-py311.log'), [
      `test_empty_permitted (${c})`,
      'BoundField.has_changed() reports changes on disabled fields.',
      `test_has_changed (${c})`,
      `test_label_suffix (${c})`,
      `test_html_safe (${c})`,
      `test_skip_me (${c})`,
      'test_renderer (forms_tests.tests.test_forms.RendererTests.test_renderer)',
    ]);
    expect(Object.fromEntries(got)).toEqual({
      [`test_empty_permitted (${c})`]: true,
      'BoundField.has_changed() reports changes on disabled fields.': true,
      [`test_has_changed (${c})`]: true,
      [`test_label_suffix (${c})`]: false,
      [`test_html_safe (${c})`]: false,
      [`test_skip_me (${c})`]: false,
      'test_renderer (forms_tests.tests.test_forms.RendererTests.test_renderer)': true,
    });
  });

  it("sympy (reconstructed): ok, F, E, f, X, skips, a wrapped mark, printed output, the file's [OK]/[FAIL]", () => {
    const got = parseSympyLog(fixture('sympy.log'), [
      'test_point',
      'test_point3D',
      'test_Point2D',
      'test_issue_9214',
      'test_issue_11617',
      'test_transform',
      'test_object_from_equation_with_a_very_long_name_that_reaches_the_terminal_width',
      'test_prints',
      'test_needs_numpy',
      'test_issue_12092',
      'test_absent',
    ]);
    expect(Object.fromEntries(got)).toEqual({
      test_point: true,
      test_point3D: false,
      test_Point2D: false,
      test_issue_9214: true,
      test_issue_11617: false,
      test_transform: false,
      test_object_from_equation_with_a_very_long_name_that_reaches_the_terminal_width: true,
      test_prints: true,
      test_needs_numpy: false,
      test_issue_12092: true,
    });
  });
});

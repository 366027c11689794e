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

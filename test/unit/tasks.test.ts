/**
 * loadTasks on the three file types Hugging Face SWE datasets come in (JSON, JSONL, Parquet),
 * with test lists as arrays or as the JSON-encoded strings the datasets ship; errors that name
 * the row, the instance and the field; the load-time checks (inline paths inside the workspace,
 * tests to grade by, unique ids) on files and on in-memory lists (checkTasks); the paper's
 * patch-size filter.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkTasks } from '../../src/env/tasks.js';
import { filterTasksByPatch, generateMiniSweTasks, loadTasks, patchSize, type SweTask } from '../../src/index.js';

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'swerl-tasks-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function diff(files: number, linesPerFile: number): string {
  let out = '';
  for (let f = 0; f < files; f++) {
    out += `diff --git a/f${f}.py b/f${f}.py\n--- a/f${f}.py\n+++ b/f${f}.py\n@@ -1,${linesPerFile} +1,${linesPerFile} @@\n`;
    for (let i = 0; i < linesPerFile; i++) out += `-old ${i}\n+new ${i}\n`;
  }
  return out;
}

const TASKS: SweTask[] = [
  {
    instance_id: 'org__lib-1',
    repo: 'org/lib',
    base_commit: 'abc123',
    problem_statement: 'Calling f() with 2 returns 3, expected 4.',
    patch: diff(1, 2),
    test_patch: diff(1, 1),
    FAIL_TO_PASS: ['tests/test_f.py::test_two'],
    PASS_TO_PASS: ['tests/test_f.py::test_one', 'tests/test_g.py::test_g'],
  },
  {
    instance_id: 'org__lib-2',
    repo: 'org/lib',
    problem_statement: 'Crash on empty input.',
    patch: diff(2, 3),
    test_patch: '',
    FAIL_TO_PASS: ['t::a'],
    PASS_TO_PASS: [],
    image: 'swerebench/org-lib:2',
  },
];

/** As Hugging Face ships them: test lists as JSON strings. */
const hfRows = () =>
  TASKS.map((t) => ({
    ...t,
    FAIL_TO_PASS: JSON.stringify(t.FAIL_TO_PASS),
    PASS_TO_PASS: JSON.stringify(t.PASS_TO_PASS),
  }));

describe('loadTasks', () => {
  it('reads the same tasks from .json, .json { tasks }, .jsonl and .parquet', async () => {
    await writeFile(join(dir, 'a.json'), JSON.stringify(TASKS));
    await writeFile(join(dir, 'b.json'), JSON.stringify({ tasks: hfRows() }));
    await writeFile(
      join(dir, 'c.jsonl'),
      `${hfRows()
        .map((r) => JSON.stringify(r))
        .join('\n')}\n\n`,
    );
    const cols = [
      'instance_id',
      'repo',
      'base_commit',
      'problem_statement',
      'patch',
      'test_patch',
      'FAIL_TO_PASS',
      'PASS_TO_PASS',
      'image',
    ];
    const rows = hfRows() as Record<string, unknown>[];
    const buf = parquetWriteBuffer({
      columnData: cols.map((name) => ({
        name,
        data: rows.map((r) => (r[name] as string | undefined) ?? null),
        type: 'STRING' as const,
        nullable: true,
      })),
    });
    await writeFile(join(dir, 'd.parquet'), Buffer.from(buf));
    for (const f of ['a.json', 'b.json', 'c.jsonl', 'd.parquet']) {
      const got = await loadTasks(join(dir, f));
      expect(got, f).toEqual(TASKS);
    }
  });

  it('errors name the file, the row, the instance and the field', async () => {
    const bad = (rows: unknown[]) => rows.map((r) => JSON.stringify(r)).join('\n');
    const cases: [string, string, RegExp][] = [
      ['x1.jsonl', `${JSON.stringify(TASKS[0])}\n{"instance_id": `, /x1\.jsonl:2: not valid JSON/],
      [
        'x2.jsonl',
        bad([TASKS[0], { ...TASKS[1], patch: undefined }]),
        /x2\.jsonl:2 \(org__lib-2\): field 'patch' is missing/,
      ],
      [
        'x3.jsonl',
        bad([{ ...TASKS[0], FAIL_TO_PASS: '[not json' }]),
        /x3\.jsonl:1 \(org__lib-1\): field 'FAIL_TO_PASS' is a string but not a JSON-encoded list/,
      ],
      [
        'x4.json',
        JSON.stringify([TASKS[0], { ...TASKS[1], PASS_TO_PASS: [1, 2] }]),
        /x4\.json\[1\] \(org__lib-2\): field 'PASS_TO_PASS' must be a list/,
      ],
      [
        'x5.json',
        JSON.stringify([{ ...TASKS[0], instance_id: 7 }]),
        /x5\.json\[0\]: field 'instance_id' must be a string/,
      ],
      ['x6.json', JSON.stringify({ rows: [] }), /expected an array of tasks/],
      ['x7.json', JSON.stringify([{ ...TASKS[0], FAIL_TO_PASS: [] }]), /field 'FAIL_TO_PASS' is empty/],
      ['x8.parquet', 'not parquet at all', /not a readable parquet file/],
    ];
    for (const [name, content, message] of cases) {
      await writeFile(join(dir, name), content);
      await expect(loadTasks(join(dir, name)), name).rejects.toMatchObject({
        code: 'INVALID_TASK',
        message: expect.stringMatching(message),
      });
    }
    await expect(loadTasks(join(dir, 'missing.json'))).rejects.toMatchObject({ code: 'IO_ERROR' });
    await writeFile(join(dir, 'x.csv'), 'a,b');
    await expect(loadTasks(join(dir, 'x.csv'))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

/** An inline (mini-SWE / node) task: its repository in `files`, its test ids `file::name`. */
const INLINE: SweTask = {
  instance_id: 'mini__m-1',
  repo: 'mini/m',
  problem_statement: 'f() returns 1; expected 2.',
  patch: 'diff --git a/src/f.js b/src/f.js\n',
  test_patch: '',
  FAIL_TO_PASS: ['test/f.test.js::f > two'],
  PASS_TO_PASS: [],
  files: { 'src/f.js': 'export const f = () => 1;\n', 'test/f.test.js': '// tests\n' },
};

describe('load-time checks', () => {
  const withFiles = (files: Record<string, string>): SweTask => ({ ...INLINE, files: { ...INLINE.files, ...files } });
  /** Each case: the rows (all as one file), and the exact message after the file's path. */
  const cases: [string, SweTask[], string][] = [
    [
      'absolute',
      [withFiles({ '/etc/passwd': 'x' })],
      `[0] (mini__m-1): field 'files' path "/etc/passwd" is absolute (paths are relative to the workspace)`,
    ],
    ['empty', [withFiles({ '': 'x' })], `[0] (mini__m-1): field 'files' path "" is empty`],
    ['NUL', [withFiles({ 'a\0b.js': 'x' })], `[0] (mini__m-1): field 'files' path "a\\u0000b.js" contains a NUL byte`],
    [
      'dot-dot',
      [INLINE, withFiles({ '../x': 'x' })],
      `[1] (mini__m-1): field 'files' path "../x" escapes the workspace (it normalises to "../x")`,
    ],
    [
      'nested dot-dot',
      [withFiles({ 'a/../../x': 'x' })],
      `[0] (mini__m-1): field 'files' path "a/../../x" escapes the workspace (it normalises to "../x")`,
    ],
    [
      'the workspace',
      [withFiles({ 'a/..': 'x' })],
      `[0] (mini__m-1): field 'files' path "a/.." names the workspace itself, not a file`,
    ],
    [
      'the same file twice',
      [withFiles({ './src/f.js': 'y' })],
      `[0] (mini__m-1): field 'files' paths "src/f.js" and "./src/f.js" are the same file`,
    ],
    [
      'duplicate ids',
      [TASKS[0] as SweTask, TASKS[1] as SweTask, TASKS[0] as SweTask],
      `[2] (org__lib-1): field 'instance_id' duplicates <where>[0] (org__lib-1)`,
    ],
    [
      'empty FAIL_TO_PASS',
      [{ ...(TASKS[0] as SweTask), FAIL_TO_PASS: [] }],
      `[0] (org__lib-1): field 'FAIL_TO_PASS' is empty (a task needs at least one test that its fix makes pass)`,
    ],
    [
      'no FAIL_TO_PASS',
      [{ ...(TASKS[1] as SweTask), FAIL_TO_PASS: undefined as unknown as string[] }],
      `[0] (org__lib-2): field 'FAIL_TO_PASS' is missing`,
    ],
    [
      'an inline task without its test file',
      [{ ...INLINE, FAIL_TO_PASS: ['test/gone.test.js::f'] }],
      `[0] (mini__m-1): field 'FAIL_TO_PASS' names no test file that 'files' or 'test_patch' holds (inline task ids are 'path/to/file.test.js::name'), so the task has no tests to run`,
    ],
  ];

  it('loadTasks rejects each bad row with INVALID_TASK naming the row (0-based), the id and the field', async () => {
    for (const [what, rows, tail] of cases) {
      const file = join(dir, `check-${what.replace(/\W+/g, '-')}.json`);
      await writeFile(file, JSON.stringify(rows));
      let caught: unknown;
      let got: unknown;
      try {
        got = await loadTasks(file);
      } catch (e) {
        caught = e;
      }
      expect(got, `${what}: nothing partial is returned`).toBeUndefined();
      expect(caught, what).toMatchObject({ name: 'SwerlError', code: 'INVALID_TASK' });
      expect((caught as Error).message, what).toBe(`${file}${tail.replace('<where>', file)}`);
    }
  });

  it('a .jsonl file names rows by 1-based line, a .parquet file by 0-based row', async () => {
    await writeFile(join(dir, 'dup.jsonl'), `${JSON.stringify(TASKS[1])}\n\n${JSON.stringify(TASKS[1])}\n`);
    await expect(loadTasks(join(dir, 'dup.jsonl'))).rejects.toThrow(
      `${join(dir, 'dup.jsonl')}:3 (org__lib-2): field 'instance_id' duplicates ${join(dir, 'dup.jsonl')}:1 (org__lib-2)`,
    );
    const buf = parquetWriteBuffer({
      columnData: ['instance_id', 'repo', 'problem_statement', 'patch', 'FAIL_TO_PASS', 'files'].map((name) => ({
        name,
        data: [INLINE, withFiles({ 'a/../../x': '' })].map((t) =>
          name === 'files' || name === 'FAIL_TO_PASS' ? JSON.stringify(t[name]) : (t[name as keyof SweTask] as string),
        ),
        type: 'STRING' as const,
      })),
    });
    await writeFile(join(dir, 'bad.parquet'), Buffer.from(buf));
    await expect(loadTasks(join(dir, 'bad.parquet'))).rejects.toThrow(
      `${join(dir, 'bad.parquet')} row 1 (mini__m-1): field 'files' path "a/../../x" escapes the workspace`,
    );
  });

  it('checkTasks checks an in-memory list the same way, naming tasks[i], and changes nothing', () => {
    for (const [what, rows, tail] of cases) {
      const before = structuredClone(rows);
      let caught: unknown;
      try {
        checkTasks(rows);
      } catch (e) {
        caught = e;
      }
      expect(caught, what).toMatchObject({ code: 'INVALID_TASK' });
      expect((caught as Error).message, what).toBe(`tasks${tail.replace('<where>', 'tasks')}`);
      expect(rows, `${what}: the list is unchanged`).toEqual(before);
    }
    // Field shapes too, as loadTasks checks them.
    expect(() => checkTasks([{ ...INLINE, PASS_TO_PASS: [1] as unknown as string[] }])).toThrow(
      "tasks[0] (mini__m-1): field 'PASS_TO_PASS' must be a list of test ids",
    );
    expect(() => checkTasks('x' as unknown as SweTask[])).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
  });

  it('accepts good inline tasks: test files from test_patch, a generated mini-SWE suite', async () => {
    const viaPatch: SweTask = {
      ...INLINE,
      instance_id: 'mini__m-2',
      FAIL_TO_PASS: ['test/new.test.js::n'],
      test_patch: 'diff --git a/test/new.test.js b/test/new.test.js\nnew file mode 100644\n',
    };
    expect(() => checkTasks([INLINE, viaPatch, ...TASKS])).not.toThrow();
    const suite = await generateMiniSweTasks({ count: 2, seed: 3 });
    expect(() => checkTasks(suite)).not.toThrow();
  });
});

const verified = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  '..',
  'shared',
  'data',
  'swe-bench',
  'swe-bench-verified-test.parquet',
);

describe('fields kept for filtering', () => {
  it.skipIf(!existsSync(verified))(
    "keeps SWE-bench Verified's version, setup commit, date, hints and difficulty",
    async () => {
      const tasks = await loadTasks(verified);
      expect(tasks).toHaveLength(500);
      const t = tasks.find((x) => x.instance_id === 'astropy__astropy-12907') as SweTask;
      expect(t.version).toBe('4.3');
      expect(t.environment_setup_commit).toBe('298ccb478e6bf092953bca67a3d29dc6c35f6752');
      expect(t.created_at).toBe('2022-03-03T15:14:54Z');
      expect(t.difficulty).toBe('15 min - 1 hour');
      expect(typeof t.hints_text).toBe('string');
      expect(tasks.every((x) => typeof x.version === 'string' && x.version !== '')).toBe(true);
      // The 13 columns are all known: nothing left over.
      expect(tasks.filter((x) => x.metadata !== undefined)).toHaveLength(0);
    },
  );

  it("keeps every unknown field (SWE-rebench's install_config, meta, image names) through a .jsonl round trip", async () => {
    const row = {
      ...hfRows()[0],
      version: 3.2,
      created_at: '2024-01-02T03:04:05Z',
      install_config: { python: '3.9', test_cmd: 'pytest -rA', log_parser: 'parse_log_pytest' },
      meta: { has_test_patch: true, num_modified_files: 2 },
      image_name: 'swerebench/sweb.eval.x86_64.org_1776_lib-1',
      license_name: 'MIT',
    };
    await writeFile(join(dir, 'rebench.jsonl'), `${JSON.stringify(row)}\n`);
    const [t] = (await loadTasks(join(dir, 'rebench.jsonl'))) as [SweTask];
    expect(t.version).toBe('3.2');
    expect(t.image).toBe('swerebench/sweb.eval.x86_64.org_1776_lib-1');
    expect(t.metadata).toEqual({
      install_config: row.install_config,
      meta: row.meta,
      image_name: row.image_name,
      license_name: 'MIT',
    });
    // Written out as JSON and read again: the same task.
    await writeFile(join(dir, 'again.jsonl'), `${JSON.stringify(t)}\n`);
    expect(await loadTasks(join(dir, 'again.jsonl'))).toEqual([t]);
    // docker_image maps to image as well; a descriptive field of the wrong type is refused.
    const [d] = await loadTasks(
      await (async () => {
        await writeFile(
          join(dir, 'd.jsonl'),
          `${JSON.stringify({ ...row, image_name: undefined, docker_image: 'x/y:1' })}\n`,
        );
        return join(dir, 'd.jsonl');
      })(),
    );
    expect(d?.image).toBe('x/y:1');
    await writeFile(join(dir, 'bad.jsonl'), `${JSON.stringify({ ...row, difficulty: { hard: true } })}\n`);
    await expect(loadTasks(join(dir, 'bad.jsonl'))).rejects.toMatchObject({
      code: 'INVALID_TASK',
      message: expect.stringMatching(/bad\.jsonl:1 \(org__lib-1\): field 'difficulty' must be a string/),
    });
  });
});

describe("the paper's patch filter", () => {
  it('counts files and changed lines, and keeps patches of <= 7 files and < 500 lines', () => {
    expect(patchSize(diff(3, 4))).toEqual({ files: 3, changedLines: 24 });
    const mk = (id: string, patch: string): SweTask => ({ ...(TASKS[0] as SweTask), instance_id: id, patch });
    const kept = filterTasksByPatch([
      mk('seven', diff(7, 1)),
      mk('eight', diff(8, 1)),
      mk('499', `${diff(1, 249)}+x\n`),
      mk('500', diff(1, 250)),
    ]);
    expect(kept.map((t) => t.instance_id)).toEqual(['seven', '499']);
  });
});

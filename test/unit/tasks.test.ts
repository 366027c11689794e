/**
 * loadTasks on the three file types Hugging Face SWE datasets come in (JSON, JSONL, Parquet),
 * with test lists as arrays or as the JSON-encoded strings the datasets ship; errors that name
 * the row, the instance and the field; the paper's patch-size filter.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { filterTasksByPatch, loadTasks, patchSize, type SweTask } from '../../src/index.js';

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

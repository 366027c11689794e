/**
 * scripts/check-clang-format.mjs on a machine without clang-format: `npm test` (which runs the
 * lint) passes there with a one-line notice, while CI (CI set, or SWERL_REQUIRE_CLANG_FORMAT=1)
 * still fails. The script is run for real with a PATH that holds no clang-format; a stand-in
 * clang-format that reports unformatted files checks that a present one is still obeyed.
 */
import { spawnSync } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const script = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'scripts', 'check-clang-format.mjs');
const NOTICE = 'clang-format not installed: C++ format check skipped; CI runs it (apt-get install clang-format)';

let empty = '';
let fake = '';
beforeAll(async () => {
  empty = await mkdtemp(join(tmpdir(), 'swerl-lint-empty-'));
  fake = await mkdtemp(join(tmpdir(), 'swerl-lint-fake-'));
  // A clang-format that is installed but finds every file unformatted.
  await writeFile(
    join(fake, 'clang-format'),
    '#!/bin/sh\n[ "$1" = --version ] && { echo "clang-format version 0-fake"; exit 0; }\necho "x.cc: error: code should be clang-formatted" >&2\nexit 1\n',
  );
  await chmod(join(fake, 'clang-format'), 0o755);
});
afterAll(async () => {
  await rm(empty, { recursive: true, force: true });
  await rm(fake, { recursive: true, force: true });
});

/** Runs the script with only `env` (PATH among it): no CI or SWERL_* variable leaks in from here. */
function lint(env: Record<string, string>) {
  const r = spawnSync(process.execPath, [script], { env, encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}${r.stderr}`.trim() };
}

describe('check-clang-format.mjs', () => {
  it('skips with a one-line notice when clang-format is not on PATH', () => {
    const r = lint({ PATH: empty });
    expect(r).toEqual({ status: 0, out: NOTICE });
    // CI=false or 0 is not CI.
    expect(lint({ PATH: empty, CI: 'false' })).toEqual({ status: 0, out: NOTICE });
  });

  it('fails without clang-format when CI or SWERL_REQUIRE_CLANG_FORMAT=1 is set', () => {
    const envs: Record<string, string>[] = [{ CI: 'true' }, { CI: '1' }, { SWERL_REQUIRE_CLANG_FORMAT: '1' }];
    for (const env of envs) {
      const r = lint({ PATH: empty, ...env });
      expect(r.status, JSON.stringify(env)).toBe(1);
      expect(r.out).toMatch(/^clang-format not found, and the C\+\+ format check is required here/);
      expect(r.out).toContain('apt-get install -y clang-format');
    }
  });

  it('still runs, and fails on unformatted files, when a clang-format is installed', () => {
    const r = lint({ PATH: fake });
    expect(r.status).toBe(1);
    expect(r.out).toContain('native/ is not clang-formatted');
  });
});

/**
 * What an agent's patch may not change for the grader: the task's tests, the test runner's
 * configuration, and swerl's own evaluation files. evaluatePatch applies the agent's patch, then
 * restores every protected path the patch touched from the task itself (SWE-bench's harness does
 * the same for the files of the test patch), so that an edit to the tests can neither win nor
 * sink a task.
 *
 * The paths a patch touches come from its headers (`diff --git a/X b/Y`, `rename`/`copy` lines and
 * `---`/`+++`), including git's C-quoted forms for names with special characters.
 */
import { posix } from 'node:path';
import type { SweTask } from './tasks.js';

/** Every path a unified diff (git's or plain) creates, changes, deletes, renames or copies. */
export function patchPaths(patch: string): string[] {
  const out = new Set<string>();
  const add = (p: string | null) => {
    if (p === null || p === '/dev/null') return;
    const norm = posix.normalize(p);
    if (norm !== '' && norm !== '.') out.add(norm);
  };
  for (const line of patch.split('\n')) {
    if (line.startsWith('diff --git ')) {
      const [a, b] = splitGitHeader(line.slice('diff --git '.length));
      add(stripPrefix(a));
      add(stripPrefix(b));
    } else if (/^(rename|copy) (from|to) /.test(line)) {
      add(unquote(line.replace(/^(rename|copy) (from|to) /, '')));
    } else if (line.startsWith('--- ') || line.startsWith('+++ ')) {
      const raw = line.slice(4).replace(/\t.*$/, '');
      add(stripPrefix(unquote(raw)));
    }
  }
  return [...out];
}

/** The two paths of a `diff --git` header (quoted or not). */
function splitGitHeader(rest: string): [string | null, string | null] {
  if (rest.startsWith('"')) {
    const end = quotedEnd(rest);
    const a = unquote(rest.slice(0, end + 1));
    const b = unquote(rest.slice(end + 1).trim());
    return [a, b];
  }
  // Unquoted: "a/X b/X" with X possibly containing spaces; the two halves are usually equal.
  const m = /^(.*) ("?b\/.*)$/.exec(rest);
  if (!m) return [rest, null];
  return [m[1] ?? null, unquote(m[2] ?? '')];
}

function quotedEnd(s: string): number {
  for (let i = 1; i < s.length; i++) {
    if (s[i] === '\\') i++;
    else if (s[i] === '"') return i;
  }
  return s.length - 1;
}

/** git's C-style quoting: "a/x\tb" → a/x<TAB>b, octal escapes as UTF-8 bytes. */
function unquote(s: string): string {
  if (!s.startsWith('"') || !s.endsWith('"') || s.length < 2) return s;
  const bytes: number[] = [];
  const body = s.slice(1, -1);
  const simple: Record<string, number> = { n: 10, t: 9, r: 13, a: 7, b: 8, f: 12, v: 11, '"': 34, '\\': 92 };
  for (let i = 0; i < body.length; i++) {
    const c = body[i] as string;
    if (c !== '\\') {
      bytes.push(...Buffer.from(c, 'utf8'));
      continue;
    }
    const n = body[i + 1] ?? '';
    if (/[0-7]/.test(n)) {
      bytes.push(Number.parseInt(body.slice(i + 1, i + 4), 8));
      i += 3;
    } else {
      bytes.push(simple[n] ?? n.charCodeAt(0));
      i++;
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

function stripPrefix(p: string | null): string | null {
  if (p === null) return null;
  if (p === '/dev/null') return p;
  return p.replace(/^[ab]\//, '');
}

/** The test files a task's ids name (the part before `::`). */
function testIdFiles(task: SweTask): string[] {
  return [...task.FAIL_TO_PASS, ...task.PASS_TO_PASS]
    .filter((id) => id.includes('::'))
    .map((id) => posix.normalize(id.slice(0, id.indexOf('::'))));
}

// Test files and runner configuration by name: JavaScript test files, Python test modules and
// pytest's conftest/config, Django's and sympy's runners.
const TEST_FILE = /(^|\/)(.*\.(test|spec)\.[cm]?[jt]sx?|test_[^/]*\.py|[^/]*_test\.py|conftest\.py)$/;
const RUNNER_CONFIG =
  /(^|\/)(pytest\.ini|\.pytest\.ini|tox\.ini|pyproject\.toml|package\.json|\.mocharc\.[a-z]+|\.noderc)$/;
const RUNNER_FILES = new Set(['tests/runtests.py', 'bin/test', 'setup.cfg']);
const TEST_DIR = /(^|\/)(tests?|__tests__)(\/|$)/;

/**
 * Whether a path is protected for a task: a test file, a file under a test directory, the test
 * runner or its configuration, a file the task's test patch touches, a file its test ids name, or
 * swerl's own `.swerl*` files. Files the gold patch changes are never protected (the fix may need
 * them), except the ones the test patch also touches.
 */
export function protectedPathRule(task: SweTask): (path: string) => boolean {
  const testPatch = new Set(patchPaths(task.test_patch));
  const named = new Set(testIdFiles(task));
  const gold = new Set(patchPaths(task.patch));
  return (path: string) => {
    const p = posix.normalize(path);
    if (p.split('/').some((part) => part.startsWith('.swerl'))) return true;
    if (testPatch.has(p) || named.has(p)) return true;
    if (gold.has(p)) return false;
    return TEST_FILE.test(p) || RUNNER_CONFIG.test(p) || RUNNER_FILES.has(p) || TEST_DIR.test(p);
  };
}

/** The protected paths a patch touches, sorted. */
export function protectedPathsIn(task: SweTask, patch: string): string[] {
  const isProtected = protectedPathRule(task);
  return patchPaths(patch)
    .filter((p) => isProtected(p))
    .sort();
}

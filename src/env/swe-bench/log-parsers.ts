/**
 * Reading a SWE-bench-style test run's log: which of the task's test ids passed. One parser per
 * runner family (pytest `-r` summary lines, Django's verbose unittest lines, sympy's `bin/test
 * --verbose` lines). Each parser takes the task's ids and answers for exactly those ids, in the
 * form the dataset spells them; an id the log never mentions is left out (the caller counts it
 * as failed). Where one id matches several log entries, it passed only if every one passed.
 *
 * The datasets' ids were made by SWE-bench's own parsers (swebench/harness/log_parsers), which
 * split lines at whitespace; so a pytest id whose parametrization holds a space is stored cut at
 * that space (`test_x[ceci`), and matplotlib's parser wrote `MouseButton.LEFT` as `1`. These
 * parsers match such cut and rewritten ids too.
 */

/** Removes ANSI colour codes and carriage returns, which runners print to terminals. */
function clean(line: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the escape character is what we remove
  return line.replace(/\u001b\[[0-9;]*[A-Za-z]/g, '').replace(/\r/g, '');
}

/** Records `ok` for `id`, and-ing with what an earlier match recorded. */
function record(out: Map<string, boolean>, id: string, ok: boolean): void {
  out.set(id, (out.get(id) ?? true) && ok);
}

/** Ids grouped by their first whitespace-separated token, to find candidates for a log line. */
function byFirstToken(ids: readonly string[]): Map<string, string[]> {
  const m = new Map<string, string[]>();
  for (const id of new Set(ids)) {
    const first = id.split(/\s/, 1)[0] ?? id;
    const list = m.get(first);
    if (list) list.push(id);
    else m.set(first, [id]);
  }
  return m;
}

const PYTEST_STATUS = ['PASSED', 'FAILED', 'ERROR', 'XFAIL', 'XPASS', 'SKIPPED'] as const;
/** pytest outcomes that count as passed (as SWE-bench grades them): an expected failure passes. */
const PYTEST_OK = new Set(['PASSED', 'XFAIL']);
const STATUS_FIRST = new RegExp(`^(${PYTEST_STATUS.join('|')})\\s+(.*)$`);
const STATUS_AFTER = new RegExp(`^\\s+(${PYTEST_STATUS.join('|')})(?:\\s|$)`);
/** pytest's closing line: `=== 3 passed, 1 failed in 0.12s ===` (pytest >= 5) or `in 0.12 seconds` (4.x). */
const PYTEST_FOOTER = /^=+ .*\bin \d+(?:\.\d+)?(?:s| seconds)\b.*=+$/;
/** A bare progress marker, `[100%]`: two Verified rows list it as a PASS_TO_PASS id (a log artefact). */
export const PROGRESS_MARKER = /^\[\s*\d+%\]$/;

/** Options of {@link parsePytestLog}. */
export interface PytestParseOptions {
  /** Also match log ids with `MouseButton.LEFT`/`RIGHT` written as `1`/`3`, as SWE-bench's matplotlib parser stores them. */
  mouseButtons?: boolean;
}

/**
 * pytest: `STATUS id[ - message]` summary lines (`-r` output of pytest 4.x to 8.x) and
 * `id STATUS` verbose lines. A task id matches a line when the line's id is the task id or starts
 * with it followed by whitespace (a message, or the rest of an id SWE-bench cut at a space).
 * `SKIPPED [n] file:line: reason` lines name no test; a skipped test stays absent. A progress
 * marker id (`[100%]`) is taken as passed when pytest printed its closing summary line, that is
 * when the session finished: it names no test, and SWE-bench recorded it from a finished run.
 */
export function parsePytestLog(log: string, ids: readonly string[], o: PytestParseOptions = {}): Map<string, boolean> {
  const out = new Map<string, boolean>();
  const markers = ids.filter((id) => PROGRESS_MARKER.test(id));
  const index = byFirstToken(ids.filter((id) => !PROGRESS_MARKER.test(id)));
  let finished = false;
  const match = (text: string, status: string, statusFirst: boolean): void => {
    const first = text.split(/\s/, 1)[0] ?? '';
    for (const id of index.get(first) ?? []) {
      if (statusFirst) {
        if (text === id || (text.startsWith(id) && /^\s/.test(text.slice(id.length))))
          record(out, id, PYTEST_OK.has(status));
      } else if (text.startsWith(id)) {
        const m = STATUS_AFTER.exec(text.slice(id.length));
        if (m?.[1] === status) record(out, id, PYTEST_OK.has(status));
      }
    }
  };
  for (const raw of log.split('\n')) {
    const line = clean(raw).trimEnd();
    if (PYTEST_FOOTER.test(line)) finished = true;
    const variants = [line];
    if (o.mouseButtons && line.includes('MouseButton.'))
      variants.push(line.replace(/MouseButton\.LEFT/g, '1').replace(/MouseButton\.RIGHT/g, '3'));
    for (const text of variants) {
      const sf = STATUS_FIRST.exec(text);
      if (sf) {
        match(sf[2] ?? '', sf[1] ?? '', true);
        continue;
      }
      // `path::test STATUS` (verbose form); the status word must follow a task id exactly.
      const tf = /\s(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED)(?:\s|$)/.exec(text);
      if (tf) match(text, tf[1] ?? '', false);
    }
  }
  for (const id of markers) if (finished) out.set(id, true);
  return out;
}

/** `name (dotted.Class)` or Python >= 3.11's `name (dotted.Class.name)`, as Django's runner prints a test. */
const DJANGO_TEST = /^(\w+) \(([\w.]+)\)/;

/** A Django test name in one form: `name (module.Class)` (Python 3.11's `(module.Class.name)` folded). */
export function djangoCanonicalName(text: string): string | undefined {
  const m = DJANGO_TEST.exec(text);
  if (!m) return undefined;
  const [, name, path] = m as unknown as [string, string, string];
  const cls = path.endsWith(`.${name}`) ? path.slice(0, -name.length - 1) : path;
  return `${name} (${cls})`;
}

/** Django's verbose (`--verbosity 2`) outcome words after ` ... `, and whether they pass. */
function djangoOutcome(rest: string): boolean | undefined {
  const r = rest.trim();
  if (r === 'ok' || r === 'OK' || r === 'expected failure') return true;
  if (r === 'FAIL' || r === 'ERROR' || r === 'unexpected success' || /^skipped\b/.test(r)) return false;
  return undefined;
}

/**
 * Django's runner (unittest, `--verbosity 2`): `desc ... ok|FAIL|ERROR|skipped 'why'|expected
 * failure|unexpected success`, where desc is `name (module.Class)` (or `(module.Class.name)`
 * under Python >= 3.11), or, for a test with a docstring, `name (module.Class)` on one line and
 * the docstring's first line before ` ... `. A test that prints leaves its outcome word on a later
 * line by itself. `FAIL: desc` / `ERROR: desc` headers of the failure list count as failures; a
 * subtest's `  desc (params) ... FAIL` fails its test. Ids match in any of these forms: the
 * docstring line, the name, or `name (module.Class)\ndocstring`.
 */
export function parseDjangoLog(log: string, ids: readonly string[]): Map<string, boolean> {
  const seen = new Map<string, boolean>();
  const lines = log.split('\n').map((l) => clean(l));
  /** Keys a test's outcome is stored under. */
  const keysOf = (desc: string, nameLine: string | undefined): string[] => {
    const keys = [desc.trim()];
    const canon = djangoCanonicalName(desc.trim());
    if (canon) keys.push(canon);
    // The harness's note: a migration's `Applying x... ` may run into the test's line.
    const tail = /(\w+ \([\w.]+\))$/.exec(desc.trim());
    if (tail?.[1] && tail[1] !== desc.trim()) keys.push(djangoCanonicalName(tail[1]) ?? tail[1]);
    if (nameLine !== undefined) {
      const named = djangoCanonicalName(nameLine) ?? nameLine;
      keys.push(named, `${named}\n${desc.trim()}`);
    }
    return keys;
  };
  let pending: string[] | undefined;
  let lastName: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const t = line.trim();
    const header = /^(FAIL|ERROR): (.*)$/.exec(t);
    if (header) {
      const desc = header[2] ?? '';
      const next = (lines[i + 1] ?? '').trim();
      const keys = [desc, djangoCanonicalName(desc) ?? desc];
      // A docstring's first line follows the header unless the separator does.
      if (next !== '' && !/^-{10,}$/.test(next)) keys.push(next, `${djangoCanonicalName(desc) ?? desc}\n${next}`);
      for (const k of keys) record(seen, k, false);
      pending = undefined;
      continue;
    }
    // A test's line: `desc ... outcome`. Before Python 3.11 a test whose subtests failed prints
    // no outcome, so the next test's `desc ... ` follows on the same line.
    const segs = (line.endsWith(' ...') ? `${line} ` : line).split(' ... ');
    const wasName = lastName;
    lastName = /^\w+ \([\w.]+\)$/.test((segs[segs.length - 1] ?? '').trim())
      ? (segs[segs.length - 1] ?? '').trim()
      : undefined;
    if (segs.length > 1) {
      const desc = segs[0] ?? '';
      // The line before ended with the test's name when this line's desc is its docstring.
      const nameLine = djangoCanonicalName(desc.trim()) === undefined ? wasName : undefined;
      let keys = keysOf(desc, nameLine);
      pending = undefined;
      for (let k = 1; k < segs.length; k++) {
        const seg = segs[k] ?? '';
        const ok = djangoOutcome(seg);
        if (ok !== undefined) {
          for (const key of keys) record(seen, key, ok);
          pending = undefined;
        } else if (k < segs.length - 1 && /^\w+ \([\w.]+\)/.test(seg.trim())) {
          // The test before left no outcome here (its FAIL:/ERROR: header tells); this one starts.
          keys = keysOf(seg, undefined);
        } else if (k === segs.length - 1) pending = keys;
      }
      continue;
    }
    if (pending) {
      const ok = djangoOutcome(t);
      if (ok !== undefined) {
        for (const k of pending) record(seen, k, ok);
        pending = undefined;
      }
    }
  }
  const out = new Map<string, boolean>();
  for (const id of ids) {
    const nl = id.indexOf('\n');
    const canon = djangoCanonicalName(id);
    // `name (m.C)\ndocstring`: the whole form first, then either of its lines.
    const tries =
      nl < 0 ? [id, canon] : [id, canon && `${canon}\n${id.slice(nl + 1).trim()}`, canon, id.slice(nl + 1).trim()];
    const key = tries.find((k): k is string => k !== undefined && seen.has(k));
    if (key !== undefined) out.set(id, seen.get(key) as boolean);
  }
  return out;
}

/** sympy's `bin/test --verbose` outcome marks after a test's name, and whether they pass. */
const SYMPY_MARKS: Record<string, boolean> = {
  ok: true,
  f: true,
  F: false,
  E: false,
  T: false,
  X: false,
  s: false,
  w: false,
  K: false,
};

/**
 * sympy (`bin/test -C --verbose`): each test prints `\nname ` and then `ok`, `F` (failed), `E`
 * (exception), `T` (timeout), `f` (expected failure: passes, as pytest's XFAIL does), `X`
 * (unexpectedly passed), or a skip (`reason s`, ` - s`, `Slow w`); what a test prints lands
 * between its name and its mark, and a name at the terminal's width pushes the mark to the next
 * line. The failure list's `___ file.py:name ___` / `___ file.py::name ___` headers count as
 * failures. Ids are bare function names; one that several files define passes only if all pass.
 */
export function parseSympyLog(log: string, ids: readonly string[]): Map<string, boolean> {
  const want = new Set(ids);
  const out = new Map<string, boolean>();
  let pending: string | undefined;
  for (const raw of log.split('\n')) {
    // A file's closing `[OK]`/`[FAIL]`, right-aligned, may share its last test's line.
    const line = clean(raw)
      .trim()
      .replace(/\s*\[(?:OK|FAIL)\]$/, '');
    const header = /^_+ \S+\.py:{1,2}(\w+) _+$/.exec(line);
    if (header?.[1]) {
      if (want.has(header[1])) record(out, header[1], false);
      pending = undefined;
      continue;
    }
    const m = /^(test_\w+)(?: (.*))?$/.exec(line);
    if (m?.[1] && want.has(m[1])) {
      const last = (m[2] ?? '').split(/\s+/).pop() ?? '';
      const ok = SYMPY_MARKS[last];
      if (ok !== undefined && (m[2] ?? '') !== '') {
        record(out, m[1], ok);
        pending = undefined;
      } else pending = m[1];
      continue;
    }
    if (pending !== undefined) {
      const last = line.split(/\s+/).pop() ?? '';
      const ok = SYMPY_MARKS[last];
      if (ok !== undefined && (line === last || line.endsWith(` ${last}`))) {
        record(out, pending, ok);
        pending = undefined;
      }
    }
  }
  return out;
}

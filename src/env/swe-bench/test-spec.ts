/**
 * testSpec: how to run a SWE-bench-style task's tests in its image at /testbed, and how to read
 * the outcome, per runner family (pytest, Django's runtests.py, sympy's bin/test), following
 * SWE-bench's harness (swebench/harness/constants, log_parsers) and SWE-rebench's
 * `install_config.log_parser`. The command runs only the files or labels the task's ids name
 * (docs/swe-bench.md lists the families, id forms and what is refused).
 */
import { SwerlError } from '../../errors.js';
import { shellQuote } from '../shell-quote.js';
import type { SweTask } from '../tasks.js';
import { parseDjangoLog, parsePytestLog, parseSympyLog } from './log-parsers.js';
import { djangoTargets, isPytestId, pytestFiles, sympyFiles, taskIds } from './targets.js';

/** The runner families. */
export type TestFamily = 'pytest' | 'django' | 'sympy';

/** How to run a SWE-bench-style task's tests in its image at /testbed, and read the outcome. */
export interface TestSpec {
  family: TestFamily;
  /** One bash command line, run with cwd /testbed after the patches are applied. */
  command: string;
  /** Each of the task's ids as the dataset spells it → passed; ids the log does not show are absent. */
  parse(log: string): Map<string, boolean>;
}

/** Single-quotes a word for bash (re-exported: one copy for the whole package). */
export { shellQuote } from '../shell-quote.js';

/**
 * SWE-bench images keep the project's environment in conda's `testbed` env; others (and the
 * Debian stand-ins) have python on PATH, as `python` or only `python3`.
 */
const PRELUDE =
  '{ [ -f /opt/miniconda3/bin/activate ] && . /opt/miniconda3/bin/activate testbed; } >/dev/null 2>&1; ' +
  "PY=$(command -v python || command -v python3) || { echo 'swerl: neither python nor python3 is on PATH' >&2; exit 127; }; ";

/** Compares dotted versions numerically ('1.11' > '1.9'); a missing part counts as 0. */
function versionAtMost(version: string | undefined, max: string): boolean {
  if (version === undefined) return false;
  const a = version.split('.').map((p) => Number.parseInt(p, 10));
  const b = max.split('.').map((p) => Number.parseInt(p, 10));
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (Number.isNaN(x) || Number.isNaN(y)) return false;
    if (x !== y) return x < y;
  }
  return true;
}

/** Words for a command line, refusing what no shell word can hold. */
function words(task: SweTask, list: string[]): string {
  for (const w of list) {
    if (w.includes('\0') || w.startsWith('-'))
      throw new SwerlError(
        `${task.instance_id}: test target ${JSON.stringify(w)} cannot be passed to a runner`,
        'INVALID_TASK',
      );
  }
  return list.map(shellQuote).join(' ');
}

/** Test files whose path SWE-bench's harness takes for Django tests (tests.py, test_*, under tests/). */
const DJANGO_TEST_PATH = "'(^|/)tests\\.py$|/test_|./tests/'";

/**
 * Sets the positional parameters to the Django labels: the static ones, then the modules under
 * tests/ whose source holds a docstring id's text. Refuses to start the runner with no label,
 * which would run the whole suite.
 */
function djangoArgs(task: SweTask, labels: string[], docstrings: string[]): string {
  let found = '';
  if (docstrings.length > 0) {
    const patterns = docstrings.map((d) => `-e ${shellQuote(d)}`).join(' ');
    found =
      `F=$(grep -rlF --include='*.py' ${patterns} tests 2>/dev/null | grep -E ${DJANGO_TEST_PATH} | ` +
      "sed -n -e 's#^tests/##' -e 's#\\.py$##p' | sed -e 's#/#.#g' -e 's#\\.__init__$##' | grep -E '^[A-Za-z0-9_]+(\\.[A-Za-z0-9_]+)*$' | sort -u); ";
  }
  return (
    `${found}set -- ${labels.length > 0 ? `${words(task, labels)} ` : ''}${found ? '$F' : ''}; ` +
    `[ "$#" -gt 0 ] || { echo 'swerl: no Django test label to run (running none rather than the whole suite)' >&2; exit 2; }; `
  );
}

/** The log parser SWE-rebench's `install_config` names for a task, if any. */
function rebenchParser(task: SweTask): string | undefined {
  const cfg = task.metadata?.install_config;
  if (typeof cfg !== 'object' || cfg === null) return undefined;
  const p = (cfg as { log_parser?: unknown }).log_parser;
  return typeof p === 'string' ? p : undefined;
}

/** Which family runs a task: by repository, then SWE-rebench's parser name, then by the ids' form. */
function familyOf(task: SweTask): TestFamily {
  if (task.repo === 'django/django') return 'django';
  if (task.repo === 'sympy/sympy') return 'sympy';
  const parser = rebenchParser(task);
  if (parser === 'parse_log_django') return 'django';
  if (parser === 'parse_log_sympy') return 'sympy';
  if (parser !== undefined && !parser.startsWith('parse_log_pytest') && !taskIds(task).every(isPytestId))
    throw new SwerlError(
      `${task.instance_id}: its install_config names the log parser '${parser}', which swerl does not support (pytest, django and sympy are supported)`,
      'INVALID_TASK',
    );
  return 'pytest';
}

/**
 * The test command and log parser of a SWE-bench-style task (no inline `files`). Throws
 * INVALID_TASK naming the instance when its ids fit no supported runner, rather than returning a
 * command that would run the whole repository.
 */
export function testSpec(task: SweTask): TestSpec {
  if (typeof task !== 'object' || task === null || typeof task.instance_id !== 'string')
    throw new SwerlError('testSpec needs a task with an instance_id', 'INVALID_TASK');
  const ids = taskIds(task);
  const family = familyOf(task);
  if (family === 'django') {
    const { labels, docstrings } = djangoTargets(task);
    // Django <= 1.9 has no --parallel (SWE-bench's TEST_DJANGO_NO_PARALLEL); test_sqlite is its default.
    const runner = versionAtMost(task.version, '1.9')
      ? './tests/runtests.py --verbosity 2'
      : './tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1';
    // SWE-bench's eval commands: a UTF-8 locale (generated on 3.0-3.2 images, where the image lacks it).
    const locale =
      (task.version !== undefined && /^3\.[012]$/.test(task.version)
        ? "{ sed -i '/en_US.UTF-8/s/^# //g' /etc/locale.gen && locale-gen; } >/dev/null 2>&1; "
        : '') + 'export LANG=en_US.UTF-8 LANGUAGE=en_US:en LC_ALL=en_US.UTF-8 PYTHONIOENCODING=utf8; ';
    return {
      family,
      command: `${PRELUDE}${locale}${djangoArgs(task, labels, docstrings)}"$PY" ${runner} "$@"`,
      parse: (log) => parseDjangoLog(log, ids),
    };
  }
  if (family === 'sympy') {
    const files = sympyFiles(task);
    return {
      family,
      command: `${PRELUDE}PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' "$PY" bin/test -C --verbose ${words(task, files)}`,
      parse: (log) => parseSympyLog(log, ids),
    };
  }
  const files = pytestFiles(task);
  // No --no-header (pytest < 6 lacks it) and no -rA's captured output of passing tests (it can
  // push the summary past the sandbox's output cap); -rfEsxXp prints one line per outcome.
  const flags = ['-rfEsxXp', '-p', 'no:cacheprovider', '--tb=short', '--color=no'];
  // astropy <= 1.3 ships pytest 3.3, whose summary SWE-bench did not rely on: verbose lines too.
  if (task.repo === 'astropy/astropy' && versionAtMost(task.version, '1.3'))
    flags.push('-vv', '-o', 'console_output_style=classic');
  const mouseButtons = task.repo === 'matplotlib/matplotlib';
  return {
    family,
    command: `${PRELUDE}"$PY" -m pytest ${flags.join(' ')} ${words(task, files)}`,
    parse: (log) => parsePytestLog(log, ids, { mouseButtons }),
  };
}

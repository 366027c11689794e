/**
 * generateMiniSweTasks (DESIGN.md section 6): bug-fix tasks in small JavaScript packages, for
 * the embedded default. Each task is one module of the catalogue with one injected bug, plus
 * correct distractor modules, with their node:test suites. The bugs are the catalogue's
 * hand-written ones (each with its own reproduction) and, from tier 1 up, every mutant of
 * mutate.ts's operators that the module's tests kill (reproduced by the failing test's own code).
 * Every task is validated by running its tests: the clean repository passes them all, the buggy
 * one fails at least one (FAIL_TO_PASS) and passes the rest (PASS_TO_PASS). The issue text reports
 * a reproduction and its actual result, obtained by running it on the buggy code; it never quotes
 * the line to fix. The gold patch is the workspace diff that undoes the bug. Generation is
 * deterministic by seed, and the train and test splits use disjoint bugs.
 *
 * Difficulty tiers:
 * - 0: one module; hand-written single-token bugs (comparison flip, off-by-one, operator swap,
 *   wrong constant);
 * - 1: every bug kind, mutants included; one distractor module;
 * - 2: two distractor modules; 3: three (every module of the catalogue).
 */
import { createHash } from 'node:crypto';
import { invalidArgument, SwerlError } from '../../errors.js';
import { mulberry32 } from '../../random.js';
import { allTestResults } from '../evaluate.js';
import { LocalSandbox } from '../sandbox.js';
import type { SweTask } from '../tasks.js';
import { CATALOGUE, type ModuleTemplate, type Mutation } from './catalogue.js';
import { MERGED_MODULES } from './catalogue-merged.js';
import { WIDE_MODULES } from './catalogue-wide.js';
import {
  type LineMutation,
  lineMutations,
  nameSlips,
  renameLocals,
  renameText,
  slipAt,
  testScripts,
} from './mutate.js';

/** Options of {@link generateMiniSweTasks}. */
export interface MiniSweOptions {
  count: number;
  seed: number;
  /** 0-3: the tier (module docs): bug kinds and the number of distractor modules (default 1). */
  difficulty?: number;
  /**
   * Which bugs (bugSplit): 'train' (about three quarters of the catalogue's bug sites),
   * 'validation' (about a twelfth) or 'test' (about a sixth); the three are disjoint by bug site.
   * Default 'train'.
   */
  split?: MiniSweSplit;
  /**
   * Only these bug kinds (default: the tier's). `misspelled-name` (a plural slip in a name, which
   * throws a ReferenceError that names it) is drawn only when listed here: the gentlest bugs, for
   * a model trained from scratch.
   */
  kinds?: string[];
  /**
   * Rename the buggy module's local names per task (renameLocals: parameters and local bindings
   * drawn from a pool of ordinary names), so that every task has its own names and a model must
   * read them rather than recall them. Default false.
   */
  renameLocals?: boolean;
  /**
   * What the issue of a mutant task (the automatic kinds, `misspelled-name` included) shows:
   * 'reproduction' (default) the failing test's code and the error it raises; 'error' only the
   * error the test run reports, as a terse bug report does. With 'error' the issue's only
   * task-specific text is the error itself (for a slip: the name), so a model must read it.
   * Hand-written catalogue bugs keep their reproduction either way.
   */
  issue?: 'reproduction' | 'error';
  /**
   * Which modules: 'core' (default) the four of CATALOGUE; 'wide' those and the eleven of
   * WIDE_MODULES, so that each split spans many bug sites in many modules (the core catalogue's
   * misspelled-name test split is 9 sites, the wide one's 48); 'merged' the code of those
   * fifteen in the core's four files (MERGED_MODULES), as many sites in four files. Distractors
   * come from the same set.
   */
  catalogue?: MiniSweCatalogue;
  /**
   * Draw the tasks from distinct bug sites while the split has sites left (default false: each
   * task draws a site at random, so a split's tasks can repeat its most common sites). Task i
   * takes the i-th site of a seeded order of the split's sites; a site that yields no valid task
   * (a mutant no test kills) is replaced by the next unassigned one, so that the sites are
   * distinct whenever `count` is at most the number of valid sites.
   */
  distinctSites?: boolean;
}

/** The splits of a generated suite, disjoint by bug site. */
export type MiniSweSplit = 'train' | 'validation' | 'test';

/** The catalogue options: four modules, fifteen, or fifteen modules' code in four files. */
export const MINI_SWE_CATALOGUES = ['core', 'wide', 'merged'] as const;
export type MiniSweCatalogue = (typeof MINI_SWE_CATALOGUES)[number];

/** The modules of a catalogue option. */
export function catalogueModules(catalogue: MiniSweCatalogue = 'core'): ModuleTemplate[] {
  if (catalogue === 'wide') return [...CATALOGUE, ...WIDE_MODULES];
  return catalogue === 'merged' ? MERGED_MODULES : CATALOGUE;
}

/** Every bug kind a mini-SWE task can have. */
export const BUG_KINDS = [
  'operator-swap',
  'comparison-flip',
  'off-by-one',
  'wrong-variable',
  'swapped-arguments',
  'dropped-negation',
  'wrong-constant',
  'missing-branch',
  'logical-swap',
  'misspelled-name',
] as const;

/**
 * The split a bug site belongs to: a fixed hash of its module and id. A quarter of the sites are
 * held out, and a third of those are the validation split (for tuning and in-run validation), the
 * rest the test split; the training split is the same as when there was no validation split.
 */
export function bugSplit(module: string, mutation: string): MiniSweSplit {
  const h = createHash('sha256').update(`${module}/${mutation}`).digest();
  if ((h[0] as number) % 4 !== 0) return 'train';
  return (h[1] as number) % 3 === 0 ? 'validation' : 'test';
}

function repoFiles(modules: ModuleTemplate[], name: string): Record<string, string> {
  const files: Record<string, string> = {
    'package.json': `${JSON.stringify({ name, version: '1.0.0', type: 'module', scripts: { test: 'node --test' } }, null, 2)}\n`,
    'README.md': `# ${name}\n\nSmall utilities: ${modules.map((m) => m.name).join(', ')}. Run the tests with \`npm test\`.\n`,
  };
  for (const m of modules) {
    files[m.file] = m.source;
    files[m.testFile] = m.tests;
  }
  return files;
}

/**
 * The output of the hand-written bug's reproduction on the module in `sb`'s tree: its last line,
 * or the error it raised.
 */
async function evaluateRepro(sb: LocalSandbox, m: ModuleTemplate, mut: Mutation): Promise<string> {
  const script = `import { ${m.exports.join(', ')} } from './${m.file}';\nconsole.log(JSON.stringify(${mut.repro}));\n`;
  const r = await runScript(sb, script);
  const lines = r.output.trim().split('\n');
  return r.ok ? (lines.at(-1) ?? '') : `an error: ${lines.find((l) => /Error/.test(l)) ?? lines.at(-1) ?? ''}`;
}

function issueText(m: ModuleTemplate, mut: Mutation, actual: string): string {
  const title = `\`${mut.repro.length > 60 ? `${m.name} gives a wrong result` : mut.repro}\` is wrong`;
  return [
    `### ${title}`,
    '',
    `When ${mut.context}, \`${mut.repro}\` gives ${actual.startsWith('an error') ? actual : `\`${actual}\``}, but it should give \`${mut.expected}\`.`,
    '',
    'To reproduce:',
    '',
    '```js',
    `import { ${m.exports.join(', ')} } from './${m.file}';`,
    `console.log(JSON.stringify(${mut.repro}));`,
    '```',
    '',
    `Expected: \`${mut.expected}\``,
    `Actual: ${actual.startsWith('an error') ? actual : `\`${actual}\``}`,
  ].join('\n');
}

/** Bug kinds of tier 0: a single token changes. */
const TIER0_KINDS = new Set(['comparison-flip', 'off-by-one', 'operator-swap', 'wrong-constant']);

type Candidate = { m: ModuleTemplate; x: Mutation; auto?: undefined } | { m: ModuleTemplate; auto: LineMutation };

/** The bugs of a split and tier, in a fixed order. */
function candidates(
  modules: ModuleTemplate[],
  split: MiniSweSplit,
  difficulty: number,
  kinds?: Set<string>,
): Candidate[] {
  const out: Candidate[] = [];
  const wanted = (kind: string) => (kinds ? kinds.has(kind) : difficulty > 0 || TIER0_KINDS.has(kind));
  for (const m of modules) {
    for (const x of m.mutations) {
      if (bugSplit(m.name, x.id) !== split || !wanted(x.kind)) continue;
      out.push({ m, x });
    }
    const handWritten = new Set(m.mutations.map((x) => m.source.replace(x.find, x.replace)));
    const mutants = [
      ...(difficulty > 0 || kinds ? lineMutations(m.source) : []),
      ...(kinds ? nameSlips(m.source) : []),
    ];
    for (const auto of mutants) {
      if (bugSplit(m.name, auto.id) !== split || !wanted(auto.kind)) continue;
      if (handWritten.has(m.source.replace(auto.find, auto.replace))) continue; // the same bug, hand-written
      out.push({ m, auto });
    }
  }
  return out;
}

/** Runs a script at the root of `sb`'s tree: its exit code and output. */
async function runScript(sb: LocalSandbox, script: string): Promise<{ ok: boolean; output: string }> {
  await sb.writeFile('.swerl-repro.mjs', script);
  const r = await sb.exec('node .swerl-repro.mjs', { timeoutMs: 20_000 });
  return { ok: r.exitCode === 0, output: r.output };
}

/** The error a failing check reports: its message, without node's source excerpt and stack. */
function errorReport(output: string): string {
  const lines = output.split('\n');
  const first = lines.findIndex((l) => /^[A-Za-z]*Error\b/.test(l));
  if (first < 0) return lines.slice(-8).join('\n').trim();
  const end = lines.findIndex((l, k) => k > first && /^\s+at /.test(l));
  return lines
    .slice(first, end < 0 ? first + 12 : end)
    .join('\n')
    .trim()
    .slice(0, 800);
}

/** The terse issue: only the error the test run reports. */
function errorIssueText(error: string): string {
  return [
    '### The tests fail',
    '',
    'Running the test suite (`node --test`) fails with:',
    '',
    '```',
    error,
    '```',
    '',
    'Expected: the tests pass, as they did before.',
  ].join('\n');
}

function autoIssueText(m: ModuleTemplate, testName: string, script: string, error: string): string {
  const [suite, name] = testName.includes(' > ') ? testName.split(' > ', 2) : [m.name, testName];
  return [
    `### \`${suite}\`: ${name} is broken`,
    '',
    `This check, taken from the test suite (\`${m.testFile}\`), fails on the current code:`,
    '',
    '```js',
    script,
    '```',
    '',
    'Running it with `node` fails with:',
    '',
    '```',
    error,
    '```',
    '',
    'Expected: the check passes, as it did before.',
  ].join('\n');
}

/** Generates `count` validated mini-SWE tasks (deterministic by seed). */
export async function generateMiniSweTasks(o: MiniSweOptions): Promise<SweTask[]> {
  if (typeof o !== 'object' || o === null) throw invalidArgument('options', 'an object', o);
  if (!Number.isInteger(o.count) || o.count < 0) throw invalidArgument('count', 'an integer >= 0', o.count);
  if (!Number.isInteger(o.seed) || o.seed < 0) throw invalidArgument('seed', 'an integer >= 0', o.seed);
  const difficulty = o.difficulty ?? 1;
  if (!Number.isInteger(difficulty) || difficulty < 0 || difficulty > 3)
    throw invalidArgument('difficulty', 'an integer in [0, 3]', difficulty);
  if (o.issue !== undefined && o.issue !== 'reproduction' && o.issue !== 'error')
    throw invalidArgument('issue', "'reproduction' or 'error'", o.issue);
  const split = o.split ?? 'train';
  if (split !== 'train' && split !== 'validation' && split !== 'test')
    throw invalidArgument('split', "'train', 'validation' or 'test'", split);
  if (o.distinctSites !== undefined && typeof o.distinctSites !== 'boolean')
    throw invalidArgument('distinctSites', 'true or false', o.distinctSites);
  if (o.kinds !== undefined) {
    if (
      !Array.isArray(o.kinds) ||
      o.kinds.length === 0 ||
      o.kinds.some((k) => !(BUG_KINDS as readonly string[]).includes(k))
    )
      throw invalidArgument('kinds', `a non-empty array of ${BUG_KINDS.join(', ')}`, o.kinds);
  }
  if (o.catalogue !== undefined && !MINI_SWE_CATALOGUES.includes(o.catalogue))
    throw invalidArgument('catalogue', MINI_SWE_CATALOGUES.map((x) => `'${x}'`).join(', '), o.catalogue);
  const modules = catalogueModules(o.catalogue);
  const pool = candidates(modules, split, difficulty, o.kinds ? new Set(o.kinds) : undefined);
  const dead = new Set<string>(); // mutants no test kills (or whose check does not show the bug)
  const cleanRuns = new Map<string, Promise<Record<string, 'pass' | 'fail'>>>(); // by repository
  // Each task draws from its own stream (seed, index), so tasks are independent and validated
  // a few at a time; the result depends only on the seed.
  // With distinctSites, a seeded order of the split's sites: task i takes site order[i], and
  // when that site yields no task, order[count + i], order[2·count + i], ... (sites no task takes
  // first), so that no two tasks share a site while the split has valid sites left.
  const order = o.distinctSites ? seededOrder(pool.length, o.seed) : null;
  function* sitesOf(i: number): Generator<number> {
    if (!order) return;
    const n = order.length;
    if (i >= n) {
      yield order[i % n] as number; // more tasks than sites: the sites come round again
      return;
    }
    yield order[i] as number;
    for (let k = o.count + i; k < n; k += o.count) yield order[k] as number;
  }
  const distractorsFor = (c: Candidate, rng: () => number): ModuleTemplate[] => {
    const others = modules.filter((x) => x !== c.m);
    const distractors: ModuleTemplate[] = [];
    while (distractors.length < Math.min(difficulty, others.length)) {
      const d = others[Math.floor(rng() * others.length)] as ModuleTemplate;
      if (!distractors.includes(d)) distractors.push(d);
    }
    return distractors;
  };
  const attempt = async (c: Candidate, i: number, rng: () => number): Promise<SweTask | null | 'dead'> => {
    const distractors = distractorsFor(c, rng);
    const id = `${c.m.name}-${c.auto ? c.auto.id : c.x.id}`;
    if (dead.has(id)) return 'dead';
    const renamed = o.renameLocals ? renamedCandidate(c, rng) : c;
    if (renamed === null) return null;
    const task = await makeTask(
      renamed,
      distractors,
      `mini-swe__${id}-${o.seed}-${i}`,
      cleanRuns,
      renamed !== c,
      o.issue,
    );
    if (task === null && renamed === c) dead.add(id); // a renamed variant may fail where another would not
    return task;
  };
  // Each task draws from its own stream (seed, index), so tasks are independent and validated
  // a few at a time; the result depends only on the seed.
  const one = async (i: number): Promise<SweTask> => {
    const rng = mulberry32((Math.imul(o.seed + 1, 0x9e3779b1) ^ Math.imul(i + 1, 0x85ebca6b)) >>> 0);
    for (const k of sitesOf(i)) {
      // A renamed variant that breaks the module is drawn again; a dead site is left.
      for (let r = 0; r < (o.renameLocals ? 8 : 1); r++) {
        const task = await attempt(pool[k] as Candidate, i, rng);
        if (task === 'dead') break;
        if (task !== null) return task;
      }
    }
    for (let a = 0; a < 200; a++) {
      if (dead.size >= pool.length) break;
      const task = await attempt(pool[Math.floor(rng() * pool.length)] as Candidate, i, rng);
      if (task !== null && task !== 'dead') return task;
    }
    throw new SwerlError('mini-SWE: no bug of this split and tier survives validation', 'INTERNAL');
  };
  const tasks: SweTask[] = new Array(o.count);
  let next = 0;
  const worker = async () => {
    while (next < o.count) {
      const i = next++;
      tasks[i] = await one(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(3, o.count) }, worker));
  return tasks;
}

/** A seeded permutation of 0..n-1 (Fisher-Yates over its own stream). */
function seededOrder(n: number, seed: number): number[] {
  const rng = mulberry32((Math.imul(seed + 1, 0x2545f491) ^ 0x5eed0d1) >>> 0);
  const order = Array.from({ length: n }, (_, k) => k);
  for (let k = n - 1; k > 0; k--) {
    const j = Math.floor(rng() * (k + 1));
    [order[k], order[j]] = [order[j] as number, order[k] as number];
  }
  return order;
}

/** The candidate in a module whose locals are renamed (null when its bug no longer applies). */
function renamedCandidate(c: Candidate, rng: () => number): Candidate | null {
  const r = renameLocals(c.m.source, c.m.exports, rng);
  const m = { ...c.m, source: r.source };
  if (!c.auto)
    return { m, x: { ...c.x, find: renameText(c.x.find, r.names), replace: renameText(c.x.replace, r.names) } };
  if (c.auto.kind === 'misspelled-name') {
    const auto = slipAt(r.source, c.auto.id);
    return auto ? { m, auto } : null;
  }
  return {
    m,
    auto: { ...c.auto, find: renameText(c.auto.find, r.names), replace: renameText(c.auto.replace, r.names) },
  };
}

/** One validated task, or null for a mutant that no test kills (or a renaming that broke the module). */
async function makeTask(
  c: Candidate,
  distractors: ModuleTemplate[],
  instanceId: string,
  cleanRuns: Map<string, Promise<Record<string, 'pass' | 'fail'>>>,
  renamed = false,
  issue: 'reproduction' | 'error' = 'reproduction',
): Promise<SweTask | null> {
  const m = c.m;
  const find = c.auto ? c.auto.find : c.x.find;
  const replace = c.auto ? c.auto.replace : c.x.replace;
  const modules = [m, ...distractors].sort((a, b) => a.name.localeCompare(b.name));
  const name = `mini-${modules.map((mm) => mm.name).join('-')}`;
  const clean = repoFiles(modules, name);
  if (m.source.split(find).length !== 2)
    throw new SwerlError(`catalogue: ${instanceId} does not occur exactly once`, 'INTERNAL');
  const buggy = { ...clean, [m.file]: m.source.replace(find, replace) };
  // One sandbox holds the buggy repository (committed) for every check: its tests, the clean
  // module's tests, the reproduction, and the gold patch (the diff back to the clean module).
  const sb = await LocalSandbox.create({ files: buggy, timeoutMs: 120_000, maxOutputBytes: 1 << 20 });
  try {
    const after = await allTestResults(sb);
    // The clean repository's results depend only on its modules: run once per set.
    const key = modules.map((mm) => `${mm.name}:${createHash('sha1').update(mm.source).digest('hex')}`).join(',');
    let cleanRun = cleanRuns.get(key);
    if (!cleanRun) {
      cleanRun = (async () => {
        await sb.writeFile(m.file, m.source);
        try {
          return await allTestResults(sb);
        } finally {
          await sb.writeFile(m.file, buggy[m.file] as string);
        }
      })();
      cleanRuns.set(key, cleanRun);
    }
    const before = await cleanRun;
    const ids = Object.keys(before);
    const failToPass = ids.filter((id) => after[id] !== 'pass').sort();
    const passToPass = ids.filter((id) => after[id] === 'pass').sort();
    if (renamed && ids.some((id) => before[id] !== 'pass')) return null;
    if (ids.length === 0 || ids.some((id) => before[id] !== 'pass'))
      throw new SwerlError(`mini-SWE task ${instanceId}: the clean repository fails its tests`, 'INTERNAL');
    let statement: string;
    if (c.auto) {
      if (failToPass.length === 0) return null;
      const scripts = testScripts(m.tests);
      const failing = failToPass.find((id) => id.startsWith(`${m.testFile}::`));
      const testName = failing?.slice(m.testFile.length + 2);
      const script = testName === undefined ? undefined : scripts.get(testName);
      if (testName === undefined || script === undefined) return null;
      const run = await runScript(sb, script);
      if (run.ok) return null;
      // A slip must throw the ReferenceError that names it (not a later, unrelated failure).
      if (c.auto.kind === 'misspelled-name') {
        const slip = /^ReferenceError: (\S+) is not defined/m.exec(run.output)?.[1];
        if (slip === undefined || !new RegExp(`\\b${slip}\\b`).test(c.auto.replace)) return null;
      }
      statement =
        issue === 'error'
          ? errorIssueText(errorReport(run.output))
          : autoIssueText(m, testName, script, errorReport(run.output));
    } else {
      if (failToPass.length === 0)
        throw new SwerlError(`mini-SWE task ${instanceId} failed validation: no test fails with the bug`, 'INTERNAL');
      const actual = await evaluateRepro(sb, m, c.x);
      if (actual === c.x.expected)
        throw new SwerlError(`mini-SWE task ${instanceId}: the reproduction does not show the bug`, 'INTERNAL');
      statement = issueText(m, c.x, actual);
    }
    await sb.writeFile(m.file, m.source);
    return {
      instance_id: instanceId,
      repo: `mini-swe/${name}`,
      problem_statement: statement,
      patch: await sb.diff(), // swerl's own files (.swerl*) are not in it
      test_patch: '',
      FAIL_TO_PASS: failToPass,
      PASS_TO_PASS: passToPass,
      files: buggy,
    };
  } finally {
    await sb.close();
  }
}

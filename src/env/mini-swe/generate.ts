/**
 * generateMiniSweTasks (DESIGN.md section 6): bug-fix tasks in small JavaScript packages, for
 * the embedded default. Each task is one module of the catalogue with one injected bug, plus
 * `difficulty` correct distractor modules, with their node:test suites. Every task is validated by
 * running its tests: the clean repository passes them all, the buggy one fails at least one
 * (FAIL_TO_PASS) and passes the rest (PASS_TO_PASS). The issue text reports a reproduction and
 * its actual value, obtained by running it on the buggy code; it never quotes the line to fix.
 * The gold patch is the workspace diff that undoes the bug. Generation is deterministic by seed,
 * and the train and test splits use disjoint bugs.
 */
import { createHash } from 'node:crypto';
import { invalidArgument, SwerlError } from '../../errors.js';
import { runAllTests } from '../evaluate.js';
import { LocalSandbox } from '../sandbox.js';
import type { SweTask } from '../tasks.js';
import { CATALOGUE, type ModuleTemplate, type Mutation } from './catalogue.js';

/** Options of {@link generateMiniSweTasks}. */
export interface MiniSweOptions {
  count: number;
  seed: number;
  /** 0-3: the number of correct distractor modules beside the buggy one (default 1). */
  difficulty?: number;
  /** Which bugs: 'train' (about three quarters of the catalogue) or 'test' (the rest). Default 'train'. */
  split?: 'train' | 'test';
}

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The split a bug belongs to: a fixed hash of its module and id. */
export function bugSplit(module: string, mutation: string): 'train' | 'test' {
  const h = createHash('sha256').update(`${module}/${mutation}`).digest();
  return (h[0] as number) % 4 === 0 ? 'test' : 'train';
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

async function evaluateRepro(files: Record<string, string>, m: ModuleTemplate, mut: Mutation): Promise<string> {
  const sb = await LocalSandbox.create({ files, timeoutMs: 20_000 });
  try {
    const script = `import { ${m.exports.join(', ')} } from './${m.file}';\nconsole.log(JSON.stringify(${mut.repro}));\n`;
    await sb.writeFile('.swerl-repro.mjs', script);
    const r = await sb.exec('node .swerl-repro.mjs');
    const lines = r.output.trim().split('\n');
    return r.exitCode === 0
      ? (lines.at(-1) ?? '')
      : `an error: ${lines.find((l) => /Error/.test(l)) ?? lines.at(-1) ?? ''}`;
  } finally {
    await sb.close();
  }
}

async function goldPatch(buggy: Record<string, string>, file: string, fixed: string): Promise<string> {
  const sb = await LocalSandbox.create({ files: buggy });
  try {
    await sb.writeFile(file, fixed);
    return await sb.diff();
  } finally {
    await sb.close();
  }
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

/** Generates `count` validated mini-SWE tasks (deterministic by seed). */
export async function generateMiniSweTasks(o: MiniSweOptions): Promise<SweTask[]> {
  if (typeof o !== 'object' || o === null) throw invalidArgument('options', 'an object', o);
  if (!Number.isInteger(o.count) || o.count < 0) throw invalidArgument('count', 'an integer >= 0', o.count);
  if (!Number.isInteger(o.seed) || o.seed < 0) throw invalidArgument('seed', 'an integer >= 0', o.seed);
  const difficulty = o.difficulty ?? 1;
  if (!Number.isInteger(difficulty) || difficulty < 0 || difficulty > 3)
    throw invalidArgument('difficulty', 'an integer in [0, 3]', difficulty);
  const split = o.split ?? 'train';
  if (split !== 'train' && split !== 'test') throw invalidArgument('split', "'train' or 'test'", split);
  const bugs = CATALOGUE.flatMap((m) =>
    m.mutations.filter((x) => bugSplit(m.name, x.id) === split).map((x) => ({ m, x })),
  );
  const rng = mulberry32(o.seed);
  const tasks: SweTask[] = [];
  for (let i = 0; i < o.count; i++) {
    const { m, x } = bugs[Math.floor(rng() * bugs.length)] as { m: ModuleTemplate; x: Mutation };
    const others = CATALOGUE.filter((c) => c !== m);
    const distractors: ModuleTemplate[] = [];
    while (distractors.length < Math.min(difficulty, others.length)) {
      const d = others[Math.floor(rng() * others.length)] as ModuleTemplate;
      if (!distractors.includes(d)) distractors.push(d);
    }
    const modules = [m, ...distractors].sort((a, b) => a.name.localeCompare(b.name));
    const name = `mini-${modules.map((mm) => mm.name).join('-')}`;
    const clean = repoFiles(modules, name);
    if (m.source.split(x.find).length !== 2)
      throw new SwerlError(`catalogue: ${m.name}/${x.id} does not occur exactly once`, 'INTERNAL');
    const buggy = { ...clean, [m.file]: m.source.replace(x.find, x.replace) };
    const [before, after] = await Promise.all([runAllTests(clean), runAllTests(buggy)]);
    const ids = Object.keys(before);
    const failToPass = ids.filter((id) => after[id] !== 'pass').sort();
    const passToPass = ids.filter((id) => after[id] === 'pass').sort();
    if (ids.length === 0 || ids.some((id) => before[id] !== 'pass') || failToPass.length === 0)
      throw new SwerlError(
        `mini-SWE task ${m.name}/${x.id} failed validation: clean tests must all pass and the bug must fail one`,
        'INTERNAL',
      );
    const actual = await evaluateRepro(buggy, m, x);
    if (actual === x.expected)
      throw new SwerlError(`mini-SWE task ${m.name}/${x.id}: the reproduction does not show the bug`, 'INTERNAL');
    tasks.push({
      instance_id: `mini-swe__${m.name}-${x.id}-${o.seed}-${i}`,
      repo: `mini-swe/${name}`,
      problem_statement: issueText(m, x, actual),
      patch: await goldPatch(buggy, m.file, m.source),
      test_patch: '',
      FAIL_TO_PASS: failToPass,
      PASS_TO_PASS: passToPass,
      files: buggy,
    });
  }
  return tasks;
}

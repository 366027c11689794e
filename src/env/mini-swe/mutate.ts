/**
 * Mutation operators over a module's source, as mutation-testing tools define them: every site in
 * a function body where one realistic single-line bug can be injected (comparison flip, operator
 * swap, off-by-one on an integer literal, dropped negation, logical swap, wrong constant). They
 * widen the hand-written catalogue to every line of every module; generation keeps only the
 * mutants that some test kills (a FAIL_TO_PASS exists) and whose reproduction shows the bug.
 */
import type { Mutation } from './catalogue.js';

/** A mutant of one source line: the hand-written catalogue's shape, with a line number. */
export interface LineMutation {
  id: string;
  kind: Mutation['kind'] | 'logical-swap' | 'misspelled-name';
  /** 1-based line in the module source. */
  line: number;
  find: string;
  replace: string;
}

interface Operator {
  kind: LineMutation['kind'];
  /** Matches one site; group 1 is the text replaced. */
  re: RegExp;
  swap: (s: string) => string | null;
}

const COMPARISONS: Record<string, string> = { '<=': '<', '<': '<=', '>=': '>', '>': '>=', '===': '!==', '!==': '===' };
const ARITHMETIC: Record<string, string> = { '+': '-', '-': '+', '*': '/', '/': '*' };

const OPERATORS: Operator[] = [
  // Spaced binary comparisons only (not arrows, generics or `=>`).
  { kind: 'comparison-flip', re: / (<=|>=|===|!==|<|>) /g, swap: (s) => COMPARISONS[s] ?? null },
  { kind: 'operator-swap', re: / ([+\-*/]) /g, swap: (s) => ARITHMETIC[s] ?? null },
  { kind: 'logical-swap', re: / (&&|\|\|) /g, swap: (s) => (s === '&&' ? '||' : '&&') },
  // An integer literal in an expression: off by one.
  {
    kind: 'off-by-one',
    re: /(?<![\w.$'"`])(\d+)(?![\w.'"`])/g,
    swap: (s) => (Number(s) > 1000 ? null : String(Number(s) + 1)),
  },
  { kind: 'dropped-negation', re: /(?<![\w)\]!])(!)(?=[\w(])/g, swap: () => '' },
  { kind: 'wrong-constant', re: /\b(Math\.(?:ceil|floor|min|max))\b/g, swap: (s) => WRONG_MATH[s] ?? null },
];

const WRONG_MATH: Record<string, string> = {
  'Math.ceil': 'Math.floor',
  'Math.floor': 'Math.ceil',
  'Math.min': 'Math.max',
  'Math.max': 'Math.min',
};

/** Lines that are code inside a function body (not comments, imports, exports or strings only). */
function mutableLine(text: string): boolean {
  const t = text.trim();
  if (t === '' || t.startsWith('//') || t.startsWith('/*') || t.startsWith('*') || t.startsWith('import '))
    return false;
  if (t.startsWith('export function') || t.startsWith('function') || t === '}' || t === '{') return false;
  if (t.startsWith('throw ') || text.includes('(/')) return false; // regex literals are not arithmetic
  return /^\s{2,}/.test(text); // indented: inside a body
}

/** Every single-site mutant of `source`, in line order. Each `find` occurs exactly once in it. */
export function lineMutations(source: string): LineMutation[] {
  const lines = source.split('\n');
  const out: LineMutation[] = [];
  lines.forEach((text, i) => {
    if (!mutableLine(text)) return;
    if (source.split(`${text}\n`).length !== 2) return; // the line must be unique to be found
    // Text inside string literals is not code.
    const code = text.replace(/'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|`(?:[^`\\]|\\.)*`/g, (m) => ' '.repeat(m.length));
    for (const op of OPERATORS) {
      op.re.lastIndex = 0;
      for (let m = op.re.exec(code); m !== null; m = op.re.exec(code)) {
        const site = m[1] ?? '';
        const at = m.index + m[0].indexOf(site);
        const repl = op.swap(site);
        if (repl === null) continue;
        const mutated = text.slice(0, at) + repl + text.slice(at + site.length);
        if (mutated === text) continue;
        out.push({
          id: `${op.kind}-l${i + 1}-c${at + 1}`,
          kind: op.kind,
          line: i + 1,
          find: `${text}\n`,
          replace: `${mutated}\n`,
        });
      }
    }
    // A guard or an update statement on its own line: dropped (a missing branch).
    if (/^\s+(if \(.*\) .*;|[\w.]+ (\+|-|\*)?= .*;)$/.test(text) && !/^\s+(const|let|var) /.test(text))
      out.push({ id: `missing-branch-l${i + 1}`, kind: 'missing-branch', line: i + 1, find: `${text}\n`, replace: '' });
  });
  return out;
}

/** Words that are not the module's own names: keywords and the globals the catalogue uses. */
const NOT_NAMES = new Set(
  (
    'const let var return if else for of in new throw typeof instanceof while do break continue function ' +
    'export import from true false null undefined this class extends switch case default try catch finally ' +
    'Math Number String Array Object JSON Map Set Error RangeError TypeError Infinity NaN async await yield'
  ).split(' '),
);

/**
 * Every misspelled-name mutant of `source`: one use of a local name (not a declaration, not a
 * property) written with a plural slip, an `s` added or dropped (`total` → `totals`, `items` →
 * `item`), where the slipped name occurs nowhere in the module. Running such code throws
 * `ReferenceError: <slip> is not defined`; generation keeps a mutant only when it does.
 */
export function nameSlips(source: string): LineMutation[] {
  const words = new Set(source.match(/[A-Za-z_$][\w$]*/g) ?? []);
  const lines = source.split('\n');
  const out: LineMutation[] = [];
  lines.forEach((text, i) => {
    if (!mutableLine(text) || /^\s+[\w$]+\(.*\)\s*\{$/.test(text)) return; // not a method head
    if (source.split(`${text}\n`).length !== 2) return;
    const code = text.replace(/'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|`(?:[^`\\]|\\.)*`/g, (m) => ' '.repeat(m.length));
    const re = /(?<![\w$.])([a-z][A-Za-z0-9]*)(?![\w$])/g;
    let k = -1;
    for (let m = re.exec(code); m !== null; m = re.exec(code)) {
      k++;
      const name = m[1] ?? '';
      if (NOT_NAMES.has(name) || name.length < 3) continue;
      const before = code.slice(0, m.index);
      if (/\b(const|let|var|function)\s+$/.test(before) || /^\s*\??:/.test(code.slice(m.index + name.length))) continue;
      const slip = name.endsWith('s') ? name.slice(0, -1) : `${name}s`;
      if (words.has(slip)) continue;
      const mutated = text.slice(0, m.index) + slip + text.slice(m.index + name.length);
      out.push({
        id: `misspelled-name-l${i + 1}-n${k}`,
        kind: 'misspelled-name',
        line: i + 1,
        find: `${text}\n`,
        replace: `${mutated}\n`,
      });
    }
  });
  return out;
}

/** A test's code as a standalone script run from the repository root; key `suite > name`. */
export function testScripts(testSource: string): Map<string, string> {
  const lines = testSource.split('\n');
  const imports: string[] = [];
  const globals: string[] = [];
  let suite = '';
  let suiteSetup: string[] = [];
  const out = new Map<string, string>();
  const emit = (name: string, body: string[]) =>
    out.set(suite ? `${suite} > ${name}` : name, [...imports, ...globals, ...suiteSetup, ...body].join('\n'));
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i] ?? '';
    if (l.startsWith('import ')) {
      if (!l.includes("'node:test'")) imports.push(l.replace(/'\.\.\/src\//g, "'./src/"));
      continue;
    }
    if (/^(const|let) /.test(l)) {
      globals.push(l);
      continue;
    }
    const d = /^describe\('((?:[^'\\]|\\.)*)', \(\) => \{$/.exec(l);
    if (d) {
      suite = d[1] ?? '';
      suiteSetup = [];
      continue;
    }
    if (l === '});') {
      suite = ''; // the describe block ended
      suiteSetup = [];
      continue;
    }
    if (suite !== '' && /^ {2}const /.test(l)) {
      suiteSetup.push(l.trim());
      continue;
    }
    const one = /^\s*test\('((?:[^'\\]|\\.)*)', \(\) => (.*)\);$/.exec(l);
    if (one && !(one[2] ?? '').endsWith('{')) {
      emit(one[1] ?? '', [`${one[2]};`]);
      continue;
    }
    const multi = /^(\s*)test\('((?:[^'\\]|\\.)*)', \(\) => \{$/.exec(l);
    if (multi) {
      const indent = multi[1] ?? '';
      const body: string[] = [];
      for (i++; i < lines.length && lines[i] !== `${indent}});`; i++) body.push((lines[i] ?? '').trim());
      emit(multi[2] ?? '', body);
    }
  }
  return out;
}

/** The ordinary local names {@link renameLocals} draws from. */
export const NAME_POOL: readonly string[] = (
  'amount count index limit offset value result entry item items list total sum size width height ' +
  'start end first last next prev step delta span gap low high min max mid left right head tail ' +
  'key keys code label text word words line lines part parts chunk piece token pos rank score ' +
  'rate ratio share price cost fee qty units unit volume weight level depth base scale factor ' +
  'row rows col cols cell page pages slot slots bucket buckets group groups batch record records ' +
  'acc agg tally counter cursor pointer marker anchor pivot bound edge limitValue target goal ' +
  'input output source dest payload data info state status flag mode kind tag name title'
).split(' ');

/** A line with its string and regular-expression literals blanked (same length). */
function codeOnly(line: string): string {
  return line
    .replace(/'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|`(?:[^`\\]|\\.)*`/g, (m) => ' '.repeat(m.length))
    .replace(/(?<=(?:^|[(,=!&|?:;{}]|\breturn)\s*)\/(?:[^/\\\n]|\\.)+\/[dgimsuy]*/g, (m) => ' '.repeat(m.length));
}

/**
 * Renames a module's local names (parameters and local bindings; never exports, properties,
 * object keys or globals) to names drawn from a pool, the same renaming everywhere in the code
 * (comments and strings are left alone). The program is the same up to names, so its tests still
 * pass; each task then has its own names, and a model must read them rather than recall them.
 * `rng` draws the names; returns the renamed source and the map.
 */
export function renameLocals(
  source: string,
  exports: string[],
  rng: () => number,
): { source: string; names: Map<string, string> } {
  const code = source
    .split('\n')
    .map((l) => (/^\s*(\/\/|\/\*|\*)/.test(l) ? '' : codeOnly(l)))
    .join('\n');
  const used = new Set(code.match(/[A-Za-z_$][\w$]*/g) ?? []);
  const blocked = new Set<string>([...exports, ...NOT_NAMES]);
  for (const m of code.matchAll(/\.\s*([A-Za-z_$][\w$]*)/g)) blocked.add(m[1] ?? ''); // properties
  for (const m of code.matchAll(/([A-Za-z_$][\w$]*)\s*:(?!:)/g)) blocked.add(m[1] ?? ''); // keys (and ternary arms)
  for (const m of code.matchAll(/[{,]\s*([A-Za-z_$][\w$]*)\s*(?=[,}])/g)) blocked.add(m[1] ?? ''); // shorthand
  for (const m of code.matchAll(/^\s+([A-Za-z_$][\w$]*)\s*\(.*\)\s*\{$/gm)) blocked.add(m[1] ?? ''); // methods
  for (const m of code.matchAll(/\bclass\s+([A-Za-z_$][\w$]*)/g)) blocked.add(m[1] ?? '');
  const locals = [...used].filter((w) => /^[a-z]/.test(w) && !blocked.has(w) && !/^(console|globalThis)$/.test(w));
  const taken = new Set(used);
  const names = new Map<string, string>();
  for (const w of locals.sort()) {
    const free = NAME_POOL.filter((n) => !taken.has(n) && !blocked.has(n));
    if (free.length === 0) break;
    const n = free[Math.floor(rng() * free.length)] as string;
    names.set(w, n);
    taken.add(n);
  }
  return { source: renameText(source, names), names };
}

/** `text` (source lines) with `names` renamed in its code: comments and strings are left alone. */
export function renameText(text: string, names: Map<string, string>): string {
  const renameCode = (l: string) => {
    const masked = codeOnly(l);
    let out = '';
    let last = 0;
    for (const m of masked.matchAll(/(?<![\w$.])[A-Za-z_$][\w$]*/g)) {
      const to = names.get(m[0]);
      if (to === undefined) continue;
      out += l.slice(last, m.index) + to;
      last = (m.index ?? 0) + m[0].length;
    }
    return out + l.slice(last);
  };
  return text
    .split('\n')
    .map((l) => (/^\s*(\/\/|\/\*|\*)/.test(l) ? l : renameCode(l)))
    .join('\n');
}

/** The misspelled-name mutant `id` (from {@link nameSlips}) applied to `source`, or null when it does not apply. */
export function slipAt(source: string, id: string): LineMutation | null {
  return nameSlips(source).find((x) => x.id === id) ?? null;
}

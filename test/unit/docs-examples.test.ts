/**
 * The docs' code examples are programs, and they run. Every ```js test block of README.md and
 * docs/*.md runs, as written, as an ES module in an empty temporary folder in which `swerl`
 * resolves to this checkout (node_modules/swerl links to it, so the package's `exports` and the
 * built dist/ are what an example imports: run `npm run build:ts` first). A ```text output block
 * right after an example is what it must print, exactly. A ```js or ```ts block that is neither
 * `test` nor `no-run` (with its reason as a comment on its first line) fails, and so does an
 * output block with no example right before it, so that no example can drift unrun. The docs are
 * also checked to be self-contained: every relative link names a file of the repository, and
 * nothing points at files outside it. A ```js test cuda-sim block runs on the CUDA simulation addon
 * (SWERL_NATIVE_PATH=build/cmake/Release/swerl_cudasim.node), so that the CUDA examples run here too.
 */
import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const docFiles = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];

/** A fenced code block: its info string's words, its text, and its fence lines (1-based). */
interface Fence {
  lang: string;
  flags: string[];
  code: string;
  line: number;
  end: number;
}

/**
 * The fenced blocks of a Markdown text (CommonMark's backtick fences: up to 3 spaces of indent, 3
 * or more backticks, an info string without backticks, closed by a fence at least as long).
 */
function fences(text: string): Fence[] {
  const lines = text.split('\n');
  const out: Fence[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^ {0,3}(`{3,})([^`]*)$/.exec(lines[i] as string);
    if (!open) continue;
    const [lang = '', ...flags] = (open[2] as string).trim().split(/\s+/);
    const body: string[] = [];
    let j = i + 1;
    const close = new RegExp(`^ {0,3}\`{${(open[1] as string).length},}\\s*$`);
    while (j < lines.length && !close.test(lines[j] as string)) body.push(lines[j++] as string);
    out.push({ lang, flags, code: body.length ? `${body.join('\n')}\n` : '', line: i + 1, end: j + 1 });
    i = j;
  }
  return out;
}

const CODE = new Set(['js', 'javascript', 'mjs', 'ts', 'typescript']);

/** An example to run: the ```js test block, and the ```text output block right after it, if any. */
interface Example {
  name: string;
  code: string;
  output: string | undefined;
  /** Run on the CUDA simulation addon (```js test cuda-sim). */
  cudaSim: boolean;
}

const cudaSimAddon = join(root, 'build/cmake/Release/swerl_cudasim.node');

const examples: Example[] = [];
/** Blocks that would go unchecked: code neither run nor marked no-run with a reason, stray outputs. */
const unmarked: string[] = [];
for (const file of docFiles) {
  const blocks = fences(readFileSync(join(root, file), 'utf8'));
  blocks.forEach((b, i) => {
    const where = `${file}:${b.line}`;
    if (b.lang === 'text' && b.flags.includes('output')) {
      // An expected output that no example precedes would be checked against nothing.
      const prev = blocks[i - 1];
      if (!(prev?.lang === 'js' && prev.flags.includes('test') && b.line <= prev.end + 2))
        unmarked.push(`${where}: a text output block right after no js test block`);
    }
    if (!CODE.has(b.lang)) return;
    if (b.flags.includes('test')) {
      if (b.lang !== 'js') unmarked.push(`${where}: a runnable example is \`\`\`js test (node runs it as is)`);
      // Its expected output: a ```text output block after it, with at most a blank line between.
      const next = blocks[i + 1];
      const output =
        next?.lang === 'text' && next.flags.includes('output') && next.line <= b.end + 2 ? next.code : undefined;
      examples.push({ name: where, code: b.code, output, cudaSim: b.flags.includes('cuda-sim') });
    } else if (b.flags.includes('no-run')) {
      // The reason: a comment of a few words on the block's first line.
      if (!/^\/\/ *\S.{8,}/.test(b.code)) unmarked.push(`${where}: a no-run block says why on its first line`);
    } else unmarked.push(`${where}: \`\`\`${b.lang} without "test" or "no-run"`);
  });
}

describe('docs examples', () => {
  it('there are examples to run, in the README too', () => {
    expect(examples.length).toBeGreaterThan(10);
    expect(examples.some((e) => e.name.startsWith('README.md'))).toBe(true);
  });

  it('every js/ts block is run (js test) or marked no-run with its reason; every output has its example', () => {
    expect(unmarked).toEqual([]);
  });

  it('the fence parser finds blocks, their flags and indented or longer fences', () => {
    const md =
      'a\n```js test\nx\n```\n\n```text output\ny\n```\n  ```` ```bash ```` inline\n````ts no-run\n```\n````\n';
    expect(fences(md)).toEqual([
      { lang: 'js', flags: ['test'], code: 'x\n', line: 2, end: 4 },
      { lang: 'text', flags: ['output'], code: 'y\n', line: 6, end: 8 },
      { lang: 'ts', flags: ['no-run'], code: '```\n', line: 10, end: 12 },
    ]);
  });

  it('the docs are self-contained: relative links resolve, nothing points outside the repository', () => {
    const bad: string[] = [];
    for (const file of docFiles) {
      const text = readFileSync(join(root, file), 'utf8');
      for (const m of text.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
        const target = m[1] as string;
        if (/^[a-z]+:/.test(target)) continue;
        const abs = resolve(root, dirname(file), target);
        if (!abs.startsWith(`${root}/`) || !existsSync(abs)) bad.push(`${file}: link ${target}`);
      }
      for (const m of text.matchAll(/DESIGN\.md|reference\/paper|\.\.\/shared|\.\.\/\.\.\//g))
        bad.push(`${file}: ${m[0]}`);
    }
    expect(bad).toEqual([]);
  });

  for (const e of examples)
    it.skipIf(e.cudaSim && !existsSync(cudaSimAddon))(
      `${e.name} runs`,
      async () => {
        const dir = mkdtempSync(join(tmpdir(), 'swerl-doc-'));
        try {
          // `import ... from 'swerl'` finds this checkout as an installed package would be found.
          mkdirSync(join(dir, 'node_modules'));
          symlinkSync(root, join(dir, 'node_modules/swerl'), 'dir');
          writeFileSync(join(dir, 'example.mjs'), e.code);
          const { stdout } = await run(process.execPath, ['example.mjs'], {
            cwd: dir,
            env: e.cudaSim ? { ...process.env, SWERL_NATIVE_PATH: cudaSimAddon } : process.env,
            encoding: 'utf8',
            timeout: 60_000,
            maxBuffer: 16 << 20,
          }).catch((err: Error & { stdout?: string; stderr?: string }) => {
            throw new Error(`${e.name} failed: ${err.message}\n${err.stdout ?? ''}`);
          });
          if (e.output !== undefined) expect(stdout).toBe(e.output);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
      90_000,
    );
});

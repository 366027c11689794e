/**
 * The scaffold's bash tools (src/agent/tools.ts) against the Node tools they replace
 * (test/helpers/node-tools-reference.ts): two real LocalSandboxes, one per implementation, run the
 * same tool calls on the same files, and every call must give the same output and exit code and
 * leave the same files, state.json and shell state. Fixed cases cover the edges (odd paths,
 * CRLF, no final newline, empty files, long lines, printf and regex/sed/replace-pattern special
 * characters, newlines in arguments, heredoc and argument text, range errors); a fast-check
 * property covers random files and call sequences. Then: the tools with node and python off
 * PATH, and the calls per second of both.
 */
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installTools, runCommand, shellState } from '../../src/agent/scaffold.js';
import { isolationAvailable, LocalSandbox } from '../../src/index.js';
import { installNodeTools } from '../helpers/node-tools-reference.js';

const canSandbox = isolationAvailable('bwrap') || isolationAvailable('unshare');

/** Single-quotes a word for bash. */
function q(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** What one call gives and leaves behind, comparable between the implementations. */
interface Observed {
  output: string;
  exitCode: number;
  files: string;
  state: string;
  leftovers: string[];
  shell: { cwd: string; file: string | null };
}

let sh: LocalSandbox;
let node: LocalSandbox;

/** The two workspaces' paths differ unless bwrap maps both onto /project: compare without them. */
function norm(sb: LocalSandbox, s: string): string {
  return s.split(sb.workdir).join('<ws>');
}

/** Fresh files in w/ (the working directory), nothing open. */
async function setup(files: Record<string, string>): Promise<void> {
  await Promise.all(
    [sh, node].map(async (sb) => {
      await sb.exec('rm -rf w .swerl/state.json && mkdir w');
      for (const [name, content] of Object.entries(files)) await sb.writeFile(`w/${name}`, content);
      await sb.writeFile('.swerl/cwd', `${sb.workdir}/w`);
    }),
  );
}

/** Every file (mode, hash, text) and folder under w/, the state file, and any file the tools left in .swerl. */
function snapshot(sb: LocalSandbox): { files: string; state: string; leftovers: string[] } {
  const rows: string[] = [];
  const walk = (rel: string) => {
    for (const name of readdirSync(join(sb.root, rel)).sort()) {
      const r = `${rel}/${name}`;
      const st = lstatSync(join(sb.root, r));
      const mode = (st.mode & 0o7777).toString(8);
      if (st.isDirectory()) {
        rows.push(`${r}/ ${mode}`);
        walk(r);
      } else if (st.isSymbolicLink()) rows.push(`${r} -> ${readlinkSync(join(sb.root, r))}`);
      else {
        const bytes = readFileSync(join(sb.root, r));
        const hash = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
        rows.push(`${r} ${mode} ${hash} ${JSON.stringify(bytes.toString('utf8').slice(0, 200))}`);
      }
    }
  };
  walk('w');
  const swerl = join(sb.root, '.swerl');
  const state = existsSync(join(swerl, 'state.json')) ? readFileSync(join(swerl, 'state.json'), 'utf8') : '(none)';
  const leftovers = readdirSync(swerl).filter(
    (n) => !['bin', 'cwd', 'state.json', 'package.json', 'minbin'].includes(n),
  );
  return { files: rows.join('\n'), state: norm(sb, state), leftovers };
}

async function observe(sb: LocalSandbox, command: string): Promise<Observed> {
  const r = await runCommand(sb, command);
  const shell = await shellState(sb);
  return {
    output: norm(sb, r.output),
    exitCode: r.exitCode,
    ...snapshot(sb),
    shell: { cwd: norm(sb, shell.cwd), file: shell.file === null ? null : norm(sb, shell.file) },
  };
}

// A Node script's uncaught exception: "where:line", the source line, a caret, a blank line, the
// error's `Error: ...` line (more where a path holds a newline), its stack, a blank line, "Node.js vX".
const NODE_TRACE =
  /^\S+:\d+\n.*\n *\^\n\n(\w*Error: [\s\S]*?)\n(?: {4}at [^\n]*\n)+(?:[^\n]*\n)*?\nNode\.js v[\d.]+\n/m;

/**
 * Expects the bash tools' observation to equal Node's. Where a Node script threw (a stack trace,
 * not reproduced), the bash tool must print the trace's `Error: ...` line in its place.
 */
function expectSame(sh: Observed, nd: Observed, call: string): void {
  const output = nd.output.replace(NODE_TRACE, '$1\n');
  expect(sh, output === nd.output ? call : `${call} (Node threw)`).toEqual({ ...nd, output });
}

/** Runs a call in both workspaces; returns both observations. */
async function both(command: string): Promise<[Observed, Observed]> {
  return Promise.all([observe(sh, command), observe(node, command)]);
}

/** Runs calls on files in both workspaces and expects the same after every call. */
async function same(files: Record<string, string>, calls: string[]): Promise<Observed[]> {
  await setup(files);
  const seen: Observed[] = [];
  for (const call of calls) {
    const [a, b] = await both(call);
    expectSame(a, b, call);
    seen.push(a);
  }
  return seen;
}

const lines = (n: number, f: (i: number) => string = (i) => `line ${i}`) =>
  Array.from({ length: n }, (_, i) => `${f(i + 1)}\n`).join('');

describe.skipIf(!canSandbox)('the bash tools give the Node tools’ bytes', () => {
  beforeAll(async () => {
    [sh, node] = await Promise.all([LocalSandbox.create(), LocalSandbox.create()]);
    await installTools(sh);
    await installNodeTools(node);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([sh?.close(), node?.close()]);
  });

  it('open / goto / scroll over windows, usage and line-number errors', async () => {
    const seen = await same({ 'a.txt': lines(250), 'b.txt': lines(30), 'empty.txt': '' }, [
      'open a.txt',
      'open a.txt 60',
      'scroll_down',
      'scroll_down',
      'scroll_down',
      'scroll_up',
      'goto 1',
      'goto 250',
      'goto 251',
      'goto 0',
      'goto',
      'goto abc',
      'goto " 7 "',
      'goto 1e2',
      'goto 0x10',
      'goto 2.0',
      'goto 2.5',
      'goto -- -4',
      'open a.txt 99999999999999999999',
      'open a.txt 0b101',
      'open a.txt 0o17',
      "open a.txt $'\\u00a012\\u3000'",
      'open a.txt .5e3',
      'open a.txt 1e400',
      'open a.txt 0.99999999999999999999',
      'open a.txt ""',
      'open a.txt Infinity',
      'open b.txt 29',
      'scroll_up',
      'open empty.txt',
      'scroll_down',
      'goto 1',
      'open',
      'open missing.txt',
      'open .',
      'open ../w/./b.txt',
      'open /nonexistent/x',
    ]);
    expect(seen[1]?.output).toContain('(9 more lines above)\n10:line 10\n');
  });

  it('nothing open: every tool that needs a file says so', async () => {
    await same({ 'a.txt': 'x\n' }, [
      'goto 3',
      'scroll_down',
      'scroll_up',
      'replace a b',
      'edit 1:1 x',
      'search_file x',
      'search_file x nope.txt',
      'search_file',
      'replace',
      'replace --replace-all a',
      'edit',
      'create',
    ]);
  });

  it('odd paths: spaces, quotes, backslashes, unicode, control characters, symlinks', async () => {
    const names = ['sp ace.txt', `qu"o'te.txt`, 'back\\slash.txt', 'ünï😀.txt', 'pct%s%n.txt', 'tab\tnl\nx.txt'];
    const files: Record<string, string> = {};
    for (const n of names) files[`d i r/${n}`] = lines(3, (i) => `${n} ${i}`);
    await setup(files);
    for (const n of names) {
      for (const call of [
        `open ${q(`d i r/${n}`)} 2`,
        'goto 3',
        `search_file ${q(n)}`,
        `search_file line ${q(`d i r/${n}`)}`,
        `cd ${q('d i r')} && search_file 1 ${q(n)}; cd ..`,
        `edit 1:1 << 'EOF'\nnew ${n}\nEOF`,
        `replace ${q(n)} X`,
        `create ${q(`d i r/new ${n}`)}`,
        `create ${q(`d i r/new ${n}`)}`,
      ]) {
        const [a, b] = await both(call);
        expectSame(a, b, call);
      }
    }
    await same({ 'real.txt': lines(5) }, [
      'ln -s real.txt link.txt && mkdir -p sub && ln -s .. sub/up && open link.txt',
      'open sub/up/w/real.txt 2',
      'cd sub/up && open real.txt',
      'edit 2:2 two',
      'cd /',
      'search_file two',
      'open w/real.txt',
    ]);
  });

  it('file shapes: no final newline, empty, only newlines, CRLF, NUL bytes, very long lines', async () => {
    const long = `${'x%s\\n'.repeat(5000)}END`;
    await same(
      {
        'nofinal.txt': 'a\nb\nc',
        'empty.txt': '',
        'nl.txt': '\n\n\n',
        'crlf.txt': 'one\r\ntwo\r\nthree\r\n',
        'nul.txt': 'a\0b\nc\0\n',
        'long.txt': `short\n${long}\nafter`,
        'bom.txt': '\ufeffbom\n',
        // every marker byte the bash replace could use, so it takes its slow path
        'ctl.txt': `${Array.from({ length: 30 }, (_, i) => String.fromCharCode(i + 1)).join('')}\nfind me\n`,
      },
      [
        'open nofinal.txt',
        'edit 2:2 B',
        'open nofinal.txt',
        'search_file c nofinal.txt',
        'open empty.txt',
        'edit 1:0 << EOF\nfirst\nEOF',
        'edit 1:1 << EOF\nEOF',
        'edit 1:1 ""',
        'open nl.txt',
        'edit 2:3 << EOF\n\nEOF',
        'open crlf.txt',
        "search_file $'\\r'",
        'replace two TWO',
        'edit 3:3 three',
        'search_file o',
        'open nul.txt',
        'search_file b',
        "replace $'b' $'B&$\\x60'",
        "replace --replace-all c $'\\n'",
        'replace absent x',
        'replace a b',
        'edit 1:1 z',
        'open long.txt',
        'search_file END',
        'replace END fin',
        'edit 3:3 << EOF\nlast % \\ line\nEOF',
        'open bom.txt',
        'replace bom BOM',
        'open ctl.txt',
        "replace 'me' $'\\x01ME'",
        "replace --replace-all $'\\x05' '[5]'",
      ],
    );
  });

  it('edit: heredoc and argument text, insertion, deletion, range errors, --file anywhere', async () => {
    await same({ 'f.txt': lines(120), 'g.txt': 'g1\ng2\n', 'h.txt': '' }, [
      'edit 1:1 x',
      'open f.txt',
      "edit 3:4 << 'EOF'\n  indented %d \\t \\\\ $HOME `x`\n\ttab\nEOF",
      'edit 5:4 << EOF\ninserted\nEOF',
      'edit 121:121 x',
      'edit 122:121 appended',
      'edit 10:9',
      'edit 0:1 x',
      'edit 5:3 x',
      'edit 1:200 x',
      'edit 007:008 zero-padded',
      'edit 99999999999999999999:1 x',
      'edit 1:123456789012345678901234 x',
      'edit 1:1e1 x',
      'edit a:b x',
      'edit 1 x',
      'edit 60:70 << EOF\nEOF',
      'edit 60:60 << EOF\n\n\nEOF',
      'edit 2:2 several   words  "quoted" \'single\'',
      "edit 2:2 $'multi\\nline\\nargs'",
      'printf "piped\\ntext" | edit 3:3',
      'edit --file g.txt 1:1 G1',
      'edit 2:2 --file g.txt G2 tail',
      'edit 1:1 --file',
      'edit --file missing.txt 1:1 x',
      'edit --file h.txt 1:0 << EOF\nonly\nEOF',
      'edit --file h.txt 1:1 << EOF\nEOF',
      'edit --file h.txt 1:1 << EOF\nEOF',
      'edit 1:1 --file g.txt --file f.txt x',
      'scroll_down',
    ]);
  });

  it('replace: regex, sed and replacement-pattern characters, newlines, multiple matches', async () => {
    const text = [
      'a.b*c [x] ^start$ end',
      'path/to/file & more & more',
      'back\\slash \\1 \\n %s %d',
      "dollar $1 $& $$ $` $' $<n>",
      'dup dup dup',
      'multi',
      'line',
      'tail',
    ].join('\n');
    await setup({ 'r.txt': `${text}\n`, 'n.txt': 'x\n' });
    const calls = [
      'open r.txt',
      'replace "a.b*c" "A.B*C"',
      "replace '[x]' '[y]'",
      "replace '^start$' '$end^'",
      "replace 'path/to/file' 'p/t/f'",
      'replace "& more & more" "&&"',
      "replace 'back\\slash \\1' '\\2 \\\\ /'",
      "replace '%s %d' '%d%%%s'",
      'replace dup DUP',
      "replace --replace-all dup 'D$&P'",
      "replace 'dollar' '[$$][$&][$`][$'\\''][$1][$<n>][$]'",
      "replace $'multi\\nline' $'MULTI\\nLINE\\nX'",
      "replace $'tail\\n' $'TAIL\\n\\n'",
      'replace absent x',
      "replace $'a\\nb' x",
      "replace '' x",
      'replace --replace-all x',
      'replace x y z',
      'replace --replace-all --replace-all x',
      'open n.txt',
      "replace x ''",
      "replace '' x",
      "replace '' y",
      'create e.txt',
      "replace '' first",
      "replace --replace-all '' second",
    ];
    for (const call of calls) {
      const [a, b] = await both(call);
      expectSame(a, b, call);
    }
  });

  it('search_file and create: matches, terms with specials, directories, new folders', async () => {
    await same({ 's.txt': 'foo\nfoo bar\n-e x\n.*\n%s\\n\nFOO\n', 'sub/t.txt': 'foo\n' }, [
      'search_file foo s.txt',
      'search_file "-e" s.txt',
      "search_file '.*' s.txt",
      "search_file '%s\\n' s.txt",
      'search_file zzz s.txt',
      'search_file foo sub/t.txt',
      'cd sub && search_file foo ../s.txt',
      'cd ..',
      'search_file foo missing.txt',
      'search_file foo ""',
      'open s.txt',
      'search_file foo',
      "search_file $'foo\\nfoo'",
      'create new/deep/dir/n.txt',
      'create new/deep/dir/n.txt',
      'create s.txt',
      'create sub',
      'create sub/',
      'create ./sub/../x.txt',
      // where the Node scripts threw
      'create s.txt/inner.txt',
      'search_file foo sub',
      'edit --file sub 1:1 x',
      'open x.txt && rm x.txt && mkdir x.txt && goto 1',
      'scroll_down',
      'replace a b',
      'search_file a',
      'echo secret > locked.txt && chmod 000 locked.txt && open locked.txt',
      'search_file secret locked.txt',
      'edit --file locked.txt 1:1 x',
      'chmod 444 s.txt && edit --file s.txt 1:1 x',
    ]);
  });

  it('random paths (fast-check): path.resolve, path.relative and JSON.stringify as Node has them', async () => {
    const seg = fc.oneof(
      fc.string({
        unit: fc.constantFrom('a', ' ', '"', "'", '\\', '\n', '\t', '\u0001', '\u001f', 'é', '😀', '%', '$', '*'),
        minLength: 1,
        maxLength: 3,
      }),
      fc.constantFrom('.', '..', ''),
    );
    const path = fc.array(seg, { minLength: 1, maxLength: 4 }).map((p) => p.join('/'));
    await fc.assert(
      fc.asyncProperty(path, fc.constantFrom('', '/', 'd/'), async (p, prefix) => {
        await setup({ 'd/x.txt': 'x\n' });
        const target = `${prefix}${p}`;
        for (const c of [
          `create ${q(target)}`,
          `open ${q(target)}`,
          `edit 1:0 ${q(p)}`,
          `search_file ${q(p)}`,
          'cd d && search_file x ../d/x.txt',
        ]) {
          const [a, b] = await both(c);
          expectSame(a, b, c);
        }
      }),
      { numRuns: 10, seed: 7 },
    );
  });

  it('random files and random call sequences (fast-check)', async () => {
    const unit = fc.constantFrom('a', 'b', ' ', '%', '\\', '$', '&', '/', '.', '*', '"', "'", 'é', '😀', '\r', '\t');
    const word = fc.string({ unit, minLength: 1, maxLength: 3 });
    // files of 0 to 260 lines cycling a few random ones (windows, scrolling), small ones often
    const file = fc
      .record({
        base: fc.array(fc.string({ unit, maxLength: 6 }), { minLength: 1, maxLength: 6 }),
        n: fc.oneof(fc.integer({ min: 0, max: 4 }), fc.integer({ min: 0, max: 260 })),
        final: fc.boolean(),
      })
      .map((f) => {
        // a number on every third line, so that some searches match once
        const body = Array.from({ length: f.n }, (_, i) => `${f.base[i % f.base.length]}${i % 3 ? '' : i}`).join('\n');
        return { text: f.n && f.final ? `${body}\n` : body, n: f.n };
      });
    const lineArg = fc.oneof(
      fc.integer({ min: -2, max: 300 }).map(String),
      fc.constantFrom('', 'x', '1e2', ' 7', '0x1f', '2.0', '2.5'),
    );
    const textLines = fc.array(fc.string({ unit, maxLength: 5 }), { maxLength: 4 });
    const replacement = fc.string({
      unit: fc.constantFrom('x', '$', '$', '&', "'", '`', '\\', '\n', '$&', "$'", '$`', '$$'),
      maxLength: 4,
    });
    // the calls, knowing f.txt: searches cut from its text match, often exactly once
    const calls = (f: { text: string; n: number }) => {
      const cut = fc
        .tuple(fc.nat({ max: Math.max(0, f.text.length - 1) }), fc.integer({ min: 1, max: 12 }))
        .map(([at, len]) => f.text.slice(at, at + len) || 'a');
      const call = fc.oneof(
        fc
          .tuple(fc.constantFrom('f.txt', 'g.txt', 'none.txt'), fc.option(lineArg))
          .map(([file, l]) => `open ${file}${l === null ? '' : ` ${q(l)}`}`),
        lineArg.map((l) => `goto ${q(l)}`),
        fc.constantFrom('scroll_down', 'scroll_up'),
        {
          weight: 3,
          arbitrary: fc
            .tuple(
              fc.oneof(fc.integer({ min: 1, max: f.n + 1 }), fc.integer({ min: 0, max: 265 })),
              fc.oneof(fc.integer({ min: -1, max: 2 }), fc.integer({ min: -3, max: 4 })),
              textLines,
              fc.boolean(),
            )
            .map(([st, d, t, heredoc]) =>
              heredoc
                ? `edit ${st}:${st + d} << 'EOF'\n${t.map((x) => `${x}\n`).join('')}EOF`
                : `edit ${st}:${st + d}${t.length ? ` ${t.map(q).join(' ')}` : ''}`,
            ),
        },
        {
          weight: 3,
          arbitrary: fc
            .tuple(fc.constantFrom(false, false, true), fc.oneof(word, cut, cut), replacement)
            .map(([all, se, r]) => `replace ${all ? '--replace-all ' : ''}${q(se)} ${q(r)}`),
        },
        fc
          .tuple(fc.oneof(word, cut), fc.constantFrom('', ' f.txt', ' g.txt'))
          .map(([t, file]) => `search_file ${q(t)}${file}`),
        fc.constantFrom('create f.txt', 'create c/new.txt'),
      );
      // mostly on f.txt: open it first
      return fc.array(call, { minLength: 3, maxLength: 10 }).map((cs) => ['open f.txt', ...cs]);
    };
    const run = fc.tuple(file, file).chain(([f, g]) => fc.tuple(fc.constant(f), fc.constant(g), calls(f)));
    await fc.assert(
      fc.asyncProperty(run, async ([f, g, cs]) => {
        await setup({ 'f.txt': f.text, 'g.txt': g.text });
        for (const c of cs) {
          const [a, b] = await both(c);
          expectSame(a, b, c);
        }
      }),
      { numRuns: 30, seed: 20240611 },
    );
  }, 120_000);
});

describe.skipIf(!canSandbox)('the bash tools without node or python', () => {
  let sb: LocalSandbox;
  beforeAll(async () => {
    sb = await LocalSandbox.create({ files: { 'src/a.py': 'def f():\n    return 1\n' } });
    await installTools(sb);
    // a PATH of only bash and the basics the tools use, as links in the workspace
    const r = await sb.exec(
      'mkdir .swerl/minbin && for t in bash env cat head tail mkdir rm awk grep sed; do ln -s "$(command -v $t)" .swerl/minbin/$t || exit 1; done',
    );
    expect(r.exitCode, r.output).toBe(0);
  });
  afterAll(async () => {
    await sb?.close();
  });

  it('open, edit and search_file work where node and python are not found', async () => {
    // runCommand puts .swerl/bin first; the command then narrows the rest of PATH to the links
    const run = (c: string) => runCommand(sb, `export PATH=$PWD/.swerl/bin:$PWD/.swerl/minbin; ${c}`);
    expect((await run('command -v node python python3 || echo none found')).output).toBe('none found\n');
    expect((await run('node -e 1; echo $?')).output).toMatch(/node: command not found\n127\n$/);
    const open = await run('open src/a.py');
    expect(open).toMatchObject({
      exitCode: 0,
      output: '[File: src/a.py (2 lines total)]\n1:def f():\n2:    return 1\n',
    });
    const edit = await run("edit 2:2 << 'EOF'\n    return 2\nEOF");
    expect(edit.exitCode).toBe(0);
    expect(edit.output).toContain('File updated.');
    expect(await sb.readFile('src/a.py')).toBe('def f():\n    return 2\n');
    const search = await run('search_file return');
    expect(search.output).toBe('Found 1 matches for "return" in src/a.py:\nLine 2:    return 2\n');
    expect(await shellState(sb)).toMatchObject({ file: `${sb.workdir}/src/a.py` });
  });
});

describe.skipIf(!canSandbox)('speed', () => {
  it('tool calls per second, bash and node (100 × open)', async () => {
    const text = lines(300);
    const [a, b] = await Promise.all([LocalSandbox.create(), LocalSandbox.create()]);
    try {
      await installTools(a);
      await installNodeTools(b);
      const rate: Record<string, number> = {};
      for (const [name, sb] of [
        ['bash', a],
        ['node', b],
      ] as const) {
        await sb.writeFile('f.txt', text);
        const t = performance.now();
        const r = await runCommand(sb, 'for i in $(seq 100); do open f.txt $i >/dev/null || exit 1; done');
        expect(r.exitCode).toBe(0);
        rate[name] = 100 / ((performance.now() - t) / 1000);
      }
      console.log(`tool calls per second (100 × open): bash ${rate.bash?.toFixed(0)}, node ${rate.node?.toFixed(0)}`);
      expect(rate.bash).toBeGreaterThan(0);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  }, 60_000);
});

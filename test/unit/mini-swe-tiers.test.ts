/**
 * The mini-SWE bug sources and tiers: mutation operators give unique, compilable single-line
 * mutants; the test-derived reproductions are keyed exactly like the test ids the reporter
 * prints; tiers set the bug kinds and the number of modules; the expert solves mutant tasks.
 */
import { describe, expect, it } from 'vitest';
import { CATALOGUE } from '../../src/env/mini-swe/catalogue.js';
import { lineMutations, nameSlips, renameLocals, testScripts } from '../../src/env/mini-swe/mutate.js';
import {
  bugSplit,
  catalogueModules,
  evaluatePatch,
  expertDemos,
  expertPolicy,
  generateMiniSweTasks,
  inForeignFormat,
  isolationAvailable,
  LocalSandbox,
  parseAction,
  resolveConfig,
  runAllTests,
  runEpisode,
} from '../../src/index.js';

const canSandbox = isolationAvailable('bwrap') || isolationAvailable('unshare');
/** Every module, the wide catalogue's included: each must meet what generation assumes. */
const ALL_MODULES = catalogueModules('wide');

describe('mutation operators', () => {
  it('give single-line mutants that occur once and change the source', () => {
    let total = 0;
    for (const m of ALL_MODULES) {
      const ms = lineMutations(m.source);
      total += ms.length;
      expect(new Set(ms.map((x) => x.id)).size).toBe(ms.length);
      for (const x of ms) {
        expect(m.source.split(x.find).length, x.id).toBe(2);
        expect(x.replace).not.toBe(x.find);
        expect(x.find.split('\n').length).toBe(2); // one line
        // Mutants never touch comments or string contents.
        expect(x.find.trim().startsWith('/**') || x.find.trim().startsWith('//')).toBe(false);
      }
      const kinds = new Set(ms.map((x) => x.kind));
      expect(kinds.size, m.name).toBeGreaterThanOrEqual(3);
    }
    expect(total).toBeGreaterThan(300);
  });

  it('name slips add or drop a plural s on a use of a local name, never on a declaration, property or keyword', () => {
    let total = 0;
    for (const m of ALL_MODULES) {
      const words = new Set(m.source.match(/[A-Za-z_$][\w$]*/g));
      for (const x of nameSlips(m.source)) {
        total++;
        expect(m.source.split(x.find).length, x.id).toBe(2);
        const before: string[] = x.find.match(/[A-Za-z_$][\w$]*/g) ?? [];
        const after: string[] = x.replace.match(/[A-Za-z_$][\w$]*/g) ?? [];
        const changed = after.filter((w, i) => w !== before[i]);
        expect(changed.length, x.id).toBe(1);
        const slip = changed[0] as string;
        expect(words.has(slip), `${x.id}: ${slip} must be a new name`).toBe(false);
        const right = before[after.indexOf(slip)] as string;
        expect<string[]>([`${right}s`, right.slice(0, -1)]).toContain(slip);
        expect(x.replace).not.toMatch(new RegExp(`(const|let|var|function)\\s+${slip}\\b|\\.${slip}\\b`));
      }
    }
    expect(total).toBeGreaterThan(250);
    const src = 'export function f(items) {\n  const n = items.length;\n  return items.map((x) => x * n);\n}\n';
    const slips = nameSlips(src).map((x) => x.replace.trim());
    expect(slips).toEqual(expect.arrayContaining(['const n = item.length;', 'return item.map((x) => x * n);']));
    expect(slips.some((l) => l.includes('lengths') || l.includes('maps'))).toBe(false); // properties
  });

  it('operators keep string literals intact', () => {
    const src = "export function f(a) {\n  return a + ' - ' + (a < 3 ? 'x<y' : 'z');\n}\n";
    const ms = lineMutations(src);
    expect(ms.map((x) => x.replace.trim())).toEqual(
      expect.arrayContaining([
        "return a - ' - ' + (a < 3 ? 'x<y' : 'z');",
        "return a + ' - ' + (a <= 3 ? 'x<y' : 'z');",
      ]),
    );
    for (const x of ms) expect(x.replace).toContain("' - '");
  });
});

describe.skipIf(!canSandbox)('test-derived reproductions and tiers', () => {
  it('testScripts covers every test id the reporter prints, and each script passes on clean code', async () => {
    for (const m of ALL_MODULES) {
      const files = { 'package.json': '{"type":"module"}\n', [m.file]: m.source, [m.testFile]: m.tests };
      const results = await runAllTests(files);
      expect(
        Object.values(results).every((r) => r === 'pass'),
        m.name,
      ).toBe(true);
      const ids = Object.keys(results).map((id) => id.slice(m.testFile.length + 2));
      const scripts = testScripts(m.tests);
      expect([...scripts.keys()].sort(), m.name).toEqual(ids.sort());
      if (m !== CATALOGUE[CATALOGUE.length - 1] && m !== ALL_MODULES[ALL_MODULES.length - 1]) continue;
      // The scripts of one module, run as standalone programs on the clean code.
      const sb = await LocalSandbox.create({ files });
      try {
        for (const [name, script] of scripts) {
          await sb.writeFile('check.mjs', script);
          const r = await sb.exec('node check.mjs');
          expect(r.exitCode, `${name}: ${r.output}`).toBe(0);
        }
      } finally {
        await sb.close();
      }
    }
  }, 60_000);

  it('tier 0 is one module with single-token bugs; tier 3 has every module; the expert solves mutant tasks', async () => {
    const easy = await generateMiniSweTasks({ count: 3, seed: 4, difficulty: 0 });
    for (const t of easy) {
      expect(Object.keys(t.files ?? {}).filter((f) => f.startsWith('src/')).length).toBe(1);
      expect(t.instance_id).not.toMatch(/-l\d+-/); // hand-written bugs only
    }
    const hard = await generateMiniSweTasks({ count: 2, seed: 8, difficulty: 3 });
    for (const t of hard)
      expect(Object.keys(t.files ?? {}).filter((f) => f.startsWith('src/')).length).toBe(CATALOGUE.length);
    // Mutant tasks (ids carry the line) exist at tier 1, and the expert solves them.
    const mixed = await generateMiniSweTasks({ count: 6, seed: 11, difficulty: 1 });
    const mutants = mixed.filter((t) => /-l\d+-/.test(t.instance_id));
    expect(mutants.length).toBeGreaterThan(0);
    for (const t of mutants.slice(0, 2)) {
      expect(t.problem_statement).toContain('```js');
      const tr = await runEpisode({ task: t, policy: expertPolicy(t) });
      expect(tr.finishReason).toBe('submit');
      expect((await evaluatePatch(t, tr.patch)).resolved, t.instance_id).toBe(true);
    }
  }, 180_000);

  it('renamed locals keep every module correct; exports, properties and keys keep their names', async () => {
    let seed = 3;
    const rng = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    for (const m of ALL_MODULES) {
      const r = renameLocals(m.source, m.exports, rng);
      expect(r.names.size, m.name).toBeGreaterThanOrEqual(3);
      for (const e of m.exports) expect(r.names.has(e)).toBe(false);
      // Outside comments and strings, no old name is left.
      const code = r.source
        .split('\n')
        .filter((l) => !/^\s*(\/\*|\*|\/\/)/.test(l))
        .join('\n')
        .replace(/'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"/g, "''");
      for (const [from, to] of r.names) {
        expect(code).not.toMatch(new RegExp(`(?<![\\w$.])${from}(?![\\w$:])`));
        expect(code).toMatch(new RegExp(`\\b${to}\\b`));
      }
      expect(r.source.split('\n').length).toBe(m.source.split('\n').length);
      const files = { 'package.json': '{"type":"module"}\n', [m.file]: r.source, [m.testFile]: m.tests };
      const results = await runAllTests(files);
      expect(
        Object.values(results).every((x) => x === 'pass'),
        `${m.name}: ${JSON.stringify(results)}`,
      ).toBe(true);
    }
    const tasks = await generateMiniSweTasks({
      count: 3,
      seed: 9,
      difficulty: 0,
      kinds: ['misspelled-name'],
      renameLocals: true,
    });
    const names = tasks.map((t) => /ReferenceError: (\S+)/.exec(t.problem_statement)?.[1]);
    for (const t of tasks) {
      const tr = await runEpisode({ task: t, policy: expertPolicy(t, { style: 'direct' }) });
      expect((await evaluatePatch(t, tr.patch)).resolved, t.instance_id).toBe(true);
    }
    expect(names.every((n) => typeof n === 'string')).toBe(true);
  }, 180_000);

  it('misspelled-name tasks report the ReferenceError that names the slip; the direct expert fixes them in four turns', async () => {
    const tasks = await generateMiniSweTasks({ count: 4, seed: 3, difficulty: 0, kinds: ['misspelled-name'] });
    for (const t of tasks) {
      expect(t.instance_id).toMatch(/misspelled-name-l\d+-n\d+/);
      const slip = /ReferenceError: (\S+) is not defined/.exec(t.problem_statement)?.[1];
      expect(slip, t.problem_statement).toBeDefined();
      expect(t.patch).toContain(`-`);
      expect(t.problem_statement).not.toMatch(/^\s+at /m); // no stack: the line is not given away
    }
    const ids = new Set(tasks.map((t) => t.instance_id));
    const held = await generateMiniSweTasks({
      count: 3,
      seed: 3,
      difficulty: 0,
      kinds: ['misspelled-name'],
      split: 'test',
    });
    const bug = (id: string) => id.replace(/-\d+-\d+$/, '');
    for (const t of held) expect([...ids].map(bug)).not.toContain(bug(t.instance_id));
    for (const t of tasks.slice(0, 2)) {
      const tr = await runEpisode({ task: t, policy: expertPolicy(t, { style: 'direct' }) });
      expect(tr.finishReason).toBe('submit');
      expect(tr.turns.length).toBe(4);
      expect(tr.turns[1]?.command).toMatch(/^sed -i 's\/\\<\w+\\>\/\w+\/' src\/\w+\.js$/);
      expect((await evaluatePatch(t, tr.patch)).resolved, t.instance_id).toBe(true);
    }
    await expect(generateMiniSweTasks({ count: 1, seed: 1, kinds: ['typo'] })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    expect(() => expertPolicy(tasks[0] as never, { style: 'fast' as never })).toThrow(/style/);
  }, 180_000);

  it("catalogue 'wide': held-out slips span many modules, none a training site; the direct expert fixes them", async () => {
    const options = {
      difficulty: 0,
      kinds: ['misspelled-name'],
      renameLocals: true,
      issue: 'error' as const,
      catalogue: 'wide' as const,
    };
    const held = await generateMiniSweTasks({ count: 16, seed: 2, split: 'test', ...options });
    const site = (id: string) => /^mini-swe__([a-z]+)-(.+)-\d+-\d+$/.exec(id)?.slice(1, 3) as [string, string];
    const modules = new Set(held.map((t) => site(t.instance_id)[0]));
    const core = new Set(CATALOGUE.map((m) => m.name));
    // The core catalogue's held-out slips are 11 sites in 4 modules; 16 wide draws reach further.
    expect(modules.size).toBeGreaterThanOrEqual(6);
    expect([...modules].some((m) => !core.has(m))).toBe(true);
    for (const t of held) expect(bugSplit(...site(t.instance_id))).toBe('test');
    const train = await generateMiniSweTasks({ count: 4, seed: 2, ...options });
    for (const t of train) expect(bugSplit(...site(t.instance_id))).toBe('train');
    for (const t of held.filter((x) => !core.has(site(x.instance_id)[0])).slice(0, 2)) {
      const tr = await runEpisode({ task: t, policy: expertPolicy(t, { style: 'direct' }) });
      expect((await evaluatePatch(t, tr.patch)).resolved, t.instance_id).toBe(true);
    }
    await expect(generateMiniSweTasks({ count: 1, seed: 1, catalogue: 'all' as never })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  }, 180_000);

  it("catalogue 'merged': the fifteen modules' code in the core's four files; the test split spans >= 40 sites, none a training site, no file above 40%", async () => {
    const merged = catalogueModules('merged');
    expect(merged.map((m) => m.file)).toEqual(CATALOGUE.map((m) => m.file));
    const wide = catalogueModules('wide');
    for (const w of wide) {
      const home = merged.filter((m) => m.source.includes(w.source.trim()));
      expect(home.length, w.name).toBe(1); // each module's code, whole, in exactly one file
    }
    // Each core module keeps its own lines, so its slips keep their ids and splits.
    for (const core of CATALOGUE) {
      const m = merged.find((x) => x.name === core.name) as (typeof merged)[number];
      expect(m.source.startsWith(core.source.trimEnd())).toBe(true);
      const clean = await runAllTests({ [m.file]: m.source, [m.testFile]: m.tests });
      expect(Object.keys(clean).length, m.name).toBeGreaterThan(
        Object.keys(await runAllTests({ [core.file]: core.source, [core.testFile]: core.tests })).length,
      );
      expect(
        Object.values(clean).every((v) => v === 'pass'),
        m.name,
      ).toBe(true);
    }
    const perModule = new Map<string, number>();
    for (const m of merged)
      for (const x of nameSlips(m.source))
        if (bugSplit(m.name, x.id) === 'test') perModule.set(m.name, (perModule.get(m.name) ?? 0) + 1);
    const total = [...perModule.values()].reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThanOrEqual(40);
    expect(perModule.size).toBe(4);
    for (const [name, n] of perModule) expect(n / total, name).toBeLessThanOrEqual(0.4);
    const options = {
      difficulty: 0,
      kinds: ['misspelled-name'],
      renameLocals: true,
      issue: 'error' as const,
      catalogue: 'merged' as const,
      distinctSites: true,
    };
    const site = (id: string) => /^mini-swe__([a-z]+)-(.+)-\d+-\d+$/.exec(id)?.slice(1, 3) as [string, string];
    const held = await generateMiniSweTasks({ count: 12, seed: 4, split: 'test', ...options });
    expect(new Set(held.map((t) => t.instance_id.replace(/-\d+-\d+$/, ''))).size).toBe(12);
    // Sites past the core's own lines: the code that came from the wide modules.
    const coreLines = new Map(CATALOGUE.map((m) => [m.name, m.source.trimEnd().split('\n').length]));
    const line = (id: string) => Number(/-l(\d+)-/.exec(id)?.[1]);
    expect(held.some((t) => line(t.instance_id) > (coreLines.get(site(t.instance_id)[0]) ?? 0))).toBe(true);
    for (const t of held) expect(bugSplit(...site(t.instance_id))).toBe('test');
    for (const t of held.slice(0, 2)) {
      expect(Object.keys(t.files ?? {}).filter((f) => f.startsWith('src/'))).toHaveLength(1);
      const tr = await runEpisode({ task: t, policy: expertPolicy(t, { style: 'direct' }) });
      expect((await evaluatePatch(t, tr.patch)).resolved, t.instance_id).toBe(true);
    }
  }, 180_000);

  it('warmStart.foreignFormat: that share of the demonstrations, chosen by seed, write ```bash fences over the same observations; this scaffold refuses them', async () => {
    const tasks = await generateMiniSweTasks({ count: 2, seed: 3, difficulty: 0, kinds: ['misspelled-name'] });
    const demoTasks = [0, 1, 0, 1, 0].map((i) => tasks[i] as (typeof tasks)[number]);
    const config = (foreignFormat: number) =>
      resolveConfig({ warmStart: { style: 'direct', noise: 0, foreignFormat } }, 'smoke');
    const quiet = { log() {} };
    const plain = await expertDemos(demoTasks, config(0), quiet);
    const mixed = await expertDemos(demoTasks, config(0.4), quiet);
    const again = await expertDemos(demoTasks, config(0.4), quiet);
    const isForeign = (d: (typeof plain)[number]) =>
      d.messages.some((m) => m.role === 'assistant' && m.content.includes('```bash\n'));
    expect(plain.filter(isForeign)).toHaveLength(0);
    const foreign = mixed.map(isForeign);
    expect(foreign.filter(Boolean)).toHaveLength(2); // round(0.4 * 5)
    expect(again.map(isForeign)).toEqual(foreign); // by seed
    mixed.forEach((d, i) => {
      const p = plain[i] as (typeof plain)[number];
      expect(d.messages.map((m) => m.role)).toEqual(p.messages.map((m) => m.role));
      d.messages.forEach((m, j) => {
        const q = p.messages[j] as (typeof p.messages)[number];
        if (m.role !== 'assistant' || !foreign[i]) {
          expect(m.content).toBe(q.content);
          return;
        }
        expect(m.content).toBe(q.content.replaceAll('```command\n', '```bash\n'));
        expect(parseAction(m.content)).toEqual({ kind: 'error', error: 'cannot extract command' });
        expect(parseAction(q.content).kind).toBe('command');
      });
    });
    expect(inForeignFormat(plain[0] as (typeof plain)[number]).turns).toEqual(plain[0]?.turns);
    expect(() => resolveConfig({ warmStart: { foreignFormat: 1.5 } })).toThrow(/warmStart\.foreignFormat/);
  }, 180_000);

  it("issue 'error': the statement is the error alone, the same bugs and fixes; the direct expert solves it", async () => {
    const o = { count: 3, seed: 3, difficulty: 0, kinds: ['misspelled-name'] };
    const full = await generateMiniSweTasks(o);
    const terse = await generateMiniSweTasks({ ...o, issue: 'error' });
    expect(terse.map((t) => t.instance_id)).toEqual(full.map((t) => t.instance_id));
    terse.forEach((t, i) => {
      expect(t.patch).toBe(full[i]?.patch);
      expect(t.problem_statement).not.toContain('```js');
      const slip = /ReferenceError: (\S+) is not defined/.exec(t.problem_statement)?.[1];
      expect(slip).toBe(/ReferenceError: (\S+) is not defined/.exec(full[i]?.problem_statement ?? '')?.[1]);
      // Nothing else in the statement tells the tasks apart.
      expect(t.problem_statement.replace(slip as string, 'X')).toBe(
        terse[0]?.problem_statement.replace(/ReferenceError: \S+/, 'ReferenceError: X'),
      );
    });
    const t = terse[0] as (typeof terse)[0];
    const tr = await runEpisode({ task: t, policy: expertPolicy(t, { style: 'direct' }) });
    expect((await evaluatePatch(t, tr.patch)).resolved).toBe(true);
    expect(() => expertPolicy(t)).toThrow(/reproduction/);
    await expect(generateMiniSweTasks({ ...o, issue: 'terse' as never })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  }, 180_000);
});

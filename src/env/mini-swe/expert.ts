/**
 * The scripted expert: solves mini-SWE tasks through the scaffold's own tools, as a model should:
 * reproduce, search, open, edit, confirm, run the tests, clean up, submit. With `noise` > 0 it
 * also takes redundant steps (listings, opening the wrong file), makes a wrong edit that the
 * tests expose and reverts it, and now and then breaks the response format and recovers. Its
 * trajectories (the episode runner's messages) are the embedded model's warm-start data.
 */

import type { Policy } from '../../agent/episode.js';
import type { AgentMessage } from '../../agent/scaffold.js';
import { invalidArgument } from '../../errors.js';
import type { SweTask } from '../tasks.js';
import { CATALOGUE, type ModuleTemplate, type Mutation } from './catalogue.js';

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

/** The catalogue entry behind a mini-SWE task id. */
export function taskBug(task: SweTask): { module: ModuleTemplate; mutation: Mutation } {
  const m = /^mini-swe__([a-z]+)-(.+)-\d+-\d+$/.exec(task.instance_id);
  const module = CATALOGUE.find((c) => c.name === m?.[1]);
  const mutation = module?.mutations.find((x) => x.id === m?.[2]);
  if (!module || !mutation) throw invalidArgument('task', 'a task from generateMiniSweTasks', task.instance_id);
  return { module, mutation };
}

function say(reason: string, command: string): string {
  return `DISCUSSION\n${reason}\n\n\`\`\`command\n${command}\n\`\`\``;
}

/** The lines to replace in the buggy file and the fixed lines (common prefix and suffix removed). */
function lineFix(buggy: string, fixed: string): { start: number; end: number; lines: string[]; anchor: string } {
  const b = buggy.split('\n');
  const f = fixed.split('\n');
  let pre = 0;
  while (pre < b.length && pre < f.length && b[pre] === f[pre]) pre++;
  let suf = 0;
  while (suf < b.length - pre && suf < f.length - pre && b[b.length - 1 - suf] === f[f.length - 1 - suf]) suf++;
  const lines = f.slice(pre, f.length - suf);
  const start = pre + 1;
  const end = b.length - suf; // may be start - 1: an insertion
  const anchorLine = (b[Math.min(pre, b.length - 1)] ?? '').trim() || (b[pre - 1] ?? '').trim();
  return { start, end, lines, anchor: anchorLine.slice(0, 40) };
}

/** A policy that solves a generated mini-SWE task. noise in [0, 1] adds detours; seed makes them repeatable. */
export function expertPolicy(task: SweTask, o: { noise?: number; seed?: number } = {}): Policy {
  const noise = o.noise ?? 0;
  if (!(noise >= 0 && noise <= 1)) throw invalidArgument('noise', 'a number in [0, 1]', noise);
  const rng = mulberry32(o.seed ?? 1);
  const { module, mutation } = taskBug(task);
  const buggy = task.files?.[module.file];
  if (buggy === undefined) throw invalidArgument('task', `a task whose files include ${module.file}`, task.instance_id);
  const fix = lineFix(buggy, module.source);
  const repro = `import { ${module.exports.join(', ')} } from './${module.file}';\nconsole.log(JSON.stringify(${mutation.repro}));`;
  const others = Object.keys(task.files ?? {}).filter((f) => f.startsWith('src/') && f !== module.file);
  const fn = module.exports.find((e) => mutation.repro.includes(e)) ?? module.exports[0] ?? module.name;
  // The plan, in order; detours are spliced in by noise.
  const plan: string[] = [
    say(
      `I will reproduce the issue first with a small script.`,
      `cat > reproduce.mjs << 'EOF'\n${repro}\nEOF\nnode reproduce.mjs`,
    ),
    say(
      `The output confirms the bug. Let me find ${fn} in ${module.file}.`,
      `search_file "${fix.anchor.replace(/"/g, '\\"')}" ${module.file}`,
    ),
    say(`Let me open the file around that line.`, `open ${module.file} ${fix.start}`),
    say(
      `This line is wrong for the case in the issue; I will fix it.`,
      `edit ${fix.start}:${fix.end} << 'EOF'\n${fix.lines.join('\n')}\nEOF`,
    ),
    say(`Let me check the reproduction again.`, 'node reproduce.mjs'),
    say(`The output is now the expected ${mutation.expected}. Let me run the tests.`, 'node --test 2>&1 | tail -n 15'),
    say(`The tests pass. I will remove the reproduction script and submit.`, 'rm reproduce.mjs'),
    say(`Submitting the fix.`, 'submit'),
  ];
  const detours: string[][] = [];
  if (noise > 0) {
    const pick = () => rng() < noise;
    if (pick()) detours.push([say('Let me look at the repository first.', 'ls -R src test | head -50')]);
    if (pick()) detours.push([say('Let me read the README.', 'cat README.md')]);
    if (pick() && others.length > 0) detours.push([say(`Maybe the problem is in ${others[0]}.`, `open ${others[0]}`)]);
    if (pick()) detours.push(['I think I know what is wrong, let me fix the line directly.']); // no command block: a format error
    if (pick()) {
      // A wrong edit, exposed by the tests, then reverted.
      const wrong = fix.start > 1 ? fix.start - 1 : fix.start;
      detours.push([
        say(
          `Maybe the bug is in the line before; let me change it.`,
          `edit --file ${module.file} ${wrong}:${wrong} << 'EOF'\n// temporary change\nEOF`,
        ),
        say('Let me run the tests to check that change.', 'node --test 2>&1 | tail -n 5'),
        say('That broke other things. I will restore the file and look again.', `git checkout -- ${module.file}`),
      ]);
    }
  }
  // Detours go after the reproduction (index 1), in a seeded order.
  const steps = [plan[0] as string, ...detours.sort(() => rng() - 0.5).flat(), ...plan.slice(1)];
  let i = 0;
  return async (_messages: AgentMessage[]) => steps[Math.min(i++, steps.length - 1)] as string;
}

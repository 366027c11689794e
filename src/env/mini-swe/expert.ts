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
import { mulberry32 } from '../../random.js';
import type { SweTask } from '../tasks.js';
import { CATALOGUE, type ModuleTemplate, type Mutation } from './catalogue.js';

/** The hand-written catalogue entry behind a mini-SWE task id (tasks from mutants have none). */
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

/** The single-hunk change of a gold patch: its file and the fix as a line edit of the buggy file. */
export function patchFix(
  patch: string,
  buggy: string,
): { file: string; start: number; end: number; lines: string[]; anchor: string } {
  const file = /^\+\+\+ b\/(.+)$/m.exec(patch)?.[1];
  const hunk = /^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@/m.exec(patch);
  if (!file || !hunk) throw invalidArgument('patch', 'a unified diff with one hunk', patch.slice(0, 200));
  const body = patch
    .slice((hunk.index ?? 0) + hunk[0].length)
    .split('\n')
    .slice(1);
  let line = Number(hunk[1]);
  let start = -1;
  let end = -1;
  const added: string[] = [];
  for (const l of body) {
    if (l.startsWith('@@') || l.startsWith('diff --git')) break;
    if (l.startsWith('-')) {
      if (start < 0) start = line;
      end = line;
      line++;
    } else if (l.startsWith('+')) {
      if (start < 0) start = line;
      added.push(l.slice(1));
    } else if (l.startsWith(' ')) {
      if (start >= 0) break; // the change is one contiguous run
      line++;
    }
  }
  if (start < 0) throw invalidArgument('patch', 'a diff that changes something', patch.slice(0, 200));
  if (end < 0) end = start - 1; // a pure insertion before `start`
  const b = buggy.split('\n');
  const anchorLine = (b[start - 1] ?? '').trim() || (b[start - 2] ?? '').trim();
  return { file, start, end, lines: added, anchor: anchorLine.slice(0, 40) };
}

/** The first ```js block of an issue: its reproduction script. */
function reproScript(statement: string): string | null {
  return /```js\n([\s\S]*?)\n```/.exec(statement)?.[1] ?? null;
}

/** The name a misspelled-name task's error reports (`ReferenceError: <name> is not defined`). */
function undefinedName(statement: string): string | null {
  return /ReferenceError: ([\w$]+) is not defined/.exec(statement)?.[1] ?? null;
}

/**
 * The expert's direct plan: locate the line from what the issue names, fix it in one command, run
 * the tests, submit. A name slip is found by the name the error reports and fixed with `sed`
 * (GNU word bounds `\<name\>`, not `\bname\b`, whose `b` would join the name's first pre-token);
 * any other bug is found by its line's text and fixed with `edit`.
 */
function directPlan(task: SweTask, file: string, fix: ReturnType<typeof patchFix>, buggy: string): string[] {
  const slip = undefinedName(task.problem_statement);
  const line = buggy.split('\n')[fix.start - 1] ?? '';
  const name = slip !== null && fix.start === fix.end && fix.lines.length === 1 ? slip : null;
  const right = name === null ? null : (/[\w$]+/.exec((fix.lines[0] ?? '').slice(line.indexOf(name)))?.[0] ?? null);
  const fixStep =
    name !== null && right !== null && line.replace(name, right) === fix.lines[0]
      ? say(`\`${name}\` is not defined: it should be \`${right}\`.`, `sed -i 's/\\<${name}\\>/${right}/' ${file}`)
      : say(
          'This line is wrong for the case in the issue; I will fix it.',
          `edit --file ${file} ${fix.start}:${fix.end} << 'EOF'\n${fix.lines.join('\n')}\nEOF`,
        );
  const search = name ?? fix.anchor;
  return [
    say(
      name === null
        ? `Let me find where \`${search}\` is in the source.`
        : `The error says \`${name}\` is not defined. Let me find where it is used.`,
      `grep -rn "${search.replace(/["\\$`]/g, '\\$&')}" src`,
    ),
    fixStep,
    say('Let me run the tests.', "node --test 2>&1 | grep -E '^# (pass|fail)'"),
    say('The tests pass. Submitting the fix.', 'submit'),
  ];
}

/** Options of {@link expertPolicy}. */
export interface ExpertOptions {
  /** In [0, 1]: how often each detour (redundant step, wrong edit, format error) is taken. */
  noise?: number;
  /** Makes the detours repeatable. */
  seed?: number;
  /**
   * 'thorough' (default): reproduce with a script, search, open, edit, re-run, test, clean up,
   * submit. 'direct': find the line from what the issue names, fix it, test, submit (four turns;
   * the shorter trajectories a small model trained from scratch learns from).
   */
  style?: 'thorough' | 'direct';
}

/** A policy that solves a generated mini-SWE task. noise in [0, 1] adds detours; seed makes them repeatable. */
export function expertPolicy(task: SweTask, o: ExpertOptions = {}): Policy {
  const noise = o.noise ?? 0;
  if (!(noise >= 0 && noise <= 1)) throw invalidArgument('noise', 'a number in [0, 1]', noise);
  const style = o.style ?? 'thorough';
  if (style !== 'thorough' && style !== 'direct') throw invalidArgument('style', "'thorough' or 'direct'", style);
  const rng = mulberry32(o.seed ?? 1);
  if (typeof task?.patch !== 'string' || !task.files) throw invalidArgument('task', 'a mini-SWE task', task);
  const file = /^\+\+\+ b\/(.+)$/m.exec(task.patch)?.[1] ?? '';
  const buggy = task.files[file];
  if (buggy === undefined) throw invalidArgument('task', `a task whose files include ${file}`, task.instance_id);
  const fix = patchFix(task.patch, buggy);
  const others = Object.keys(task.files).filter((f) => f.startsWith('src/') && f !== file);
  if (style === 'direct') return directPolicy(directPlan(task, file, fix, buggy), { file, fix, others, noise, rng });
  const repro = reproScript(task.problem_statement);
  if (repro === null) throw invalidArgument('task', 'a task whose issue has a ```js reproduction', task.instance_id);
  const module = { file };
  // The plan, in order; detours are spliced in by noise.
  const plan: string[] = [
    say(
      `I will reproduce the issue first with a small script.`,
      `cat > reproduce.mjs << 'EOF'\n${repro}\nEOF\nnode reproduce.mjs`,
    ),
    say(
      `The output confirms the bug. Let me find the code involved in ${module.file}.`,
      `search_file "${fix.anchor.replace(/"/g, '\\"')}" ${module.file}`,
    ),
    say(`Let me open the file around that line.`, `open ${module.file} ${fix.start}`),
    say(
      `This line is wrong for the case in the issue; I will fix it.`,
      `edit ${fix.start}:${fix.end} << 'EOF'\n${fix.lines.join('\n')}\nEOF`,
    ),
    say(`Let me check the reproduction again.`, 'node reproduce.mjs'),
    say(`The reproduction now gives the expected result. Let me run the tests.`, 'node --test 2>&1 | tail -n 15'),
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

/** The direct plan with noise: a listing or a look at the file first, a format error, a wrong fix undone. */
function directPolicy(
  plan: string[],
  o: { file: string; fix: ReturnType<typeof patchFix>; others: string[]; noise: number; rng: () => number },
): Policy {
  const detours: string[][] = [];
  const pick = () => o.noise > 0 && o.rng() < o.noise;
  if (pick()) detours.push([say('Let me look at the repository first.', 'ls src test')]);
  if (pick()) detours.push([say('Let me look at the file.', `open ${o.file} ${o.fix.start}`)]);
  if (pick()) detours.push(['I know what is wrong, let me fix the line directly.']); // no command block
  const steps = [plan[0] as string, ...detours.sort(() => o.rng() - 0.5).flat(), ...plan.slice(1)];
  let i = 0;
  return async (_messages: AgentMessage[]) => steps[Math.min(i++, steps.length - 1)] as string;
}

/**
 * The paper's agent scaffold (arXiv 2508.03501): a system prompt, the issue prompt in
 * the paper's layout, one reasoning part plus exactly one fenced ```command block per turn (or a
 * Qwen/Hermes <tool_call> JSON), the two format errors, observations ending in the shell prompt,
 * observation truncation, and the tools installed as real commands in the sandbox (bash scripts,
 * tools.ts: SWE-bench images have no node).
 */
import type { Sandbox } from '../env/sandbox-api.js';
import { shellQuote } from '../env/shell-quote.js';
import type { SweTask } from '../env/tasks.js';
import { invalidArgument } from '../errors.js';
import { toolFiles, WINDOW } from './tools.js';

/** A tool call's argument (any JSON value), quoted for the shell. */
const q = (value: unknown): string => shellQuote(String(value));

/** One chat message of a trajectory. */
export interface AgentMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** The action formats the parser understands. */
export type ActionFormat = 'command' | 'tool_call';

export const SYSTEM_PROMPT = `You are an autonomous programmer working in a command-line interface with a special file editor, solving an issue in a software repository.

You can run any non-interactive shell command (ls, cat, grep, sed, node, git, ...). Interactive programs such as vim or REPLs are not available. You also have these commands:
- open <file> [<line_number>]: opens the file and shows ${WINDOW} lines around the line
- goto <line_number>: moves the window of the open file to the line
- scroll_down / scroll_up: moves the window by ${WINDOW} lines
- create <filename>: creates and opens a new file
- edit [--file PATH] <start>:<end> << 'EOF' (the replacement lines, then a line EOF): replaces lines <start> to <end> (inclusive) of the open file; indentation must be exact
- replace [--replace-all] <search> <replace>: replaces text in the open file
- search_file <search_term> [<file>]: finds lines containing the term
- submit: submits your changes (the git diff of the repository) and ends the session

RESPONSE FORMAT: every response contains A SINGLE reasoning part followed by A SINGLE command in a fenced block:
DISCUSSION
<your reasoning>

\`\`\`command
<one command>
\`\`\`

Two command blocks, or none, are an error and nothing is run. Everything you write stays available to you in later turns.
Do not modify existing tests or add new ones: the evaluation runs its own tests. Remove temporary scripts before you submit.`;

/**
 * The scaffold's prompts: 'paper' (SYSTEM_PROMPT and issuePrompt, the paper's layout) or 'compact'
 * (COMPACT_SYSTEM_PROMPT and the issue alone): the same tools, action format and observations in
 * about a quarter of the tokens, for small models trained from scratch, whose every training step
 * re-reads the prompt and whose attention must reach the issue from the response.
 */
export type PromptStyle = 'paper' | 'compact';

/** The compact system prompt: the tools and the response format, one line each. */
export const COMPACT_SYSTEM_PROMPT = `Fix the issue in the repository with shell commands (ls, cat, grep, sed, node, git) and: open <file> [<line>]; edit [--file PATH] <start>:<end> << 'EOF' (lines, then EOF); search_file <term> [<file>]; submit.
Each response: DISCUSSION, your reasoning, then exactly one command in a \`\`\`command block.`;

/**
 * The one-shot demonstration of the 'paper' prompt (the paper's App. F.2 appends one, a worked
 * bug fix, to the system prompt when it samples RFT's data from the base model): an off-by-one
 * fix in the scaffold's own format, from the issue through a search, the file, the edit and a
 * test run to submit, each response one DISCUSSION and one ```command block, each observation as
 * the tools print it, ending in the shell prompt.
 */
export const ONE_SHOT_DEMONSTRATION = `Here is a demonstration of how to solve an issue, one response per turn. It is an example only: the repository you work on is a different one.

--- DEMONSTRATION ---
ISSUE: range(1, 4) returns [1, 2, 3, 4]; the end should be excluded: [1, 2, 3].

DISCUSSION
I search the repository for the definition of range.

\`\`\`command
grep -rn "function range" src
\`\`\`

src/range.js:1:export function range(start, end) {
(Current directory: /project, current file: none) bash-$

DISCUSSION
The function is at line 1 of src/range.js. I open the file there.

\`\`\`command
open src/range.js 1
\`\`\`

[File: src/range.js (5 lines total)]
1:export function range(start, end) {
2:  const out = [];
3:  for (let i = start; i <= end; i++) out.push(i);
4:  return out;
5:}
(Current directory: /project, current file: src/range.js) bash-$

DISCUSSION
Line 3 loops while i <= end, so the end is included. The loop must stop before end.

\`\`\`command
edit 3:3 << 'EOF'
  for (let i = start; i < end; i++) out.push(i);
EOF
\`\`\`

File updated. Please review the changes and make sure they are correct (correct indentation, no duplicate lines, etc). Edit the file again if necessary.
(Current directory: /project, current file: src/range.js) bash-$

DISCUSSION
I run the tests to confirm the fix.

\`\`\`command
node --test
\`\`\`

# pass 4
# fail 0
(Current directory: /project, current file: src/range.js) bash-$

DISCUSSION
The tests pass. I submit the change.

\`\`\`command
submit
\`\`\`
--- END OF DEMONSTRATION ---`;

/** The compact prompt's one-shot demonstration: the same fix, in its shorter layout. */
export const COMPACT_ONE_SHOT_DEMONSTRATION = `Example (another repository):
range(1, 4) returns [1, 2, 3, 4], expected [1, 2, 3].
DISCUSSION
Find range.
\`\`\`command
grep -rn "function range" src
\`\`\`
src/range.js:1:export function range(start, end) {
DISCUSSION
Open it.
\`\`\`command
open src/range.js 1
\`\`\`
3:  for (let i = start; i <= end; i++) out.push(i);
DISCUSSION
<= includes end: use <.
\`\`\`command
edit 3:3 << 'EOF'
  for (let i = start; i < end; i++) out.push(i);
EOF
\`\`\`
DISCUSSION
Test, then submit.
\`\`\`command
node --test
\`\`\`
# fail 0
DISCUSSION
Done.
\`\`\`command
submit
\`\`\``;

/** The one-shot demonstration of a prompt style (appended to its system prompt with `oneShot`). */
export function oneShotDemonstration(style: PromptStyle): string {
  return style === 'compact' ? COMPACT_ONE_SHOT_DEMONSTRATION : ONE_SHOT_DEMONSTRATION;
}

/**
 * The system prompt of a prompt style; with `oneShot`, the style's one-shot demonstration
 * follows it after a blank line.
 */
export function systemPrompt(style: PromptStyle, o: { oneShot?: boolean } = {}): string {
  const base = style === 'compact' ? COMPACT_SYSTEM_PROMPT : SYSTEM_PROMPT;
  return o.oneShot ? `${base}\n\n${oneShotDemonstration(style)}` : base;
}

/** The conversation's first two messages for a prompt style (`oneShot`: see systemPrompt). */
export function scaffoldPrompts(
  style: PromptStyle,
  task: SweTask,
  cwd: string,
  o: { oneShot?: boolean } = {},
): [AgentMessage, AgentMessage] {
  const issue = style === 'compact' ? `${task.problem_statement}\n\n${shellPrompt(cwd, null)}` : issuePrompt(task, cwd);
  return [
    { role: 'system', content: systemPrompt(style, o) },
    { role: 'user', content: issue },
  ];
}

/** Checks a prompt style name. */
export function checkPromptStyle(s: unknown): PromptStyle {
  if (s !== 'paper' && s !== 'compact') throw invalidArgument('prompt', "'paper' or 'compact'", s);
  return s;
}

/** The first user message: the issue in the paper's layout. */
export function issuePrompt(task: SweTask, cwd: string): string {
  return `# ISSUE DESCRIPTION
${task.problem_statement}

# ADDITIONAL ADVICE
- If you break something, git checkout -- <file>, git stash or git reset --hard restore the original code.
- submit uses git diff: it submits your current changes to the repository.

# CHECKLIST
1. Reproduce the issue with a short script.
2. Find and fix the cause in the source code.
3. Confirm the fix with the reproduction script, and think about edge cases.
4. Run the existing tests.
5. Remove your reproduction script and submit.

Repository has been uploaded and your shell is currently at the repository root. Time to solve the issue!
${shellPrompt(cwd, null)}`;
}

/** The shell prompt that ends every observation. */
export function shellPrompt(cwd: string, file: string | null): string {
  return `(Current directory: ${cwd}, current file: ${file ?? 'none'}) bash-$`;
}

/** A parsed action: a command to run, or one of the two format errors. */
export type ParsedAction =
  | { kind: 'command'; command: string }
  | { kind: 'error'; error: 'cannot extract command' | 'multiple commands extracted' };

const COMMAND_BLOCK = /```command[^\S\n]*\n([\s\S]*?)\n?```/g;
const TOOL_CALL = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g;

/** Extracts the single command of an assistant turn. */
export function parseAction(text: string, format: ActionFormat = 'command'): ParsedAction {
  if (format === 'command') {
    const blocks = [...text.matchAll(COMMAND_BLOCK)].map((m) => (m[1] ?? '').trim());
    if (blocks.length === 0 || blocks[0] === '') return { kind: 'error', error: 'cannot extract command' };
    if (blocks.length > 1) return { kind: 'error', error: 'multiple commands extracted' };
    return { kind: 'command', command: blocks[0] as string };
  }
  const calls = [...text.matchAll(TOOL_CALL)].map((m) => m[1] ?? '');
  if (calls.length === 0) return { kind: 'error', error: 'cannot extract command' };
  if (calls.length > 1) return { kind: 'error', error: 'multiple commands extracted' };
  let call: { name?: unknown; arguments?: unknown };
  try {
    call = JSON.parse(calls[0] as string);
  } catch {
    return { kind: 'error', error: 'cannot extract command' };
  }
  const command = toolCallCommand(call);
  return command === null ? { kind: 'error', error: 'cannot extract command' } : { kind: 'command', command };
}

/** The shell command a <tool_call> stands for (null when it names no known tool). */
export function toolCallCommand(call: { name?: unknown; arguments?: unknown }): string | null {
  const a = (typeof call.arguments === 'string' ? safeJson(call.arguments) : call.arguments) as Record<
    string,
    unknown
  > | null;
  const args = a ?? {};
  switch (call.name) {
    case 'bash':
      return typeof args.command === 'string' ? args.command : null;
    case 'open':
      return `open ${q(args.path ?? args.file)}${args.line_number !== undefined ? ` ${Number(args.line_number)}` : ''}`;
    case 'goto':
      return `goto ${Number(args.line_number)}`;
    case 'scroll_down':
    case 'scroll_up':
    case 'submit':
      return call.name;
    case 'create':
      return `create ${q(args.path ?? args.filename)}`;
    case 'edit': {
      const file = args.path ?? args.file;
      const text = String(args.replacement ?? args.text ?? '');
      return `edit ${file !== undefined ? `--file ${q(file)} ` : ''}${Number(args.start)}:${Number(args.end)} << 'SWERL_EOF'\n${text}\nSWERL_EOF`;
    }
    case 'replace':
      return `replace ${args.replace_all ? '--replace-all ' : ''}${q(args.search)} ${q(args.replace)}`;
    case 'search_file':
      return `search_file ${q(args.search_term ?? args.term)}${(args.path ?? args.file) ? ` ${q(args.path ?? args.file)}` : ''}`;
    default:
      return null;
  }
}

function safeJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return null;
  }
}

/** The format-error observation (the paper does not give the exact text). */
export function formatErrorMessage(error: 'cannot extract command' | 'multiple commands extracted'): string {
  return error === 'cannot extract command'
    ? 'Error: cannot extract command. Put exactly one command in a fenced block opened with ```command and closed with ```. Nothing was run.'
    : 'Error: multiple commands extracted. A response must contain exactly one ```command block. Nothing was run.';
}

/** Keeps the head and tail of a long observation. */
export function truncateObservation(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const head = Math.floor(maxChars * 0.6);
  const tail = maxChars - head;
  return `${text.slice(0, head)}\n[... ${text.length - head - tail} characters omitted ...]\n${text.slice(text.length - tail)}`;
}

/**
 * Prepares a sandbox for the scaffold: the tools (bash scripts needing no node or python, see
 * tools.ts) in `.swerl/bin`, and the working directory the commands start in.
 */
export async function installTools(sb: Sandbox): Promise<void> {
  for (const [path, src] of Object.entries(toolFiles())) await sb.writeFile(path, src, { executable: true });
  await sb.writeFile('.swerl/cwd', sb.workdir);
}

/** Runs one agent command with the tools on PATH and the working directory kept across turns. */
export async function runCommand(
  sb: Sandbox,
  command: string,
  timeoutMs?: number,
): Promise<{ output: string; exitCode: number; timedOut: boolean }> {
  const ws = sb.workdir; // paths as the command sees them
  // The directory is read with bash's own `read`, not `$(cat ...)`: a subshell and a cat are two
  // more processes per command, and process creation is most of a command's cost on a VM.
  // (`read -d ''` takes the whole file; the one newline pwd wrote is stripped, as $(...) did.)
  const wrapped = `export SWERL_WS=${q(ws)} PATH=${q(`${ws}/.swerl/bin`)}:$PATH; IFS= read -r -d '' __swerl_cwd 2>/dev/null < ${q(`${ws}/.swerl/cwd`)}; cd "\${__swerl_cwd%$'\\n'}" 2>/dev/null || cd ${q(ws)}; unset __swerl_cwd
${command}
__swerl_rc=$?; pwd > ${q(`${ws}/.swerl/cwd`)} 2>/dev/null; exit $__swerl_rc`;
  const r = await sb.exec(wrapped, timeoutMs === undefined ? {} : { timeoutMs });
  let output = r.output;
  if (r.timedOut) output += '\n[the command timed out and was killed]';
  return { output, exitCode: r.exitCode, timedOut: r.timedOut };
}

/** The current directory and open file (the tools' `.swerl/state.json`), for the prompt. */
export async function shellState(sb: Sandbox): Promise<{ cwd: string; file: string | null }> {
  let cwd = sb.workdir;
  try {
    cwd = (await sb.readFile('.swerl/cwd')).trim() || sb.workdir;
  } catch {
    // keep the root
  }
  let file: string | null = null;
  try {
    const s = JSON.parse(await sb.readFile('.swerl/state.json')) as { file?: string | null };
    file = s.file ?? null;
  } catch {
    // nothing open
  }
  return { cwd, file };
}

/** Checks an action format name. */
export function checkFormat(f: unknown): ActionFormat {
  if (f !== 'command' && f !== 'tool_call') throw invalidArgument('format', "'command' or 'tool_call'", f);
  return f;
}

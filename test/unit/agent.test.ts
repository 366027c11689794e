/**
 * The paper's scaffold: action parsing (one ```command block; the two format errors; Hermes
 * <tool_call> JSON), the SWE-agent tools as real commands in the sandbox, the shell prompt and a
 * working directory that persists across turns, episode limits, the turn penalty, and the
 * scripted expert resolving generated tasks.
 */
import { describe, expect, it } from 'vitest';
import {
  COMPACT_SYSTEM_PROMPT,
  evaluatePatch,
  expertPolicy,
  generateMiniSweTasks,
  isolationAvailable,
  parseAction,
  runEpisode,
  type SweTask,
  SYSTEM_PROMPT,
  turnPenalty,
} from '../../src/index.js';

const canSandbox = isolationAvailable('bwrap') || isolationAvailable('unshare');

describe('parseAction', () => {
  it('takes exactly one ```command block', () => {
    expect(parseAction('DISCUSSION\nlook\n\n```command\nls -la\n```')).toEqual({ kind: 'command', command: 'ls -la' });
    expect(parseAction('no block here')).toEqual({ kind: 'error', error: 'cannot extract command' });
    expect(parseAction('```bash\nls\n```')).toEqual({ kind: 'error', error: 'cannot extract command' });
    expect(parseAction('```command\n\n```')).toEqual({ kind: 'error', error: 'cannot extract command' });
    expect(parseAction('```command\nls\n```\nthen\n```command\npwd\n```')).toEqual({
      kind: 'error',
      error: 'multiple commands extracted',
    });
    const heredoc = "```command\nedit 3:4 << 'EOF'\n  return x;\nEOF\n```";
    expect(parseAction(heredoc)).toEqual({ kind: 'command', command: "edit 3:4 << 'EOF'\n  return x;\nEOF" });
  });

  it('maps Hermes <tool_call> JSON onto the same commands', () => {
    const call = (o: unknown) => `thinking\n<tool_call>\n${JSON.stringify(o)}\n</tool_call>`;
    expect(parseAction(call({ name: 'bash', arguments: { command: 'node --test' } }), 'tool_call')).toEqual({
      kind: 'command',
      command: 'node --test',
    });
    expect(parseAction(call({ name: 'open', arguments: { path: 'src/a.js', line_number: 7 } }), 'tool_call')).toEqual({
      kind: 'command',
      command: "open 'src/a.js' 7",
    });
    expect(parseAction(call({ name: 'submit', arguments: {} }), 'tool_call')).toEqual({
      kind: 'command',
      command: 'submit',
    });
    expect(
      parseAction(call({ name: 'edit', arguments: { start: 2, end: 2, replacement: 'x' } }), 'tool_call'),
    ).toMatchObject({ kind: 'command', command: expect.stringMatching(/^edit 2:2 << 'SWERL_EOF'\nx\nSWERL_EOF$/) });
    expect(parseAction('<tool_call>{not json</tool_call>', 'tool_call')).toEqual({
      kind: 'error',
      error: 'cannot extract command',
    });
    expect(parseAction(call({ name: 'rm_rf', arguments: {} }), 'tool_call')).toEqual({
      kind: 'error',
      error: 'cannot extract command',
    });
    expect(
      parseAction(
        call({ name: 'bash', arguments: { command: 'a' } }) + call({ name: 'bash', arguments: { command: 'b' } }),
        'tool_call',
      ),
    ).toEqual({ kind: 'error', error: 'multiple commands extracted' });
  });
});

describe('turnPenalty (paper section 2.4)', () => {
  it('is 0 below 10 turns and reaches -1 at the maximum', () => {
    expect(turnPenalty(9, 40)).toBe(0);
    expect(turnPenalty(10, 40)).toBe(0);
    expect(turnPenalty(20, 40)).toBeCloseTo(-1 / 3, 12);
    expect(turnPenalty(40, 40)).toBe(-1);
    expect(turnPenalty(40, 80)).toBeCloseTo(-30 / 70, 12);
  });
});

/** A task whose repository is given directly, for tool tests. */
const toyTask: SweTask = {
  instance_id: 'toy-1',
  repo: 'toy',
  problem_statement: 'toy',
  patch: '',
  test_patch: '',
  FAIL_TO_PASS: ['x'],
  PASS_TO_PASS: [],
  files: {
    'src/a.js': `${Array.from({ length: 150 }, (_, i) => `const v${i + 1} = ${i + 1};`).join('\n')}\n`,
    'README.md': 'toy\n',
  },
};

/** A policy that plays a fixed list of commands, then submits. */
function scripted(commands: string[]) {
  let i = 0;
  return async () =>
    i < commands.length ? `DISCUSSION\nstep\n\n\`\`\`command\n${commands[i++]}\n\`\`\`` : '```command\nsubmit\n```';
}

describe.skipIf(!canSandbox)('the tools, in an episode', () => {
  it('open / goto / scroll / search_file / edit / replace / create behave like SWE-agent', async () => {
    const tr = await runEpisode({
      task: toyTask,
      policy: scripted([
        'open src/a.js 60',
        'scroll_up',
        'goto 150',
        'search_file "v42 ="',
        "edit 42:42 << 'EOF'\nconst v42 = 4200;\nEOF",
        'replace "v43 = 43" "v43 = 4300"',
        'replace "const" "let"',
        'create notes/todo.txt',
        'cd src && pwd',
        'pwd',
        'open missing.js',
      ]),
    });
    const obs = tr.turns.map((t) => t.observation);
    expect(obs[0]).toMatch(/\[File: src\/a\.js \(150 lines total\)\]\n\(9 more lines above\)\n10:const v10 = 10;/);
    expect(obs[0]).toMatch(/\n109:const v109 = 109;\n\(41 more lines below\)/);
    expect(obs[0]).toMatch(/current file: .*src\/a\.js\) bash-\$$/);
    expect(obs[1]).toMatch(/\n1:const v1 = 1;/);
    expect(obs[2]).toMatch(/\n150:const v150 = 150;/);
    expect(obs[3]).toContain('Line 42:const v42 = 42;');
    expect(obs[4]).toContain('File updated.');
    expect(obs[4]).toContain('42:const v42 = 4200;');
    expect(obs[5]).toContain('43:const v43 = 4300;');
    expect(obs[6]).toContain('matches; use --replace-all');
    expect(obs[7]).toContain('[File: notes/todo.txt (0 lines total)]');
    expect(obs[8]).toMatch(/\/src\n\(Current directory: .*\/src, /); // cd persists...
    expect(obs[9]).toMatch(/\/src\n/); // ...into the next command
    expect(obs[10]).toContain('Error: File missing.js not found');
    expect(tr.finishReason).toBe('submit');
    expect(tr.patch).toContain('+const v42 = 4200;');
    expect(tr.patch).toContain('diff --git a/notes/todo.txt b/notes/todo.txt');
    expect(tr.patch).not.toContain('.swerl');
  });

  it('format errors run nothing and are flagged; max turns and max context end the episode', async () => {
    let n = 0;
    const chatty = async () =>
      n++ % 2 === 0 ? 'I will just think.' : '```command\ntouch f$RANDOM\n```\n```command\nls\n```';
    const tr = await runEpisode({ task: toyTask, policy: chatty, maxTurns: 4 });
    expect(tr.finishReason).toBe('max_turns');
    expect(tr.turns.map((t) => t.formatError)).toEqual([
      'cannot extract command',
      'multiple commands extracted',
      'cannot extract command',
      'multiple commands extracted',
    ]);
    expect(tr.turns[0]?.observation).toContain('Nothing was run');
    expect(tr.patch).toBe('');
    const long = await runEpisode({
      task: toyTask,
      policy: scripted(['cat src/a.js', 'cat src/a.js']),
      maxContext: 6000,
    });
    expect(long.finishReason).toBe('max_context');
  });

  it('the compact prompt: the same loop and tools after a short system prompt and the issue alone', async () => {
    const paper = await runEpisode({ task: toyTask, policy: scripted(['cat src/a.js']), maxTurns: 1 });
    const compact = await runEpisode({
      task: toyTask,
      policy: scripted(['cat src/a.js']),
      maxTurns: 1,
      prompt: 'compact',
    });
    expect(compact.messages[0]).toEqual({ role: 'system', content: COMPACT_SYSTEM_PROMPT });
    expect(compact.messages[1]?.content.startsWith(toyTask.problem_statement)).toBe(true);
    expect(compact.messages[1]?.content).toMatch(/\(Current directory: .*, current file: none\) bash-\$$/);
    expect(compact.messages[1]?.content).not.toContain('# CHECKLIST');
    expect(paper.messages[0]?.content).toBe(SYSTEM_PROMPT);
    expect(compact.messages[0]?.content.length).toBeLessThan((paper.messages[0]?.content.length ?? 0) / 3);
    expect(compact.turns[0]?.observation).toBe(paper.turns[0]?.observation); // the tools do not change
    await expect(runEpisode({ task: toyTask, policy: scripted([]), prompt: 'short' as never })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });
});

describe.skipIf(!canSandbox)('the scripted expert', () => {
  it('with noise 0 resolves every generated task; with noise it detours, recovers and still resolves', async () => {
    const tasks = await generateMiniSweTasks({ count: 5, seed: 21, difficulty: 1 });
    let resolved = 0;
    for (const t of tasks) {
      const tr = await runEpisode({ task: t, policy: expertPolicy(t) });
      expect(tr.finishReason).toBe('submit');
      if ((await evaluatePatch(t, tr.patch)).resolved) resolved++;
    }
    expect(resolved / tasks.length).toBeGreaterThanOrEqual(0.95);
    const t = tasks[0] as SweTask;
    const noisy = await runEpisode({ task: t, policy: expertPolicy(t, { noise: 1, seed: 5 }) });
    expect(noisy.turns.length).toBeGreaterThan(8);
    expect(
      noisy.turns.some((x) => x.formatError !== null),
      JSON.stringify(noisy.turns.map((x) => [x.command?.slice(0, 30), x.formatError])),
    ).toBe(true);
    expect(noisy.turns.some((x) => x.command?.startsWith('git checkout --'))).toBe(true);
    expect((await evaluatePatch(t, noisy.patch)).resolved).toBe(true);
    // The trajectory is the rollout format: system, issue, then alternating assistant / observation.
    expect(noisy.messages[0]?.role).toBe('system');
    expect(noisy.messages[1]?.content).toContain('# ISSUE DESCRIPTION');
    expect(noisy.messages.at(-1)?.role).toBe('assistant');
  }, 120_000);
});

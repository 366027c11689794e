/**
 * Name augmentation (withFreshNames): a demonstration with its slip and right name swapped is the
 * demonstration the environment gives for the task with those names swapped, observation for
 * observation, and its patch resolves that task. Runs real episodes in real sandboxes.
 */
import { describe, expect, it } from 'vitest';
import { runEpisode, type Trajectory } from '../../src/agent/episode.js';
import { slipPair, withFreshFiles, withFreshNames } from '../../src/embedded/fresh-names.js';
import { evaluatePatch } from '../../src/env/evaluate.js';
import { expertPolicy } from '../../src/env/mini-swe/expert.js';
import { catalogueModules, generateMiniSweTasks } from '../../src/env/mini-swe/generate.js';
import { NAME_POOL } from '../../src/env/mini-swe/mutate.js';
import type { SweTask } from '../../src/env/tasks.js';
import { EMBEDDED_MODEL_CONFIG, Model, Tokenizer } from '../../src/index.js';
import { resolveConfig } from '../../src/pipeline/config.js';
import { type Policy, sftEpochs } from '../../src/pipeline/stages.js';
import { mulberry32 } from '../../src/random.js';

const words = (s: string) => s.match(/[A-Za-z_$][\w$]*/g) ?? [];
const swapWords = (s: string, map: Map<string, string>) => s.replace(/[A-Za-z_$][\w$]*/g, (w) => map.get(w) ?? w);
/** The generated tasks of the default preset: name slips, renamed locals, the terse issue. */
const SLIP_TASKS = { difficulty: 0, kinds: ['misspelled-name'], renameLocals: true, issue: 'error' as const };

/** Replays `demo`'s actions in `task`: every message, format error and observation must come back. */
async function expectReplays(task: SweTask, demo: Trajectory): Promise<Trajectory> {
  const actions = demo.messages.filter((m) => m.role === 'assistant').map((m) => m.content);
  let next = 0;
  const replay = await runEpisode({ task, policy: async () => actions[next++] ?? 'submit', prompt: 'compact' });
  expect(replay.messages).toEqual(demo.messages);
  expect(replay.turns.map((t) => t.formatError)).toEqual(demo.turns.map((t) => t.formatError));
  expect(replay.turns.map((t) => t.observation)).toEqual(demo.turns.map((t) => t.observation));
  return replay;
}

describe('withFreshNames', () => {
  it('slipPair reads a one-name plural slip from a patch, and nothing else', () => {
    const diff = (a: string, b: string) => `--- a/src/x.js\n+++ b/src/x.js\n@@ -1 +1 @@\n-${a}\n+${b}\n`;
    expect(slipPair(diff('return rates * 2;', 'return rate * 2;'))).toEqual({ slip: 'rates', right: 'rate' });
    expect(slipPair(diff('for (const x of item) n++;', 'for (const x of items) n++;'))).toEqual({
      slip: 'item',
      right: 'items',
    });
    expect(slipPair(diff('a = rates + rates;', 'a = rate + rate;'))).toEqual({ slip: 'rates', right: 'rate' });
    expect(slipPair(diff('return a < b;', 'return a <= b;'))).toBeNull(); // an operator
    expect(slipPair(diff('return rats;', 'return rate;'))).toBeNull(); // not a plural slip
    expect(slipPair(diff('return rates + ups;', 'return rate + up;'))).toBeNull(); // two names
    expect(slipPair('')).toBeNull();
  });

  it('the swapped demonstration is the one the environment gives for the swapped task, and resolves it', async () => {
    const tasks = await generateMiniSweTasks({ count: 3, seed: 5, ...SLIP_TASKS });
    let swapped = 0;
    for (const [i, task] of tasks.entries()) {
      const demo = await runEpisode({
        task,
        policy: expertPolicy(task, { style: 'direct', noise: 0.5, seed: i }),
        prompt: 'compact',
      });
      const files = task.files as Record<string, string>;
      // Names the task's files do not use, so the swapped task is the same program.
      const inFiles = new Set(Object.values(files).flatMap(words));
      const pool = NAME_POOL.filter((w) => !inFiles.has(w) && !inFiles.has(`${w}s`));
      const fresh = withFreshNames(demo, pool, mulberry32(100 + i));
      const before = slipPair(demo.patch);
      const after = slipPair(fresh.patch);
      expect(before).not.toBeNull();
      expect(after).not.toBeNull();
      if (!before || !after) continue;
      expect(after.slip).not.toBe(before.slip);
      expect(after.slip === `${after.right}s`).toBe(before.slip === `${before.right}s`);
      expect(fresh.messages[0]).toEqual(demo.messages[0]); // the system prompt
      swapped++;
      // The swapped task: every file, the issue and the patch with the two names swapped.
      const map = new Map([
        [before.slip, after.slip],
        [before.right, after.right],
      ]);
      const twin: SweTask = {
        ...task,
        problem_statement: swapWords(task.problem_statement, map),
        patch: swapWords(task.patch, map),
        files: Object.fromEntries(Object.entries(files).map(([f, s]) => [f, swapWords(s, map)])),
      };
      // Replaying the swapped demonstration's actions there gives back its every observation.
      const replay = await expectReplays(twin, fresh);
      expect((await evaluatePatch(twin, replay.patch)).resolved).toBe(true);
      // And the original still fails there: the demonstration really is about the new names.
      expect((await evaluatePatch(twin, demo.patch)).resolved).toBe(false);
    }
    expect(swapped).toBe(tasks.length);
  }, 180_000);

  it('withFreshFiles: the renamed demonstration is the one the environment gives for the task with its module renamed', async () => {
    const tasks = await generateMiniSweTasks({ count: 3, seed: 6, ...SLIP_TASKS, catalogue: 'wide' });
    const stems = catalogueModules('wide').map((m) => m.name);
    for (const [i, task] of tasks.entries()) {
      // Noise 1 takes every detour: a listing and a look at the file print its name too.
      const demo = await runEpisode({
        task,
        policy: expertPolicy(task, { style: 'direct', noise: 1, seed: i }),
        prompt: 'compact',
      });
      const stem = /^\+\+\+ b\/src\/(\w+)\.js$/m.exec(task.patch)?.[1] as string;
      const fresh = withFreshFiles(demo, stems, mulberry32(7 + i));
      const to = /^\+\+\+ b\/src\/(\w+)\.js$/m.exec(fresh.patch)?.[1] as string;
      expect(stems).toContain(to);
      expect(to).not.toBe(stem);
      expect(fresh.messages[0]).toEqual(demo.messages[0]); // the system prompt
      const before = demo.turns.map((t) => `${t.command}\n${t.observation}`).join('\n');
      expect(before).toContain(`src/${stem}.js`); // grep printed it: there was something to rename
      const after = fresh.turns.map((t) => `${t.command}\n${t.observation}`).join('\n');
      expect(after).not.toContain(`${stem}.js`);
      // The twin task: the module and its test file renamed, and the test's import with them.
      const files = task.files as Record<string, string>;
      const twin: SweTask = {
        ...task,
        patch: fresh.patch,
        FAIL_TO_PASS: task.FAIL_TO_PASS.map((id) => id.replace(`${stem}.test.js`, `${to}.test.js`)),
        PASS_TO_PASS: task.PASS_TO_PASS.map((id) => id.replace(`${stem}.test.js`, `${to}.test.js`)),
        files: Object.fromEntries(
          Object.entries(files).map(([f, s]) => [
            f.replace(`${stem}.js`, `${to}.js`).replace(`${stem}.test.js`, `${to}.test.js`),
            s.replace(`../src/${stem}.js`, `../src/${to}.js`),
          ]),
        ),
      };
      const replay = await expectReplays(twin, fresh);
      expect((await evaluatePatch(twin, replay.patch)).resolved).toBe(true);
      expect((await evaluatePatch(twin, demo.patch)).resolved).toBe(false); // it names the old file
    }
    const plain = { instance_id: 'x', messages: [], turns: [], patch: '', finishReason: 'submit' as const };
    expect(withFreshFiles(plain, stems, mulberry32(1))).toBe(plain); // no module patched
  }, 180_000);

  it('a patch that is not a name slip, or a pool with no fitting name, leaves the demonstration as it is', () => {
    const demo = {
      instance_id: 'x',
      messages: [{ role: 'user' as const, content: 'ReferenceError: rates is not defined' }],
      turns: [],
      patch: '--- a/src/x.js\n+++ b/src/x.js\n@@ -1 +1 @@\n-return rates;\n+return rate;\n',
      finishReason: 'submit' as const,
    };
    expect(withFreshNames({ ...demo, patch: '' }, NAME_POOL, mulberry32(1))).toEqual({ ...demo, patch: '' });
    expect(withFreshNames(demo, ['keys', 'rate'], mulberry32(1))).toBe(demo); // only plurals, or taken
    const fresh = withFreshNames(demo, ['keys', 'rate', 'offset'], mulberry32(1));
    expect(fresh.messages[0]?.content).toBe('ReferenceError: offsets is not defined');
  });

  it('sftEpochs takes the samples as a function of the epoch: asked once per epoch, the same run as the array when it returns the same', async () => {
    const tokenizer = Tokenizer.train(['the tests fail: rates is not defined; it should be rate'], { vocabSize: 300 });
    const config = {
      ...EMBEDDED_MODEL_CONFIG,
      vocab_size: tokenizer.vocabSize,
      hidden_size: 32,
      intermediate_size: 64,
      num_hidden_layers: 1,
      num_attention_heads: 2,
      num_key_value_heads: 1,
      head_dim: 16,
    };
    const samples = ['rates is not defined', 'it should be rate', 'the tests fail'].map((text) => {
      const tokens = Int32Array.from(tokenizer.encode(text));
      return { tokens, lossMask: new Uint8Array(tokens.length).fill(1) };
    });
    const o = { epochs: 3, batchSize: 2, lr: 1e-2, warmupRatio: 0, seed: 4, stage: 'sft' };
    const quiet = { log() {} };
    const asked: number[] = [];
    const fromFn = await sftEpochs(
      { model: Model.random(config, 2), tokenizer } as unknown as Policy,
      (epoch) => {
        asked.push(epoch);
        return samples;
      },
      o,
      quiet,
    );
    const fromArray = await sftEpochs(
      { model: Model.random(config, 2), tokenizer } as unknown as Policy,
      samples,
      o,
      quiet,
    );
    expect(asked).toEqual([0, 1, 2]);
    expect(fromFn.length).toBe(6); // ceil(3 / 2) steps per epoch
    expect(fromFn.map((m) => m.loss)).toEqual(fromArray.map((m) => m.loss));
    // Other data in a later epoch changes that epoch's steps only.
    const other = await sftEpochs(
      { model: Model.random(config, 2), tokenizer } as unknown as Policy,
      (epoch) => (epoch < 2 ? samples : samples.map((x) => ({ ...x, tokens: x.tokens.slice().reverse() }))),
      o,
      quiet,
    );
    expect(other.slice(0, 4).map((m) => m.loss)).toEqual(fromArray.slice(0, 4).map((m) => m.loss));
    expect(other.slice(4).map((m) => m.loss)).not.toEqual(fromArray.slice(4).map((m) => m.loss));
  });

  it('warmStart.freshNames and freshFiles are validated', () => {
    expect(resolveConfig({ warmStart: { freshNames: true } }).warmStart.freshNames).toBe(true);
    expect(() => resolveConfig({ warmStart: { freshNames: 'yes' } })).toThrow(/warmStart\.freshNames/);
    expect(resolveConfig({}).warmStart.freshFiles).toBe(false);
    expect(() => resolveConfig({ warmStart: { freshFiles: 1 } })).toThrow(/warmStart\.freshFiles/);
    expect(() => resolveConfig({ tasksFile: 'tasks.jsonl', warmStart: { freshFiles: true } })).toThrow(
      /warmStart\.freshFiles/,
    );
  });
});

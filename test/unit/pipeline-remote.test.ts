/**
 * An evaluation-only pipeline run against a remote OpenAI-compatible server (swerl's own, over
 * a saved model folder): the rollouts go through RemoteEngine sessions, and the run folder gets
 * the base stage. Training stages with a remote engine are refused before anything runs.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  Engine,
  isolationAvailable,
  Model,
  promptStyleOf,
  resolveConfig,
  runPipeline,
  SYSTEM_PROMPT,
  startOpenAiServer,
  Tokenizer,
} from '../../src/index.js';

const canSandbox = isolationAvailable('bwrap') || isolationAvailable('unshare');

describe.skipIf(!canSandbox)('runPipeline with a remote engine', () => {
  it('evaluates through the server; refuses training stages', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'swerl-remote-run-'));
    const tokenizer = Tokenizer.train([SYSTEM_PROMPT, 'DISCUSSION\n```command\nls\n```'], { vocabSize: 320 });
    const model = Model.random(
      {
        architectures: ['Qwen2ForCausalLM'],
        vocab_size: tokenizer.vocabSize,
        hidden_size: 32,
        intermediate_size: 64,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 2,
      },
      5,
    );
    await model.save(join(dir, 'model'));
    await tokenizer.save(join(dir, 'model'));
    const server = await startOpenAiServer({
      engine: new Engine({ model, kvBlocks: 2048, blockSize: 16 }),
      tokenizer,
      modelName: 'm',
      port: 0,
    });
    try {
      const overrides = {
        modelDir: join(dir, 'model'),
        engine: { backend: 'remote', url: server.url, model: 'm' },
        miniSwe: { trainTasks: 1, testTasks: 2, difficulty: 0 },
        episode: { maxTurns: 2, maxTokensPerTurn: 8, maxContextTokens: 3000, concurrency: 2 },
        eval: { k: 1 },
      };
      expect(() => resolveConfig(overrides, 'smoke')).toThrow(/warmStart\.enabled/);
      const c = resolveConfig(
        { ...overrides, warmStart: { enabled: false }, rft: { enabled: false }, dapo: { enabled: false } },
        'smoke',
      );
      // A Hugging Face model gets the paper's prompt; the embedded model the compact one.
      expect(promptStyleOf(c)).toBe('paper');
      expect(promptStyleOf(resolveConfig({}, 'smoke'))).toBe('compact');
      expect(promptStyleOf(resolveConfig({ episode: { prompt: 'paper' } }, 'smoke'))).toBe('paper');
      // demoTasks splits the embedded model's tasks only: with a modelDir it is not checked against them.
      expect(() => resolveConfig({ warmStart: { demoTasks: 6 } }, 'smoke')).toThrow(/warmStart\.demoTasks/);
      expect(resolveConfig({ modelDir: 'm', warmStart: { demoTasks: 6 } }, 'smoke').warmStart.demoTasks).toBe(6);
      const summary = await runPipeline(c, { out: join(dir, 'run') });
      expect(summary.stages.map((s) => s.name)).toEqual(['base']);
      expect(summary.stages[0]?.tasks).toBe(2);
      expect(summary.stages[0]?.pass1).toBe(0); // a random model resolves nothing
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

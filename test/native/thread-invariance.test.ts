/**
 * A run does not depend on the machine's core count: the kernels' thread pool splits work so that
 * every sum is taken in the same order whatever the threads. The same script (sampled generation
 * over the engine, a policy step, then generation with the updated weights) in processes with
 * SWERL_NUM_THREADS 1, 2 and 3 gives bitwise the same tokens, logprobs, gradient norm and loss,
 * while the portable (scalar) kernels give other bits, so the comparison can see a difference.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { nativeInfo } from '../../src/index.js';

const root = join(import.meta.dirname, '..', '..');

const SCRIPT = `
const { AdamW, Engine, Model, nativeInfo, Trainer } = await import(${JSON.stringify(pathToFileURL(join(root, 'dist', 'index.js')).href)});
const model = Model.random({ architectures: ['Qwen2ForCausalLM'], vocab_size: 905, hidden_size: 128,
  intermediate_size: 384, num_hidden_layers: 4, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 32,
  tie_word_embeddings: true }, 7);
const prompts = Array.from({ length: 6 }, (_, i) => Array.from({ length: 200 + 37 * i }, (_, k) => (k * 31 + i * 7) % 900));
const generate = (m) => {
  const engine = new Engine({ model: m, kvBlocks: 512, blockSize: 16 });
  return Promise.all(prompts.map((p, i) => engine.generate({ prompt: p, maxTokens: 32, sampling: { temperature: 1, seed: i } })));
};
const before = await generate(model);
const trainer = new Trainer(model, { optimizer: new AdamW(model, { lr: 1e-2 }) });
const step = await trainer.policyStep(before.map((g, i) => {
  const tokens = Int32Array.from([...prompts[i], ...g.tokens]);
  const lossMask = new Float32Array(tokens.length).fill(1, prompts[i].length);
  const oldLogprobs = new Float32Array(tokens.length);
  oldLogprobs.set(g.logprobs, prompts[i].length);
  return { tokens, lossMask, advantage: i % 2 ? 1 : -1, oldLogprobs };
}));
const after = await generate(model);
const bits = (gs) => gs.map((g) => [Array.from(g.tokens), Array.from(new Uint32Array(new Float32Array(g.logprobs).buffer))]);
console.log(JSON.stringify({ threads: nativeInfo().threads, before: bits(before), after: bits(after), gradNorm: step.gradNorm, loss: step.loss }));
`;

describe('thread count', () => {
  it('generation and training are bitwise the same with 1, 2 and 3 kernel threads', () => {
    const run = (env: Record<string, string>) => {
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', SCRIPT], {
        env: { ...process.env, ...env },
        encoding: 'utf8',
      });
      expect(r.status, r.stderr).toBe(0);
      const { threads, ...bits } = JSON.parse(r.stdout) as {
        threads: number;
        before: unknown;
        after: unknown;
        gradNorm: number;
      };
      return { threads, bits };
    };
    const runs = ['1', '2', '3'].map((n) => run({ SWERL_NUM_THREADS: n }));
    expect(runs.map((r) => r.threads)).toEqual([1, 2, 3]);
    const [one, ...others] = runs.map((r) => r.bits);
    expect(one?.gradNorm).toBeGreaterThan(0);
    expect(one?.after).not.toEqual(one?.before); // the step changed the weights
    for (const o of others) expect(o).toEqual(one);
    // The comparison sees a change of arithmetic: the portable kernels round differently.
    if (nativeInfo().simd !== 'scalar')
      expect(run({ SWERL_NUM_THREADS: '2', SWERL_SIMD: 'scalar' }).bits).not.toEqual(one);
  }, 120_000);
});

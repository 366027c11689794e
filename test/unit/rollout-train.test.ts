/**
 * Rollouts over the engine and the trainer on their records: the conversation's tokens, the
 * assistant mask and the engine's logprobs line up with the turns; the trainer's logprobs for
 * every rollout token equal the engine's bitwise (ratio exactly 1 before the update); observation
 * tokens and format-error turns carry no gradient; an optimizer step bumps the weight version;
 * the G samples of a task share one prefilled prompt; rollout files round-trip.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  AdamW,
  dapoIteration,
  dapoIterationLr,
  dapoLossConfig,
  deltaText,
  Engine,
  generateMiniSweTasks,
  isolationAvailable,
  lossMask,
  Model,
  parseAction,
  policySamples,
  promptText,
  readRollouts,
  resolveConfig,
  rftSamples,
  runRollouts,
  SYSTEM_PROMPT,
  sequenceLogprobs,
  Tokenizer,
  Trainer,
  writeRollouts,
} from '../../src/index.js';
import type { DapoStageConfig, PipelineConfig } from '../../src/pipeline/config.js';
import { TextPool } from '../../src/rollout/text-pool.js';

/** A config's first DAPO stage (its per-stage settings as resolveConfig filled them), with these limits. */
function stageOf(c: PipelineConfig, limits: Partial<DapoStageConfig>): DapoStageConfig {
  return { ...(c.dapo.stages[0] as DapoStageConfig), iterations: 1, ...limits };
}

const canSandbox = isolationAvailable('bwrap') || isolationAvailable('unshare');

function setup(seed = 3) {
  const corpus = [
    SYSTEM_PROMPT,
    'DISCUSSION\nLet me run the tests.\n\n```command\nnode --test\n```',
    'ls -la src test',
  ];
  const tokenizer = Tokenizer.train(corpus.concat(corpus.map((c) => c.toUpperCase())), { vocabSize: 400 });
  const model = Model.random(
    {
      architectures: ['Qwen2ForCausalLM'],
      vocab_size: tokenizer.vocabSize,
      hidden_size: 64,
      intermediate_size: 128,
      num_hidden_layers: 2,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      head_dim: 16,
      tie_word_embeddings: true,
    },
    seed,
  );
  return { tokenizer, model };
}

describe.skipIf(!canSandbox)('rollouts and the trainer', () => {
  it('records line up with turns, and the trainer reproduces the engine logprobs bitwise', async () => {
    const { tokenizer, model } = setup();
    const engine = new Engine({ model, kvBlocks: 2048, blockSize: 16 });
    const tasks = await generateMiniSweTasks({ count: 2, seed: 3, difficulty: 0 });
    const records = await runRollouts({
      engine,
      tokenizer,
      tasks,
      samplesPerTask: 2,
      maxTurns: 3,
      maxTokensPerTurn: 24,
      maxContextTokens: 6000,
      seed: 11,
    });
    expect(records.map((r) => [r.instance_id, r.sample])).toEqual(
      tasks.flatMap((t) => [
        [t.instance_id, 0],
        [t.instance_id, 1],
      ]),
    );
    // The two samples of a task share the prompt and differ after it (different seeds).
    const [a, b] = records as [(typeof records)[0], (typeof records)[0]];
    const promptLen = a.turns[0]?.start ?? 0;
    expect(promptLen).toBeGreaterThan(100);
    expect(Array.from(a.tokens.subarray(0, promptLen))).toEqual(Array.from(b.tokens.subarray(0, promptLen)));
    expect(Array.from(a.tokens.subarray(promptLen, promptLen + 24))).not.toEqual(
      Array.from(b.tokens.subarray(promptLen, promptLen + 24)),
    );
    for (const r of records) {
      expect(r.tokens.length).toBe(r.assistantMask.length);
      expect(r.logprobs.length).toBe(r.tokens.length);
      const generated = r.turns.reduce((s, t) => s + t.end - t.start, 0);
      expect(r.assistantMask.reduce((s, x) => s + x, 0)).toBe(generated);
      for (const t of r.turns) {
        expect(t.end).toBeGreaterThan(t.start);
        for (let k = t.start; k < t.end; k++) expect(r.assistantMask[k]).toBe(1);
      }
      expect(r.turns.length).toBeLessThanOrEqual(3);
      expect(r.reward).toBe(r.resolved ? 1 : 0);
      expect(r.timings.generateMs).toBeGreaterThan(0);
    }
    // A random model rarely writes a command block: format errors are flagged and masked.
    const withError = records.find((r) => r.turns.some((t) => t.formatError !== null));
    expect(withError).toBeDefined();
    if (withError) {
      const m = lossMask(withError);
      for (const t of withError.turns) for (let k = t.start; k < t.end; k++) expect(m[k]).toBe(t.formatError ? 0 : 1);
      const unmasked = lossMask(withError, { maskFormatErrors: false });
      expect(Array.from(unmasked)).toEqual(Array.from(withError.assistantMask));
    }

    // The trainer on the full sequences: logprobs of every generated token equal the engine's.
    const before = model.weightVersion;
    const trainer = new Trainer(model, { optimizer: new AdamW(model, { lr: 1e-3 }) });
    const samples = records.map((r) => ({
      tokens: r.tokens,
      lossMask: Float32Array.from(r.assistantMask),
      advantage: 1,
      oldLogprobs: r.logprobs,
    }));
    const step = await trainer.policyStep(samples);
    records.forEach((r, i) => {
      const lp = step.logprobs[i] as Float32Array;
      for (let k = 1; k < r.tokens.length; k++)
        if (r.assistantMask[k]) expect(Object.is(lp[k - 1], r.logprobs[k]), `record ${i} token ${k}`).toBe(true);
    });
    expect(step.ratioDeviation).toBe(0);
    expect(step.clipFracHigh).toBe(0);
    expect(step.clipFracLow).toBe(0);
    expect(model.weightVersion).toBeGreaterThan(before);
    // The engine re-versions its KV for the new weights: the same request now scores differently.
    const again = await runRollouts({
      engine,
      tokenizer,
      tasks: tasks.slice(0, 1),
      maxTurns: 1,
      maxTokensPerTurn: 8,
      seed: 11,
    });
    expect(Array.from(again[0]?.logprobs ?? [])).not.toEqual(
      Array.from(a.logprobs.subarray(0, again[0]?.logprobs.length)),
    );

    // Rollout files round-trip.
    const dir = await mkdtemp(join(tmpdir(), 'swerl-rollouts-'));
    try {
      await writeRollouts(join(dir, 'r.msgpack'), records);
      const back = await readRollouts(join(dir, 'r.msgpack'));
      expect(back.length).toBe(records.length);
      expect(back[1]?.tokens).toEqual(records[1]?.tokens);
      expect(back[1]?.logprobs).toEqual(records[1]?.logprobs);
      expect(back[1]?.assistantMask).toEqual(records[1]?.assistantMask);
      expect(back[1]?.turns).toEqual(records[1]?.turns);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 240_000);

  it('the text workers give the records the calling thread gives, and parse as parseAction does', async () => {
    const { tokenizer, model } = setup();
    const tasks = await generateMiniSweTasks({ count: 2, seed: 5, difficulty: 0 });
    // Short turns, so responses are cut by length (the delta then closes them), and a context
    // limit that the context estimate reaches on the second turn.
    const run = (textWorkers: boolean) =>
      runRollouts({
        engine: new Engine({ model, kvBlocks: 2048, blockSize: 16 }),
        tokenizer,
        tasks,
        samplesPerTask: 3,
        maxTurns: 2,
        maxTokensPerTurn: 20,
        maxContextTokens: 1850,
        seed: 5,
        textWorkers,
      });
    const [pooled, local] = [await run(true), await run(false)];
    const strip = (r: (typeof pooled)[0]) => ({ ...r, timings: null });
    expect(pooled.map(strip)).toEqual(local.map(strip));
    // Every episode passed the context check after its first turn and failed it after its second.
    expect(pooled.map((r) => [r.turns.length, r.finishReason])).toEqual(pooled.map(() => [2, 'max_context']));
    // A random model writes no commands: the parser's other answers, directly on the pool.
    const pool = TextPool.for(tokenizer);
    for (const [content, format] of [
      ['DISCUSSION\nLet me look.\n\n```command\nls -la src\n```', 'command'],
      ['```command\nls\n```\n```command\npwd\n```', 'command'],
      ['no block at all', 'command'],
      ['<tool_call>{"name": "bash", "arguments": {"command": "ls src"}}</tool_call>', 'tool_call'],
      ['<tool_call>{not json}</tool_call>', 'tool_call'],
    ] as const) {
      const ids = tokenizer.encode(content);
      const text = tokenizer.decode(ids);
      expect(await pool.run({ op: 'respond', tokens: ids, format })).toEqual({
        content: text,
        action: parseAction(text, format),
      });
    }
    expect(
      (await pool.run({ op: 'respond', tokens: tokenizer.encode('```command\nls -la src\n```'), format: 'command' }))
        .action,
    ).toEqual({
      kind: 'command',
      command: 'ls -la src',
    });
    const messages = [
      { role: 'system' as const, content: SYSTEM_PROMPT },
      { role: 'user' as const, content: 'fix the bug' },
    ];
    const prompt = await pool.run({ op: 'prompt', messages });
    expect(prompt.text).toBe(promptText(messages));
    expect(Array.from(prompt.tokens)).toEqual(Array.from(tokenizer.encode(promptText(messages))));
    const observed = await pool.run({ op: 'observe', messages: messages.slice(1), responseOpen: true });
    expect(Array.from(observed.tokens)).toEqual(Array.from(tokenizer.encode(deltaText(messages.slice(1), true))));
    expect(observed.contextTokens).toBe(tokenizer.encode('fix the bug').length + 5);
  }, 120_000);

  it('masked tokens carry no gradient: a sample with nothing trained leaves the step unchanged', async () => {
    const { tokenizer } = setup();
    const tokens = tokenizer.encode(
      `<|im_start|>user\nrun the tests<|im_end|>\n<|im_start|>assistant\nls -la src<|im_end|>\n`,
    );
    const mask = new Float32Array(tokens.length);
    mask.fill(1, tokens.length - 6); // the response's tail
    const other = {
      tokens: tokenizer.encode('<|im_start|>user\nsomething else entirely, longer<|im_end|>\n'),
      lossMask: new Float32Array(0),
    };
    other.lossMask = new Float32Array(other.tokens.length); // an observation only: nothing trained
    const run = async (withOther: boolean) => {
      const { model } = setup();
      const trainer = new Trainer(model, { optimizer: new AdamW(model, { lr: 1e-2 }) });
      const samples = withOther ? [{ tokens, lossMask: mask }, other] : [{ tokens, lossMask: mask }];
      const st = await trainer.sftStep(samples);
      return { st, w: model.getParameter('model.layers.0.self_attn.q_proj.weight') };
    };
    const alone = await run(false);
    const both = await run(true);
    expect(both.st.tokens).toBe(alone.st.tokens);
    expect(both.st.loss).toBe(alone.st.loss);
    expect(Array.from(both.w)).toEqual(Array.from(alone.w));
    // The loss is the token-mean of −logprob over exactly the trained tokens.
    const lp = alone.st.logprobs[0] as Float32Array;
    let sum = 0;
    for (let k = 1; k < tokens.length; k++) if (mask[k]) sum -= lp[k - 1] as number;
    expect(alone.st.loss).toBeCloseTo(sum / 6, 5);
  });

  it('the KL reference: its logprobs are the trainer path, bitwise; k3 is 0 and pulls nothing at the reference', async () => {
    const { tokenizer } = setup();
    const tokens = tokenizer.encode(
      '<|im_start|>user\nrun the tests<|im_end|>\n<|im_start|>assistant\nls -la src test<|im_end|>\n',
    );
    const lossMask = new Float32Array(tokens.length).fill(1, tokens.length - 8);
    const step = async (refSeed: number | null, klCoef: number) => {
      const { model } = setup();
      const ref = refSeed === null ? null : await sequenceLogprobs(setup(refSeed).model, tokens);
      const trainer = new Trainer(model, { optimizer: new AdamW(model, { lr: 1e-2 }) });
      const own = await sequenceLogprobs(model, tokens);
      const st = await trainer.policyStep(
        [{ tokens, lossMask, advantage: 1, oldLogprobs: own, ...(ref ? { refLogprobs: ref } : {}) }],
        { klCoef },
      );
      return { st, own, ref, w: model.getParameter('model.layers.1.mlp.down_proj.weight') };
    };
    const plain = await step(null, 0);
    // sequenceLogprobs (dense forward + log-softmax) equals the fused training path bitwise.
    const lp = plain.st.logprobs[0] as Float32Array;
    for (let k = 1; k < tokens.length; k++) expect(Object.is(plain.own[k], lp[k - 1]), `token ${k}`).toBe(true);
    expect(plain.own[0]).toBe(0);
    // A reference equal to the policy: k3 = 0 and its gradient 1 − exp(0) = 0, so the step is the same.
    const same = await step(3, 0.5);
    expect(same.st.kl).toBe(0);
    // (Only float32 rounding of the stored reference logprobs remains: updates are ~lr = 1e-2.)
    const drift = (w: Float32Array) => w.reduce((m, x, i) => Math.max(m, Math.abs(x - (plain.w[i] as number))), 0);
    expect(drift(same.w)).toBeLessThan(1e-4);
    // Another reference: k3 = exp(d) − d − 1 with d = ref − logp, averaged over the trained tokens.
    const other = await step(4, 0.5);
    let k3 = 0;
    let n = 0;
    for (let k = 1; k < tokens.length; k++)
      if (lossMask[k]) {
        const d = (other.ref?.[k] as number) - (other.own[k] as number);
        k3 += Math.exp(d) - d - 1;
        n++;
      }
    expect(other.st.kl).toBeGreaterThan(0);
    expect(other.st.kl).toBeCloseTo(k3 / n, 5);
    expect(other.st.loss).toBeGreaterThan(plain.st.loss);
    expect(drift(other.w)).toBeGreaterThan(1e-3);
    const { model } = setup();
    const bad = { tokens, lossMask, advantage: 1, oldLogprobs: plain.own, refLogprobs: new Float32Array(3) };
    await expect(new Trainer(model, { optimizer: new AdamW(model) }).policyStep([bad])).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });

  it('DAPO refills dropped groups from spare tasks, and a KL coefficient needs a reference', async () => {
    const { tokenizer, model } = setup();
    const engine = new Engine({ model, kvBlocks: 2048, blockSize: 16 });
    const tasks = await generateMiniSweTasks({ count: 3, seed: 5, difficulty: 0 });
    const c = resolveConfig(
      { dapo: { refillRounds: 1, samplesPerTask: 2 }, episode: { maxTokensPerTurn: 8 } },
      'smoke',
    );
    const stage = stageOf(c, { maxTurns: 1, maxContextTokens: 3072, tasksPerIteration: 1 });
    const optimizer = new AdamW(model, { lr: 1e-3 });
    const log: Record<string, unknown>[] = [];
    const hooks = { log: (e: Record<string, unknown>) => log.push(e) };
    const policy = { model, engine, tokenizer };
    // A random model solves nothing: every group is flat, so one refill round samples one more task.
    const { metrics, records } = await dapoIteration(policy, tasks.slice(0, 1), c, stage, 1, optimizer, hooks, {
      refill: tasks,
    });
    expect(records.every((r) => !r.resolved)).toBe(true);
    expect(records.map((r) => r.instance_id)).toEqual([
      tasks[0]?.instance_id,
      tasks[0]?.instance_id,
      tasks[1]?.instance_id,
      tasks[1]?.instance_id,
    ]);
    expect(metrics.refillRounds).toBe(1);
    expect(metrics.groups).toBe(2);
    expect(metrics.droppedGroups).toBe(2);
    expect(metrics.steps).toBe(0);
    expect(log.some((e) => e.event === 'iteration' && e.refillRounds === 1)).toBe(true);
    const kl = resolveConfig({ dapo: { klCoef: 0.1 } }, 'smoke');
    await expect(dapoIteration(policy, tasks.slice(0, 1), kl, stage, 2, optimizer, hooks)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  }, 120_000);

  it('DAPO epochs: each pass over the iteration samples takes stepsPerIteration steps', async () => {
    const { tokenizer, model } = setup();
    const engine = new Engine({ model, kvBlocks: 2048, blockSize: 16 });
    const tasks = await generateMiniSweTasks({ count: 1, seed: 5, difficulty: 0 });
    const limits = { maxTurns: 1, maxContextTokens: 3072, tasksPerIteration: 1 };
    const policy = { model, engine, tokenizer };
    const steps = [];
    for (const epochs of [1, 3]) {
      // Flat groups kept (dropZeroAdvantage false), so that a random model's samples are trained.
      const c = resolveConfig(
        {
          dapo: { samplesPerTask: 4, stepsPerIteration: 2, epochs, dropZeroAdvantage: false, maskFormatErrors: false },
          episode: { maxTokensPerTurn: 8 },
        },
        'smoke',
      );
      const optimizer = new AdamW(model, { lr: 1e-3 });
      const { metrics } = await dapoIteration(policy, tasks, c, stageOf(c, limits), 1, optimizer, { log: () => {} });
      expect(metrics.trainedSamples).toBe(4);
      steps.push(metrics.steps);
    }
    expect(steps).toEqual([2, 6]);
    // Under maskFormatErrors a random model's episodes (all format errors) train nothing: no step,
    // where a mini-batch of them used to fail the iteration.
    const masked = resolveConfig(
      {
        dapo: { samplesPerTask: 4, dropZeroAdvantage: false, maskFormatErrors: true },
        episode: { maxTokensPerTurn: 8 },
      },
      'smoke',
    );
    const { metrics } = await dapoIteration(policy, tasks, masked, stageOf(masked, limits), 2, new AdamW(model), {
      log: () => {},
    });
    expect([metrics.trainedSamples, metrics.steps]).toEqual([0, 0]);
    expect(() => resolveConfig({ dapo: { epochs: 0 } }, 'smoke')).toThrow(/dapo\.epochs/);
  }, 120_000);

  it("Dr.GRPO from the config: 'seq-mean-token-sum-norm' divides by normLength, by default the generation budget", async () => {
    const drgrpo = (dapo: Record<string, unknown>) =>
      resolveConfig({ dapo: { estimator: 'drgrpo', agg: 'seq-mean-token-sum-norm', ...dapo } }, 'smoke');
    const stage = stageOf(drgrpo({}), { maxTurns: 3, maxContextTokens: 3072, tasksPerIteration: 1 });
    const perTurn = drgrpo({}).episode.maxTokensPerTurn; // the preset's, whatever it is tuned to
    const auto = dapoLossConfig(drgrpo({}), stage);
    expect(auto).toMatchObject({ agg: 'seq-mean-token-sum-norm', normLength: 3 * perTurn });
    expect(dapoLossConfig(drgrpo({ normLength: 500 }), stage).normLength).toBe(500);
    expect(() => drgrpo({ normLength: -1 })).toThrow(/dapo\.normLength/);
    // The trainer takes it: one sample's loss is its token sum over normLength (advantage 1, ratio 1: −n/normLength).
    const { model } = setup();
    const tokens = Int32Array.from([1, 2, 3, 4, 5, 6]);
    const lossMask = Float32Array.from([0, 0, 1, 1, 1, 0]);
    const own = await sequenceLogprobs(model, tokens);
    const step = await new Trainer(model, { optimizer: new AdamW(model, { lr: 0 }) }).policyStep(
      [{ tokens, lossMask, advantage: 1, oldLogprobs: own }],
      auto,
    );
    expect(step.loss).toBeCloseTo(-3 / (3 * perTurn), 6);
  });

  it('group advantages, dynamic sampling and RFT selection', () => {
    const rec = (id: string, reward: number, resolved: boolean, finishReason = 'submit') =>
      ({
        instance_id: id,
        sample: 0,
        tokens: Int32Array.of(1, 2, 3),
        assistantMask: Uint8Array.of(0, 1, 1),
        logprobs: new Float32Array(3),
        turns: [{ start: 1, end: 3, formatError: null, command: 'submit', exitCode: 0 }],
        patch: '',
        finishReason,
        resolved,
        reward,
        timings: { wallMs: 0, generateMs: 0, toolMs: 0, evaluateMs: 0 },
      }) as const;
    const records = [
      rec('a', 1, true),
      rec('a', 0, false),
      rec('a', 0, false, 'max_turns'),
      rec('b', 0, false),
      rec('b', 0, false),
    ];
    const batch = policySamples(records as never);
    expect(batch.groups).toBe(2);
    expect(batch.droppedGroups).toBe(1); // b: all rewards equal
    expect(batch.samples.length).toBe(3);
    const adv = batch.samples.map((s) => s.advantage as number);
    // GRPO: (r − mean) / std with the unbiased std: mean 1/3, std 0.57735.
    expect(adv[0]).toBeCloseTo((1 - 1 / 3) / Math.sqrt(1 / 3), 4);
    expect(adv[1]).toBeCloseTo(-1 / 3 / Math.sqrt(1 / 3), 4);
    const filtered = policySamples(records as never, { filterOverlong: true });
    expect(filtered.droppedOverlong).toBe(1);
    expect(filtered.samples.length).toBe(2);
    expect(rftSamples(records as never).length).toBe(1);
    const rloo = policySamples(records as never, { estimator: 'rloo' });
    expect(rloo.samples[0]?.advantage).toBeCloseTo(1 - 0, 6); // 1 − mean of the others (0, 0)
    // An episode whose every turn is a format error has nothing trained under maskFormatErrors:
    // it still counts in its group's advantages, but is not a sample (a mini-batch of only such
    // samples would have no loss). Unmasked, it is trained.
    const malformed = { ...rec('a', 0, false), turns: [{ ...rec('a', 0, false).turns[0], formatError: 'no command' }] };
    const withMalformed = [...records.slice(0, 2), malformed];
    const masked = policySamples(withMalformed as never);
    expect(masked.droppedUntrained).toBe(1);
    expect(masked.samples.length).toBe(2);
    expect(masked.samples.map((x) => x.advantage)).toEqual(batch.samples.slice(0, 2).map((x) => x.advantage));
    const unmasked = policySamples(withMalformed as never, { maskFormatErrors: false });
    expect([unmasked.droppedUntrained, unmasked.samples.length]).toEqual([0, 3]);
    // 'positive': a format-error turn is masked in a resolved episode (advantage > 0) and trained
    // in a failed one (advantage < 0), so it is only ever pushed down.
    const twoTurns = (reward: number) => ({
      ...rec('c', reward, reward === 1),
      tokens: Int32Array.of(1, 2, 3, 4, 5),
      assistantMask: Uint8Array.of(0, 1, 1, 1, 1),
      logprobs: new Float32Array(5),
      turns: [
        { start: 1, end: 3, formatError: 'no command', command: null, exitCode: null },
        { start: 3, end: 5, formatError: null, command: 'submit', exitCode: 0 },
      ],
    });
    const mixed = [twoTurns(1), twoTurns(0)];
    const positive = policySamples(mixed as never, { maskFormatErrors: 'positive' });
    expect(positive.samples.map((x) => Math.sign(x.advantage as number))).toEqual([1, -1]);
    expect(positive.samples.map((x) => Array.from(x.lossMask))).toEqual([
      [0, 0, 0, 1, 1],
      [0, 1, 1, 1, 1],
    ]);
    expect(policySamples(mixed as never).samples.map((x) => Array.from(x.lossMask))).toEqual([
      [0, 0, 0, 1, 1],
      [0, 0, 0, 1, 1],
    ]);
  });
});

describe('the DAPO learning rate over iterations', () => {
  it("'constant' keeps dapo.lr; 'cosine' falls from lr to lr · minLrRatio over all stages' iterations", () => {
    const stages = [
      { iterations: 4, maxTurns: 7, maxContextTokens: 3072, tasksPerIteration: 4 },
      { iterations: 4, maxTurns: 7, maxContextTokens: 3072, tasksPerIteration: 4 },
    ];
    const constant = resolveConfig({ dapo: { lr: 1e-4, stages } });
    expect([0, 3, 7].map((i) => dapoIterationLr(constant, i))).toEqual([1e-4, 1e-4, 1e-4]);
    const cosine = resolveConfig({ dapo: { lr: 1e-4, lrSchedule: 'cosine', stages } });
    const lrs = Array.from({ length: 9 }, (_, i) => dapoIterationLr(cosine, i));
    expect(lrs[0]).toBe(1e-4);
    expect(lrs[4]).toBeCloseTo(5e-5, 12); // half way over the 8 iterations of both stages
    expect(lrs[8]).toBeCloseTo(0, 12);
    for (let i = 1; i < lrs.length; i++) expect(lrs[i] as number).toBeLessThan(lrs[i - 1] as number);
    const floor = resolveConfig({ dapo: { lr: 1e-4, lrSchedule: 'cosine', minLrRatio: 0.1, stages } });
    expect(dapoIterationLr(floor, 8)).toBeCloseTo(1e-5, 12);
    expect(() => resolveConfig({ dapo: { lrSchedule: 'linear' } })).toThrow(/dapo\.lrSchedule/);
    expect(() => resolveConfig({ dapo: { minLrRatio: 2 } })).toThrow(/dapo\.minLrRatio/);
  });
});

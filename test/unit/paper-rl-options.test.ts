/**
 * The paper's RL options reach what they set (arXiv 2508.03501 §4, App. C, F.2):
 * - a DAPO stage's G, clip range and batch size reach the rollouts and the trainer's loss, a batch
 *   size giving ceil(trained samples / batch) optimizer steps;
 * - `dapo.turnPenalty` false gives rewards without the turn penalty, true the stage's penalty;
 * - the curriculum filter between stages drops tasks solved at least 2/3 of the time and those
 *   never solved;
 * - the optimizer sections reach AdamW (weight decay moves a weight in a step with no gradient);
 * - evaluations run at the last DAPO stage's limits (eval.limits 'last-stage');
 * - the validation split: its own tasks, and in-run validations read it, never the test split;
 * - `rft.oneShot`: RFT samples with the demonstration in the system prompt, and trains on the
 *   same trajectories under the normal one;
 * - `rft.minKept`: RFT runs rounds, each from the policy the last one fine-tuned with fresh sample
 *   seeds, until that many trajectories are kept or `rft.maxRounds` have run.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  AdamW,
  type AgentMessage,
  dapoIteration,
  dapoLossConfig,
  evaluate,
  expertPolicy,
  generateMiniSweTasks,
  isolationAvailable,
  type Model,
  oneShotDemonstration,
  readRollouts,
  resolveConfig,
  rft,
  rftSamples,
  runEpisode,
  runPipeline,
  runRollouts,
  type SweTask,
  sftEpochs,
  systemPrompt,
  Trainer,
} from '../../src/index.js';
import type { DapoStageConfig, PipelineConfig } from '../../src/pipeline/config.js';
import { tasksFor } from '../../src/pipeline/run.js';
import { adamwOptions, dapoOptimizer, evalLimits, type Policy } from '../../src/pipeline/stages.js';
import { curriculumFilter } from '../../src/rl/curriculum.js';
import { withSystemPrompt } from '../../src/rl/one-shot.js';
import { rolloutSeeds } from '../../src/rl/seeds.js';
import { tinyPolicy } from '../helpers/tiny-policy.js';

const canSandbox = isolationAvailable('bwrap') || isolationAvailable('unshare');

/** A config's first DAPO stage (as resolveConfig filled it), with these settings. */
function stageOf(c: PipelineConfig, o: Partial<DapoStageConfig>): DapoStageConfig {
  return {
    ...(c.dapo.stages[0] as DapoStageConfig),
    iterations: 1,
    maxContextTokens: 3072,
    tasksPerIteration: 1,
    ...o,
  };
}

/** Weights of a model, one array per parameter. */
function weights(m: Model): Float32Array[] {
  return m.parameters().map((p) => m.getParameter(p.name));
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('the curriculum between DAPO stages', () => {
  it('drops a task solved 2 of 3 times (easy) and one never solved; keeps 1 of 3 and untried tasks', () => {
    const pool = ['two', 'one', 'none', 'all', 'untried'].map((instance_id) => ({ instance_id }));
    const solvedBy = new Map([
      ['two', { tries: 3, solved: 2 }],
      ['one', { tries: 3, solved: 1 }],
      ['none', { tries: 3, solved: 0 }],
      ['all', { tries: 3, solved: 3 }],
    ]);
    const f = curriculumFilter(pool, solvedBy, resolveConfig().dapo.easyTaskThreshold);
    expect(resolveConfig().dapo.easyTaskThreshold).toBe(2 / 3);
    expect(f.kept.map((t) => t.instance_id)).toEqual(['one', 'untried']);
    expect(f.easy.map((t) => t.instance_id)).toEqual(['two', 'all']);
    expect(f.unsolved.map((t) => t.instance_id)).toEqual(['none']);
    // At 1 only the tasks solved every time are easy (the schedule's filter before the threshold).
    expect(curriculumFilter(pool, solvedBy, 1).kept.map((t) => t.instance_id)).toEqual(['two', 'one', 'untried']);
  });
});

describe('optimizer sections', () => {
  it('reach AdamW: weight decay moves a weight in a step with no gradient, as the section sets it', async () => {
    const { model } = tinyPolicy();
    const name = model.parameters().find((p) => p.name.endsWith('mlp.up_proj.weight'))?.name as string;
    const before = model.getParameter(name);
    const c = resolveConfig({ dapo: { optimizer: { weightDecay: 0.5, beta1: 0.8, beta2: 0.99, eps: 1e-6 } } }, 'smoke');
    expect(adamwOptions(c.dapo.optimizer)).toEqual({ weightDecay: 0.5, betas: [0.8, 0.99], eps: 1e-6, maxGradNorm: 1 });
    // No gradient accumulated: Adam's update is 0, and decoupled decay scales the weight by 1 - lr·wd.
    const opt = await dapoOptimizer(model, c, 0.1);
    await opt.step();
    const after = model.getParameter(name);
    for (const k of [0, 7, 100]) expect(after[k]).toBeCloseTo((before[k] as number) * (1 - 0.1 * 0.5), 7);
    // The resume path (AdamW.load) takes the same settings.
    const dir = mkdtempSync(join(tmpdir(), 'swerl-opt-'));
    try {
      await opt.save(join(dir, 'optimizer.safetensors'));
      const loaded = await dapoOptimizer(model, c, 0.1, join(dir, 'optimizer.safetensors'));
      expect(loaded.stepCount).toBe(1);
      await loaded.step();
      const again = model.getParameter(name);
      expect(again[7]).toBeCloseTo((after[7] as number) * (1 - 0.1 * 0.5), 7);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // The smoke preset's DAPO section: no decay, the weight stays.
    const plain = await dapoOptimizer(model, resolveConfig({}, 'smoke'), 0.1);
    const fixed = model.getParameter(name);
    await plain.step();
    expect(model.getParameter(name)).toEqual(fixed);
  });

  it("reach the SFT phases: sftEpochs' weight decay is the section's", async () => {
    const sample = { tokens: Int32Array.from([1, 2, 3, 4, 5]), lossMask: Uint8Array.from([0, 1, 1, 1, 1]) };
    const run = async (weightDecay: number) => {
      const { model, tokenizer } = tinyPolicy();
      const optimizer = { weightDecay, beta1: 0.9, beta2: 0.999, eps: 1e-8, maxGradNorm: 1 };
      const o = { epochs: 1, batchSize: 1, lr: 0.01, warmupRatio: 0, seed: 1, stage: 'rft', optimizer };
      await sftEpochs({ model, tokenizer } as Policy, [sample], o, { log: () => {} });
      return { model, w: weights(model) };
    };
    const { model: fresh } = tinyPolicy();
    const w0 = weights(fresh);
    const a = await run(0);
    const b = await run(0.5);
    // One step at lr 0.01: the decayed weights differ from the undecayed by lr · wd · w.
    const k = a.model.parameters().findIndex((p) => p.name.endsWith('mlp.up_proj.weight'));
    for (const i of [0, 7, 100])
      expect((a.w[k] as Float32Array)[i] as number).toBeCloseTo(
        ((b.w[k] as Float32Array)[i] as number) + 0.01 * 0.5 * ((w0[k] as Float32Array)[i] as number),
        6,
      );
  });
});

describe('evaluation limits and splits', () => {
  it("evalLimits: the last DAPO stage's with 'last-stage', the episode's otherwise", () => {
    const stages = [
      { iterations: 1, maxTurns: 4, maxContextTokens: 2048, tasksPerIteration: 2 },
      { iterations: 1, maxTurns: 5, maxContextTokens: 3072, tasksPerIteration: 2 },
    ];
    const c = resolveConfig({ dapo: { stages, turnPenalty: true, turnPenaltyThreshold: 3 } }, 'smoke');
    expect(evalLimits(c)).toEqual({ maxTurns: 5, maxContextTokens: 3072, turnPenaltyThreshold: 3 });
    const episode = resolveConfig({ eval: { limits: 'episode' }, dapo: { stages } }, 'smoke');
    expect(evalLimits(episode)).toEqual({ maxTurns: 6, maxContextTokens: 2048, turnPenaltyThreshold: null });
    const noDapo = resolveConfig({ dapo: { enabled: false, stages } }, 'smoke');
    expect(evalLimits(noDapo).maxTurns).toBe(noDapo.episode.maxTurns);
  });

  it('tasksFor: a tasks file gives validation rows just before the held-out ones; the generated suite a split of its own', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'swerl-splits-'));
    try {
      const rows = Array.from({ length: 10 }, (_, i) => ({
        instance_id: `r__${i}`,
        repo: 'r',
        problem_statement: 'p',
        patch: '',
        test_patch: '',
        FAIL_TO_PASS: ['test/a.test.js::t'],
        PASS_TO_PASS: [],
        files: { 'a.js': '', 'test/a.test.js': '' },
      }));
      const file = join(dir, 'tasks.json');
      writeFileSync(file, JSON.stringify(rows));
      const c = resolveConfig(
        { tasksFile: file, evalTasks: 3, eval: { validationTasks: 2 }, warmStart: { enabled: false } },
        'smoke',
      );
      const s = await tasksFor(c);
      expect(s.train.map((t) => t.instance_id)).toEqual(['r__0', 'r__1', 'r__2', 'r__3', 'r__4']);
      expect((await s.validation.tasks).map((t) => t.instance_id)).toEqual(['r__5', 'r__6']);
      expect((await s.heldOut.tasks).map((t) => t.instance_id)).toEqual(['r__7', 'r__8', 'r__9']);
      const g = await tasksFor(
        resolveConfig({ eval: { validationTasks: 3 }, miniSwe: { testTasks: 3, distinctSites: true } }, 'smoke'),
      );
      const [val, test] = [await g.validation.tasks, await g.heldOut.tasks];
      expect([g.validation.count, val.length]).toEqual([3, 3]);
      // Disjoint by bug site: no validation task shares a patch with a test or training task.
      const patches = new Set([...test, ...g.train].map((t) => t.patch));
      expect(val.some((t) => patches.has(t.patch))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe.skipIf(!canSandbox)('DAPO stage settings reach the rollouts and the loss', () => {
  /** Records every policyStep's batch size and loss config. */
  function spySteps() {
    const calls: { n: number; cfg: Record<string, unknown> }[] = [];
    const original = Trainer.prototype.policyStep;
    vi.spyOn(Trainer.prototype, 'policyStep').mockImplementation(function (this: Trainer, batch, cfg, o) {
      calls.push({ n: batch.length, cfg: { ...(cfg ?? {}) } });
      return original.call(this, batch, cfg, o);
    });
    return calls;
  }

  it('G, the clip range and the batch size: ceil(n / batch) steps of batch samples, the last one smaller', async () => {
    const p = tinyPolicy({ kvBlocks: 1024 }) as Policy;
    const tasks = await generateMiniSweTasks({ count: 1, seed: 5, difficulty: 0 });
    // Flat groups trained (dropZeroAdvantage false) so that a random model's samples reach the trainer.
    const c = resolveConfig(
      {
        dapo: { samplesPerTask: 2, stepsPerIteration: 2, dropZeroAdvantage: false, maskFormatErrors: false },
        episode: { maxTokensPerTurn: 6 },
      },
      'smoke',
    );
    const calls = spySteps();
    const stage = stageOf(c, { maxTurns: 1, samplesPerTask: 5, clipLow: 0.1, clipHigh: 0.4, batchSize: 2 });
    const opt = new AdamW(p.model, { lr: 0 });
    const { metrics, records } = await dapoIteration(p, tasks, c, stage, 1, opt, { log: () => {} });
    expect(records).toHaveLength(5); // the stage's G, not the dapo section's 2
    expect([metrics.trainedSamples, metrics.steps, metrics.samplesPerStep]).toEqual([5, 3, 2]);
    expect(calls.map((x) => x.n)).toEqual([2, 2, 1]);
    for (const x of calls) expect(x.cfg).toMatchObject({ clipLow: 0.1, clipHigh: 0.4 });
    expect(dapoLossConfig(c, stage)).toMatchObject({ clipLow: 0.1, clipHigh: 0.4 });
    // batchSize 0: dapo.stepsPerIteration steps that share the samples.
    calls.length = 0;
    const fixed = await dapoIteration(p, tasks, c, { ...stage, batchSize: 0 }, 2, opt, { log: () => {} });
    expect([fixed.metrics.steps, calls.map((x) => x.n)]).toEqual([2, [3, 2]]);
  }, 120_000);

  it('dapo.turnPenalty: off, rewards without the penalty; on, the stage threshold below maxTurns penalises', async () => {
    const p = tinyPolicy({ kvBlocks: 1024 }) as Policy;
    const tasks = await generateMiniSweTasks({ count: 1, seed: 5, difficulty: 0 });
    const rewards = async (turnPenalty: boolean) => {
      const c = resolveConfig(
        { dapo: { samplesPerTask: 2, refillRounds: 0, turnPenalty, turnPenaltyThreshold: 5 } },
        'smoke',
      );
      // Two turns at most, the threshold 1: a random model never submits, so both episodes run 2 turns.
      const stage = stageOf(c, { maxTurns: 2, turnPenaltyThreshold: 1, samplesPerTask: 2 });
      const { records } = await dapoIteration(p, tasks, c, stage, 1, new AdamW(p.model, { lr: 0 }), {
        log: () => {},
      });
      expect(records.map((r) => r.turns.length)).toEqual([2, 2]);
      return records.map((r) => r.reward);
    };
    expect(await rewards(false)).toEqual([0, 0]);
    expect(await rewards(true)).toEqual([-1, -1]);
  }, 120_000);

  it("evaluations run at the last stage's turn limit ('last-stage'), else the episode's", async () => {
    const p = tinyPolicy({ kvBlocks: 1024 }) as Policy;
    const tasks = await generateMiniSweTasks({ count: 1, seed: 5, difficulty: 0 });
    const stages = [{ iterations: 1, maxTurns: 2, maxContextTokens: 2048, tasksPerIteration: 1 }];
    const over = { episode: { maxTurns: 1, maxTokensPerTurn: 6 }, eval: { k: 1 }, dapo: { stages } };
    const turns = async (limits: 'last-stage' | 'episode') => {
      const c = resolveConfig({ ...over, eval: { k: 1, limits } }, 'smoke');
      const r = await evaluate(p, tasks, c, 'base', { log: () => {} });
      return r.records.map((x) => x.turns.length);
    };
    expect(await turns('last-stage')).toEqual([2]);
    expect(await turns('episode')).toEqual([1]);
  }, 120_000);
});

/**
 * An engine whose every session answers with `responses` in turn (the same conversation under
 * any prompt): one episode's responses replayed, so that two prompts give the same trajectory.
 */
function scriptedEngine(p: Policy, responses: string[], seeds: number[] = []): Policy['engine'] {
  const imEnd = p.tokenizer.tokenToId('<|im_end|>') as number;
  const session = () => {
    let turn = 0;
    const s = {
      generate: async (r: { maxTokens: number; sampling?: { seed?: number } }) => {
        if (r.sampling?.seed !== undefined) seeds.push(r.sampling.seed);
        if (r.maxTokens === 0)
          return { tokens: new Int32Array(0), logprobs: new Float32Array(0), finishReason: 'length', cachedTokens: 0 };
        const text = responses[Math.min(turn++, responses.length - 1)] as string;
        const tokens = Int32Array.from([...p.tokenizer.encode(text, { specials: false }), imEnd]);
        return { tokens, logprobs: new Float32Array(tokens.length).fill(-0.25), finishReason: 'stop', cachedTokens: 0 };
      },
      fork: () => session(),
      close: () => {},
    };
    return s;
  };
  // stats(): the stages read the engine's busy time around their rollouts (the real engine's, here).
  return { openSession: session, stats: () => p.engine.stats() } as unknown as Policy['engine'];
}

describe.skipIf(!canSandbox)('rft.oneShot', () => {
  it('samples with the demonstration in the system prompt and trains on the normal prompt', async () => {
    const [task] = (await generateMiniSweTasks({ count: 1, seed: 2, difficulty: 0 })) as [SweTask];
    const c = resolveConfig(
      {
        episode: { maxTurns: 30, maxTokensPerTurn: 512, maxContextTokens: 16384, concurrency: 2, prompt: 'compact' },
        engine: { kvBlocks: 2048 },
        rft: { oneShot: true, samplesPerTask: 1, epochs: 1, batchSize: 1 },
        dapo: { enabled: false },
      },
      'smoke',
    );
    const expert = await runEpisode({ task, policy: expertPolicy(task), maxTurns: 30, prompt: 'compact' });
    const responses = expert.messages.filter((m: AgentMessage) => m.role === 'assistant').map((m) => m.content);
    const base = tinyPolicy({ kvBlocks: 1024 }) as Policy;
    const policy = { ...base, engine: scriptedEngine(base, responses) };
    const o = {
      engine: policy.engine,
      tokenizer: policy.tokenizer,
      tasks: [task],
      maxTurns: 30,
      prompt: 'compact' as const,
    };
    const o2 = { ...o, maxTokensPerTurn: 512, maxContextTokens: 16384 };
    const [plain] = await runRollouts(o2);
    const [shot] = await runRollouts({ ...o2, oneShot: true });
    if (!plain || !shot) throw new Error('no records');
    expect([plain.resolved, shot.resolved]).toEqual([true, true]);
    const demo = oneShotDemonstration('compact');
    expect(policy.tokenizer.decode(shot.tokens)).toContain(demo);
    expect(policy.tokenizer.decode(plain.tokens)).not.toContain(demo);
    // The record under the normal prompt, exactly: the same tokens after the system message.
    const prompts = { sampled: systemPrompt('compact', { oneShot: true }), trained: systemPrompt('compact') };
    const swapped = withSystemPrompt(shot, prompts, policy.tokenizer);
    expect(Array.from(swapped.tokens)).toEqual(Array.from(plain.tokens));
    expect(Array.from(swapped.assistantMask)).toEqual(Array.from(plain.assistantMask));
    expect(Array.from(swapped.logprobs)).toEqual(Array.from(plain.logprobs));
    expect(swapped.turns).toEqual(plain.turns);
    expect(() => withSystemPrompt(plain, prompts, policy.tokenizer)).toThrow(/does not begin with the system prompt/);

    // rft(): its rollouts hold the demonstration; its training is SFT on the normal-prompt record.
    const saved: string[] = [];
    const hooks = {
      log: () => {},
      rollouts: (_: string, records: { tokens: Int32Array }[]) => {
        for (const r of records) saved.push(policy.tokenizer.decode(r.tokens));
      },
    };
    const s = await rft(policy, [task], c, hooks);
    expect([s.kept, s.steps]).toEqual([1, 1]);
    expect(saved[0]).toContain(demo);
    const sft = { ...c.rft, seed: c.seed + 11, stage: 'rft' };
    const expected = tinyPolicy({ kvBlocks: 1024 }) as Policy;
    await sftEpochs(expected, rftSamples([plain]), sft, { log: () => {} });
    expect(weights(policy.model)).toEqual(weights(expected.model));
    const withDemo = tinyPolicy({ kvBlocks: 1024 }) as Policy;
    await sftEpochs(withDemo, rftSamples([shot]), sft, { log: () => {} });
    expect(weights(withDemo.model)).not.toEqual(weights(policy.model));
  }, 180_000);
});

describe.skipIf(!canSandbox)('in-run validation', () => {
  it('reads the validation split, never the test split; summary and state count its tasks', async () => {
    const out = mkdtempSync(join(tmpdir(), 'swerl-val-'));
    try {
      const c = resolveConfig(
        {
          miniSwe: { testTasks: 2 },
          episode: { maxTurns: 2, maxTokensPerTurn: 16 },
          warmStart: { epochs: 1 },
          eval: { k: 1, every: 1, validationTasks: 2 },
          rft: { enabled: false },
          dapo: {
            samplesPerTask: 2,
            refillRounds: 0,
            stages: [{ iterations: 2, maxTurns: 2, maxContextTokens: 2048, tasksPerIteration: 2 }],
          },
        },
        'smoke',
      );
      const summary = await runPipeline(c, { out });
      expect([summary.testTasks, summary.validationTasks]).toEqual([2, 2]);
      const state = JSON.parse(readFileSync(join(out, 'state.json'), 'utf8'));
      expect(state.validationTasks).toBe(2);
      expect(state.done).toContain('val-dapo-s1-i001');
      const ids = async (phase: string) =>
        new Set((await readRollouts(join(out, 'rollouts', `${phase}.msgpack`))).map((r) => r.instance_id));
      const val = await ids('val-dapo-s1-i001');
      const test = new Set([...(await ids('eval-base')), ...(await ids('eval-dapo'))]);
      const { validation } = await tasksFor(c);
      expect(val).toEqual(new Set((await validation.tasks).map((t) => t.instance_id)));
      expect([...val].filter((id) => test.has(id))).toEqual([]);
      const events = readFileSync(join(out, 'metrics.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(events.find((e) => e.event === 'validation')).toMatchObject({ phase: 'val-dapo-s1-i001', tasks: 2 });
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 300_000);
});

describe.skipIf(!canSandbox)('rft.minKept (RFT in rounds)', () => {
  it('samples again from the fine-tuned policy with fresh seeds until minKept are kept, at most maxRounds', async () => {
    const [task] = (await generateMiniSweTasks({ count: 1, seed: 2, difficulty: 0 })) as [SweTask];
    const expert = await runEpisode({ task, policy: expertPolicy(task), maxTurns: 30, prompt: 'compact' });
    const responses = expert.messages.filter((m: AgentMessage) => m.role === 'assistant').map((m) => m.content);
    const config = (rounds: Record<string, number>) =>
      resolveConfig(
        {
          episode: { maxTurns: 30, maxTokensPerTurn: 512, maxContextTokens: 16384, concurrency: 2, prompt: 'compact' },
          engine: { kvBlocks: 2048 },
          rft: { samplesPerTask: 1, epochs: 1, batchSize: 1, ...rounds },
          dapo: { enabled: false },
        },
        'smoke',
      );
    const roundsOf = async (rounds: Record<string, number>) => {
      const base = tinyPolicy({ kvBlocks: 1024 }) as Policy;
      const seeds: number[] = [];
      const policy = { ...base, engine: scriptedEngine(base, responses, seeds) };
      const files: string[] = [];
      const logged: Record<string, unknown>[] = [];
      const hooks = { log: (e: Record<string, unknown>) => logged.push(e), rollouts: (f: string) => files.push(f) };
      const s = await rft(policy, [task], config(rounds), hooks);
      return { s, files, seeds, policy, rounds: logged.filter((e) => e.event === 'rollouts') };
    };
    // Each round keeps the one resolved trajectory: three rounds reach minKept 3 (of at most 5).
    const three = await roundsOf({ minKept: 3, maxRounds: 5 });
    expect([three.s.rounds, three.s.kept, three.s.episodes, three.s.steps]).toEqual([3, 3, 3, 3]);
    expect(three.files).toEqual(['rft', 'rft-r2', 'rft-r3']);
    expect(three.rounds.map((e) => e.round)).toEqual([undefined, 2, 3]);
    // Every round's sample has a seed of its own (the round is in the hash).
    const perRound = three.seeds.length / 3;
    const roundSeeds = [0, 1, 2].map((r) => three.seeds[r * perRound]);
    expect(new Set(roundSeeds).size).toBe(3);
    // Round 0 draws the seeds RFT always drew; round r those of its own key.
    const c = config({ minKept: 3, maxRounds: 5 });
    expect(roundSeeds).toEqual(
      [0, 1, 2].map((round) => rolloutSeeds({ run: c.seed, phase: 'rft', iteration: 0, round }, [task])(0, 0)),
    );
    // The rounds fine-tune one after another: the weights of three SFT calls in a row.
    const expected = tinyPolicy({ kvBlocks: 1024 }) as Policy;
    const [record] = await runRollouts({
      engine: scriptedEngine(expected, responses),
      tokenizer: expected.tokenizer,
      tasks: [task],
      maxTurns: 30,
      maxTokensPerTurn: 512,
      maxContextTokens: 16384,
      prompt: 'compact',
    });
    if (!record) throw new Error('no record');
    for (let r = 0; r < 3; r++)
      await sftEpochs(
        expected,
        rftSamples([record]),
        { ...c.rft, seed: c.seed + 11 + 7919 * r, stage: 'rft' },
        {
          log: () => {},
        },
      );
    expect(weights(three.policy.model)).toEqual(weights(expected.model));
    // maxRounds bounds the rounds; minKept 0 (the default) is one round.
    const capped = await roundsOf({ minKept: 10, maxRounds: 2 });
    expect([capped.s.rounds, capped.s.kept, capped.files.length]).toEqual([2, 2, 2]);
    const one = await roundsOf({ maxRounds: 4 });
    expect([one.s.rounds, one.s.kept, one.files]).toEqual([1, 1, ['rft']]);
  }, 240_000);

  it('refuses maxRounds 0', () => {
    expect(() => resolveConfig({ rft: { maxRounds: 0 } })).toThrow(/rft\.maxRounds/);
  });
});

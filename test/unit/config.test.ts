/**
 * The config schema (src/pipeline/config.ts) and resolveConfig: each preset resolves to the config
 * pinned in test/fixtures/config-presets.json (values and key order, so that a run's configHash is
 * unchanged); an unknown key at any level names every valid key of its object; a bad value of each
 * field kind names its path, what it must be and what it is; a DAPO stage takes its per-stage
 * settings from the dapo section unless it sets its own; the rules between fields refuse with the
 * field's path; presets are never changed by a resolve. A fast-check property: random overrides
 * either resolve to a config that validates again (and resolves to itself) or throw
 * INVALID_CONFIG, never another error.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { EMBEDDED_PRESETS } from '../../src/embedded/presets.js';
import { loadConfig, type PipelineConfig, PRESETS, resolveConfig, SwerlError } from '../../src/index.js';
import { pipelineConfigSchema } from '../../src/pipeline/config.js';

const pinned = JSON.parse(readFileSync(new URL('../fixtures/config-presets.json', import.meta.url), 'utf8')) as Record<
  'default' | 'smoke' | 'paper',
  PipelineConfig
>;
/** The paper preset needs a model and a tasks file; the pin resolves it with these. */
const paperFiles = { modelDir: 'model', tasksFile: 'tasks.jsonl' };

/** The INVALID_CONFIG message of resolveConfig(overrides, preset), or 'ok'. */
function refusal(overrides: unknown, preset = 'default'): string {
  try {
    resolveConfig(overrides, preset);
    return 'ok';
  } catch (e) {
    if (!(e instanceof SwerlError) || e.code !== 'INVALID_CONFIG') throw e;
    return e.message;
  }
}

/** The message's start: `config field <path> must be <expected>, got <value>`. */
const head = (message: string) => message.replace(/; see docs\/training\.md, "Configs"$/, '');

const stage = (o: Record<string, unknown> = {}) => ({
  iterations: 1,
  maxTurns: 7,
  maxContextTokens: 3072,
  tasksPerIteration: 4,
  ...o,
});

describe('presets', () => {
  it('each resolves to its pinned config, values and key order', () => {
    const resolved = {
      default: resolveConfig({}, 'default'),
      smoke: resolveConfig({}, 'smoke'),
      paper: resolveConfig(paperFiles, 'paper'),
    };
    for (const name of ['default', 'smoke', 'paper'] as const) {
      expect(resolved[name]).toEqual(pinned[name]);
      // Same keys in the same order: the run folder's configHash is JSON.stringify's.
      expect(JSON.stringify(resolved[name])).toBe(JSON.stringify(pinned[name]));
    }
    expect(resolveConfig()).toEqual(pinned.default);
    expect(Object.keys(PRESETS)).toEqual(['default', 'smoke', 'paper']);
    expect(Object.keys(EMBEDDED_PRESETS)).toEqual(['default', 'smoke']);
  });

  it('the paper preset has the paper values and needs a model folder and a tasks file', () => {
    const p = resolveConfig(paperFiles, 'paper');
    expect(p.dapo.stages.map((s) => [s.maxTurns, s.maxContextTokens, s.tasksPerIteration, s.batchSize])).toEqual([
      [40, 65536, 300, 128],
      [80, 131072, 100, 256],
    ]);
    expect(p.dapo.stages.map((s) => [s.samplesPerTask, s.clipLow, s.clipHigh, s.turnPenaltyThreshold])).toEqual([
      [10, 0.2, 0.3, 10],
      [10, 0.2, 0.26, 10],
    ]);
    expect([p.dapo.lr, p.dapo.klCoef, p.dapo.easyTaskThreshold, p.rft.lr, p.rft.oneShot]).toEqual([
      1e-6,
      0,
      2 / 3,
      5e-6,
      true,
    ]);
    expect([p.rft.optimizer.weightDecay, p.dapo.optimizer.weightDecay, p.warmStart.enabled]).toEqual([0.1, 0.1, false]);
    expect(head(refusal({}, 'paper'))).toBe(
      "config field modelDir must be a model folder and a tasks file with preset 'paper' (it trains a real model on real tasks), got null",
    );
    expect(refusal({ modelDir: 'm' }, 'paper')).toMatch(/^config field tasksFile must be a model folder/);
  });

  it('an unknown preset names the presets', () => {
    expect(head(refusal({}, 'big'))).toBe('config field preset must be default | smoke | paper, got "big"');
    expect(refusal({}, 'toString')).toMatch(/^config field preset must be default/);
  });

  it('are frozen and never changed by a resolve; every resolve returns fresh objects', () => {
    const before = structuredClone(PRESETS);
    expect(Object.isFrozen(PRESETS.default?.dapo?.stages?.[0])).toBe(true);
    expect(Object.isFrozen(PRESETS.smoke?.miniSwe?.kinds)).toBe(true);
    const a = resolveConfig({ dapo: { clipHigh: 0.3 }, miniSwe: { trainTasks: 40 } }, 'default');
    const b = resolveConfig({}, 'default');
    (a.dapo.stages[0] as { iterations: number }).iterations = 99;
    a.miniSwe.kinds?.push('off-by-one');
    a.warmStart.optimizer.beta1 = 0.5;
    a.eval.k = 1;
    expect(b).toEqual(pinned.default);
    expect(resolveConfig({}, 'default')).toEqual(pinned.default);
    // A failed resolve changes nothing either.
    expect(refusal({ dapo: { stages: [stage({ clipHigh: -1 })] } })).toMatch(/dapo\.stages\[0\]\.clipHigh/);
    expect(PRESETS).toEqual(before);
    expect(resolveConfig({}, 'smoke')).toEqual(pinned.smoke);
  });
});

describe('unknown keys', () => {
  it('at the top level name every valid key, sections included', () => {
    const message = refusal({ dapoo: { lr: 1 } }, 'smoke');
    expect(message).toMatch(/^config field dapoo must be one of /);
    for (const k of [
      'preset',
      'seed',
      'modelDir',
      'tasksFile',
      'evalTasks',
      'saveRollouts',
      'miniSwe',
      'embeddedModel',
      'sandbox',
      'engine',
      'episode',
      'warmStart',
      'tokenizer',
      'eval',
      'rft',
      'dapo',
      'checkpoints',
    ])
      expect(message).toContain(k);
    expect(message).toMatch(/, got "dapoo"; see docs\/training\.md, "Configs"$/);
  });

  it.each([
    [
      { episode: { maxTurn: 5 } },
      'config field episode.maxTurn must be one of maxTurns, maxTokensPerTurn, maxContextTokens, commandTimeoutMs, episodeTimeoutMs, concurrency, maxObservationChars, maskTimings, prompt, got "maxTurn"',
    ],
    [{ sandbox: { img: 'x' } }, 'config field sandbox.img must be one of kind, image, got "img"'],
    [{ checkpoints: { kept: 'all' } }, 'config field checkpoints.kept must be one of keep, got "kept"'],
    [
      { dapo: { stages: [stage(), stage({ clip: 0.2 })] } },
      'config field dapo.stages[1].clip must be one of iterations, maxTurns, maxContextTokens, tasksPerIteration, samplesPerTask, clipLow, clipHigh, batchSize, turnPenaltyThreshold, got "clip"',
    ],
    [
      { rft: { optimizer: { lr: 1e-5 } } },
      'config field rft.optimizer.lr must be one of weightDecay, beta1, beta2, eps, maxGradNorm, got "lr"',
    ],
    [{ dapo: { optimizer: { momentum: 0.9 } } }, 'config field dapo.optimizer.momentum must be one of weightDecay'],
    [{ warmStart: { optimizer: { decay: 0 } } }, 'config field warmStart.optimizer.decay must be one of weightDecay'],
  ])('in %j name the keys of that object', (overrides, expected) => {
    expect(head(refusal(overrides))).toContain(expected);
  });

  it('an unknown key is reported before other faults, and keys such as __proto__ are keys', () => {
    expect(refusal({ dapo: { lr: -1 }, episode: { turns: 3 } })).toMatch(/^config field episode\.turns must be one of/);
    expect(refusal(JSON.parse('{"__proto__": {"seed": 5}}'))).toMatch(/^config field __proto__ must be one of/);
    expect(refusal(JSON.parse('{"dapo": {"constructor": 1}}'))).toMatch(/^config field dapo\.constructor must be/);
  });
});

describe('bad values name the field, what it must be and what it is', () => {
  it.each([
    // integers > 0
    [{ evalTasks: 0 }, 'evalTasks must be an integer greater than 0, got 0'],
    [{ episode: { maxTurns: 2.5 } }, 'episode.maxTurns must be an integer greater than 0, got 2.5'],
    [{ dapo: { samplesPerTask: '8' } }, 'dapo.samplesPerTask must be an integer greater than 0, got "8"'],
    [{ engine: { kvBlocks: null } }, 'engine.kvBlocks must be an integer greater than 0, got null'],
    // integers >= 0 and ranges
    [{ seed: -1 }, 'seed must be an integer, 0 or more, got -1'],
    [{ warmStart: { copySteps: 1.5 } }, 'warmStart.copySteps must be an integer, 0 or more, got 1.5'],
    [{ miniSwe: { difficulty: 4 } }, 'miniSwe.difficulty must be an integer in [0, 3], got 4'],
    [{ tokenizer: { vocabSize: 299 } }, 'tokenizer.vocabSize must be an integer, at least 300, got 299'],
    // numbers
    [{ warmStart: { noise: 1.5 } }, 'warmStart.noise must be a number in [0, 1], got 1.5'],
    [{ warmStart: { foreignFormat: -0.1 } }, 'warmStart.foreignFormat must be a number in [0, 1], got -0.1'],
    [{ rft: { lr: -1e-4 } }, 'rft.lr must be a number, 0 or more, got -0.0001'],
    [{ dapo: { clipHigh: 'wide' } }, 'dapo.clipHigh must be a number, 0 or more, got "wide"'],
    [{ dapo: { optimizer: { eps: 0 } } }, 'dapo.optimizer.eps must be a number greater than 0, got 0'],
    [{ rft: { optimizer: { beta1: 1 } } }, 'rft.optimizer.beta1 must be a number in [0, 1), got 1'],
    [{ warmStart: { optimizer: { beta2: -0.5 } } }, 'warmStart.optimizer.beta2 must be a number in [0, 1), got -0.5'],
    [{ dapo: { easyTaskThreshold: 0 } }, 'dapo.easyTaskThreshold must be a number in (0, 1], got 0'],
    [{ dapo: { easyTaskThreshold: 1.2 } }, 'dapo.easyTaskThreshold must be a number in (0, 1], got 1.2'],
    // enums, booleans, strings
    [{ checkpoints: { keep: 'some' } }, "checkpoints.keep must be 'stages' | 'all' | 'last', got \"some\""],
    [{ episode: { prompt: 'long' } }, "episode.prompt must be 'auto' | 'paper' | 'compact', got \"long\""],
    [{ dapo: { agg: 'sum' } }, "dapo.agg must be 'token-mean' | 'seq-mean-token-mean' |"],
    [{ saveRollouts: 'yes' }, 'saveRollouts must be true or false, got "yes"'],
    [{ rft: { oneShot: 1 } }, 'rft.oneShot must be true or false, got 1'],
    [{ modelDir: 3 }, 'modelDir must be a model folder or null, got 3'],
    [{ tasksFile: false }, 'tasksFile must be a tasks file or null, got false'],
    [{ sandbox: { image: 7 } }, 'sandbox.image must be an image name, got 7'],
    [{ preset: 5 }, 'preset must be a preset name, got 5'],
    // arrays and objects
    [{ miniSwe: { kinds: [] } }, 'miniSwe.kinds must be null or a non-empty array of operator-swap,'],
    [{ miniSwe: { kinds: ['typo'] } }, "miniSwe.kinds[0] must be 'operator-swap' | "],
    [{ dapo: { stages: [] } }, 'dapo.stages must be a non-empty array, got []'],
    [{ dapo: { stages: {} } }, 'dapo.stages must be a non-empty array, got {}'],
    [{ dapo: { stages: [stage(), 3] } }, 'dapo.stages[1] must be an object, got 3'],
    [{ checkpoints: 'all' }, 'checkpoints must be an object, got "all"'],
    [{ dapo: { optimizer: [] } }, 'dapo.optimizer must be an object, got []'],
    [{ eval: null }, 'eval must be an object, got null'],
    [[], 'config must be an object, got []'],
    [null, 'config must be an object, got null'],
    // a stage: its four required fields, and its own settings
    [
      { dapo: { stages: [{ iterations: 1 }] } },
      'dapo.stages[0].maxTurns must be an integer greater than 0, got undefined',
    ],
    [{ dapo: { stages: [stage({ iterations: -1 })] } }, 'dapo.stages[0].iterations must be an integer, 0 or more'],
    [{ dapo: { stages: [stage({ clipLow: 2 })] } }, 'dapo.stages[0].clipLow must be a number in [0, 1], got 2'],
    [{ dapo: { stages: [stage({ clipHigh: -1 })] } }, 'dapo.stages[0].clipHigh must be a number, 0 or more, got -1'],
    [{ dapo: { stages: [stage({ batchSize: 0.5 })] } }, 'dapo.stages[0].batchSize must be an integer, 0 or more'],
    [
      { dapo: { stages: [stage({ turnPenaltyThreshold: 0 })] } },
      'dapo.stages[0].turnPenaltyThreshold must be an integer',
    ],
  ])('%j', (overrides, expected) => {
    const message = refusal(overrides);
    expect(message.startsWith(`config field ${expected}`), message).toBe(true);
    expect(message).toMatch(/; see docs\/training\.md, "Configs"$/);
  });

  it('is a SwerlError with code INVALID_CONFIG', () => {
    expect(() => resolveConfig({ seed: 'one' })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }));
    expect(() => resolveConfig({ seed: 'one' })).toThrow(SwerlError);
  });
});

describe('DAPO stages', () => {
  it("take samplesPerTask, clipLow, clipHigh, batchSize and turnPenaltyThreshold from the dapo section's", () => {
    const c = resolveConfig({
      dapo: {
        samplesPerTask: 6,
        clipLow: 0.1,
        clipHigh: 0.3,
        batchSize: 16,
        turnPenaltyThreshold: 4,
        stages: [stage(), stage({ samplesPerTask: 10, clipHigh: 0.26, batchSize: 0, turnPenaltyThreshold: 6 })],
      },
    });
    expect(c.dapo.stages).toEqual([
      { ...stage(), samplesPerTask: 6, clipLow: 0.1, clipHigh: 0.3, batchSize: 16, turnPenaltyThreshold: 4 },
      { ...stage(), samplesPerTask: 10, clipLow: 0.1, clipHigh: 0.26, batchSize: 0, turnPenaltyThreshold: 6 },
    ]);
    // A preset's stages too: the default preset's one stage takes the section's values.
    const d = resolveConfig({ dapo: { clipHigh: 0.25, turnPenalty: true, turnPenaltyThreshold: 5 } }).dapo;
    expect([d.stages[0]?.clipHigh, d.stages[0]?.samplesPerTask, d.stages[0]?.turnPenaltyThreshold]).toEqual([
      0.25, 8, 5,
    ]);
  });

  it('are replaced whole by a config, not merged by index', () => {
    const c = resolveConfig({ ...paperFiles, dapo: { stages: [stage({ iterations: 2, maxTurns: 40 })] } }, 'paper');
    expect(c.dapo.stages).toHaveLength(1);
    expect(c.dapo.stages[0]).toMatchObject({ iterations: 2, batchSize: 128, clipHigh: 0.3 });
  });

  it('need groups of at least 2 samples while DAPO is on', () => {
    expect(head(refusal({ dapo: { samplesPerTask: 1 } }))).toBe(
      'config field dapo.samplesPerTask must be at least 2 (a group), got 1',
    );
    expect(head(refusal({ dapo: { stages: [stage({ samplesPerTask: 1 })] } }))).toBe(
      'config field dapo.stages[0].samplesPerTask must be at least 2 (a group), got 1',
    );
    expect(refusal({ dapo: { enabled: false, samplesPerTask: 1 } })).toBe('ok');
  });
});

describe('rules between fields', () => {
  it.each([
    [
      { embeddedModel: { heads: 3 } },
      'embeddedModel.heads must be a divisor of hiddenSize 128 leaving an even head size',
    ],
    [{ embeddedModel: { kvHeads: 3 } }, 'embeddedModel.kvHeads must be a divisor of heads 4, got 3'],
    [
      { engine: { kvBlocks: 100 } },
      'engine.kvBlocks must be at least 198 (16-token blocks for the longest episode), got 100',
    ],
    [
      { dapo: { stages: [stage({ maxContextTokens: 200_000 })] } },
      'engine.kvBlocks must be at least 12506 (16-token blocks for the longest episode), got 8192',
    ],
    [{ warmStart: { demoTasks: 64 } }, 'warmStart.demoTasks must be 0 or fewer than miniSwe.trainTasks (64)'],
    [
      { rft: { tasks: 32 } },
      'rft.tasks must be 0 or fewer than the RL tasks (miniSwe.trainTasks 64 less warmStart.demoTasks 32)',
    ],
    [{ engine: { backend: 'remote' } }, 'engine.url must be the server URL (backend remote), got undefined'],
    [{ engine: { backend: 'remote', url: 'http://h' } }, 'modelDir must be the served model folder'],
    [
      { engine: { backend: 'remote', url: 'http://h' }, modelDir: 'm' },
      "warmStart.enabled must be false with engine.backend 'remote'",
    ],
    [
      { engine: { backend: 'remote', url: 'http://h' }, modelDir: 'm', warmStart: { enabled: false } },
      "rft.enabled must be false with engine.backend 'remote'",
    ],
    [{ warmStart: { style: 'thorough' } }, "warmStart.style must be 'direct' with miniSwe.issue 'error'"],
    [{ tasksFile: 't.jsonl', warmStart: { freshFiles: true } }, 'warmStart.freshFiles must be false with a tasksFile'],
    [{ eval: { every: 2 } }, 'eval.validationTasks must be at least 1 with eval.every > 0'],
    [{ dapo: { topP: 0.9 } }, 'dapo.topP must be 1 (sampling filters bias the policy gradient without TIS'],
    [{ dapo: { topK: 20 } }, 'dapo.topK must be 0 (sampling filters'],
    [{ dapo: { minP: 0.05 } }, 'dapo.minP must be 0 (sampling filters'],
    [{ dapo: { temperature: 1e-6 } }, 'dapo.temperature must be a number, 1e-5 or more'],
  ])('%j', (overrides, expected) => {
    const message = refusal(overrides);
    expect(message.startsWith(`config field ${expected}`), message).toBe(true);
  });

  it('accept what the rules allow', () => {
    for (const overrides of [
      { embeddedModel: { hiddenSize: 96, heads: 6, kvHeads: 3 } },
      { modelDir: 'm', warmStart: { demoTasks: 64 } },
      { rft: { tasks: 31 } },
      { rft: { tasks: 40, enabled: false } },
      {
        engine: { backend: 'remote', url: 'http://h', model: 'q' },
        modelDir: 'm',
        warmStart: { enabled: false },
        rft: { enabled: false },
        dapo: { enabled: false },
      },
      { miniSwe: { issue: 'reproduction' }, warmStart: { style: 'thorough' } },
      { eval: { every: 2, validationTasks: 8 } },
      { engine: { kvBlocks: 198 } },
    ])
      expect(refusal(overrides), JSON.stringify(overrides)).toBe('ok');
  });
});

describe('loadConfig', () => {
  const dir = mkdtemp(join(tmpdir(), 'swerl-config-'));
  afterAll(async () => rm(await dir, { recursive: true, force: true }));

  it('reads a JSON config over its preset and refuses what resolveConfig refuses', async () => {
    const d = await dir;
    const file = async (name: string, text: string) => {
      await writeFile(join(d, name), text);
      return join(d, name);
    };
    const c = await loadConfig(
      await file('a.json', JSON.stringify({ preset: 'smoke', seed: 7, dapo: { clipHigh: 0.3 } })),
    );
    expect([c.preset, c.seed, c.dapo.clipHigh, c.dapo.stages[0]?.clipHigh]).toEqual(['smoke', 7, 0.3, 0.3]);
    expect(await loadConfig(await file('b.json', '{}'))).toEqual(pinned.default);
    const code = (p: Promise<unknown>) =>
      p.then(
        () => 'ok',
        (e: SwerlError) => `${e.code}: ${head(e.message)}`,
      );
    expect(await code(loadConfig(await file('c.json', '{"seed": 1,}')))).toMatch(
      /^INVALID_CONFIG: the config .* is not valid JSON/,
    );
    expect(await code(loadConfig(await file('d.json', '[1]')))).toBe(
      'INVALID_CONFIG: config field config must be a JSON object, got [1]',
    );
    expect(await code(loadConfig(await file('e.json', '{"preset": 1}')))).toBe(
      'INVALID_CONFIG: config field preset must be a preset name, got 1',
    );
    expect(await code(loadConfig(await file('f.json', '{"preset": "huge"}')))).toMatch(
      /^INVALID_CONFIG: config field preset must be default \| smoke \| paper/,
    );
    expect(await code(loadConfig(join(d, 'missing.json')))).toMatch(/^IO_ERROR: cannot read the config/);
  });
});

describe('random overrides (fast-check)', () => {
  /** Every enum value of the schema, and a few strings that are none. */
  const words = fc.constantFrom(
    ...['local', 'docker', 'remote', 'auto', 'paper', 'compact', 'thorough', 'direct', 'reproduction', 'error'],
    ...['core', 'wide', 'qwen2', 'identifiers', 'stems', 'last-stage', 'episode', 'constant', 'cosine'],
    ...['token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum', 'seq-mean-token-sum-norm', 'grpo', 'drgrpo'],
    ...['rloo', 'stages', 'all', 'last', 'misspelled-name', 'off-by-one', 'default', 'smoke', 'x', ''],
  );
  const anyJson = fc.jsonValue({ maxDepth: 2 });
  const numbers = fc.oneof(
    fc.constantFrom(0, 1, 2, 3, 5, 8, 0.2, 0.28, 0.5, 2 / 3, 0.999, 1e-8, -1, 1.5, 300, 8192, 100_000),
    fc.integer({ min: -2, max: 20_000 }),
    fc.double({ noNaN: true, noDefaultInfinity: true, min: -2, max: 2 }),
  );
  const unknownKey = fc.constantFrom('__proto__', 'constructor', 'toString', 'extra', 'lr2');

  /**
   * Overrides shaped like `template` (a resolved config): a few of its keys (a DAPO stage: its four
   * required ones and a few others), each with the template's value, another plausible one or any
   * JSON; now and then an unknown key, or any JSON in place of the object.
   */
  function like(template: unknown): fc.Arbitrary<unknown> {
    if (Array.isArray(template))
      return fc.oneof(
        { weight: 4, arbitrary: fc.array(template.length > 0 ? like(template[0]) : words, { maxLength: 3 }) },
        { weight: 1, arbitrary: anyJson },
      );
    if (typeof template === 'object' && template !== null) {
      const fields = Object.entries(template as Record<string, unknown>).map(([k, v]) => [k, like(v)] as const);
      const required = new Set(
        'tasksPerIteration' in template ? ['iterations', 'maxTurns', 'maxContextTokens', 'tasksPerIteration'] : [],
      );
      const optional = fields.filter(([k]) => !required.has(k));
      const some = fc
        .shuffledSubarray(optional, { maxLength: Math.min(3, optional.length) })
        .chain((chosen) => fc.record(Object.fromEntries([...fields.filter(([k]) => required.has(k)), ...chosen])));
      const withUnknown = fc.tuple(some, unknownKey, anyJson).map(([r, k, v]) => {
        const out: Record<string, unknown> = { ...(r as Record<string, unknown>) };
        Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
        return out;
      });
      return fc.oneof(
        { weight: 16, arbitrary: some },
        { weight: 1, arbitrary: withUnknown },
        { weight: 1, arbitrary: anyJson },
      );
    }
    const value =
      typeof template === 'number'
        ? numbers
        : typeof template === 'boolean'
          ? fc.boolean()
          : typeof template === 'string'
            ? words
            : fc.oneof(fc.constant(null), words, fc.array(words, { maxLength: 2 }));
    return fc.oneof(
      { weight: 4, arbitrary: fc.constant(template) },
      { weight: 4, arbitrary: value },
      { weight: 1, arbitrary: anyJson },
    );
  }

  it('either resolve to a config that validates again, or throw INVALID_CONFIG naming a field', () => {
    const template = {
      ...pinned.paper,
      engine: { ...pinned.paper.engine, url: 'http://h', model: 'm' },
      sandbox: { kind: 'docker', image: 'i' },
    };
    let resolved = 0;
    fc.assert(
      fc.property(fc.constantFrom('default', 'smoke', 'paper', 'nope'), like(template), (preset, overrides) => {
        let c: PipelineConfig;
        try {
          c = resolveConfig(overrides, preset);
        } catch (e) {
          expect(e).toBeInstanceOf(SwerlError);
          expect((e as SwerlError).code).toBe('INVALID_CONFIG');
          expect((e as Error).message).toMatch(
            /^config field \S.* must be \S.*, got .*; see docs\/training\.md, "Configs"$/s,
          );
          expect((e as Error).message).not.toMatch(/Invalid input|must be a value of type/);
          return;
        }
        resolved++;
        expect(pipelineConfigSchema.safeParse(c).success).toBe(true);
        expect(resolveConfig(c, preset)).toEqual(c);
        expect(c.dapo.stages.every((s) => Object.keys(s).length === 9)).toBe(true);
      }),
      { numRuns: 400, seed: 20261202 },
    );
    // The generator reaches valid configs too, not only refusals.
    expect(resolved).toBeGreaterThan(40);
  });
});

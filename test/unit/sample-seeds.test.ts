/**
 * Sampling seeds are hashes of what identifies a sample (run seed, phase, iteration, refill
 * round, task and its occurrence, sample): over a whole default-shaped schedule no two samples
 * share a seed unless all their keys are equal, where the old arithmetic bases (`c.seed · p +
 * iteration · 1009 + round · 7`, then `+ i·G + j`) gave a refill round's first sample the seed
 * of an earlier round's, every evaluation the same seeds, and iteration n's last rounds the
 * seeds of iteration n + 1's first. The pipeline's stages draw with exactly these seeds.
 */
import { describe, expect, it } from 'vitest';
import {
  dapoIteration,
  evaluate,
  generateMiniSweTasks,
  isolationAvailable,
  resolveConfig,
  rolloutSeeds,
  type SampleSeedKey,
  sampleSeed,
} from '../../src/index.js';
import type { Policy } from '../../src/pipeline/stages.js';
import { AdamW } from '../../src/train/adamw.js';
import { tinyPolicy } from '../helpers/tiny-policy.js';

const canSandbox = isolationAvailable('bwrap') || isolationAvailable('unshare');

/** The seeds before hashing, as evaluate, rft and dapoIteration computed them. */
function oldSeed(k: SampleSeedKey & { position: number; G: number }): number {
  const run = k.run;
  const base = k.phase.startsWith('dapo-')
    ? run * 15485863 + k.iteration * 1009 + k.round * 7
    : k.phase === 'rft'
      ? run * 104729 + 3
      : run * 7919 + 17; // every evaluation and validation
  return base + k.position * k.G + k.sample;
}

/**
 * Every sample of a run with the default preset's shape: base, RFT and final evaluations, each
 * DAPO iteration with all its refill rounds, and a validation after every iteration.
 */
function schedule(): (SampleSeedKey & { position: number; G: number })[] {
  const c = resolveConfig();
  const run = c.seed;
  const out: (SampleSeedKey & { position: number; G: number })[] = [];
  const add = (phase: string, iteration: number, round: number, ids: string[], G: number) =>
    ids.forEach((task, position) => {
      for (let sample = 0; sample < G; sample++) out.push({ run, phase, iteration, round, task, sample, position, G });
    });
  const train = Array.from({ length: c.miniSwe.trainTasks }, (_, i) => `mini-swe__train-${i}`);
  const test = Array.from({ length: c.miniSwe.testTasks }, (_, i) => `mini-swe__test-${i}`);
  const val = Array.from({ length: 12 }, (_, i) => `mini-swe__val-${i}`);
  add('eval-base', 0, 0, test, c.eval.k);
  add('rft', 0, 0, train, c.rft.samplesPerTask);
  add('eval-rft', 0, 0, test, c.eval.k);
  let iteration = 0;
  for (const [si, st] of c.dapo.stages.entries())
    for (let it = 0; it < st.iterations; it++) {
      iteration++;
      const phase = `dapo-s${si + 1}-i${String(iteration).padStart(3, '0')}`;
      for (let round = 0; round <= c.dapo.refillRounds; round++) {
        // Each round's tasks: the iteration's, then the spare ones it refills from.
        const first = (iteration * 5 + round * st.tasksPerIteration) % train.length;
        const ids = Array.from({ length: st.tasksPerIteration }, (_, i) => train[(first + i) % train.length] as string);
        add(phase, iteration, round, ids, st.samplesPerTask);
      }
      add(`val-${phase}`, iteration, 0, val, c.eval.k);
    }
  add('eval-dapo', 0, 0, test, c.eval.k);
  return out;
}

const keyOf = (k: SampleSeedKey) =>
  JSON.stringify([k.run, k.phase, k.iteration, k.round, k.task, k.occurrence ?? 0, k.sample]);

describe('sampleSeed', () => {
  it('gives no two samples of a default-shaped schedule the same seed; the old bases did', () => {
    const keys = schedule();
    expect(keys.length).toBeGreaterThan(1000);
    const seen = new Map<number, string>();
    let oldClashes = 0;
    const oldSeen = new Map<number, string>();
    for (const k of keys) {
      const s = sampleSeed(k);
      expect(Number.isSafeInteger(s) && s >= 0 && s < 2 ** 48).toBe(true);
      const prev = seen.get(s);
      // A seed seen before belongs to the same key (all six equal) or to none.
      if (prev !== undefined) expect(prev).toBe(keyOf(k));
      seen.set(s, keyOf(k));
      const o = oldSeed(k);
      const oprev = oldSeen.get(o);
      if (oprev !== undefined && oprev !== keyOf(k)) oldClashes++;
      oldSeen.set(o, keyOf(k));
    }
    expect(oldClashes).toBeGreaterThan(0);
  });

  it('separates the old scheme collisions: refill rounds, evaluations, neighbouring iterations', () => {
    const k = { run: 1, iteration: 1, G: 4 };
    // Round 1's first sample and round 0's second task's last sample (G = 4): base + 7 = base + 1·4 + 3.
    const r1 = { ...k, phase: 'dapo-s1-i001', round: 1, task: 'a', position: 0, sample: 0 };
    const r0 = { ...k, phase: 'dapo-s1-i001', round: 0, task: 'b', position: 1, sample: 3 };
    expect(oldSeed(r1)).toBe(oldSeed(r0));
    expect(sampleSeed(r1)).not.toBe(sampleSeed(r0));
    // Iteration 1's round 144 (1009 = 144·7 + 1) and iteration 2's round 0: 1·1009 + 144·7 + 1 = 2·1009.
    const late = { ...k, phase: 'dapo-s1-i001', round: 144, task: 'c', position: 0, sample: 1 };
    const next = { ...k, phase: 'dapo-s1-i002', iteration: 2, round: 0, task: 'd', position: 0, sample: 0 };
    expect(oldSeed(late)).toBe(oldSeed(next));
    expect(sampleSeed(late)).not.toBe(sampleSeed(next));
    // The base and the RFT evaluations: the same task and sample drew the same seed.
    const base = { ...k, phase: 'eval-base', iteration: 0, round: 0, task: 't', position: 0, sample: 0 };
    const afterRft = { ...base, phase: 'eval-rft' };
    expect(oldSeed(base)).toBe(oldSeed(afterRft));
    expect(sampleSeed(base)).not.toBe(sampleSeed(afterRft));
  });

  it('depends on every key, is a pure function of them, and refuses bad ones', () => {
    const k: SampleSeedKey = { run: 1, phase: 'rft', iteration: 0, round: 0, task: 'x', sample: 0 };
    const seeds = [
      k,
      { ...k, run: 2 },
      { ...k, phase: 'eval-base' },
      { ...k, iteration: 1 },
      { ...k, round: 1 },
      { ...k, task: 'y' },
      { ...k, occurrence: 1 },
      { ...k, sample: 1 },
    ].map(sampleSeed);
    expect(new Set(seeds).size).toBe(seeds.length);
    expect(sampleSeed({ ...k })).toBe(seeds[0]);
    expect(sampleSeed({ ...k, occurrence: 0 })).toBe(seeds[0]);
    expect(() => sampleSeed({ ...k, sample: -1 })).toThrow(/sample must be an integer >= 0/);
    expect(() => sampleSeed({ ...k, run: 1.5 })).toThrow(/run must be/);
    // An instance_id listed twice in one call: two tasks, two sets of seeds.
    const of = rolloutSeeds({ run: 1, phase: 'rft', iteration: 0, round: 0 }, [
      { instance_id: 'dup' },
      { instance_id: 'other' },
      { instance_id: 'dup' },
    ]);
    expect(of(0, 0)).toBe(sampleSeed({ ...k, task: 'dup' }));
    expect(of(2, 0)).toBe(sampleSeed({ ...k, task: 'dup', occurrence: 1 }));
    expect(of(2, 0)).not.toBe(of(0, 0));
  });
});

/** An engine over `p.engine` that records the sampling seed of every generation. */
function seedRecorder(p: Policy): { policy: Policy; seeds: Set<number> } {
  const seeds = new Set<number>();
  type S = ReturnType<Policy['engine']['openSession']>;
  const wrap = (s: S): S =>
    ({
      generate: (r: Parameters<S['generate']>[0]) => {
        if (r.sampling?.seed !== undefined && r.maxTokens > 0) seeds.add(r.sampling.seed);
        return s.generate(r);
      },
      fork: () => wrap(s.fork() as S),
      close: () => s.close(),
    }) as unknown as S;
  const engine = {
    openSession: () => wrap(p.engine.openSession()),
    stats: () => p.engine.stats(),
  } as unknown as Policy['engine'];
  return { policy: { ...p, engine }, seeds };
}

describe.skipIf(!canSandbox)('the stages sample with the hashed seeds', () => {
  it('evaluate and a DAPO iteration: each sample j of task i has rolloutSeeds(phase, iteration, round)(i, j)', async () => {
    const p = tinyPolicy({ kvBlocks: 1024 }) as Policy;
    const tasks = await generateMiniSweTasks({ count: 2, seed: 9, difficulty: 0 });
    const c = resolveConfig(
      {
        episode: { maxTurns: 1, maxTokensPerTurn: 4, maxContextTokens: 3072, concurrency: 4 },
        eval: { k: 2 },
        dapo: { samplesPerTask: 2, refillRounds: 0 },
      },
      'smoke',
    );
    const expected = (phase: string, iteration: number, G: number) => {
      const of = rolloutSeeds({ run: c.seed, phase, iteration, round: 0 }, tasks);
      return new Set(tasks.flatMap((_, i) => Array.from({ length: G }, (_, j) => of(i, j))));
    };
    const ev = seedRecorder(p);
    await evaluate(ev.policy, tasks, c, 'base', { log: () => {} });
    expect(ev.seeds).toEqual(expected('eval-base', 0, 2));
    const val = seedRecorder(p);
    await evaluate(val.policy, tasks, c, 'dapo', { log: () => {} }, { iteration: 3, k: 2, phase: 'val-dapo-s1-i003' });
    expect(val.seeds).toEqual(expected('val-dapo-s1-i003', 3, 2));
    const d = seedRecorder(p);
    const stage = { ...(c.dapo.stages[0] as (typeof c.dapo.stages)[number]), maxTurns: 1, samplesPerTask: 2 };
    await dapoIteration(d.policy, tasks, c, stage, 1, new AdamW(p.model, { lr: 0 }), { log: () => {} });
    expect(d.seeds).toEqual(expected('dapo-s1-i001', 1, 2));
  }, 120_000);
});

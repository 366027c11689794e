/**
 * runPipeline: the whole job over one config, into a run folder (DESIGN.md section 6):
 * tasks → (the embedded model: its warm start, src/embedded/) → eval base → RFT → eval →
 * DAPO iterations (the two-stage schedule) → eval, with metrics.jsonl, summary.json, report.html
 * and checkpoints/. After every phase and every DAPO iteration the policy is checkpointed
 * (Hugging Face safetensors and the tokenizer) and state.json records the position, both written
 * atomically (a temporary name, then a rename); `checkpoints.keep` says which checkpoints stay
 * (by default each finished stage's and the latest). Phases, checkpoints, rollout files, metrics
 * events and console lines share one naming scheme (phases.ts). `resume` continues from there, so a killed run
 * loses at most the phase or iteration in flight and repeats none that finished. Seeds derive from
 * the config and the phase, so a resumed run samples what the uninterrupted one would have. DAPO
 * checkpoints also hold AdamW's state (optimizer.safetensors), and state.json the per-task solve
 * counts of the current DAPO stage, so a resumed DAPO continues its moments and its stage filter.
 * With saveRollouts, each phase's rollout records go to rollouts/<phase>.msgpack (RFT's later
 * rounds, with rft.minKept, to rollouts/rft-r2.msgpack, ...). state.json
 * also records when the run started and what ran it (commit, machine) for the report.
 */
import { createHash } from 'node:crypto';
import { appendFile, mkdir, readdir, readFile, rename, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { basename, isAbsolute, join } from 'node:path';
import { embeddedWarmStart } from '../embedded/warm-start.js';
import { Engine } from '../engine/engine.js';
import { RemoteEngine } from '../engine/remote.js';
import { generateMiniSweTasks } from '../env/mini-swe/generate.js';
import { checkTasks, loadTasks, type SweTask } from '../env/tasks.js';
import { SwerlError } from '../errors.js';
import { Model } from '../model/model.js';
import { fileExists } from '../model/safetensors.js';
import { curriculumFilter } from '../rl/curriculum.js';
import { dapoIterationLr } from '../rl/loss-config.js';
import { writeRollouts } from '../rollout/record.js';
import { Tokenizer } from '../tokenizer/tokenizer.js';
import type { AdamW } from '../train/adamw.js';
import { type PipelineConfig, rlFilterWarnings } from './config.js';
import { checkpointName, dapoPhase, refuseOldNames, validationPhase } from './phases.js';
import { type RunProvenance, runProvenance } from './provenance.js';
import { writeReport } from './report.js';
import { RunLock } from './run-lock.js';
import {
  dapoIteration,
  dapoOptimizer,
  type EvalResult,
  evaluate,
  type Policy,
  rft,
  type StageHooks,
  shuffled,
} from './stages.js';
import { count, passFigures } from './wording.js';

/** One evaluated stage in summary.json. */
export interface StageSummary {
  name: string;
  pass1: number;
  passK: number;
  k: number;
  tasks: number;
  /** Samples the grader could not judge (grading errors), counted as unsolved in Pass@1 and Pass@k. */
  errors?: number;
}

/** summary.json. */
export interface RunSummary {
  preset: string;
  stages: StageSummary[];
  wallSeconds: number;
  seed: number;
  trainTasks: number;
  testTasks: number;
  /** Tasks of the validation split (eval.validationTasks): DAPO's in-run validations run on them. */
  validationTasks: number;
  dapoIterations: number;
  finished: boolean;
  warnings: string[];
  /** When the run started, and what the latest session ran on (commit or version, machine). */
  provenance?: RunProvenance;
}

/** Options of {@link runPipeline}. */
export interface RunOptions {
  out: string;
  /** Continue the run in `out` from its last checkpoint. */
  resume?: boolean;
  /**
   * Start over in an `out` that holds a run: the old run is first moved aside, whole, to
   * `<out>.replaced-<time>` (one rename: never half a run). Without it such a folder is RUN_EXISTS.
   */
  force?: boolean;
  /** Progress of the current unit of work (progress bars or lines): `unit` is 'step' or 'episode'. */
  progress?: (label: string, done: number, total: number, unit?: string) => void;
  /** Human-readable lines: one per phase and per DAPO iteration. */
  say?: (line: string) => void;
}

interface RunState {
  configHash: string;
  /** Phases finished, in order: warmstart, eval-base, rft, eval-rft, dapo-s<s>-i<iii>, val-…, eval-dapo. */
  done: string[];
  stages: StageSummary[];
  elapsedSeconds: number;
  /** The latest checkpoint, relative to the run folder (`checkpoints/<name>`); older runs hold an absolute path. */
  checkpoint: string | null;
  dapoIterations: number;
  /** Bytes of metrics.jsonl the finished phases wrote: a resume cuts the killed phase's partial lines. */
  metricsBytes?: number;
  /** The DAPO stage in progress: its task pool and each task's tries and solves (the filter between stages). */
  dapoStage?: { index: number; pool: string[]; solvedBy: Record<string, { tries: number; solved: number }> };
  /** The run's start and the latest session's commit and machine (the report's header). */
  provenance?: RunProvenance;
  /** Tasks of the validation split: in-run validations run on these, never on the test split. */
  validationTasks?: number;
}

const EVAL_NAMES: Record<string, string> = { 'eval-base': 'base', 'eval-rft': 'rft', 'eval-dapo': 'dapo' };

/**
 * What of a run a folder holds (state.json, metrics, rollouts, checkpoints, the summary and the
 * report); empty for a folder that does not exist, is empty, or holds only an empty checkpoints/.
 */
async function runArtefacts(out: string): Promise<string[]> {
  const entries = await readdir(out).catch(() => [] as string[]);
  const held: string[] = [];
  for (const name of ['state.json', 'metrics.jsonl', 'summary.json', 'report.html', 'rollouts'])
    if (entries.includes(name)) held.push(name);
  if (entries.includes('checkpoints') && (await readdir(join(out, 'checkpoints')).catch(() => [])).length > 0)
    held.push('checkpoints/');
  return held;
}

/** The config's hash in state.json: `--resume` refuses a run folder whose hash differs. */
export function hashConfig(c: PipelineConfig): string {
  return createHash('sha256').update(JSON.stringify(c)).digest('hex').slice(0, 16);
}

async function writeAtomic(path: string, content: string): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}`;
  await writeFile(tmp, content);
  await rename(tmp, path);
}

/** Fills a temporary folder with `fill`, then puts it in place of `dir` (a kill leaves the old one). */
async function writeDirAtomic(dir: string, fill: (tmp: string) => Promise<void>): Promise<void> {
  const tmp = `${dir}.tmp-${process.pid}`;
  await rm(tmp, { recursive: true, force: true });
  await fill(tmp);
  await rm(dir, { recursive: true, force: true });
  await rename(tmp, dir);
}

/** A split the run reads later: its count now, its tasks when first needed. */
interface LaterSplit {
  count: number;
  tasks: Promise<SweTask[]>;
}

/** `count` generated mini-SWE tasks of `split`, drawn with `seed`, as the config's miniSwe section sets them. */
export function generateSplit(
  c: PipelineConfig,
  split: 'train' | 'validation' | 'test',
  count: number,
  seed: number,
): Promise<SweTask[]> {
  return generateMiniSweTasks({
    count,
    seed,
    difficulty: c.miniSwe.difficulty,
    split,
    kinds: c.miniSwe.kinds ?? undefined,
    renameLocals: c.miniSwe.renameLocals,
    issue: c.miniSwe.issue,
    catalogue: c.miniSwe.catalogue,
    distinctSites: c.miniSwe.distinctSites,
  });
}

/**
 * The training tasks, the held-out (test) ones and the validation ones: their counts, and
 * promises of them. The test split is evaluated only at eval-base, eval-rft and eval-dapo; DAPO's
 * in-run validations (eval.every) read the validation split. A tasks file's last `evalTasks` rows
 * are the test split and the `eval.validationTasks` rows before them the validation split. A
 * generated suite draws each split from its own bug sites ('train', 'validation', 'test', each
 * with a seed of its own); its held-out splits are made while the demonstrations are recorded
 * and the warm start runs, on the core those leave idle; they depend only on the seed, so not on
 * when.
 */
export async function tasksFor(
  c: PipelineConfig,
): Promise<{ train: SweTask[]; heldOut: LaterSplit; validation: LaterSplit }> {
  const v = c.eval.validationTasks;
  if (c.tasksFile) {
    const all = await loadTasks(c.tasksFile);
    if (all.length <= c.evalTasks + v)
      throw new SwerlError(
        `${c.tasksFile} has ${all.length} tasks; evalTasks (${c.evalTasks}) and eval.validationTasks (${v}) must leave some for training`,
        'INVALID_CONFIG',
      );
    const test = all.length - c.evalTasks;
    return {
      train: all.slice(0, test - v),
      heldOut: { count: c.evalTasks, tasks: Promise.resolve(all.slice(test)) },
      validation: { count: v, tasks: Promise.resolve(all.slice(test - v, test)) },
    };
  }
  const generate = (split: 'train' | 'validation' | 'test', count: number, seed: number) =>
    generateSplit(c, split, count, seed);
  // Generated suites pass the same checks as a tasks file (loadTasks runs them on a file's rows).
  const later = (split: 'validation' | 'test', count: number, seed: number): LaterSplit => {
    const tasks =
      count === 0
        ? Promise.resolve([])
        : generate(split, count, seed).then((t) => {
            checkTasks(t);
            return t;
          });
    tasks.catch(() => {}); // its error is thrown where it is awaited
    return { count, tasks };
  };
  const train = await generate('train', c.miniSwe.trainTasks, c.seed);
  checkTasks(train);
  return {
    train,
    heldOut: later('test', c.miniSwe.testTasks, c.seed + 1),
    validation: later('validation', v, c.seed + 2),
  };
}

/**
 * Runs the pipeline into `o.out`; returns the summary it also writes. The folder is claimed for
 * this process first (run-lock.ts): while a run writes it, a second run into it is RUN_LOCKED.
 */
export async function runPipeline(c: PipelineConfig, o: RunOptions): Promise<RunSummary> {
  const lock = await RunLock.claim(o.out);
  try {
    return await runClaimed(c, o, lock);
  } finally {
    await lock.release();
  }
}

async function runClaimed(c: PipelineConfig, o: RunOptions, lock: RunLock): Promise<RunSummary> {
  const t0 = performance.now();
  const say = o.say ?? (() => {});
  if (!o.resume) {
    const held = await runArtefacts(o.out);
    if (held.length > 0 && !o.force)
      throw new SwerlError(
        `${o.out} holds a run (${held.join(', ')}): continue it with --resume, start over with --force (the old run is moved aside to ${o.out}.replaced-<time>), or choose another --out`,
        'RUN_EXISTS',
      );
    if (held.length > 0) {
      const aside = `${o.out}.replaced-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      await rename(o.out, aside);
      await lock.reclaimAfterMove(aside);
      say(`moved the run that was in ${o.out} to ${aside}`);
    }
  }
  await mkdir(join(o.out, 'checkpoints'), { recursive: true });
  const statePath = join(o.out, 'state.json');
  let state: RunState;
  if (o.resume) {
    try {
      state = JSON.parse(await readFile(statePath, 'utf8')) as RunState;
    } catch {
      throw new SwerlError(
        `nothing to resume in ${o.out}: no state.json (start the run without --resume)`,
        'CANNOT_RESUME',
      );
    }
    refuseOldNames(o.out, state.done ?? [], state.checkpoint ?? null);
    if (state.configHash !== hashConfig(c))
      throw new SwerlError(
        `the run in ${o.out} used a different config; resume with the same preset/config, or use another --out`,
        'CANNOT_RESUME',
      );
    say(`resuming after ${count(state.done.length, 'finished phase')} (${state.done.at(-1) ?? 'none'})`);
    // A rollout file the kill caught half-written (the killed phase writes it again).
    for (const f of await readdir(join(o.out, 'rollouts')).catch(() => [] as string[]))
      if (f.includes('.tmp-')) await rm(join(o.out, 'rollouts', f), { force: true });
  } else {
    state = {
      configHash: hashConfig(c),
      done: [],
      stages: [],
      elapsedSeconds: 0,
      checkpoint: null,
      dapoIterations: 0,
      provenance: runProvenance(new Date()),
    };
    // The run exists from its first moment: a rerun without --resume refuses the folder, and
    // --resume continues it even if it was stopped before its first phase ended.
    await writeAtomic(statePath, `${JSON.stringify(state, null, 2)}\n`);
  }
  // A resumed run keeps its start date; the commit and machine are this session's.
  state.provenance = runProvenance(new Date(state.provenance?.startedAt ?? Date.now()));
  await writeAtomic(join(o.out, 'config.json'), `${JSON.stringify(c, null, 2)}\n`);
  const warnings = rlFilterWarnings(c);
  for (const w of warnings)
    say(`WARNING: ${w}: RL samples from a filtered distribution; importance ratios and the policy gradient are biased`);
  const metricsPath = join(o.out, 'metrics.jsonl');
  if (o.resume && state.metricsBytes !== undefined) await truncate(metricsPath, state.metricsBytes).catch(() => {});
  let metricsBytes = state.metricsBytes ?? (await stat(metricsPath).catch(() => ({ size: 0 }))).size;
  let written: Promise<void> = Promise.resolve(); // metrics lines, appended in order
  const hooks: StageHooks = {
    log: (e) => {
      const line = `${JSON.stringify({ t: Date.now(), ...e })}\n`;
      metricsBytes += Buffer.byteLength(line);
      written = written.then(() => appendFile(metricsPath, line));
    },
    progress: o.progress,
    // Chained with the metrics, so a phase's records are on disk before the state says it is done.
    rollouts: c.saveRollouts
      ? (phase, records) => {
          written = written.then(async () => {
            await mkdir(join(o.out, 'rollouts'), { recursive: true });
            await writeRollouts(join(o.out, 'rollouts', `${phase}.msgpack`), records);
          });
        }
      : undefined,
  };
  const done = (phase: string) => state.done.includes(phase);
  const prior = state.elapsedSeconds; // time spent before a resume
  const elapsed = () => prior + (performance.now() - t0) / 1000;

  say(`tasks: ${c.tasksFile ?? `mini-SWE (difficulty ${c.miniSwe.difficulty})`}`);
  const { train, heldOut, validation } = await tasksFor(c);
  let test: SweTask[] = [];
  state.validationTasks = validation.count;
  say(
    `  ${count(train.length, 'training task')}, ${count(heldOut.count, 'held-out task')}` +
      (validation.count > 0 ? `, ${count(validation.count, 'validation task')}` : ''),
  );
  // With warmStart.demoTasks the demonstrations come from the first tasks and RL trains on the rest.
  const split = c.warmStart.demoTasks > 0 && !c.modelDir;
  if (split && c.warmStart.demoTasks >= train.length)
    throw new SwerlError(
      `warmStart.demoTasks (${c.warmStart.demoTasks}) must leave training tasks for RL (there are ${train.length})`,
      'INVALID_CONFIG',
    );
  const demoPool = split ? train.slice(0, c.warmStart.demoTasks) : train;
  const rlTasks = split ? train.slice(c.warmStart.demoTasks) : train;
  // With rft.tasks, RFT samples the first of them and DAPO trains on the others.
  if (c.rft.tasks > 0 && c.rft.enabled && c.dapo.enabled && c.rft.tasks >= rlTasks.length)
    throw new SwerlError(
      `rft.tasks (${c.rft.tasks}) must leave RL tasks for DAPO (there are ${rlTasks.length})`,
      'INVALID_CONFIG',
    );
  const rftTasks = c.rft.tasks > 0 ? rlTasks.slice(0, c.rft.tasks) : rlTasks;
  const dapoTasks = c.rft.tasks > 0 && c.rft.enabled ? rlTasks.slice(c.rft.tasks) : rlTasks;

  if (c.engine.backend === 'remote') {
    // Evaluation only (the config check guarantees no training stage): the server holds the weights.
    const tokenizer = await Tokenizer.load(c.modelDir as string);
    const engine = new RemoteEngine({
      baseURL: c.engine.url as string,
      model: c.engine.model ?? basename(c.modelDir as string),
    });
    test = await heldOut.tasks;
    const r = await evaluate({ engine, tokenizer } as unknown as Policy, test, c, 'base', hooks);
    state.stages = [{ name: 'base', pass1: r.pass1, passK: r.passK, k: r.k, tasks: r.tasks, errors: r.errors }];
    say(`base  ${passFigures(r.pass1, r.passK, r.k)}${gradingErrors(r.errors)}`);
    return finish();
  }

  // The policy: from the last checkpoint, a model folder, or built here (the embedded default).
  let model: Model;
  let tokenizer: Tokenizer;
  if (state.checkpoint) {
    const from = checkpointDir(o.out, state.checkpoint);
    model = await Model.load(from);
    tokenizer = await Tokenizer.load(from);
  } else if (c.modelDir) {
    model = await Model.load(c.modelDir);
    tokenizer = await Tokenizer.load(c.modelDir);
  } else {
    ({ model, tokenizer } = await embeddedWarmStart(c, demoPool, hooks, say));
    state.done.push('warmstart');
    await checkpoint('warmstart');
  }
  const engine = new Engine({
    model,
    kvBlocks: c.engine.kvBlocks,
    maxBatchTokens: c.engine.maxBatchTokens,
    blockSize: 16,
  });
  const policy: Policy = { model, engine, tokenizer };

  /** Writes state.json, after the metrics logged so far are on disk (a phase's, before it is done). */
  async function saveState(): Promise<void> {
    state.elapsedSeconds = elapsed();
    await written;
    state.metricsBytes = metricsBytes;
    await writeAtomic(statePath, `${JSON.stringify(state, null, 2)}\n`);
  }

  /** Checkpoints the policy after finished phase `phase` (already in state.done), then prunes. */
  async function checkpoint(phase: string, optimizer?: AdamW): Promise<void> {
    const name = checkpointName(phase);
    await writeDirAtomic(join(o.out, 'checkpoints', name), async (tmp) => {
      await model.save(tmp);
      await tokenizer.save(tmp);
      if (optimizer) await optimizer.save(join(tmp, 'optimizer.safetensors'));
    });
    state.checkpoint = join('checkpoints', name);
    await saveState();
    // Every checkpoint the policy does not keep goes (the KL reference stays), not only the
    // previous one: a run killed between the state write and this removal leaves one behind, and
    // the resumed run must not keep it; so do a killed run's half-written folders.
    const keep = keptCheckpoints(c, state.done, name);
    const root = join(o.out, 'checkpoints');
    for (const entry of await readdir(root))
      if (!keep.has(entry) && entry !== 'reference') await rm(join(root, entry), { recursive: true, force: true });
  }

  const recordEval = async (phase: string, r: EvalResult) => {
    const name = EVAL_NAMES[phase] ?? phase;
    state.stages = state.stages.filter((s) => s.name !== name);
    state.stages.push({ name, pass1: r.pass1, passK: r.passK, k: r.k, tasks: r.tasks, errors: r.errors });
    say(
      `${name.padEnd(5)} ${passFigures(r.pass1, r.passK, r.k)}  (${r.tasks} held-out task${r.tasks === 1 ? '' : 's'})${gradingErrors(r.errors)}`,
    );
    state.done.push(phase);
    await saveState();
    await writeReport(o.out);
  };

  test = await heldOut.tasks;
  if (!done('eval-base')) await recordEval('eval-base', await evaluate(policy, test, c, 'base', hooks));

  if (c.rft.enabled && !done('rft')) {
    const s = await rft(policy, rftTasks, c, hooks);
    const resolved = `${((s.resolved ?? 0) * 100).toFixed(1)}% resolved`;
    say(
      `rft: ${s.kept} resolved trajector${s.kept === 1 ? 'y' : 'ies'} kept of ${s.episodes}` +
        ((s.rounds ?? 1) > 1 ? ` in ${s.rounds} rounds (${resolved} in the first)` : ` (${resolved})`) +
        (s.skipped
          ? '; nothing to train on: RFT step skipped, the policy is unchanged'
          : `, ${count(s.steps ?? 0, 'step')}`),
    );
    state.done.push('rft');
    await checkpoint('rft');
  }
  if (c.rft.enabled && !done('eval-rft')) await recordEval('eval-rft', await evaluate(policy, test, c, 'rft', hooks));

  if (c.dapo.enabled) {
    let pool = [...dapoTasks];
    // The DAPO optimizer's moments continue across a resume (checkpoints of DAPO iterations hold them).
    const saved = state.checkpoint ? join(checkpointDir(o.out, state.checkpoint), 'optimizer.safetensors') : null;
    // The rate is set per iteration (dapoIterationLr), so a resume continues the schedule.
    let iterationLr = c.dapo.lr;
    const lr = () => iterationLr;
    // AdamW as dapo.optimizer sets it (weight decay, betas, eps, gradient clipping).
    const optimizer = await dapoOptimizer(model, c, lr, saved && (await fileExists(saved)) ? saved : null);
    // The KL reference: the policy as DAPO found it, kept on disk so that a resume uses the same one.
    let reference: Model | undefined;
    if (c.dapo.klCoef > 0) {
      const dir = join(o.out, 'checkpoints', 'reference');
      if (!(await fileExists(join(dir, 'config.json')))) await writeDirAtomic(dir, (tmp) => model.save(tmp));
      reference = await Model.load(dir);
    }
    const resumed = state.dapoStage;
    if (resumed) {
      const byId = new Map(train.map((t) => [t.instance_id, t]));
      pool = resumed.pool.map((id) => byId.get(id)).filter((t): t is SweTask => t !== undefined);
    }
    for (const [si, stage] of c.dapo.stages.entries()) {
      if (resumed && si < resumed.index) continue; // finished before the resume; the pool is restored
      const solvedBy = new Map<string, { tries: number; solved: number }>(
        resumed && si === resumed.index ? Object.entries(resumed.solvedBy) : [],
      );
      const before = c.dapo.stages.slice(0, si).reduce((a, st) => a + st.iterations, 0);
      for (let it = 0; it < stage.iterations; it++) {
        const phase = dapoPhase(si + 1, before + it + 1);
        const order = shuffled(pool, c.seed * 31 + si * 1000 + it);
        const tasks = order.slice(0, stage.tasksPerIteration);
        if (done(phase)) {
          // A run killed during this iteration's validation; only the latest iteration's, as
          // the policy holds that iteration's weights.
          if (state.checkpoint && basename(state.checkpoint) === phase) await validate(si, it);
          continue;
        }
        iterationLr = dapoIterationLr(c, state.dapoIterations);
        const { metrics, records } = await dapoIteration(
          policy,
          tasks,
          c,
          stage,
          state.dapoIterations + 1,
          optimizer,
          hooks,
          { reference, refill: order.slice(stage.tasksPerIteration), phase },
        );
        for (const r of records) {
          if (r.error !== undefined) continue; // not judged: neither a try nor a solve
          const e = solvedBy.get(r.instance_id) ?? { tries: 0, solved: 0 };
          e.tries++;
          if (r.resolved) e.solved++;
          solvedBy.set(r.instance_id, e);
        }
        state.dapoStage = { index: si, pool: pool.map((t) => t.instance_id), solvedBy: Object.fromEntries(solvedBy) };
        state.dapoIterations++;
        say(
          `${phase}: reward ${metrics.reward?.toFixed(3)}  resolved ${((metrics.resolved ?? 0) * 100).toFixed(1)}%  ` +
            `turns ${metrics.turns?.toFixed(1)}  trained ${metrics.trainedSamples}/${metrics.episodes} (${metrics.droppedGroups} flat group${metrics.droppedGroups === 1 ? '' : 's'})  ` +
            (metrics.skipped
              ? 'nothing to train on: step skipped, the policy is unchanged'
              : `${count(metrics.steps ?? 0, 'step')}  entropy ${metrics.entropy?.toFixed(3)}  clip ${metrics.clipFracLow?.toFixed(3)}/${metrics.clipFracHigh?.toFixed(3)}`) +
            `  rollouts ${(metrics.rolloutSeconds ?? 0).toFixed(0)} s (engine busy ${engineShare(metrics)})` +
            gradingErrors(metrics.errors ?? 0),
        );
        state.done.push(phase);
        await checkpoint(phase, optimizer);
        await written;
        await writeReport(o.out);
        await validate(si, it);
      }
      // Between stages, the curriculum: drop the tasks solved at least dapo.easyTaskThreshold of
      // the times over the stage (easy) and those never solved (out of reach).
      if (si + 1 < c.dapo.stages.length) {
        const f = curriculumFilter(pool, solvedBy, c.dapo.easyTaskThreshold);
        const emptied = f.kept.length === 0;
        if (!emptied) pool = f.kept;
        hooks.log({
          stage: 'dapo',
          event: 'curriculum',
          nextStage: si + 2,
          kept: pool.length,
          easy: f.easy.map((t) => t.instance_id),
          unsolved: f.unsolved.map((t) => t.instance_id),
          easyTaskThreshold: c.dapo.easyTaskThreshold,
          emptied,
        });
        say(
          `stage ${si + 2}: ${count(pool.length, 'task')} kept; dropped ${count(f.easy.length, 'easy task')} ` +
            `(solved >= ${(c.dapo.easyTaskThreshold * 100).toFixed(0)}% of the time) and ${count(f.unsolved.length, 'never-solved task')}` +
            (emptied ? ' (that would leave none: the pool is kept whole)' : ''),
        );
      }
    }
    if (!done('eval-dapo')) await recordEval('eval-dapo', await evaluate(policy, test, c, 'dapo', hooks));
  }

  return finish();

  /**
   * The validation after DAPO iteration `it` of stage `si`, every `eval.every` iterations but the
   * last (eval-dapo follows it), on the validation split: never the test split, which only the
   * stage evaluations read. It is a phase of its own after the iteration's checkpoint, so a run
   * killed during it validates again on resume and loses no iteration.
   */
  async function validate(si: number, it: number): Promise<void> {
    const n = c.dapo.stages.slice(0, si).reduce((a, st) => a + st.iterations, 0) + it + 1;
    const last = si === c.dapo.stages.length - 1 && it === (c.dapo.stages[si]?.iterations ?? 0) - 1;
    const phase = validationPhase(si + 1, n);
    if (c.eval.every === 0 || n % c.eval.every !== 0 || last || done(phase) || validation.count === 0) return;
    const k = c.eval.everyK || c.eval.k;
    const r = await evaluate(policy, await validation.tasks, c, 'dapo', hooks, { iteration: n, k, phase });
    say(`${phase}: validation ${passFigures(r.pass1, r.passK, k)} (${count(r.tasks, 'validation task')})`);
    state.done.push(phase);
    await saveState();
    await writeReport(o.out);
  }

  async function finish(): Promise<RunSummary> {
    const summary: RunSummary = {
      preset: c.preset,
      stages: state.stages,
      wallSeconds: elapsed(),
      seed: c.seed,
      trainTasks: train.length,
      testTasks: test.length,
      validationTasks: validation.count,
      dapoIterations: state.dapoIterations,
      finished: true,
      warnings,
      provenance: state.provenance,
    };
    await writeAtomic(join(o.out, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
    await written;
    await writeReport(o.out);
    return summary;
  }
}

/**
 * The checkpoints `c.checkpoints.keep` keeps once `latest` is written, given the phases done:
 * 'last' only the latest; 'stages' also base (after the warm start), RFT's, and the last
 * iteration of each finished DAPO stage (the final one is DAPO's); 'all' every finished phase's.
 * A folder of a phase not done (a killed run's) is never kept: the phase runs again.
 */
export function keptCheckpoints(c: PipelineConfig, done: string[], latest: string): Set<string> {
  const keep = new Set([latest]);
  const policy = c.checkpoints?.keep ?? 'stages';
  if (policy === 'last') return keep;
  const stageEnds = new Set<string>();
  let n = 0;
  for (const [si, st] of c.dapo.stages.entries()) {
    n += st.iterations;
    if (st.iterations > 0) stageEnds.add(dapoPhase(si + 1, n));
  }
  for (const phase of done) {
    if (phase !== 'warmstart' && phase !== 'rft' && !phase.startsWith('dapo-')) continue; // no checkpoint
    if (policy === 'all' || !phase.startsWith('dapo-') || stageEnds.has(phase)) keep.add(checkpointName(phase));
  }
  return keep;
}

/** state.checkpoint as a folder: relative to the run folder (an older run's is absolute). */
function checkpointDir(out: string, checkpoint: string): string {
  return isAbsolute(checkpoint) ? checkpoint : join(out, checkpoint);
}

/** The share of a rollout phase's wall time the engine was computing ("-" when it took no time). */
function engineShare(m: Record<string, number>): string {
  const wall = m.rolloutSeconds ?? 0;
  return wall > 0 ? `${Math.round((100 * (m.engineSeconds ?? 0)) / wall)}%` : '-';
}

/** The console's note of samples the grader could not judge (none: nothing is printed). */
function gradingErrors(n: number): string {
  return n > 0 ? `  [${count(n, 'sample')} not judged: grading errors, counted as unsolved]` : '';
}

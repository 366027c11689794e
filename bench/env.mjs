/**
 * The environment suite: env.sandbox.exec_per_s, LocalSandbox create + exec('true') + close cycles
 * per second (sequential; the isolation 'auto' picks), beside a plain child_process spawn of the
 * same command (no workspace, no isolation); and, in meta, execs per second in one open sandbox.
 * env.sandbox.launcher_exec_per_s: commands per second through the sandbox launcher beside the
 * prlimit chain it replaces.
 * env.evaluate.tasks_per_s: gold-patch evaluations of mini-SWE tasks per second through
 * evaluatePatches (a piscina pool, one worker per core), beside the same evaluations run one
 * after another with evaluatePatch. env.evaluate.tmpfs_tasks_per_s: the same pooled evaluations
 * with the workspaces in defaultSandboxDir() (/dev/shm, a tmpfs, where there is one) beside the
 * system's temporary directory.
 */
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { spawnRelayed } from '../dist/env/spawn-relay.js';
import {
  closeEvaluationPool,
  defaultSandboxDir,
  evaluatePatch,
  evaluatePatches,
  generateMiniSweTasks,
  LocalSandbox,
} from '../dist/index.js';
import { progress } from './lib.mjs';

/** @param {import('./sample.mjs').SuiteContext} ctx */
export async function envSuite(ctx) {
  /** @type {Record<string, unknown>} */
  const meta = {};
  ctx.meta.env = meta;
  const cycles = ctx.quick ? 5 : 30;
  const plain = () =>
    new Promise((resolve) => {
      const c = spawn('bash', ['-c', 'true'], { stdio: 'ignore' });
      c.on('close', resolve);
    });
  progress(`env.sandbox.exec_per_s: ${cycles} plain spawns`);
  let t0 = performance.now();
  for (let i = 0; i < cycles; i++) await plain();
  const plainRate = cycles / ((performance.now() - t0) / 1000);
  progress(`env.sandbox.exec_per_s: ${cycles} sandbox create + exec + close cycles`);
  let isolation = 'none';
  t0 = performance.now();
  for (let i = 0; i < cycles; i++) {
    const sb = await LocalSandbox.create({ files: { 'a.txt': 'x\n' } });
    isolation = sb.isolation;
    await sb.exec('true');
    await sb.close();
  }
  const rate = cycles / ((performance.now() - t0) / 1000);
  ctx.report.add({
    name: 'env.sandbox.exec_per_s',
    value: rate,
    unit: 'cycles/s',
    baseline: { name: 'plain child_process spawn (no workspace, no isolation)', value: plainRate },
  });
  const sb = await LocalSandbox.create();
  t0 = performance.now();
  for (let i = 0; i < cycles; i++) await sb.exec('true');
  const execRate = cycles / ((performance.now() - t0) / 1000);
  await sb.close();
  await launcherRecord(ctx, cycles);
  await evaluateRecord(ctx, meta);
  await spawnRecord(ctx, meta);
  meta.sandbox = {
    isolation,
    cycles,
    execsPerSecondInOneSandbox: execRate,
    note: "a cycle creates a workspace (two git repositories: the agent's and the host's metadata), runs one command under the launcher (else prlimit + setpriv) and bwrap, and removes everything",
  };
}

/**
 * env.sandbox.launcher_exec_per_s: `cat` commands per second in one open sandbox started through
 * the launcher (native/sandbox/launch.cc), beside the same sandbox kind started through the
 * `prlimit` → `setpriv` → `sh` → bash chain (SWERL_LAUNCHER=0). The two alternate in blocks of
 * ten, so load on a shared machine falls on both.
 * @param {import('./sample.mjs').SuiteContext} ctx
 * @param {number} cycles
 */
async function launcherRecord(ctx, cycles) {
  const saved = process.env.SWERL_LAUNCHER;
  const make = async (on) => {
    if (on) delete process.env.SWERL_LAUNCHER;
    else process.env.SWERL_LAUNCHER = '0';
    try {
      return await LocalSandbox.create({ files: { 'a.txt': 'x\n' }, repository: false });
    } finally {
      if (saved === undefined) delete process.env.SWERL_LAUNCHER;
      else process.env.SWERL_LAUNCHER = saved;
    }
  };
  const [withLauncher, chain] = [await make(true), await make(false)];
  const seconds = [0, 0];
  const blocks = Math.max(1, Math.round(cycles / 10));
  progress(`env.sandbox.launcher_exec_per_s: ${blocks * 10} commands each way`);
  for (let b = 0; b < blocks; b++) {
    for (const [i, sb] of [withLauncher, chain].entries()) {
      const t0 = performance.now();
      for (let j = 0; j < 10; j++) await sb.exec('cat a.txt');
      seconds[i] += (performance.now() - t0) / 1000;
    }
  }
  await withLauncher.close();
  await chain.close();
  ctx.report.add({
    name: 'env.sandbox.launcher_exec_per_s',
    value: (blocks * 10) / seconds[0],
    unit: 'commands/s',
    baseline: { name: 'prlimit → setpriv → sh → bash chain (SWERL_LAUNCHER=0)', value: (blocks * 10) / seconds[1] },
  });
}

/**
 * @param {import('./sample.mjs').SuiteContext} ctx
 * @param {Record<string, unknown>} meta
 */
async function evaluateRecord(ctx, meta) {
  const n = ctx.quick ? 4 : 12;
  progress(`env.evaluate.tasks_per_s: generating ${n} mini-SWE tasks`);
  const tasks = await generateMiniSweTasks({ count: n, seed: 101, difficulty: 1 });
  progress(`env.evaluate.tasks_per_s: ${n} gold-patch evaluations, one after another`);
  let t0 = performance.now();
  for (const t of tasks) await evaluatePatch(t, t.patch);
  const sequential = n / ((performance.now() - t0) / 1000);
  progress(`env.evaluate.tasks_per_s: ${n} gold-patch evaluations on the worker pool`);
  await evaluatePatches([{ task: tasks[0], patch: tasks[0].patch }]); // starts the workers
  t0 = performance.now();
  const out = await evaluatePatches(tasks.map((t) => ({ task: t, patch: t.patch })));
  const pooled = n / ((performance.now() - t0) / 1000);
  await closeEvaluationPool();
  ctx.report.add({
    name: 'env.evaluate.tasks_per_s',
    value: pooled,
    unit: 'tasks/s',
    baseline: { name: 'evaluatePatch one task after another', value: sequential },
  });
  meta.evaluate = { tasks: n, resolved: out.filter((e) => e.resolved).length, sequentialTasksPerSecond: sequential };
  await workspaceRecord(ctx, meta, tasks);
}

/**
 * Pooled evaluations (three rounds of the tasks) with the workspaces in defaultSandboxDir()
 * against the system's temporary directory (SWERL_SANDBOX_DIR, read by each new pool worker).
 * @param {import('./sample.mjs').SuiteContext} ctx
 * @param {Record<string, unknown>} meta
 * @param {import('../dist/index.js').SweTask[]} tasks
 */
async function workspaceRecord(ctx, meta, tasks) {
  const dir = defaultSandboxDir();
  const jobs = [...tasks, ...tasks, ...tasks].map((t) => ({ task: t, patch: t.patch }));
  const saved = process.env.SWERL_SANDBOX_DIR;
  const rate = async (where) => {
    process.env.SWERL_SANDBOX_DIR = where;
    await evaluatePatches(jobs.slice(0, 1)); // starts the workers, which read it
    const t0 = performance.now();
    await evaluatePatches(jobs);
    const r = jobs.length / ((performance.now() - t0) / 1000);
    await closeEvaluationPool();
    return r;
  };
  progress(`env.evaluate.tmpfs_tasks_per_s: ${jobs.length} evaluations in ${tmpdir()}, then in ${dir}`);
  const onDisk = await rate(tmpdir());
  const inDefault = await rate(dir);
  if (saved === undefined) delete process.env.SWERL_SANDBOX_DIR;
  else process.env.SWERL_SANDBOX_DIR = saved;
  ctx.report.add({
    name: 'env.evaluate.tmpfs_tasks_per_s',
    value: inDefault,
    unit: 'tasks/s',
    baseline: { name: `the same, workspaces in ${tmpdir()}`, value: onDisk },
  });
  meta.workspace = { defaultSandboxDir: dir, temporaryDir: tmpdir(), evaluations: jobs.length };
}

/**
 * env.spawn.relayed_per_s: `sh -c true` spawns per second (one after another) through the spawn
 * relay, beside direct spawns, from this process with 700 MB resident, as a training run holds
 * (the model, the KV cache): a direct spawn forks this process and copies its page tables.
 * @param {import('./sample.mjs').SuiteContext} ctx
 * @param {Record<string, unknown>} meta
 */
async function spawnRecord(ctx, meta) {
  const n = ctx.quick ? 20 : 200;
  const residentMiB = 700;
  const resident = Buffer.alloc(residentMiB * 2 ** 20, 1); // filled, so every page is resident
  const env = { PATH: '/usr/bin:/bin' };
  const rate = async () => {
    const t0 = performance.now();
    for (let i = 0; i < n; i++)
      await new Promise((resolve) => spawnRelayed('/bin/sh', ['-c', 'true'], { env }).on('close', resolve));
    return n / ((performance.now() - t0) / 1000);
  };
  const saved = process.env.SWERL_SPAWN_RELAY;
  progress(`env.spawn.relayed_per_s: ${n} direct and ${n} relayed spawns with ${residentMiB} MB resident`);
  process.env.SWERL_SPAWN_RELAY = '0';
  const direct = await rate();
  if (saved === undefined) delete process.env.SWERL_SPAWN_RELAY;
  else process.env.SWERL_SPAWN_RELAY = saved;
  await rate(); // forks the relay
  const relayed = await rate();
  ctx.report.add({
    name: 'env.spawn.relayed_per_s',
    value: relayed,
    unit: 'spawns/s',
    baseline: { name: `direct child_process spawn, ${residentMiB} MB resident`, value: direct },
  });
  meta.spawn = { spawns: n, residentMiB, touched: resident[resident.length - 1] };
}

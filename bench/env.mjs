/**
 * The environment suite: env.sandbox.exec_per_s, LocalSandbox create + exec('true') + close cycles
 * per second (sequential; the isolation 'auto' picks), beside a plain child_process spawn of the
 * same command (no workspace, no isolation); and, in meta, execs per second in one open sandbox.
 * env.evaluate.tasks_per_s: gold-patch evaluations of mini-SWE tasks per second through
 * evaluatePatches (a piscina pool, one worker per core), beside the same evaluations run one
 * after another with evaluatePatch.
 */
import { spawn } from 'node:child_process';
import { spawnRelayed } from '../dist/env/spawn-relay.js';
import {
  closeEvaluationPool,
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
  await evaluateRecord(ctx, meta);
  await spawnRecord(ctx, meta);
  meta.sandbox = {
    isolation,
    cycles,
    execsPerSecondInOneSandbox: execRate,
    note: "a cycle creates a workspace (two git repositories: the agent's and the host's metadata), runs one command under prlimit + bwrap, and removes everything",
  };
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

/**
 * The environment suite: env.sandbox.exec_per_s, LocalSandbox create + exec('true') + close cycles
 * per second (sequential; the isolation 'auto' picks), beside a plain child_process spawn of the
 * same command (no workspace, no isolation); and, in meta, execs per second in one open sandbox.
 */
import { spawn } from 'node:child_process';
import { LocalSandbox } from '../dist/index.js';
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
  meta.sandbox = {
    isolation,
    cycles,
    execsPerSecondInOneSandbox: execRate,
    note: "a cycle creates a workspace (two git repositories: the agent's and the host's metadata), runs one command under prlimit + bwrap, and removes everything",
  };
}

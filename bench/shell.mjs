/**
 * The shell suite: commands per second, one after another, three ways, in the same run: a plain
 * `child_process.spawn('bash', ['-c', cmd])` on the host (no sandbox), `LocalSandbox.exec(cmd)`
 * (a fresh prlimit → setpriv → bwrap|unshare → bash per command), and `shell.run(cmd)` in one
 * persistent shell of the same sandbox (persistent-shell.ts). For `true`, and for a realistic
 * agent command, `ls; cat package.json >/dev/null`. Records: shell.<cmd>.{host,exec,shell}_per_s,
 * and shell.<cmd>.shell_vs_exec (the persistent shell's rate over exec's).
 */
import { spawn } from 'node:child_process';
import { LocalSandbox } from '../dist/index.js';
import { progress } from './lib.mjs';

const COMMANDS = { true: 'true', ls_cat: 'ls; cat package.json >/dev/null' };

/** @param {import('./sample.mjs').SuiteContext} ctx */
export async function shellSuite(ctx) {
  /** @type {Record<string, unknown>} */
  const meta = {};
  ctx.meta.shell = meta;
  const n = ctx.quick ? 10 : 200;
  const files = { 'package.json': `${JSON.stringify({ name: 'bench', version: '1.0.0' }, null, 2)}\n`, 'a.txt': 'a\n' };
  const sb = await LocalSandbox.create({ repository: false, files });
  const shell = await sb.openShell();
  meta.isolation = sb.isolation;
  meta.commands = n;
  try {
    for (const [key, cmd] of Object.entries(COMMANDS)) {
      const host = (c) =>
        new Promise((resolve) => {
          const child = spawn('bash', ['-c', c], { stdio: 'ignore', cwd: sb.root });
          child.on('close', resolve);
        });
      const rate = async (label, f) => {
        progress(`shell.${key}: ${n} × ${label}`);
        await f(cmd); // warm: the first shell.run starts the shell
        const t0 = performance.now();
        for (let i = 0; i < n; i++) await f(cmd);
        return n / ((performance.now() - t0) / 1000);
      };
      const hostRate = await rate('host spawn', host);
      const execRate = await rate('LocalSandbox.exec', (c) => sb.exec(c));
      const shellRate = await rate('shell.run', (c) => shell.run(c));
      const base = { name: 'plain child_process spawn of bash -c on the host', value: hostRate };
      ctx.report.add({ name: `shell.${key}.host_per_s`, value: hostRate, unit: 'commands/s' });
      ctx.report.add({ name: `shell.${key}.exec_per_s`, value: execRate, unit: 'commands/s', baseline: base });
      ctx.report.add({ name: `shell.${key}.shell_per_s`, value: shellRate, unit: 'commands/s', baseline: base });
      ctx.report.add({
        name: `shell.${key}.shell_vs_exec`,
        value: shellRate,
        unit: 'commands/s',
        baseline: { name: 'LocalSandbox.exec', value: execRate },
      });
      meta[key] = { command: cmd, hostRate, execRate, shellRate };
    }
  } finally {
    await sb.close();
  }
}

/**
 * Persistent shells (persistent-shell.ts) in a LocalSandbox, and in a DockerSandbox when an engine
 * is reachable: what carries over between runs, every robustness case of the protocol (quotes,
 * heredocs, set -e, exit, exec, a killed shell, stdin, background jobs, binary output, floods),
 * timeouts, the output cap, isolation as exec's, close() killing what the shell started, a
 * property test against exec, and the episode's `shell: 'persistent'`.
 */
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Shell } from '../../src/env/persistent-shell.js';
import { DockerSandbox, isolationAvailable, LocalSandbox, runEpisode, type SweTask } from '../../src/index.js';
import { dockerTestsCanRun } from '../helpers/docker-engine.js';
import { ensureTestImage } from '../helpers/docker-image.js';

const canSandbox = isolationAvailable('bwrap') || isolationAvailable('unshare');
const sq = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

describe.skipIf(!canSandbox)('LocalSandbox.openShell', () => {
  let sb: LocalSandbox;
  beforeAll(async () => {
    sb = await LocalSandbox.create({ repository: false, files: { 'a.txt': 'A\n' } });
  });
  afterAll(async () => {
    await sb.close();
  });

  it('keeps the working directory, variables, functions and aliases between runs', async () => {
    const sh = await sb.openShell();
    try {
      const a = await sh.run(
        'mkdir -p d/e && cd d/e && export X=1 && Y=2 && declare -a arr=(p q) && f() { echo "f:$1"; } && shopt -s expand_aliases && alias hi="echo HI"',
      );
      expect(a).toMatchObject({ exitCode: 0, output: '', timedOut: false, truncated: false });
      expect(sh.cwd).toBe(`${sb.workdir}/d/e`);
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell array element, not a template
      const b = await sh.run('pwd; echo "$X $Y ${arr[1]}"; f z; hi; bash -c \'echo "child:$X"\'');
      expect(b.output).toBe(`${sb.workdir}/d/e\n1 2 q\nf:z\nHI\nchild:1\n`);
      expect((await sh.run('cat ../../a.txt')).output).toBe('A\n');
    } finally {
      await sh.close();
    }
  });

  it('survives whatever the command text is: quotes, heredocs, stdin, set -e, output without a newline, binary', async () => {
    const sh = await sb.openShell();
    try {
      await sh.run('export KEEP=yes');
      const quote = await sh.run('echo "unbalanced');
      expect(quote.exitCode).toBe(2);
      expect(quote.output).toContain('unexpected EOF while looking for matching `"\'');
      const heredoc = await sh.run('cat <<EOF\nabc');
      expect(heredoc.exitCode).toBe(0);
      expect(heredoc.output).toContain('abc\n');
      // A command that reads stdin gets /dev/null, not the protocol.
      const stdin = await sh.run('cat; read -r x; echo "read:[$x]"');
      expect(stdin.output).toBe('read:[]\n');
      const nonl = await sh.run('printf no-newline');
      expect(nonl.output).toBe('no-newline');
      const binary = await sh.run("printf 'a\\000b\\377c\\n'");
      expect(binary.output).toBe(Buffer.from([0x61, 0, 0x62, 0xff, 0x63, 0x0a]).toString('utf8'));
      // A fake end marker in the output is just output.
      const fake = await sh.run("printf '\\000SWERL0123:0:/\\000'; echo after");
      expect(fake.output).toBe('\0SWERL0123:0:/\0after\n');
      const sete = await sh.run('set -e; false; echo not-reached');
      expect(sete).toMatchObject({ exitCode: 1, output: '' });
      // `exec >file` lasts for its command only.
      expect((await sh.run('exec >/dev/null; echo hidden')).output).toBe('');
      expect((await sh.run('echo visible')).output).toBe('visible\n');
      // A long command, every byte of it (multi-byte characters included).
      const long = `echo ${sq('é😀\\"\'$x`'.repeat(3000))}`;
      expect((await sh.run(long)).output).toBe(`${'é😀\\"\'$x`'.repeat(3000)}\n`);
      expect((await sh.run('echo $KEEP')).output).toBe('\n'); // set -e ended that shell
    } finally {
      await sh.close();
    }
  });

  it('restarts after exit, exec or a killed shell, in the last directory, with the environment lost', async () => {
    const sh = await sb.openShell();
    try {
      await sh.run('mkdir -p sub && cd sub && export GONE=1');
      expect(await sh.run('echo bye; exit 3')).toMatchObject({ exitCode: 3, output: 'bye\n', timedOut: false });
      expect((await sh.run('pwd; echo "[$GONE]"')).output).toBe(`${sb.workdir}/sub\n[]\n`);
      expect(await sh.run('exec echo replaced')).toMatchObject({ exitCode: 0, output: 'replaced\n' });
      expect((await sh.run('pwd')).output).toBe(`${sb.workdir}/sub\n`);
      // Under bwrap the shell is not its namespace's init, so SIGKILL reaches it.
      const killed = await sh.run('echo before; kill -9 $$');
      expect(killed.output).toBe('before\n');
      if (sb.isolation === 'bwrap') expect(killed.exitCode).toBe(137);
      expect(await sh.run('echo again')).toMatchObject({ exitCode: 0, output: 'again\n' });
    } finally {
      await sh.close();
    }
  });

  it('does not wait for background jobs, and shows what they print later', async () => {
    const sh = await sb.openShell();
    try {
      const bg = await sh.run('(sleep 0.3; echo late) & echo started');
      expect(bg.output).toBe('started\n');
      expect(bg.durationMs).toBeLessThan(250);
      await new Promise((r) => setTimeout(r, 600));
      expect((await sh.run('echo next')).output).toBe('late\nnext\n');
    } finally {
      await sh.close();
    }
  });

  it('kills a timed-out command (its processes or its shell loop), keeps the output so far, and goes on', async () => {
    const sh = await sb.openShell();
    try {
      await sh.run('export STAY=1');
      const sleep = await sh.run('echo partial; for i in 1 2 3; do sleep 20; done; echo not-reached', {
        timeoutMs: 1500, // room for 'echo partial' on a loaded machine
      });
      expect(sleep).toMatchObject({ exitCode: 137, timedOut: true });
      expect(sleep.output).toMatch(/^partial\n/);
      expect(sleep.output).not.toContain('not-reached');
      expect(sleep.durationMs).toBeLessThan(10_000); // far below the 60 s the sleeps would take
      const loop = await sh.run('echo spin; while :; do :; done', { timeoutMs: 1500 });
      expect(loop).toMatchObject({ exitCode: 137, timedOut: true });
      expect(loop.output).toBe('spin\n');
      // The shell itself survived both: the variable is still there.
      expect(await sh.run('echo $STAY')).toMatchObject({ exitCode: 0, output: '1\n', timedOut: false });
      // A command that ignores the abort signal costs the shell; the next run starts a new one.
      const stubborn = await sh.run('trap "" USR1; while :; do :; done', { timeoutMs: 1000 });
      expect(stubborn.timedOut).toBe(true);
      expect(await sh.run('echo "[$STAY]"')).toMatchObject({ exitCode: 0, output: '[]\n' });
    } finally {
      await sh.close();
    }
  });

  it('caps output as exec does, and stops a flood', async () => {
    const capped = await LocalSandbox.create({ repository: false, maxOutputBytes: 1000 });
    const sh = await capped.openShell();
    try {
      const cmd = "head -c 5000 /dev/zero | tr '\\0' a; echo";
      const viaShell = await sh.run(cmd);
      const viaExec = await capped.exec(cmd);
      expect(viaShell.truncated).toBe(true);
      expect(viaShell.output).toBe(viaExec.output);
      expect(viaShell.output).toMatch(/^a{1000}\n\[output truncated: 4001 more bytes\]$/);
      const flood = await sh.run('yes');
      expect(flood).toMatchObject({ exitCode: 137, truncated: true, timedOut: false });
      expect(flood.output.startsWith('y\ny\n')).toBe(true);
      expect((await sh.run('echo fine')).output).toBe('fine\n');
    } finally {
      await capped.close();
    }
  });

  it('is isolated as exec is: no host /tmp, no host processes, the same uid', async () => {
    const marker = `/tmp/swerl-shell-marker-${process.pid}`;
    writeFileSync(marker, 'host');
    const sh = await sb.openShell();
    try {
      const r = await sh.run(`test -e ${marker} && echo visible || echo hidden; ls /proc | grep -c '^[0-9]'; id -u`);
      const e = await sb.exec(`test -e ${marker} && echo visible || echo hidden; id -u`);
      const [seen, procs, uid] = r.output.trim().split('\n');
      expect(seen).toBe('hidden');
      expect(Number(procs)).toBeLessThan(10); // its own PID namespace: bwrap, the shell, ls, grep
      expect(`${seen}\n${uid}\n`).toBe(e.output);
      // Under bwrap the command is SANDBOX_USER inside, whatever uid the sandbox has outside.
      if (sb.isolation === 'bwrap') expect(uid).toBe('1000');
      else if (sb.uid !== null) expect(uid).toBe(String(sb.uid));
    } finally {
      rmSync(marker, { force: true });
      await sh.close();
    }
  });

  it('close() kills what the shell started, and LocalSandbox.close() closes its shells', async () => {
    const own = await LocalSandbox.create({ repository: false });
    const sh = await own.openShell();
    const count = () =>
      own.uid === null
        ? 0
        : spawnSync('pgrep', ['-c', '-U', String(own.uid), '-x', 'sleep'], { encoding: 'utf8' }).stdout.trim();
    await sh.run('sleep 1000 & sleep 1001 & disown; echo started');
    // A background job is a forked bash until it execs sleep: poll, do not read once.
    if (own.uid !== null) await expect.poll(count, { timeout: 3000 }).toBe('2');
    await sh.close();
    await expect(sh.run('echo')).rejects.toMatchObject({ code: 'DISPOSED' });
    if (own.uid !== null) await expect.poll(count, { timeout: 3000 }).toBe('0');
    const other = await own.openShell();
    await other.run('sleep 1002 &');
    if (own.uid !== null) await expect.poll(count, { timeout: 3000 }).toBe('1');
    await own.close();
    await expect(other.run('echo')).rejects.toMatchObject({ code: 'DISPOSED' });
    if (own.uid !== null) await expect.poll(count, { timeout: 3000 }).toBe('0');
    await expect(own.openShell()).rejects.toMatchObject({ code: 'DISPOSED' });
  });

  it('rejects bad input with INVALID_ARGUMENT', async () => {
    const sh = await sb.openShell();
    try {
      await expect(sh.run(3 as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      await expect(sh.run('echo a\0b')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      await expect(sh.run('echo', { timeoutMs: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      await expect(sb.openShell({ init: 5 as never })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      expect((await sh.run('echo still')).output).toBe('still\n');
    } finally {
      await sh.close();
    }
  });

  it('gives what exec gives, from the same directory, for random sequences of simple commands', async () => {
    const text = fc.string({
      unit: fc.constantFrom('a', 'Z', ' ', '"', "'", '\\', '\n', '$', '`', 'é', '*'),
      maxLength: 12,
    });
    const step = fc.oneof(
      text.map((s) => `echo ${sq(s)}`),
      text.map((s) => `printf '%s|' ${sq(s)}`),
      fc.constantFrom('d1', 'd 2', "q'x").map((d) => `mkdir -p ${sq(d)} && cd ${sq(d)} && pwd`),
      fc.constant('cd .. && pwd'),
      fc.integer({ min: 0, max: 5 }).map((k) => `echo code; (exit ${k})`),
      fc.constant('ls -a | head -5; false'),
    );
    const sh = await sb.openShell();
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 6 }), async (cmds) => {
          await sh.run(`cd ${sq(sb.workdir)}`);
          for (const c of cmds) {
            const cwd = sh.cwd;
            const viaShell = await sh.run(c);
            const viaExec = await sb.exec(`cd ${sq(cwd)} || exit 99\n${c}`);
            expect({ output: viaShell.output, exitCode: viaShell.exitCode }).toEqual({
              output: viaExec.output,
              exitCode: viaExec.exitCode,
            });
          }
        }),
        { numRuns: 12, seed: 20261201 },
      );
    } finally {
      await sh.close();
    }
  });
});

const toyTask: SweTask = {
  instance_id: 'toy__shell-1',
  repo: 'toy/shell',
  base_commit: '',
  problem_statement: 'Nothing to fix.',
  patch: '',
  test_patch: '',
  FAIL_TO_PASS: [],
  PASS_TO_PASS: [],
  files: { 'src/a.js': 'const a = 1;\n', 'README.md': 'toy\n' },
};

/** A policy that plays a fixed list of commands, then submits. */
function scripted(commands: string[]) {
  let i = 0;
  return async () =>
    i < commands.length ? `DISCUSSION\nstep\n\n\`\`\`command\n${commands[i++]}\n\`\`\`` : '```command\nsubmit\n```';
}

describe.skipIf(!canSandbox)("runEpisode({ shell: 'persistent' })", () => {
  it('gives the per-command observations for stateless commands, and keeps exported variables', async () => {
    const stateless = [
      'ls',
      'cd src && pwd',
      'pwd',
      'open a.js',
      'cat missing.txt',
      'echo hi > ../x.txt && cat ../x.txt',
    ];
    const per = await runEpisode({ task: toyTask, policy: scripted(stateless) });
    const pers = await runEpisode({ task: toyTask, policy: scripted(stateless), shell: 'persistent' });
    expect(pers.turns.map((t) => [t.observation, t.exitCode])).toEqual(
      per.turns.map((t) => [t.observation, t.exitCode]),
    );
    expect(pers.patch).toBe(per.patch);
    expect(pers.patch).toContain('+hi');
    const env = ['export X=1', 'echo "X=[$X]"'];
    const perEnv = await runEpisode({ task: toyTask, policy: scripted(env) });
    const persEnv = await runEpisode({ task: toyTask, policy: scripted(env), shell: 'persistent' });
    expect(perEnv.turns[1]?.observation).toMatch(/^X=\[\]\n/);
    expect(persEnv.turns[1]?.observation).toMatch(/^X=\[1\]\n/);
  });

  it('reports a timeout as per-command mode does, and rejects an unknown mode', async () => {
    const tr = await runEpisode({
      task: toyTask,
      policy: scripted(['sleep 30', 'echo ok']),
      shell: 'persistent',
      commandTimeoutMs: 500,
    });
    expect(tr.turns[0]?.observation).toContain('[the command timed out and was killed]');
    expect(tr.turns[1]?.observation).toMatch(/^ok\n/);
    await expect(runEpisode({ task: toyTask, policy: scripted([]), shell: 'tmux' as never })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });
});

const hasDocker = await dockerTestsCanRun('DockerSandbox.openShell tests');
const image = hasDocker ? ensureTestImage() : '';

describe.skipIf(!hasDocker)('DockerSandbox.openShell', () => {
  it('keeps state, survives exit and timeouts, and is killed by close()', async () => {
    const sb = await DockerSandbox.create({ image, workdir: '/project', files: { 'a.txt': 'A\n' } });
    let sh: Shell | null = null;
    try {
      sh = await sb.openShell();
      await sh.run('mkdir -p d && cd d && export X=1 && f() { echo "f:$1"; }');
      expect((await sh.run('pwd; echo $X; f z; cat ../a.txt; cat\necho "unbal')).output).toMatch(
        /^\/project\/d\n1\nf:z\nA\n.*unexpected EOF/s,
      );
      const t = await sh.run('echo partial; sleep 30; echo no', { timeoutMs: 800 });
      expect(t).toMatchObject({ exitCode: 137, timedOut: true });
      expect(t.output).toMatch(/^partial\n/);
      expect((await sh.run('echo $X')).output).toBe('1\n');
      expect(await sh.run('exit 4')).toMatchObject({ exitCode: 4 });
      expect((await sh.run('pwd; echo "[$X]"')).output).toBe('/project/d\n[]\n');
      await sh.run('sleep 500 & echo bg');
      await sh.close();
      const ps = await sb.exec('ps -eo args | grep -c "^sleep 500" || true');
      expect(ps.output.trim()).toBe('0');
    } finally {
      await sh?.close();
      await sb.close();
    }
  }, 60_000);
});

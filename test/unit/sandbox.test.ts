/**
 * LocalSandbox against hostile commands: no writes outside the workspace, no network to the host,
 * no process outliving its timeout or the sandbox, output floods capped, memory and fork bombs
 * contained; host-side file access cannot be tricked out of the workspace; diff() sees edits and
 * new files. Needs bubblewrap (CI installs it); the isolation-specific tests say why they skip.
 */

import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultSandboxDir, isolationAvailable, LocalSandbox } from '../../src/index.js';

const hasBwrap = isolationAvailable('bwrap');
const hasUnshare = isolationAvailable('unshare');

/** Live processes of the sandbox, host-wide: by its uid when it has one, else by working directory. */
function processesOf(sb: LocalSandbox): number {
  let n = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (sb.uid !== null) {
        const status = readFileSync(`/proc/${pid}/status`, 'utf8');
        const uid = /^Uid:\s+(\d+)/m.exec(status)?.[1];
        const state = /^State:\s+(\S)/m.exec(status)?.[1];
        // Zombies (killed, not yet reaped by this container's init) hold no resources.
        if (Number(uid) === sb.uid && state !== 'Z' && state !== 'X') n++;
      } else if (readlinkSync(`/proc/${pid}/cwd`).startsWith(sb.root)) {
        n++;
      }
    } catch {
      // gone or not ours to read
    }
  }
  return n;
}

describe.skipIf(!hasBwrap)('LocalSandbox (bwrap): hostile commands', () => {
  it('runs commands in the workspace and reports exit codes', async () => {
    const sb = await LocalSandbox.create({ files: { 'src/a.js': 'export const a = 1;\n' } });
    try {
      expect(sb.isolation).toBe('bwrap');
      const r = await sb.exec('cat src/a.js && pwd && exit 3');
      expect(r.exitCode).toBe(3);
      expect(r.output).toContain('export const a = 1;');
      expect(r.output).toContain(sb.workdir);
      expect(sb.workdir).toBe('/project'); // the same path in every episode
      expect(r.timedOut).toBe(false);
    } finally {
      await sb.close();
    }
  });

  it('cannot write outside the workspace', async () => {
    const sb = await LocalSandbox.create();
    const marker = `/tmp/swerl-escape-${process.pid}`;
    try {
      const r = await sb.exec(`touch /etc/swerl-x; echo x > ${marker}; echo y > ../outside; touch /root/x; echo done`);
      expect(r.output).toContain('Read-only file system');
      expect(existsSync('/etc/swerl-x')).toBe(false);
      expect(existsSync(marker)).toBe(false); // /tmp inside is a private tmpfs
      expect(existsSync(`${sb.root}/../outside`)).toBe(false);
    } finally {
      await sb.close();
    }
  });

  it('cannot reach a host service over the network', async () => {
    const server = createServer((s) => s.end('secret\n'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    const sb = await LocalSandbox.create({ timeoutMs: 5000 });
    try {
      const r = await sb.exec(`exec 3<>/dev/tcp/127.0.0.1/${port} && cat <&3 || echo blocked`);
      expect(r.output).not.toContain('secret');
      expect(r.output).toContain('blocked');
    } finally {
      await sb.close();
      server.close();
    }
  });

  it('does not outlive its timeout, nor leave processes behind', async () => {
    const sb = await LocalSandbox.create();
    try {
      const r = await sb.exec('(sleep 1000 &) ; nohup sleep 1000 & sleep 1000', { timeoutMs: 500 });
      expect(r.timedOut).toBe(true);
      expect(r.durationMs).toBeLessThan(5000);
      await new Promise((res) => setTimeout(res, 200));
      expect(processesOf(sb)).toBe(0);
    } finally {
      await sb.close();
    }
  });

  it('caps an output flood with a truncation marker and stops it', async () => {
    const sb = await LocalSandbox.create({ maxOutputBytes: 10_000, timeoutMs: 20_000 });
    try {
      const r = await sb.exec('yes swerl-flood-line');
      expect(r.truncated).toBe(true);
      expect(r.output.length).toBeLessThan(10_200);
      expect(r.output).toContain('[output truncated:');
      expect(r.timedOut).toBe(false); // killed as a flood, long before the timeout
    } finally {
      await sb.close();
    }
  });

  it('contains a memory hog and a fork bomb', async () => {
    const sb = await LocalSandbox.create({ memoryMiB: 256, maxProcesses: 64, timeoutMs: 4000 });
    try {
      const mem = await sb.exec('node -e "const a=[]; for(;;) a.push(Buffer.alloc(64*1024*1024).fill(1))"');
      expect(mem.exitCode).not.toBe(0);
      expect(mem.timedOut).toBe(false);
      const bomb = await sb.exec(':(){ :|:& };:; sleep 2; echo survived');
      expect(bomb.durationMs).toBeLessThan(10_000);
      await new Promise((res) => setTimeout(res, 300));
      expect(processesOf(sb)).toBe(0);
      const after = await sb.exec('echo still fine');
      expect(after.output).toContain('still fine');
    } finally {
      await sb.close();
    }
  });

  it('host-side file access cannot be tricked out of the workspace', async () => {
    const sb = await LocalSandbox.create({ files: { 'ok.txt': 'fine' } });
    try {
      expect(await sb.readFile('ok.txt')).toBe('fine');
      await expect(sb.readFile('../../etc/passwd')).rejects.toMatchObject({ code: 'PATH_ESCAPE' });
      await expect(sb.writeFile('/etc/swerl-y', 'x')).rejects.toMatchObject({ code: 'PATH_ESCAPE' });
      await sb.exec('ln -s /etc/passwd link && ln -s /etc dir');
      await expect(sb.readFile('link')).rejects.toMatchObject({ code: 'PATH_ESCAPE' });
      await expect(sb.writeFile('link', 'x')).rejects.toMatchObject({ code: 'PATH_ESCAPE' });
      await expect(sb.writeFile('dir/swerl-z', 'x')).rejects.toMatchObject({ code: 'PATH_ESCAPE' });
      expect(existsSync('/etc/swerl-z')).toBe(false);
    } finally {
      await sb.close();
    }
  });

  it("gives a command one pipe for stdout and stderr: a process's writes come in the order it made them", async () => {
    // Over two pipes this interleaving came out 10 different ways in 30 runs.
    const script = 'for (let i = 0; i < 5; i++) { console.log("out" + i); console.error("err" + i); }\n';
    const want = `${[0, 1, 2, 3, 4].map((i) => `out${i}\nerr${i}\n`).join('')}/bin/bash\nls: cannot access 'nothere': No such file or directory\n`;
    for (let run = 0; run < 8; run++) {
      const sb = await LocalSandbox.create({ files: { 'a.js': script } });
      try {
        const r = await sb.exec('node a.js; echo $0; ls nothere');
        expect(r.output).toBe(want);
        expect(r.exitCode).toBe(2);
      } finally {
        await sb.close();
      }
    }
  });

  it('diff() shows edits and new files against the initial state; close() removes everything', async () => {
    const sb = await LocalSandbox.create({ files: { 'lib/m.js': 'export function f(a, b) {\n  return a - b;\n}\n' } });
    await sb.exec("sed -i 's/a - b/a + b/' lib/m.js && echo 'new' > NEW.md");
    await sb.writeFile('lib/extra.js', 'x\n');
    const d = await sb.diff();
    expect(d).toContain('-  return a - b;');
    expect(d).toContain('+  return a + b;');
    expect(d).toContain('+++ b/NEW.md');
    expect(d).toContain('+++ b/lib/extra.js');
    const root = sb.root;
    await sb.close();
    expect(existsSync(root)).toBe(false);
    await expect(sb.exec('true')).rejects.toMatchObject({ code: 'DISPOSED' });
  });
});

describe.skipIf(!hasBwrap)('LocalSandbox: kills, workspace location, no repository', () => {
  it('kills a command whose timeout or close comes before it has started', async () => {
    const sb = await LocalSandbox.create();
    try {
      // 1 ms: the timer fires before the spawn relay has reported the pid (it used to do nothing
      // then, and the command ran its full 60 s).
      const r = await sb.exec('sleep 60', { timeoutMs: 1 });
      expect(r.timedOut).toBe(true);
      expect(r.durationMs).toBeLessThan(5000);
      const running = sb.exec('sleep 60');
      const t0 = performance.now();
      await sb.close();
      const closed = await running;
      expect(performance.now() - t0).toBeLessThan(5000);
      expect(closed.exitCode).not.toBe(0);
      expect(processesOf(sb)).toBe(0);
    } finally {
      await sb.close();
    }
  });

  it.skipIf(process.getuid?.() !== 0)(
    "close() kills what a command left running outside its process group ('none' isolation)",
    async () => {
      // Without a PID namespace nothing ends a process that left the command's group (setsid):
      // close() kills by the sandbox's uid.
      const sb = await LocalSandbox.create({ isolation: 'none', repository: false });
      try {
        // The command returns once the process is in a session of its own (it writes its pid
        // after setsid): earlier, the end of the command still kills it with the group.
        const r = await sb.exec(
          "setsid sh -c 'echo $$ > pid; exec sleep 300' </dev/null >/dev/null 2>&1 & while [ ! -s pid ]; do sleep 0.05; done; echo started",
        );
        expect(r.output).toBe('started\n');
        expect(processesOf(sb)).toBe(1); // it outlived the command
      } finally {
        await sb.close();
      }
      expect(processesOf(sb)).toBe(0);
    },
  );

  it('makes its workspace in the dir option, else in defaultSandboxDir()', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'swerl-sbdir-'));
    try {
      if (process.getuid?.() === 0) {
        // As root, commands run as another uid, which must be able to reach the workspace.
        await expect(LocalSandbox.create({ dir })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
        expect(readdirSync(dir)).toEqual([]);
        chmodSync(dir, 0o755);
      }
      const sb = await LocalSandbox.create({ dir, files: { 'a.txt': 'x' } });
      expect(dirname(sb.root)).toBe(realpathSync(dir));
      expect((await sb.exec('cat a.txt')).output).toBe('x');
      await sb.close();
      expect(readdirSync(dir)).toEqual([]); // workspace and git metadata both removed
      const d = await LocalSandbox.create();
      expect(dirname(d.root)).toBe(realpathSync(defaultSandboxDir()));
      await d.close();
      await expect(LocalSandbox.create({ dir: join(dir, 'missing', 'deeper') })).rejects.toMatchObject({
        code: 'IO_ERROR',
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a workspace made but its git metadata not: IO_ERROR, and the workspace is removed', async () => {
    // A dir so deep that 'swerl-ws-<pid>-XXXXXX' still fits in PATH_MAX (4095 characters) and
    // the longer 'swerl-meta-<pid>-XXXXXX' does not: the second mkdtemp fails with ENAMETOOLONG.
    const base = mkdtempSync(join(tmpdir(), 'swerl-deep-'));
    chmodSync(base, 0o755);
    try {
      let dir = base;
      const ws = `/swerl-ws-${process.pid}-XXXXXX`;
      const meta = `/swerl-meta-${process.pid}-XXXXXX`;
      const longest = 4095 - ws.length;
      for (let room = longest - dir.length - 1; room >= 1; room = longest - dir.length - 1) {
        dir = join(dir, 'd'.repeat(Math.min(200, room)));
        mkdirSync(dir);
      }
      expect(dir.length + meta.length).toBeGreaterThan(4095);
      await expect(LocalSandbox.create({ dir, files: { 'a.txt': 'x' } })).rejects.toMatchObject({
        code: 'IO_ERROR',
        message: expect.stringMatching(/git metadata/),
      });
      expect(readdirSync(dir)).toEqual([]); // the workspace it did make is gone
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });

  it('a command with a NUL byte gets the same answer however it would be launched, and runs nothing', async () => {
    const sb = await LocalSandbox.create({ repository: false });
    try {
      const r = await sb.exec('echo a\0b > made.txt');
      expect(r).toMatchObject({ exitCode: 2, timedOut: false });
      expect(r.output).toBe('bash: the command contains a NUL byte, which no command line can hold\n');
      expect(existsSync(join(sb.root, 'made.txt'))).toBe(false);
      expect((await sb.exec('echo fine')).output).toBe('fine\n');
    } finally {
      await sb.close();
    }
  });

  it.skipIf(!hasBwrap)('a command is the same user in every bwrap sandbox, whatever uid it got', async () => {
    const probe = 'id && groups && whoami && ls -ln && stat -c "%u %g %U" . && echo ~';
    const [a, b] = [
      await LocalSandbox.create({ isolation: 'bwrap', files: { 'a.txt': 'x\n' } }),
      await LocalSandbox.create({ isolation: 'bwrap', files: { 'a.txt': 'x\n' } }),
    ];
    try {
      const [ra, rb] = [await a.exec(probe), await b.exec(probe)];
      expect(ra.exitCode, ra.output).toBe(0);
      expect(ra.output).toBe(rb.output);
      expect(ra.output).toContain('uid=1000(swerl) gid=1000(swerl) groups=1000(swerl)\nswerl\nswerl\n');
      expect(ra.output).toMatch(/^-rw-r--r-- 1 1000 1000 2 .* a\.txt$/m);
      expect(ra.output).toContain('1000 1000 swerl\n/project\n');
      if (a.uid !== null) expect(a.uid).not.toBe(b.uid); // as root: two uids outside, one user inside
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('gives the agent a repository of the starting state, owned by its uid, naming no host path', async () => {
    const sb = await LocalSandbox.create({ files: { 'm.js': 'a - b\n', 'src/n.js': 'n\n' } });
    try {
      const r = await sb.exec(
        [
          'git status --porcelain', // nothing changed yet
          'git log --format=%s', // one commit of the starting state
          'git ls-files',
          'echo "a + b" > m.js && git diff --stat',
          'git stash -q && cat m.js && git stash pop -q && cat m.js',
          'git checkout -- m.js && cat m.js',
          'git config --get core.worktree || echo no-worktree',
          `find .git ! -user "$(id -u)" | head -3`, // every file the agent's own
          'git rev-parse --show-toplevel',
        ].join(' && echo --- && '),
      );
      expect(r.exitCode).toBe(0);
      expect(r.output.split('---\n').map((x) => x.trim())).toEqual([
        '',
        'initial',
        'm.js\nsrc/n.js',
        'm.js | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)',
        'a - b\na + b',
        'a - b',
        'no-worktree',
        '',
        sb.workdir,
      ]);
      const text = (await sb.exec('cat .git/config .git/HEAD .git/logs/HEAD')).output;
      expect(text).not.toContain(sb.root);
      expect(await sb.diff()).toBe(''); // the agent's git left the workspace as it was
    } finally {
      await sb.close();
    }
  });

  it('keeps the history of a repository the workspace brings, with the starting state on top', async () => {
    const src = mkdtempSync(join(tmpdir(), 'swerl-fromdir-'));
    try {
      const sh = (c: string) => execFileSync('bash', ['-c', c], { cwd: src, env: { PATH: process.env.PATH ?? '' } });
      sh(
        'git init -q && echo one > f.txt && git -c user.name=u -c user.email=u@x add -A && git -c user.name=u -c user.email=u@x commit -qm brought && echo two > f.txt',
      );
      chmodSync(src, 0o755);
      const sb = await LocalSandbox.create({ fromDir: src });
      try {
        const r = await sb.exec('git log --format=%s && git status --porcelain && cat f.txt');
        expect(r.exitCode).toBe(0);
        expect(r.output).toBe('initial\nbrought\ntwo\n');
      } finally {
        await sb.close();
      }
    } finally {
      rmSync(src, { recursive: true, force: true });
    }
  });

  it('without a repository: no .git, git apply still works, diff() is INVALID_ARGUMENT', async () => {
    const sb = await LocalSandbox.create({ repository: false, files: { 'm.js': 'a - b\n' } });
    try {
      expect(existsSync(join(sb.root, '.git'))).toBe(false);
      await sb.writeFile('p.diff', '--- a/m.js\n+++ b/m.js\n@@ -1 +1 @@\n-a - b\n+a + b\n');
      const r = await sb.exec('git apply p.diff && cat m.js');
      expect(r.exitCode).toBe(0);
      expect(r.output).toBe('a + b\n');
      await expect(sb.diff()).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    } finally {
      await sb.close();
    }
    await expect(LocalSandbox.create({ repository: 'no' as unknown as boolean })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });
});

describe.skipIf(!hasUnshare)('LocalSandbox (unshare)', () => {
  it('isolates the network and runs unprivileged', async () => {
    const sb = await LocalSandbox.create({ isolation: 'unshare', timeoutMs: 5000 });
    try {
      const r = await sb.exec('cat /proc/self/uid_map | head -1; (echo > /dev/tcp/1.1.1.1/80) 2>&1 | head -1; echo ok');
      expect(r.output).toContain('ok');
      expect(sb.workdir).toBe('/project'); // the same private view as under bwrap
      expect(r.output).not.toMatch(/^\s*0\s+0\s+4294967295/m); // not the host's root mapping
    } finally {
      await sb.close();
    }
  });
});

describe('LocalSandbox options', () => {
  it('rejects bad options with INVALID_ARGUMENT', async () => {
    await expect(LocalSandbox.create({ isolation: 'chroot' as 'none' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(LocalSandbox.create({ timeoutMs: -1 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(LocalSandbox.create({ diskMiB: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(LocalSandbox.create({ diskMiB: '1g' as unknown as number })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(LocalSandbox.create({ files: { '../x': 'y' } })).rejects.toMatchObject({ code: 'PATH_ESCAPE' });
  });
});

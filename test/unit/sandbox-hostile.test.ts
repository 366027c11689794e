/**
 * LocalSandbox's private view of the host, attacked from inside a command, under bwrap and under
 * the unshare fallback alike: the project checkout, the host's $HOME, /tmp and /dev/shm, another
 * open sandbox's workspace (by its path and by listing), and the host's processes must all be out
 * of reach, while the workspace, node, git and python still work. Also: the size caps on the
 * workspace, /tmp and /dev/shm, the workspace's mode, and the one warning for isolation 'none'.
 * A mechanism that does not work here is skipped with the reason printed (CI runs as root with
 * bubblewrap installed, where both run).
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statfsSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolationAvailable, LocalSandbox } from '../../src/index.js';

const isRoot = process.getuid?.() === 0;
const tag = `swerl-hostile-${process.pid}-${randomBytes(4).toString('hex')}`;

for (const kind of ['bwrap', 'unshare'] as const) {
  const available = isolationAvailable(kind);
  if (!available)
    console.warn(`sandbox-hostile: skipping the ${kind} tests: isolation '${kind}' does not work on this machine`);

  describe.skipIf(!available)(`LocalSandbox (${kind}): what a command can reach of the host`, () => {
    let sb: LocalSandbox;
    let other: LocalSandbox;
    const hostTmp = join('/tmp', `${tag}-${kind}`);
    const hostShm = join('/dev/shm', `${tag}-${kind}`);

    beforeAll(async () => {
      writeFileSync(hostTmp, 'host-secret-tmp\n');
      if (existsSync('/dev/shm')) writeFileSync(hostShm, 'host-secret-shm\n');
      [sb, other] = await Promise.all([
        LocalSandbox.create({ isolation: kind, files: { 'seed.txt': 'seed\n' } }),
        LocalSandbox.create({ isolation: kind, files: { 'secret.txt': 'other-secret\n' } }),
      ]);
    });
    afterAll(async () => {
      await Promise.all([sb?.close(), other?.close()]);
      rmSync(hostTmp, { force: true });
      rmSync(hostShm, { force: true });
    });

    it('works in its own workspace: read, write, node, git, python3', async () => {
      expect(sb.isolation).toBe(kind);
      expect(sb.workdir).toBe('/project');
      const r = await sb.exec(
        'cat seed.txt && echo made > new.txt && node -e "console.log(6 * 7)" && git status --porcelain && pwd',
      );
      expect(r.exitCode, r.output).toBe(0);
      expect(r.output).toBe('seed\n42\n?? new.txt\n/project\n');
      expect(await sb.readFile('new.txt')).toBe('made\n');
      if (existsSync('/usr/bin/python3')) {
        const py = await sb.exec("python3 -c 'print(1)'");
        expect(py.output).toBe('1\n');
      } else console.warn('sandbox-hostile: no /usr/bin/python3 here: python not checked');
    });

    it('cannot read or write the project checkout', async () => {
      const repo = process.cwd();
      const pkg = readFileSync(join(repo, 'package.json'), 'utf8');
      const marker = join(repo, `${tag}.txt`);
      try {
        const r = await sb.exec(
          `test -e ${repo} && echo VISIBLE; ls -a ${repo}; cat ${repo}/package.json; echo pwned > ${marker}; echo end`,
        );
        expect(r.output).toContain('end');
        expect(r.output).not.toContain('VISIBLE');
        expect(r.output).not.toContain('node_modules');
        expect(r.output).not.toContain(pkg.slice(0, 60));
        expect(existsSync(marker)).toBe(false);
      } finally {
        rmSync(marker, { force: true });
      }
    });

    it("cannot read or write the host's $HOME", async () => {
      const home = homedir();
      const marker = join(home, `${tag}.txt`);
      try {
        const r = await sb.exec(`test -e ${home} && echo VISIBLE; ls -a ${home}; echo pwned > ${marker}; echo end`);
        expect(r.output).toContain('end');
        expect(r.output).not.toContain('VISIBLE');
        expect(existsSync(marker)).toBe(false);
      } finally {
        rmSync(marker, { force: true });
      }
    });

    for (const [where, file, secret] of [
      ['/tmp', hostTmp, 'host-secret-tmp'],
      ['/dev/shm', hostShm, 'host-secret-shm'],
    ] as const) {
      it(`cannot see or change the host's ${where}`, async () => {
        if (!existsSync(file)) return console.warn(`sandbox-hostile: no host ${where} here`);
        const list = await sb.exec(`ls -a ${where}`);
        expect(list.exitCode).toBe(0); // a private one
        expect(list.output).not.toContain(tag);
        const r = await sb.exec(`cat ${file}; echo changed > ${file}; echo end`);
        expect(r.output).not.toContain(secret);
        const rm = await sb.exec(`rm -f ${file}; ls -a ${where}`);
        expect(rm.output).not.toContain(tag);
        expect(readFileSync(file, 'utf8')).toBe(`${secret}\n`); // the host's, untouched
      });
    }

    it("cannot reach another open sandbox's workspace, by its path or by listing", async () => {
      const r = await sb.exec(
        `cat ${other.root}/secret.txt; echo pwned > ${other.root}/secret.txt; echo pwned > ${other.root}/new.txt; echo end`,
      );
      expect(r.output).toContain('end');
      expect(r.output).not.toContain('other-secret');
      expect(await other.readFile('secret.txt')).toBe('other-secret\n');
      expect(existsSync(join(other.root, 'new.txt'))).toBe(false);
      // Guessing: the directory the workspaces live in, and the usual places, by name.
      const look = await sb.exec(
        `ls -a ${dirname(sb.root)} ${dirname(other.root)} /dev/shm /tmp /; find / -maxdepth 4 -path /proc -prune -o -name 'swerl-*' -print; echo end`,
      );
      expect(look.output).toContain('end');
      expect(look.output).not.toContain(basename(other.root));
      expect(look.output).not.toMatch(/swerl-(ws|meta)-/);
    });

    it("cannot see the host's processes: /proc and ps show only its own", async () => {
      const r = await sb.exec(
        `cat /proc/${process.pid}/cmdline; for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done; echo ---; ps ax -o comm=`,
      );
      expect(r.output).not.toMatch(/vitest|node_modules/);
      const comms = r.output.split('---\n')[1]?.trim().split('\n') ?? [];
      expect(comms.length).toBeGreaterThan(0);
      // bwrap's own process (pid 1 under bwrap), the command's shell, and ps.
      for (const c of comms) expect(['bwrap', 'bash', 'ps']).toContain(c.trim());
    });

    it('inherits no file descriptor of the process that made it (one left open without close-on-exec)', () => {
      // A process whose fd 200 is open without close-on-exec (as a launcher's pipe or a log would be),
      // in a sandbox and in a persistent shell: neither command may see or write it.
      const script = `
        const { LocalSandbox } = await import(${JSON.stringify(pathToFileURL(join(process.cwd(), 'dist', 'index.js')).href)});
        const sb = await LocalSandbox.create({ isolation: '${kind}', repository: false });
        const probe = 'if [ -e /proc/$$/fd/200 ]; then echo LEAKED; echo forged >&200; else echo closed; fi; ls /proc/$$/fd | tr "\\n" " "';
        const a = await sb.exec(probe);
        const shell = await sb.openShell();
        const b = await shell.run(probe);
        await sb.close();
        console.log(JSON.stringify([a.output, b.output]));`;
      // bash opens fd 200 on a log file without close-on-exec, then becomes node.
      const log = join(mkdtempSync(join(tmpdir(), 'swerl-fd-')), 'log');
      const r = spawnSync(
        'bash',
        ['-c', 'exec 200>>"$1"; exec "$2" --input-type=module -e "$3"', 'bash', log, process.execPath, script],
        { encoding: 'utf8', timeout: 60_000 },
      );
      expect(r.status, r.stderr).toBe(0);
      const [a, b] = JSON.parse(r.stdout.trim().split('\n').pop() ?? '[]') as string[];
      for (const out of [a, b]) {
        expect(out).toMatch(/^closed/);
        expect(out).not.toContain('LEAKED');
      }
      expect(readFileSync(log, 'utf8')).toBe('');
      rmSync(dirname(log), { recursive: true, force: true });
    });

    it("sees only the /etc entries commands need, read-only, and no resolv.conf's content offline", async () => {
      const r = await sb.exec(
        'ls /etc; test -e /etc/shadow && echo SHADOW; test -e /etc/gitconfig && echo GITCONFIG; test -e /etc/ssl/private && echo PRIVATE; wc -c < /etc/resolv.conf; touch /etc/passwd /usr/x 2>&1 | head -1',
      );
      expect(r.output).toContain('passwd');
      expect(r.output).toContain('ld.so.cache');
      expect(r.output).not.toMatch(/SHADOW|GITCONFIG|PRIVATE/);
      expect(r.output).toMatch(/^0$/m);
      expect(r.output).toMatch(/Read-only file system|Permission denied/);
    });

    it('cannot regain capabilities in a nested user namespace (to mount a tmpfs with no size cap)', async () => {
      // unshare(1) then exec loses them again (the bounding set is empty); a program that calls
      // unshare(2) and mount(2) itself does not: python's ctypes here.
      const nested = [
        'import ctypes',
        'libc = ctypes.CDLL(None, use_errno=True)',
        'if libc.unshare(0x10000000 | 0x00020000) != 0: print("unshare refused")',
        'elif libc.mount(b"swerl-x", b"/tmp", b"tmpfs", 0, None) == 0: print("MOUNTED")',
        'else: print("mount refused")',
      ].join('\n');
      await sb.writeFile('nested.py', `${nested}\n`);
      const r = await sb.exec(
        "unshare --user --map-root-user --mount sh -c 'mount -t tmpfs swerl-x /tmp && echo MOUNTED'; grep CapEff /proc/self/status; python3 nested.py; rm nested.py",
      );
      expect(r.output).toMatch(/CapEff:\s+0+\n/);
      if (existsSync('/usr/bin/python3')) expect(r.output).toMatch(/unshare refused|mount refused/);
      expect(r.output).not.toContain('MOUNTED');
    });

    it('its workspace is private to it: mode 0700, owned by its uid', () => {
      const st = statSync(sb.root);
      expect(st.mode & 0o777).toBe(0o700);
      expect(st.uid).toBe(isRoot ? sb.uid : process.getuid?.());
      if (isRoot) expect(sb.uid).not.toBe(other.uid);
    });
  });

  describe.skipIf(!available)(`LocalSandbox (${kind}): disk caps`, () => {
    it('a command writing past diskMiB gets ENOSPC or EFBIG, in the workspace, /tmp and /dev/shm', async () => {
      const sb = await LocalSandbox.create({ isolation: kind, diskMiB: 8, repository: false });
      try {
        // Each file under the 8 MiB file-size limit, together over the cap.
        for (const d of ['/tmp', '/dev/shm']) {
          const r = await sb.exec(`head -c 5M /dev/zero > ${d}/a && head -c 5M /dev/zero > ${d}/b && echo fitted`);
          expect(r.output).toMatch(/No space left on device/);
          expect(r.output).not.toContain('fitted');
        }
        const big = await sb.exec('head -c 20M /dev/zero > big; ls -l big');
        // SIGXFSZ (bash: "File size limit exceeded") or EFBIG, or the tmpfs full first.
        expect(big.output).toMatch(/No space left on device|File too large|File size limit exceeded/);
        expect(statSync(join(sb.root, 'big')).size).toBeLessThanOrEqual(8 * 2 ** 20);
        if (sb.diskCapMiB === null) {
          console.warn(
            `sandbox-hostile: the workspace has no tmpfs of its own here (${isRoot ? 'its dir is not a tmpfs, or mount was refused' : 'not root'}): only each file is capped`,
          );
          return;
        }
        expect(sb.diskCapMiB).toBe(8);
        const r = await sb.exec('rm -f big; head -c 5M /dev/zero > a && head -c 5M /dev/zero > b && echo fitted');
        expect(r.output).toMatch(/No space left on device/);
        expect(r.output).not.toContain('fitted');
        // The workspace is a tmpfs of its own, of 8 MiB, that holds no more: the host's /dev/shm
        // (or wherever the workspaces live) cannot be filled through it.
        const fs = statfsSync(sb.root);
        expect(fs.blocks * fs.bsize).toBe(8 * 2 ** 20);
        expect((fs.blocks - fs.bfree) * fs.bsize).toBeLessThanOrEqual(8 * 2 ** 20);
      } finally {
        await sb.close();
      }
      expect(existsSync(sb.root)).toBe(false); // unmounted and removed
    });
  });
}

describe("LocalSandbox isolation 'auto' without bubblewrap", () => {
  // A process whose PATH lacks bwrap (and, the second time, unshare too): what does 'auto' pick?
  // Run on the built package (dist/, which CI builds before the tests).
  const script = `
    const { LocalSandbox } = await import(${JSON.stringify(pathToFileURL(join(process.cwd(), 'dist', 'index.js')).href)});
    try {
      const sb = await LocalSandbox.create({ repository: false });
      const r = await sb.exec('ls /work /root /dev/shm 2>&1; echo ran');
      console.log(JSON.stringify({ isolation: sb.isolation, workdir: sb.workdir, output: r.output }));
      await sb.close();
    } catch (e) {
      console.log(JSON.stringify({ code: e.code, message: e.message }));
    }`;
  const run = (tools: string[]) => {
    const bin = mkdtempSync(join(tmpdir(), 'swerl-path-'));
    try {
      for (const t of tools) {
        const p = spawnSync('sh', ['-c', `command -v ${t}`], { encoding: 'utf8' }).stdout.trim();
        if (p) symlinkSync(p, join(bin, t));
      }
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        encoding: 'utf8',
        env: { ...process.env, PATH: bin },
      });
      return JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as Record<string, string>;
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  };

  it.skipIf(!isolationAvailable('unshare'))('picks unshare, with the same private view', () => {
    const r = run(['node', 'unshare', 'setpriv', 'sh']);
    expect(r.isolation).toBe('unshare');
    expect(r.workdir).toBe('/project');
    expect(r.output).toContain('ran');
    expect(r.output).toMatch(/cannot access '\/work'/);
    expect(r.output).toMatch(/cannot access '\/root'/);
  });

  it('with neither, refuses: SANDBOX_UNAVAILABLE, saying to install bubblewrap', () => {
    const r = run(['node']);
    expect(r.code).toBe('SANDBOX_UNAVAILABLE');
    expect(r.message).toContain('apt-get install bubblewrap');
  });
});

describe.skipIf(!isRoot)('LocalSandbox run by an unprivileged user', () => {
  // Not as root, a process's sandboxes all run as that one user: only the private view keeps them
  // apart (a real run, as a user, once rewrote another open sandbox's file). Run on dist/.
  for (const kind of ['bwrap', 'unshare'] as const)
    it.skipIf(!isolationAvailable(kind))(`cannot reach another of its sandboxes, nor the checkout (${kind})`, () => {
      const repo = process.cwd();
      const script = `
        const { LocalSandbox } = await import(${JSON.stringify(pathToFileURL(join(repo, 'dist', 'index.js')).href)});
        const { readFileSync } = await import('node:fs');
        const o = { isolation: '${kind}' };
        const [a, b] = await Promise.all([
          LocalSandbox.create({ ...o, files: { 't.js': 'mine' } }),
          LocalSandbox.create({ ...o, files: { 't.js': 'other-secret' } }),
        ]);
        const r = await a.exec('cat ' + b.root + '/t.js; echo pwned > ' + b.root + '/t.js; ls ${repo}; cat t.js');
        console.log(JSON.stringify({ uid: process.getuid(), output: r.output, other: readFileSync(b.root + '/t.js', 'utf8') }));
        await Promise.all([a.close(), b.close()]);`;
      const uid = String(199_998); // nobody's: outside the range sandboxes claim
      const r = spawnSync(
        'setpriv',
        [
          `--reuid=${uid}`,
          `--regid=${uid}`,
          '--clear-groups',
          '--',
          process.execPath,
          '--input-type=module',
          '-e',
          script,
        ],
        { encoding: 'utf8', cwd: '/', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmpdir() } },
      );
      expect(r.status, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as {
        uid: number;
        output: string;
        other: string;
      };
      expect(out.uid).toBe(199_998);
      expect(out.output).toContain('mine');
      expect(out.output).not.toContain('other-secret');
      expect(out.output).not.toContain('node_modules');
      expect(out.other).toBe('other-secret');
    });
});

describe('LocalSandbox isolation none', () => {
  it('warns once per process, saying how to install bubblewrap', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on('warning', onWarning);
    try {
      for (let i = 0; i < 2; i++) {
        const sb = await LocalSandbox.create({ isolation: 'none', repository: false });
        await sb.close();
      }
      await new Promise((r) => setImmediate(r)); // warnings are emitted on the next tick
      const ours = warnings.filter((m) => m.includes('LocalSandbox isolation "none"'));
      expect(ours).toHaveLength(1);
      expect(ours[0]).toContain('apt-get install bubblewrap');
    } finally {
      process.off('warning', onWarning);
    }
  });
});

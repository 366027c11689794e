/**
 * The sandbox launcher (native/sandbox/launch.cc): where it is built, each command starts with its
 * one exec instead of `prlimit` → `setpriv` → `sh` → a descriptor-closing bash. A command must see
 * exactly the same either way: the same uid, limits, descriptors (none inherited), `$0`, and one
 * pipe for stdout and stderr. A malformed launcher argument, or a step that fails (a limit, the uid
 * change, the exec), runs nothing. Where the kernel has no close_range (before 5.9), the
 * descriptors still close, one by one.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { isolationAvailable } from '../../src/index.js';
import { sandboxLauncherPath } from '../../src/native.js';

const cmakeBuilt = existsSync(join('build', 'cmake', 'Release', 'swerl.node'));
const launcher = sandboxLauncherPath();
const hasPython = spawnSync('python3', ['-c', '0']).status === 0;
const kinds = (['bwrap', 'none'] as const).filter((k) => k === 'none' || isolationAvailable(k));

/**
 * Runs `probe` in a LocalSandbox of `isolation` from a node process that holds fd 200 open without
 * close-on-exec, with the launcher (SWERL_LAUNCHER unset) or without it (SWERL_LAUNCHER=0).
 */
function probeOutput(isolation: string, withLauncher: boolean, probe: string): { output: string; uid: number | null } {
  const script = `
    const { LocalSandbox } = await import(${JSON.stringify(pathToFileURL(join(process.cwd(), 'dist', 'index.js')).href)});
    process.removeAllListeners('warning');
    const sb = await LocalSandbox.create({ isolation: '${isolation}', repository: false, memoryMiB: 300, maxProcesses: 77, diskMiB: 5 });
    const r = await sb.exec(${JSON.stringify(probe)});
    await sb.close();
    console.log(JSON.stringify({ output: r.output, uid: sb.uid }));`;
  const log = join(mkdtempSync(join(tmpdir(), 'swerl-launch-')), 'log');
  const env = { ...process.env, SWERL_LAUNCHER: withLauncher ? '' : '0' };
  const r = spawnSync(
    'bash',
    ['-c', 'exec 200>>"$1"; exec "$2" --input-type=module -e "$3"', 'bash', log, process.execPath, script],
    { encoding: 'utf8', timeout: 60_000, env },
  );
  expect(r.status, r.stderr).toBe(0);
  expect(readFileSync(log, 'utf8')).toBe('');
  rmSync(dirname(log), { recursive: true, force: true });
  return JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}');
}

/**
 * Execs its arguments with close_range (syscall 436 on every architecture) refused with ENOSYS, as
 * a kernel before 5.9 refuses it, and descriptors 3, 4, 5, 1000 and 4000 open and inheritable
 * (below a descriptor limit of 4096). A seccomp filter: no privilege needed after no_new_privs.
 */
const REFUSE_CLOSE_RANGE = `
import ctypes, os, resource, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
NR, ENOSYS = 436, 38
prog = b''.join(struct.pack('HBBI', *i) for i in [
    (0x20, 0, 0, 0),                    # A = seccomp_data.nr
    (0x15, 0, 1, NR),                   # if A == close_range
    (0x06, 0, 0, 0x00050000 | ENOSYS),  #   return ERRNO(ENOSYS)
    (0x06, 0, 0, 0x7fff0000)])          # return ALLOW
buf = ctypes.create_string_buffer(prog)
class Fprog(ctypes.Structure):
    _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.c_void_p)]
fprog = Fprog(len(prog) // 8, ctypes.addressof(buf))
if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:
    sys.exit('seccomp: ' + os.strerror(ctypes.get_errno()))
u = ctypes.c_uint
if libc.syscall(NR, u(3), u(0xffffffff), u(0)) != -1 or ctypes.get_errno() != ENOSYS:
    sys.exit('close_range was not refused')
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
null = os.open('/dev/null', os.O_RDONLY)
for fd in (3, 4, 5, 1000, 4000):
    if fd != null: os.dup2(null, fd, inheritable=True)
os.set_inheritable(null, True)
os.execvp(sys.argv[1], sys.argv[1:])
`;

describe('sandbox launcher', () => {
  it.skipIf(!cmakeBuilt)('is built beside the cmake addon, statically linked where it could be', () => {
    expect(launcher).toBe(join(process.cwd(), 'build', 'cmake', 'Release', 'swerl_launch'));
    expect(sandboxLauncherPath({ ...process.env, SWERL_LAUNCHER: '0' })).toBeNull();
  });

  describe.skipIf(launcher === null)('against the prlimit chain', () => {
    // The shell's descriptors are listed into a file, not through a pipe: while it starts a
    // pipeline the shell itself holds the pipe's ends for a moment, and `ls` could see them.
    const probe =
      'id -u; id -G; ulimit -u; ulimit -f; ulimit -d; ulimit -v; ls /proc/$$/fd > fds.txt; tr "\\n" " " < fds.txt; echo; echo $0; ' +
      'echo out1; echo err1 >&2; echo out2; [ -e /proc/$$/fd/200 ] && echo LEAKED; nothere';
    for (const isolation of kinds) {
      it(`a command sees the same uid, limits, descriptors and output order (${isolation})`, () => {
        const a = probeOutput(isolation, true, probe);
        const b = probeOutput(isolation, false, probe);
        // Each sandbox claims a uid of its own (under bwrap, the command is uid 1000 inside
        // whatever it is outside: SANDBOX_USER); everything else is the same.
        const lines = a.output.split('\n');
        const chainLines = b.output.split('\n');
        expect(lines.slice(2)).toEqual(chainLines.slice(2));
        for (const [l, uid] of [
          [lines, a.uid],
          [chainLines, b.uid],
        ] as const) {
          const seen = isolation === 'bwrap' ? '1000' : uid === null ? l[0] : String(uid);
          expect(l.slice(0, 2)).toEqual([seen, seen]);
        }
        expect(lines.slice(2, 6)).toEqual(['77', String(5 * 1024), String(300 * 1024), String(4 * 300 * 1024)]);
        expect(lines[6]?.trim().split(' ')).toEqual(['0', '1', '2']);
        expect(lines.slice(7, 11)).toEqual(['/bin/bash', 'out1', 'err1', 'out2']);
        expect(a.output).not.toContain('LEAKED');
        expect(a.output).toContain('/bin/bash: line 1: nothere: command not found');
      }, 120_000);
    }
  });

  it.skipIf(launcher === null)('a malformed argument or a root uid runs nothing, with status 127', () => {
    const dir = mkdtempSync(join(tmpdir(), 'swerl-launch-'));
    const mark = join(dir, 'ran');
    for (const bad of [['--nproc=12x'], ['--data=-1'], ['--uid=0'], ['--bogus']]) {
      const r = spawnSync(launcher as string, [...bad, '--', 'touch', mark], { encoding: 'utf8' });
      expect(r.status, bad.join(' ')).toBe(127);
      expect(r.stderr).toMatch(/^swerl_launch: /);
      expect(existsSync(mark)).toBe(false);
    }
    const none = spawnSync(launcher as string, ['--'], { encoding: 'utf8' });
    expect(none.status).toBe(127);
    const ok = spawnSync(launcher as string, ['--nproc=50', '--', 'touch', mark], { encoding: 'utf8' });
    expect(ok.status, ok.stderr).toBe(0);
    expect(existsSync(mark)).toBe(true);
    rmSync(dir, { recursive: true, force: true });
  });

  it.skipIf(launcher === null)('a step that fails runs nothing, with status 127 and the reason', () => {
    const dir = mkdtempSync(join(tmpdir(), 'swerl-launch-'));
    chmodSync(dir, 0o777); // so that the command, had it run, could leave its mark as any user
    const mark = join(dir, 'ran');
    // Without the privilege to raise a hard limit or to change uid: as root, drop it first.
    const unprivileged =
      process.getuid?.() === 0 ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'] : [];
    const L = launcher as string;
    const touch = ['--', 'touch', mark];
    const cases: [string[], RegExp][] = [
      // A limit above the hard limit this process was given.
      [
        ['prlimit', '--fsize=4096:4096', '--', ...unprivileged, L, '--fsize=8192', ...touch],
        /--fsize=8192: Operation not permitted/,
      ],
      // A uid change: the supplementary groups cannot be dropped without CAP_SETGID.
      [[...unprivileged, L, '--uid=12345', ...touch], /setgroups: Operation not permitted/],
      // A program that is not there.
      [[L, '--', join(dir, 'missing'), mark], /missing: No such file or directory/],
    ];
    for (const [argv, why] of cases) {
      const r = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8' });
      expect(r.status, `${argv.join(' ')}: ${r.stderr}`).toBe(127);
      expect(r.stderr).toMatch(/^swerl_launch: /);
      expect(r.stderr).toMatch(why);
      expect(existsSync(mark)).toBe(false);
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it.skipIf(launcher === null || !hasPython)(
    'closes inherited descriptors one by one where close_range is refused',
    () => {
      // Which of the inherited descriptors the shell the launcher runs still holds ([ -e ] is a
      // builtin: nothing else is started, no pipe opened).
      const probe = 'for f in 3 4 5 1000 4000; do [ -e /proc/$$/fd/$f ] && echo open $f; done; echo done';
      const run = (argv: string[]) =>
        spawnSync('python3', ['-c', REFUSE_CLOSE_RANGE, ...argv, 'sh', '-c', probe], { encoding: 'utf8' });
      // Without the launcher the shell holds them all: the probe sees what it should close.
      const bare = run([]);
      expect(bare.status, bare.stderr).toBe(0);
      expect(bare.stdout).toBe('open 3\nopen 4\nopen 5\nopen 1000\nopen 4000\ndone\n');
      const launched = run([launcher as string, '--nproc=500', '--']);
      expect(launched.status, launched.stderr).toBe(0);
      expect(launched.stdout).toBe('done\n');
    },
  );
});

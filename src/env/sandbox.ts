/**
 * LocalSandbox (DESIGN.md section 6): a workspace directory in which an agent's commands run
 * isolated from the host. docs/sandbox.md says what a command sees and what is not isolated.
 *
 * Each exec sets limits (memory, processes, file size) → switches to a per-sandbox unprivileged
 * uid when swerl runs as root (so the process limit is enforced: the kernel exempts root) → the
 * isolation layer → `bash -c command`. The first two are one exec of the launcher
 * (native/sandbox/launch.cc) where it was built, else `prlimit` and `setpriv`. Both isolation
 * layers give the command the same private view of the file system, and nothing else of the host:
 * - a read-only root with only /usr (and the /bin, /sbin, /lib* links or directories), a copy of
 *   the few /etc entries a shell, git, node and python need, and any such interpreter binary that
 *   lives outside them, read-only; a private, size-capped /tmp and /dev/shm; a minimal /dev; a
 *   /proc of its own PID namespace; the workspace at /project, the only writable host path;
 * - `bwrap` (bubblewrap) builds that view itself, with new user/PID/network/IPC/UTS namespaces
 *   (no network unless asked), die-with-parent, no capabilities, no nested user namespaces;
 * - `unshare` (util-linux) makes new user/mount/PID/network/IPC/UTS namespaces, and a shell
 *   prelude builds the same view (tmpfs root, read-only binds, pivot_root), forbids nested user
 *   namespaces, then drops every capability. Where that does not work, `unshare` is unavailable:
 *   there is no weaker variant;
 * - `none`: only the limits and the process group, on the host's file system; only when asked
 *   for, with a warning (once per process).
 * A timeout kills the whole process group (and with it the sandbox's PID namespace). Output is
 * capped with a truncation marker; a command flooding far past the cap is killed.
 *
 * The workspace is mode 0700, owned by the sandbox's uid (as root) or the user, so no other
 * sandbox's uid can read it. As root, in a tmpfs directory (the default), the workspace and its
 * git metadata are each a tmpfs of their own, capped at `diskMiB`: a runaway command gets ENOSPC,
 * and the host's memory is not filled. Every file is capped at `diskMiB` too (RLIMIT_FSIZE).
 *
 * The git metadata that diff() uses lives outside the workspace, so nothing an agent writes can
 * configure the host's git. Workspaces are made in defaultSandboxDir() (a tmpfs where there is
 * one) unless the `dir` option says otherwise, named for the owning process, which removes them
 * when it exits; a killed process's are removed by the next sandbox made there
 * (workspace-dirs.ts). Host-side file access resolves symlinks and rejects paths that leave the
 * workspace (PATH_ESCAPE).
 */
import { execFileSync, spawn } from 'node:child_process';
import {
  accessSync,
  chmodSync,
  chownSync,
  constants,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  statfsSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { chmod, cp, lchown, lstat, mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { invalidArgument, SwerlError } from '../errors.js';
import { sandboxLauncherPath } from '../native.js';
import {
  INTERRUPT_SCRIPT,
  PersistentShell,
  type Shell,
  type ShellBackend,
  type ShellOptions,
  type ShellProcess,
} from './persistent-shell.js';
import { shellQuote } from './shell-quote.js';
import { type SpawnedChild, spawnRelayed } from './spawn-relay.js';
import { removeOwnWorkspacesAtExit, useWorkspaceDir, workspacePrefix } from './workspace-dirs.js';

/** What an exec returns. */
export interface ExecResult {
  exitCode: number;
  /**
   * stdout and stderr, capped at maxOutputBytes. LocalSandbox gives the command one pipe for
   * both, as a terminal does, so one process's writes come in the order it made them.
   */
  output: string;
  timedOut: boolean;
  truncated: boolean;
  durationMs: number;
}

/** Options of {@link LocalSandbox.create}. */
export interface SandboxOptions {
  /** Files to create in the workspace (relative path → content). */
  files?: Record<string, string>;
  /** A directory copied into the workspace first. */
  fromDir?: string;
  /**
   * 'auto' (default): bwrap, else unshare (both give the same private view of the file system),
   * else SANDBOX_UNAVAILABLE; never 'none' unless asked for.
   */
  isolation?: 'auto' | 'bwrap' | 'unshare' | 'none';
  /** Allow network access (default false). */
  network?: boolean;
  /** Per-command timeout (default 60 s). */
  timeoutMs?: number;
  /** Output kept per command (default 64 KiB). */
  maxOutputBytes?: number;
  /** Memory per process (RLIMIT_DATA; default 4096 MiB). */
  memoryMiB?: number;
  /** Processes (RLIMIT_NPROC; default 512). */
  maxProcesses?: number;
  /**
   * Disk, in MiB (default 1024): the size of each file (RLIMIT_FSIZE), of the private /tmp and
   * /dev/shm, and, as root in a tmpfs dir, of the workspace's own tmpfs and of its git metadata's
   * (see {@link LocalSandbox.diskCapMiB}).
   */
  diskMiB?: number;
  /**
   * Where the workspace and its git metadata are made (default: {@link defaultSandboxDir}: the
   * SWERL_SANDBOX_DIR environment variable, else /dev/shm when it is a tmpfs with 1 GiB free,
   * else the system's temporary directory).
   */
  dir?: string;
  /**
   * Make the git repositories that diff() reads and the agent's `git` uses (default true).
   * Without them create() is 6 processes cheaper, and diff() fails with INVALID_ARGUMENT: the
   * reward's evaluation needs neither (`git apply` works outside a repository).
   */
  repository?: boolean;
}

type Isolation = 'bwrap' | 'unshare' | 'none';
type Limits = Required<Omit<SandboxOptions, 'files' | 'fromDir' | 'isolation' | 'dir' | 'repository'>>;

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
const UID_BASE = 200_000;
const UID_RANGE = 100_000;
const UID_LOCKS = join(tmpdir(), 'swerl-sandbox-uids');

/**
 * Claims a uid no other sandbox (in this process or another) is using: a lock file per uid,
 * created exclusively, holding the owner's pid; a lock whose owner died is taken over.
 */
function claimUid(): number {
  mkdirSync(UID_LOCKS, { recursive: true, mode: 0o700 });
  const start = Math.floor(Math.random() * UID_RANGE);
  for (let k = 0; k < UID_RANGE; k++) {
    const uid = UID_BASE + ((start + k) % UID_RANGE);
    const lock = join(UID_LOCKS, String(uid));
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx' });
      return uid;
    } catch {
      try {
        const owner = Number(readFileSync(lock, 'utf8'));
        process.kill(owner, 0); // alive: taken
      } catch {
        try {
          unlinkSync(lock); // its owner is gone
          writeFileSync(lock, String(process.pid), { flag: 'wx' });
          return uid;
        } catch {
          // someone else took it first
        }
      }
    }
  }
  throw new SwerlError('no free sandbox uid', 'SANDBOX_UNAVAILABLE');
}

function releaseUid(uid: number): void {
  try {
    unlinkSync(join(UID_LOCKS, String(uid)));
  } catch {
    // already gone
  }
}
const TMPFS_MAGIC = 0x01021994;
let defaultDir: string | null = null;

/**
 * Where sandboxes make their workspaces by default: SWERL_SANDBOX_DIR when set, else /dev/shm
 * when it is a tmpfs with at least 1 GiB free, else the system's temporary directory. A rollout
 * creates and deletes thousands of small files (the repository, git objects, test output); on
 * ext4 the kernel's inode allocation for them took a quarter of an evaluation's CPU time, and on
 * tmpfs it costs next to nothing.
 */
export function defaultSandboxDir(): string {
  const env = process.env.SWERL_SANDBOX_DIR;
  if (env !== undefined && env !== '') return env;
  if (defaultDir !== null) return defaultDir;
  defaultDir = tmpdir();
  try {
    const fs = statfsSync('/dev/shm');
    if (fs.type === TMPFS_MAGIC && fs.bavail * fs.bsize >= 2 ** 30) {
      accessSync('/dev/shm', constants.W_OK);
      defaultDir = '/dev/shm';
    }
  } catch {
    // no usable /dev/shm
  }
  return defaultDir;
}

const probed = new Map<Isolation, boolean>();
let warnedNone = false;
// The uid the probes run as, when root: outside the range sandboxes claim, and unprivileged.
const PROBE_UID = UID_BASE - 1;

/**
 * Whether an isolation mechanism works here, with the private view of the file system (checked
 * once per process, as the uid commands would run as).
 */
export function isolationAvailable(kind: 'bwrap' | 'unshare'): boolean {
  const cached = probed.get(kind);
  if (cached !== undefined) return cached;
  let ok = false;
  try {
    const cmd = [
      ...(isRoot ? ['setpriv', `--reuid=${PROBE_UID}`, `--regid=${PROBE_UID}`, '--clear-groups', '--'] : []),
      ...(kind === 'bwrap'
        ? ['bwrap', ...bwrapArgs(null, false, 2 ** 20), '--', '/bin/true']
        : ['unshare', ...unshareArgs(false), '/bin/sh', '-c', unsharePrelude(false, 2 ** 20), '/bin/true']),
    ];
    // The unshare prelude binds its cwd at /project: the probe's is /usr (not '/' nor /tmp, on
    // which the prelude mounts its root), which it cannot write, and which runs only `true`.
    execFileSync(cmd[0] as string, cmd.slice(1), { stdio: 'ignore', timeout: 10_000, cwd: '/usr' });
    ok = true;
  } catch {
    ok = false;
  }
  probed.set(kind, ok);
  return ok;
}

/** Where the workspace appears inside the sandbox (bwrap and unshare): the same path in every episode. */
export const SANDBOX_WORKDIR = '/project';

/** What of the host a command sees, read-only (computed once per process). */
interface HostView {
  /** Top-level symlinks recreated in the sandbox's root (merged /usr: /bin → usr/bin, ...). */
  links: { path: string; target: string }[];
  /** Directories and files bound read-only at the same path. */
  binds: string[];
  /**
   * A copy of the /etc entries commands need, made once per process, bound read-only as /etc:
   * one mount instead of two dozen (which cost bwrap ~10 ms an exec on a loaded machine). null
   * where it could not be made: then the entries are among `binds`.
   */
  etc: string | null;
}

// The top-level entries that hold the system's programs and libraries.
const SYSTEM_DIRS = ['usr', 'bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32'];
// What a shell, git, node and python need of /etc (users and groups, the dynamic loader, time
// zone, name resolution, TLS roots, Debian's alternatives links, python's site configuration);
// nothing else: /etc can hold credentials (a git credential helper, ssh keys, tokens).
const ETC_ENTRIES = [
  'passwd',
  'group',
  'nsswitch.conf',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'localtime',
  'timezone',
  'hosts',
  'host.conf',
  'gai.conf',
  'protocols',
  'services',
  'os-release',
  'debian_version',
  'mime.types',
  'alternatives',
  'ca-certificates',
  'ca-certificates.conf',
  'ssl/certs',
  'ssl/openssl.cnf',
];
// The programs commands rely on: when PATH's copy resolves outside the system directories (a
// node installed under /opt, say), exactly that binary is bound, nothing else of its tree.
const TOOLS = ['node', 'git', 'python3', 'bash', 'sh', 'env'];
/** What exec() returns, with exit code 2, for a command that holds a NUL byte. */
export const NUL_IN_COMMAND = 'bash: the command contains a NUL byte, which no command line can hold\n';
/** The PATH commands run with. */
const SANDBOX_PATH = '/usr/local/bin:/usr/bin:/bin';
/**
 * Who a command is inside a bwrap sandbox, whatever uid it runs as outside: what `id`, `ls -l` or
 * `groups` print must not depend on which uid the sandbox claimed (a rollout's observations are
 * a function of its seed and the weights), nor name a user of the host.
 */
export const SANDBOX_USER = { name: 'swerl', uid: 1000, gid: 1000 } as const;

let view: HostView | null = null;

function hostView(): HostView {
  if (view) return view;
  const links: HostView['links'] = [];
  const binds: string[] = [];
  for (const name of SYSTEM_DIRS) {
    const p = `/${name}`;
    try {
      const st = lstatSync(p);
      if (st.isSymbolicLink()) links.push({ path: p, target: readlinkSync(p) });
      else if (st.isDirectory()) binds.push(p);
    } catch {
      // not on this system
    }
  }
  let python: string[] = [];
  try {
    python = readdirSync('/etc').filter((n) => /^python3(\.\d+)?$/.test(n));
  } catch {
    // no /etc
  }
  const entries = [...ETC_ENTRIES, ...python].filter((name) => existsSync(`/etc/${name}`));
  const etc = etcCopy(entries);
  if (etc === null) for (const name of entries) binds.push(`/etc/${name}`);
  const covered = (p: string) => binds.some((b) => p === b || p.startsWith(`${b}/`));
  for (const tool of TOOLS) {
    for (const d of SANDBOX_PATH.split(':')) {
      let real: string;
      try {
        real = realpathSync(join(d, tool));
      } catch {
        continue;
      }
      if (!covered(real)) binds.push(real);
      break;
    }
  }
  view = { links, binds, etc };
  return view;
}

/**
 * Copies the /etc entries (symlinks as they are) into a directory that the sandboxes' uids can
 * read, where this process's workspaces live (it is removed with them: workspace-dirs.ts),
 * with an empty resolv.conf that the host's is bound over when the network is allowed. null
 * when it cannot be made.
 */
function etcCopy(entries: string[]): string | null {
  let dir: string | null = null;
  try {
    let where = defaultSandboxDir();
    if (isRoot && (statSync(where).mode & 0o001) === 0) where = tmpdir();
    removeOwnWorkspacesAtExit(where);
    dir = mkdtempSync(join(where, workspacePrefix('etc')));
    chmodSync(dir, 0o755);
    for (const name of entries) {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      cpSync(`/etc/${name}`, join(dir, name), { recursive: true, verbatimSymlinks: true });
    }
    writeFileSync(join(dir, 'resolv.conf'), '');
    sandboxUserEntries(dir);
    return dir;
  } catch {
    if (dir !== null) rmSync(dir, { recursive: true, force: true });
    return null;
  }
}

/**
 * In the /etc copy: the sandbox's user and group (SANDBOX_USER), in place of any host entry with
 * that name or id.
 */
function sandboxUserEntries(dir: string): void {
  const { name, uid, gid } = SANDBOX_USER;
  const rewrite = (file: string, id: number, line: string) => {
    const path = join(dir, file);
    const kept = existsSync(path)
      ? readFileSync(path, 'utf8')
          .split('\n')
          .filter((l) => l !== '' && !l.startsWith(`${name}:`) && l.split(':')[2] !== String(id))
      : [];
    rmSync(path, { force: true }); // a symlink in the host's /etc is replaced, not written through
    writeFileSync(path, `${[...kept, line].join('\n')}\n`, { mode: 0o644 });
  };
  rewrite('passwd', uid, `${name}:x:${uid}:${gid}:${name}:${SANDBOX_WORKDIR}:/bin/bash`);
  rewrite('group', gid, `${name}:x:${gid}:`);
}

function bwrapArgs(workspace: string | null, network: boolean, diskBytes: number): string[] {
  const v = hostView();
  const args: string[] = [];
  for (const l of v.links) args.push('--symlink', l.target, l.path);
  for (const b of v.binds) args.push('--ro-bind', b, b);
  if (v.etc !== null) args.push('--ro-bind', v.etc, '/etc');
  if (network) args.push('--ro-bind-try', '/etc/resolv.conf', '/etc/resolv.conf');
  // Private /dev (null, zero, random, tty, ...), and size-capped private /tmp and /dev/shm.
  args.push('--dev', '/dev', '--size', String(diskBytes), '--tmpfs', '/dev/shm', '--proc', '/proc');
  args.push('--size', String(diskBytes), '--tmpfs', '/tmp');
  if (workspace !== null) args.push('--bind', workspace, SANDBOX_WORKDIR, '--chdir', SANDBOX_WORKDIR);
  // bwrap's root and /dev are tmpfs without a size: read-only, nothing can fill them.
  args.push('--remount-ro', '/dev', '--remount-ro', '/');
  // No user namespace inside: in one the command would hold every capability again, and could
  // mount a tmpfs of its own with no size cap (a way to fill the host's memory).
  args.push('--unshare-all', '--unshare-user', '--disable-userns', '--die-with-parent', '--new-session');
  args.push('--uid', String(SANDBOX_USER.uid), '--gid', String(SANDBOX_USER.gid));
  if (network) args.push('--share-net');
  return args;
}

function unshareArgs(network: boolean): string[] {
  return [
    '--user',
    '--map-root-user',
    '--mount',
    '--pid',
    '--ipc', // System V IPC and POSIX message queues of its own, as under bwrap
    '--uts',
    '--fork',
    '--kill-child',
    ...(network ? [] : ['--net']),
    '--',
  ];
}

/**
 * The last step before the command: a bash that closes every file descriptor above 2 (whatever
 * swerl's own parent left open without close-on-exec would otherwise reach the command: a pipe,
 * a log, a device), then runs the command as `bash -c` (so bash's messages still read
 * `/bin/bash: line 1: ...`). Used inside the `sh -c` scripts, where $0 is the command.
 */
const RUN_WITH_FDS_CLOSED = `/bin/bash -c 'for f in /proc/self/fd/*; do n=\${f##*/}; [ "$n" -gt 2 ] 2>/dev/null && { eval "exec $n>&-"; } 2>/dev/null; done; exec /bin/bash -c "$1"' /bin/bash "$0"`;

const preludes = new Map<string, string>();
const DEVICES = ['null', 'zero', 'full', 'random', 'urandom', 'tty'];

/**
 * The shell prelude that builds, inside `unshare`'s new mount namespace, the view bwrap gives:
 * it mounts a small tmpfs over /tmp (in its own namespace: the host's /tmp is untouched) as the
 * new root, binds the workspace (its cwd, reachable even where the tmpfs hides its path) at
 * /project, /usr, the others and the /etc copy read-only, makes /dev, /proc, /tmp and /dev/shm,
 * pivots into it and unmounts the host's tree, makes the root read-only, and runs `bash -c "$0"`
 * with every capability dropped (the namespace's root could otherwise remount, unmount, or
 * re-bind).
 */
function unsharePrelude(network: boolean, diskBytes: number): string {
  const key = `${network}:${diskBytes}`;
  const cached = preludes.get(key);
  if (cached !== undefined) return cached;
  const v = hostView();
  const R = '/tmp';
  const etc = v.binds.filter((b) => b.startsWith('/etc/'));
  if (network && v.etc === null && existsSync('/etc/resolv.conf')) etc.push('/etc/resolv.conf');
  const others = v.binds.filter((b) => !b.startsWith('/etc/'));
  const files = others.filter((b) => !statSync(b).isDirectory()); // an interpreter binary
  const dirs = [SANDBOX_WORKDIR, '/proc', '/dev', '/tmp', '/.old', '/etc', ...others.filter((b) => !files.includes(b))];
  // Each line below that runs a program costs a fork and exec (a few ms): they are merged where
  // one program can do several, and files are made by the shell itself (`: >`).
  const lines = [
    'exec 2>&1',
    // One command a line: `set -e` stops at the first that fails (not so inside an && list).
    'set -e',
    'PATH=/usr/sbin:/usr/bin:/sbin:/bin', // pivot_root is in sbin
    `mount -t tmpfs -o size=4m,mode=0755 swerl-root ${R}`,
    `mkdir -p ${[...dirs, ...files.map(dirname)].map((d) => shellQuote(R + d)).join(' ')}`,
    ...files.map((f) => `: > ${shellQuote(R + f)}`),
    // "." as the kernel resolves it, from the cwd: its path may now be hidden by the tmpfs.
    `mount --no-canonicalize --rbind . ${R}${SANDBOX_WORKDIR}`,
  ];
  // Links named as their target's last part (merged /usr: bin → usr/bin) take one `ln`.
  const same = v.links.filter((l) => basename(l.target) === basename(l.path) && dirname(l.path) === '/');
  if (same.length > 0) lines.push(`ln -s ${same.map((l) => shellQuote(l.target)).join(' ')} ${R}/`);
  for (const l of v.links) if (!same.includes(l)) lines.push(`ln -s ${shellQuote(l.target)} ${shellQuote(R + l.path)}`);
  for (const b of others) lines.push(`mount --rbind -o ro ${shellQuote(b)} ${shellQuote(R + b)}`);
  if (v.etc !== null) {
    lines.push(`mount --rbind -o ro ${shellQuote(v.etc)} ${R}/etc`);
    if (network && existsSync('/etc/resolv.conf'))
      lines.push(`mount --bind -o ro /etc/resolv.conf ${R}/etc/resolv.conf`);
  }
  // Copies, not binds: one process instead of one per entry; the root is made read-only below.
  if (etc.length > 0) lines.push(`cp -RP --parents ${etc.map(shellQuote).join(' ')} ${R}/`);
  lines.push(
    `mount -t proc proc ${R}/proc`,
    // No nested user namespace (as bwrap's --disable-userns): in one the command would hold every
    // capability again, and could mount a tmpfs with no size cap.
    `echo 0 > ${R}/proc/sys/user/max_user_namespaces`,
    `mount -t tmpfs -o size=64k,mode=0755 swerl-dev ${R}/dev`,
    `mkdir ${R}/dev/shm`,
    ...DEVICES.map((d) => `: > ${R}/dev/${d}`),
    ...DEVICES.map((d) => `mount --bind /dev/${d} ${R}/dev/${d}`),
    `ln -s /proc/self/fd ${R}/dev/fd`,
    ...['stdin', 'stdout', 'stderr'].map((n, fd) => `ln -s /proc/self/fd/${fd} ${R}/dev/${n}`),
    `mount -t tmpfs -o size=${diskBytes},mode=1777 swerl-shm ${R}/dev/shm`,
    `mount -t tmpfs -o size=${diskBytes},mode=1777 swerl-tmp ${R}/tmp`,
    `mount -o remount,bind,ro ${R}/dev`,
    `cd ${R}`,
    'pivot_root . .old',
    'umount -l /.old',
    'rmdir /.old',
    'mount -o remount,bind,ro /',
    `cd ${SANDBOX_WORKDIR}`,
    `export HOME=${SANDBOX_WORKDIR} PATH=${SANDBOX_PATH}`,
    `exec setpriv --inh-caps=-all --bounding-set=-all --no-new-privs -- ${RUN_WITH_FDS_CLOSED}`,
  );
  const script = lines.join('\n');
  preludes.set(key, script);
  return script;
}

/** A workspace whose commands run isolated from the host. */
export class LocalSandbox {
  readonly isolation: Isolation;
  /** The workspace on the host. */
  readonly root: string;
  /** The workspace as commands see it: /project under bwrap and unshare, else the host path. */
  readonly workdir: string;
  /** The unprivileged uid commands run as (when swerl runs as root), else null. */
  readonly uid: number | null;
  /**
   * The size in MiB of the workspace's own tmpfs (and of its git metadata's), or null when it has
   * none: swerl not root, a dir not on a tmpfs, or mounting refused. Without one only each file
   * is capped (at diskMiB), not the workspace's total.
   */
  readonly diskCapMiB: number | null;
  readonly #meta: string; // outside the workspace: git metadata
  readonly #o: Limits;
  readonly #uid: number | null;
  readonly #launcher = sandboxLauncherPath();
  readonly #running = new Set<SpawnedChild>();
  readonly #shells = new Set<Shell>();
  readonly #repository: boolean;
  #closed = false;

  private constructor(
    root: string,
    meta: string,
    isolation: Isolation,
    o: Limits,
    uid: number | null,
    repository: boolean,
    diskCapMiB: number | null,
  ) {
    this.root = root;
    this.workdir = isolation === 'none' ? root : SANDBOX_WORKDIR;
    this.uid = uid;
    this.diskCapMiB = diskCapMiB;
    this.#meta = meta;
    this.isolation = isolation;
    this.#o = o;
    this.#uid = uid;
    this.#repository = repository;
  }

  /** Creates the workspace (files, fromDir), records its initial state for diff(). */
  static async create(o: SandboxOptions = {}): Promise<LocalSandbox> {
    if (typeof o !== 'object' || o === null) throw invalidArgument('options', 'an object', o);
    const wanted = o.isolation ?? 'auto';
    if (!['auto', 'bwrap', 'unshare', 'none'].includes(wanted))
      throw invalidArgument('isolation', "'auto', 'bwrap', 'unshare' or 'none'", wanted);
    let isolation: Isolation;
    if (wanted === 'auto') {
      if (isolationAvailable('bwrap')) isolation = 'bwrap';
      else if (isolationAvailable('unshare')) isolation = 'unshare';
      else
        throw new SwerlError(
          'no sandbox isolation is available: install bubblewrap (apt-get install bubblewrap); the unshare fallback needs unprivileged user namespaces that may mount (proc and tmpfs); isolation: "none" runs commands unisolated',
          'SANDBOX_UNAVAILABLE',
        );
    } else {
      isolation = wanted as Isolation;
      if (isolation !== 'none' && !isolationAvailable(isolation))
        throw new SwerlError(
          `isolation '${isolation}' does not work on this machine: install bubblewrap (apt-get install bubblewrap)`,
          'SANDBOX_UNAVAILABLE',
        );
    }
    if (isolation === 'none' && !warnedNone) {
      warnedNone = true;
      process.emitWarning(
        'LocalSandbox isolation "none": agent commands run on the host, with no file-system isolation: they can read and write everything this user can (the checkout, other workspaces, $HOME). Install bubblewrap (apt-get install bubblewrap) and use the default isolation.',
        'SwerlWarning',
      );
    }
    const num = (name: string, v: number | undefined, dflt: number, min: number) => {
      const x = v ?? dflt;
      if (typeof x !== 'number' || !Number.isFinite(x) || x < min) throw invalidArgument(name, `a number >= ${min}`, x);
      return x;
    };
    const opts = {
      network: o.network ?? false,
      timeoutMs: num('timeoutMs', o.timeoutMs, 60_000, 1),
      maxOutputBytes: num('maxOutputBytes', o.maxOutputBytes, 64 * 1024, 1),
      memoryMiB: num('memoryMiB', o.memoryMiB, 4096, 16),
      maxProcesses: num('maxProcesses', o.maxProcesses, 512, 2),
      diskMiB: num('diskMiB', o.diskMiB, 1024, 1),
    };
    const dir = o.dir ?? defaultSandboxDir();
    if (typeof dir !== 'string' || dir === '') throw invalidArgument('dir', 'a directory path', dir);
    const repository = o.repository ?? true;
    if (typeof repository !== 'boolean') throw invalidArgument('repository', 'a boolean', repository);
    if (isRoot) searchableByOthersOrThrow(dir);
    await useWorkspaceDir(dir);
    let root: string;
    try {
      root = await realpath(await mkdtemp(join(dir, workspacePrefix('ws'))));
    } catch (e) {
      throw new SwerlError(
        `cannot make a sandbox workspace in ${dir}: ${(e as Error).message}; set SWERL_SANDBOX_DIR (or the dir option) to a writable directory`,
        'IO_ERROR',
      );
    }
    let meta: string;
    try {
      meta = await mkdtemp(join(dir, workspacePrefix('meta')));
    } catch (e) {
      await rm(root, { recursive: true, force: true });
      throw new SwerlError(`cannot make the sandbox's git metadata in ${dir}: ${(e as Error).message}`, 'IO_ERROR');
    }
    let uid: number | null = null;
    let capped = false;
    const mounts = mountPoints(root, meta, repository);
    try {
      // As root, commands run as a per-sandbox unprivileged uid, which then owns the workspace.
      uid = isRoot ? claimUid() : null;
      if (uid !== null && onTmpfs(dir)) capped = await mountCapped(mounts, opts.diskMiB, uid);
      if (o.fromDir !== undefined) await cp(o.fromDir, root, { recursive: true });
      for (const [path, content] of Object.entries(o.files ?? {})) {
        const target = insideOrThrow(root, path);
        await mkdir(dirname(target), { recursive: true });
        await writeFile(target, content);
      }
      if (uid !== null) await chownTree(root, uid);
      // Only its own uid (or, not as root, the user) may enter the workspace: no other sandbox's.
      await chmod(root, 0o700);
      await chmod(meta, 0o700);
      const sb = new LocalSandbox(root, meta, isolation, opts, uid, repository, capped ? opts.diskMiB : null);
      if (!repository) return sb;
      // The baseline diff() compares with: a repository outside the workspace, made by the host.
      await sb.#git(['init', '-q']);
      await sb.#git(['add', '-A']);
      await sb.#git([
        '-c',
        'user.name=swerl',
        '-c',
        'user.email=swerl@localhost',
        'commit',
        '-q',
        '--allow-empty',
        '-m',
        'initial',
      ]);
      if (existsSync(join(root, '.git'))) {
        // A workspace that brings a repository of its own (fromDir, files) keeps its history:
        // sandboxed git commits the starting state on top of it, as the agent's uid.
        const init = await sb.exec(
          'git init -q && git add -A && git -c user.name=swerl -c user.email=swerl@localhost -c maintenance.auto=false commit -q --allow-empty -m initial',
        );
        if (init.exitCode !== 0)
          throw new SwerlError(`cannot initialise the workspace repository: ${init.output}`, 'IO_ERROR');
      } else {
        // The agent's own repository (git checkout, stash, diff work inside the sandbox): a copy
        // of that one, not made by git in the sandbox, because each process costs (that was a
        // sandboxed bash and four git processes per workspace). The host never reads the copy.
        await sb.#copyRepository();
      }
      return sb;
    } catch (e) {
      if (capped) await unmount(mounts);
      await rm(root, { recursive: true, force: true });
      await rm(meta, { recursive: true, force: true });
      if (uid !== null) releaseUid(uid);
      throw e;
    }
  }

  /** Runs `bash -c command` in the workspace. */
  exec(command: string, o: { timeoutMs?: number } = {}): Promise<ExecResult> {
    if (this.#closed) return Promise.reject(new SwerlError('this sandbox is closed', 'DISPOSED'));
    if (typeof command !== 'string') return Promise.reject(invalidArgument('command', 'a string', command));
    // No program's arguments can hold a NUL byte. Said in words of its own, not in spawn's error,
    // which names the argument's index in the launch line (an observation would then depend on
    // how the command is launched).
    if (command.includes('\0'))
      return Promise.resolve({ exitCode: 2, output: NUL_IN_COMMAND, timedOut: false, truncated: false, durationMs: 0 });
    const timeoutMs = o.timeoutMs ?? this.#o.timeoutMs;
    const launch = this.#launch(command);
    const started = performance.now();
    return new Promise<ExecResult>((resolvePromise) => {
      const child = spawnRelayed(launch.file, launch.args, {
        cwd: this.root,
        detached: true, // its own process group: a timeout kills all of it
        env: { PATH: SANDBOX_PATH, HOME: this.workdir, LANG: 'C.UTF-8', TERM: 'dumb' },
      });
      this.#running.add(child);
      const cap = this.#o.maxOutputBytes;
      const chunks: Buffer[] = [];
      let kept = 0;
      let seen = 0;
      let timedOut = false;
      const kill = () => killGroup(child);
      const onData = (d: Buffer) => {
        seen += d.length;
        if (kept < cap) {
          const take = d.subarray(0, cap - kept);
          chunks.push(take);
          kept += take.length;
        }
        if (seen > 64 * cap + 1_000_000) kill(); // a flood: stop it rather than drain it forever
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      const timer = setTimeout(() => {
        timedOut = true;
        kill();
      }, timeoutMs);
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        kill(); // anything the command left in its group
        this.#running.delete(child);
        let output = Buffer.concat(chunks).toString('utf8');
        const truncated = seen > kept;
        if (truncated) output += `\n[output truncated: ${seen - kept} more bytes]`;
        resolvePromise({
          exitCode: code ?? (signal ? 128 + 9 : -1),
          output,
          timedOut,
          truncated,
          durationMs: performance.now() - started,
        });
      });
      child.on('error', (e) => {
        clearTimeout(timer);
        this.#running.delete(child);
        resolvePromise({
          exitCode: -1,
          output: `cannot start the command: ${e.message}`,
          timedOut: false,
          truncated: false,
          durationMs: 0,
        });
      });
    });
  }

  /**
   * The program and arguments that run `bash -c command` in the workspace under the sandbox's
   * limits, uid and isolation: exec's, and each persistent shell's (openShell). With the launcher
   * built (native/sandbox/launch.cc) its one exec sets the limits and the uid, joins stderr to
   * stdout and closes inherited descriptors, then execs bwrap (or bash); without it, `prlimit` →
   * `setpriv` → `sh` → a bash that closes the descriptors do the same in four.
   */
  #launch(command: string): { file: string; args: string[] } {
    const mem = this.#o.memoryMiB * 2 ** 20;
    const disk = this.#o.diskMiB * 2 ** 20;
    const limits = [`--data=${mem}`, `--as=${4 * mem}`, `--nproc=${this.#o.maxProcesses}`, `--fsize=${disk}`];
    // stderr joins stdout in one pipe, as on a terminal: a process's writes to the two then reach
    // the observation in the order it made them. (Over two pipes their order was the event loop's,
    // and a seeded rollout could read them either way.) The unshare prelude does the same first.
    const isolated = (): string[] =>
      this.isolation === 'bwrap'
        ? ['bwrap', ...bwrapArgs(this.root, this.#o.network, disk), '--setenv', 'HOME', this.workdir, '--']
        : [];
    if (this.#launcher !== null && this.isolation !== 'unshare') {
      const args = [...limits, ...(this.#uid !== null ? [`--uid=${this.#uid}`] : []), '--join-stderr', '--'];
      return { file: this.#launcher, args: [...args, ...isolated(), '/bin/bash', '-c', command] };
    }
    const args = [...limits, '--'];
    if (this.#uid !== null)
      args.push('setpriv', `--reuid=${this.#uid}`, `--regid=${this.#uid}`, '--clear-groups', '--');
    if (this.isolation === 'unshare')
      args.push(
        'unshare',
        ...unshareArgs(this.#o.network),
        '/bin/sh',
        '-c',
        unsharePrelude(this.#o.network, disk),
        command,
      );
    else args.push(...isolated(), '/bin/sh', '-c', `exec 2>&1; exec ${RUN_WITH_FDS_CLOSED}`, command);
    return { file: 'prlimit', args };
  }

  /**
   * Opens a persistent shell (persistent-shell.ts): one `bash --noprofile --norc` started exactly
   * as exec starts a command (the same limits, uid and isolation), reading commands from a pipe.
   * close() closes it too.
   */
  async openShell(o: ShellOptions = {}): Promise<Shell> {
    if (this.#closed) throw new SwerlError('this sandbox is closed', 'DISPOSED');
    // Under bwrap and unshare each shell has a private /tmp of its own; under 'none' it is the
    // host's, so the command file goes in a directory of the shell's own.
    let own: string | null = null;
    if (this.isolation === 'none') {
      own = await mkdtemp(join(tmpdir(), 'swerl-shell-'));
      if (this.#uid !== null) chownSync(own, this.#uid, this.#uid);
    }
    const backend: ShellBackend = {
      start: () => this.#startShell(),
      commandFile: own === null ? '/tmp/.swerl-shell-command' : join(own, 'command'),
      workdir: this.workdir,
      maxOutputBytes: this.#o.maxOutputBytes,
      timeoutMs: this.#o.timeoutMs,
    };
    const shell = new PersistentShell(backend, o, () => {
      this.#shells.delete(shell);
      if (own !== null) rmSync(own, { recursive: true, force: true });
    });
    this.#shells.add(shell);
    return shell;
  }

  // One shell process. Spawned here, not through the spawn relay, which has no stdin to give: a
  // fork of this process once per shell, where exec pays a relayed spawn per command.
  #startShell(): ShellProcess {
    if (this.#closed) throw new SwerlError('this sandbox is closed', 'DISPOSED');
    const launch = this.#launch('exec /bin/bash --noprofile --norc');
    const child = spawn(launch.file, launch.args, {
      cwd: this.root,
      detached: true, // its own process group: close() kills all of it
      env: { PATH: SANDBOX_PATH, HOME: this.workdir, LANG: 'C.UTF-8', TERM: 'dumb' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.stdin.on('error', () => {}); // a shell that died: its exit is reported below
    const exited = new Promise<void>((done) => {
      child.on('close', () => done());
      child.on('error', () => done());
    });
    const kill = () => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    return {
      write: (d) => {
        if (child.stdin.writable) child.stdin.write(d);
      },
      onData: (f) => {
        child.stdout.on('data', f);
        child.stderr.on('data', f);
      },
      onExit: (f) => {
        let told = false;
        child.on('close', (code, signal) => {
          if (!told) f(code, signal);
          told = true;
        });
        child.on('error', () => {
          if (!told) f(-1, null);
          told = true;
        });
      },
      interrupt: (inner, sinceMs) =>
        new Promise<void>((done) => {
          if (child.pid === undefined) return done();
          // On the host, which sees the sandbox's processes (the shell by its NSpid).
          const c = spawnRelayed(
            '/bin/bash',
            ['-c', INTERRUPT_SCRIPT, 'swerl', String(child.pid), String(inner), String(Math.ceil(sinceMs))],
            { env: { PATH: '/usr/bin:/bin' } },
          );
          c.on('close', () => done());
          c.on('error', () => done());
        }),
      kill: async () => {
        kill();
        await exited;
      },
    };
  }

  /** Reads a workspace file (PATH_ESCAPE when it resolves outside). */
  async readFile(path: string): Promise<string> {
    return readFile(await this.#resolveExisting(path), 'utf8');
  }

  /** Writes a workspace file, creating directories (PATH_ESCAPE when it resolves outside). */
  async writeFile(path: string, content: string, o: { executable?: boolean } = {}): Promise<void> {
    const target = insideOrThrow(this.root, path);
    // Every directory on the way that exists must resolve inside the workspace before any is made:
    // mkdir would otherwise follow a symlink an agent left (`test -> /somewhere`) onto the host.
    await existingAncestorsInsideOrThrow(this.root, dirname(target), path);
    await mkdir(dirname(target), { recursive: true });
    const parent = await realpath(dirname(target));
    if (!within(this.root, parent)) throw pathEscape(path);
    try {
      if ((await lstat(target)).isSymbolicLink()) throw pathEscape(path);
    } catch (e) {
      if (e instanceof SwerlError) throw e;
    }
    await writeFile(target, content);
    if (o.executable) await chmod(target, 0o755);
    if (this.#uid !== null) {
      // The file and every directory created for it belong to the sandbox's uid.
      for (let d = dirname(target); within(this.root, d) && d !== this.root; d = dirname(d))
        chownSync(d, this.#uid, this.#uid);
      chownSync(target, this.#uid, this.#uid);
    }
  }

  /** The unified diff of the workspace against its initial state (new files included; swerl's `.swerl*` files excluded). */
  async diff(): Promise<string> {
    if (!this.#repository)
      throw new SwerlError('diff() needs the sandbox made with { repository: true }', 'INVALID_ARGUMENT');
    // swerl's own files (the scaffold's tools and state, evaluation scripts) live under .swerl*.
    await this.#git(['add', '-A', '--', '.', ':(exclude,glob).swerl*', ':(exclude,glob).swerl*/**']);
    return this.#git(['diff', '--cached', '--no-color', '--no-ext-diff', '--no-textconv']);
  }

  /** Kills every process it started and removes the workspace. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const c of this.#running) killGroup(c);
    await Promise.all([...this.#shells].map((sh) => sh.close()));
    if (this.#uid !== null) {
      // Under bwrap and unshare every process of a command lives in its PID namespace, which the
      // kernel empties when its first process dies, and bwrap's first process dies with bwrap
      // through a parent-death signal it sets only after it was cloned. A command closed in its
      // first milliseconds once left two processes of its uid behind under load (which of the
      // two causes, not known); under 'none' nothing holds them. So every process of the
      // sandbox's uid is killed here, whatever the isolation.
      // Off the event loop (pkill reads /proc), which other episodes' generation shares; through
      // the relay, as every spawn here, so that the fork does not copy this process.
      await new Promise<void>((done) => {
        const c = spawnRelayed('pkill', ['-KILL', '-U', String(this.#uid)], { env: { PATH: '/usr/bin:/bin' } });
        c.on('close', () => done()); // exit 1: none left
        c.on('error', () => done());
      });
    }
    // Unmounted first: removing a mount point fails (EBUSY), and its files are freed with it.
    if (this.diskCapMiB !== null) await unmount(mountPoints(this.root, this.#meta, this.#repository));
    await rm(this.root, { recursive: true, force: true });
    await rm(this.#meta, { recursive: true, force: true });
    if (this.#uid !== null) releaseUid(this.#uid);
  }

  async #resolveExisting(path: string): Promise<string> {
    const target = insideOrThrow(this.root, path);
    let real: string;
    try {
      real = await realpath(target);
    } catch (e) {
      throw new SwerlError(`cannot read ${path}: ${(e as Error).message}`, 'IO_ERROR');
    }
    if (!within(this.root, real)) throw pathEscape(path);
    return real;
  }

  // The agent's repository, /project/.git: a copy of the host's baseline, owned by the sandbox's
  // uid, its config without the host's `core.worktree` (a host path). Before any command has run.
  async #copyRepository(): Promise<void> {
    const target = join(this.root, '.git');
    try {
      await cp(join(this.#meta, 'git'), target, { recursive: true });
      const config = join(target, 'config');
      const lines = (await readFile(config, 'utf8')).split('\n');
      await writeFile(config, lines.filter((l) => !/^\s*worktree\s*=/.test(l)).join('\n'));
      if (this.#uid !== null) await chownTree(target, this.#uid);
    } catch (e) {
      throw new SwerlError(`cannot initialise the workspace repository: ${(e as Error).message}`, 'IO_ERROR');
    }
  }

  // git over the workspace with its metadata outside it and no user or system configuration.
  #git(args: string[]): Promise<string> {
    return new Promise((resolvePromise, reject) => {
      const child = spawnRelayed(
        'git',
        [
          '-c',
          'core.hooksPath=/dev/null',
          '-c',
          'core.fsmonitor=false',
          // No background `git maintenance run --auto` after a commit: one process fewer.
          '-c',
          'maintenance.auto=false',
          `--git-dir=${join(this.#meta, 'git')}`,
          `--work-tree=${this.root}`,
          ...args,
        ],
        {
          env: {
            PATH: '/usr/local/bin:/usr/bin:/bin',
            HOME: this.#meta,
            GIT_CONFIG_NOSYSTEM: '1',
            GIT_CONFIG_GLOBAL: '/dev/null',
          },
        },
      );
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => {
        out += d;
      });
      child.stderr.on('data', (d) => {
        err += d;
      });
      child.on('close', (code) =>
        code === 0 ? resolvePromise(out) : reject(new SwerlError(`git ${args[0]} failed: ${err.trim()}`, 'IO_ERROR')),
      );
      child.on('error', (e) => reject(new SwerlError(`cannot run git: ${e.message}`, 'IO_ERROR')));
    });
  }
}

/** The tmpfs mounts of a capped sandbox: the workspace, and the git metadata where there is a repository. */
function mountPoints(root: string, meta: string, repository: boolean): string[] {
  return repository ? [root, meta] : [root];
}

/** Gives `dir` and everything under it (symlinks themselves, not their targets) to `uid`. */
async function chownTree(dir: string, uid: number): Promise<void> {
  const paths = (await readdir(dir, { recursive: true })).map((p) => join(dir, p));
  await Promise.all([dir, ...paths].map((p) => lchown(p, uid, uid)));
}

function onTmpfs(dir: string): boolean {
  try {
    return statfsSync(dir).type === TMPFS_MAGIC;
  } catch {
    return false;
  }
}

// Whether mount(8) works for this process: set after the first try, so that a machine that
// refuses it (no CAP_SYS_ADMIN) pays for one failed mount, not one per sandbox.
let mountWorks: boolean | undefined;

/**
 * Mounts a tmpfs of `mib` MiB on each directory (mode 0700; the first owned by `uid`, the rest by
 * root), so that a command cannot fill the host's memory through it. false, with nothing
 * mounted, when mounting is refused here.
 */
async function mountCapped(dirs: string[], mib: number, uid: number): Promise<boolean> {
  if (mountWorks === false) return false;
  const codes = await Promise.all(
    dirs.map((d, i) => {
      const owner = i === 0 ? `,uid=${uid},gid=${uid}` : '';
      return runQuiet('mount', ['-t', 'tmpfs', '-o', `size=${mib}m,mode=0700${owner}`, 'swerl-workspace', d]);
    }),
  );
  const ok = codes.every((c) => c === 0);
  if (!ok) await unmount(dirs); // some may have been mounted
  mountWorks = ok;
  return ok;
}

/** Lazily unmounts each directory that is a mount point (the others are left as they are). */
async function unmount(dirs: string[]): Promise<void> {
  await runQuiet('umount', ['-l', ...dirs]);
}

function runQuiet(file: string, args: string[]): Promise<number> {
  return new Promise((done) => {
    const c = spawnRelayed(file, args, { env: { PATH: '/usr/bin:/bin:/usr/sbin:/sbin' } });
    c.on('close', (code) => done(code ?? -1));
    c.on('error', () => done(-1));
  });
}

/**
 * As root, commands run as an unprivileged uid, which must be able to reach the workspace: every
 * directory from / to `dir` needs the others' search bit.
 */
function searchableByOthersOrThrow(dir: string): void {
  let d: string;
  try {
    d = realpathSync(dir);
  } catch {
    return; // mkdtemp reports it
  }
  for (;;) {
    if ((statSync(d).mode & 0o001) === 0)
      throw new SwerlError(
        `sandbox dir ${dir}: ${d} is not searchable by other users, and commands run as an unprivileged uid when swerl runs as root; chmod o+x ${d}, or choose another dir`,
        'INVALID_ARGUMENT',
      );
    if (d === dirname(d)) return;
    d = dirname(d);
  }
}

/**
 * SIGKILLs a detached child's process group; one that the spawn relay has not yet reported
 * started is killed as soon as it is.
 */
function killGroup(child: SpawnedChild): void {
  if (child.pid === undefined) {
    child.on('spawn', () => killGroup(child));
    return;
  }
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** Each existing directory from `root` down to `dir` resolves inside `root` (PATH_ESCAPE otherwise). */
async function existingAncestorsInsideOrThrow(root: string, dir: string, path: string): Promise<void> {
  let d = root;
  for (const part of relative(root, dir).split(sep)) {
    if (part === '' || part === '.') continue;
    d = join(d, part);
    let st: Awaited<ReturnType<typeof lstat>>;
    try {
      st = await lstat(d);
    } catch {
      return; // the rest is made by mkdir, inside what was checked
    }
    if (st.isSymbolicLink()) {
      const real = await realpath(d).catch(() => null);
      if (real === null || !within(root, real)) throw pathEscape(path);
      d = real;
    } else if (!st.isDirectory()) return; // mkdir fails on it (ENOTDIR)
  }
}

function within(root: string, p: string): boolean {
  const rel = relative(root, p);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel) && !rel.startsWith(`..${sep}`));
}

function pathEscape(path: string): SwerlError {
  return new SwerlError(`${JSON.stringify(path)} resolves outside the sandbox workspace`, 'PATH_ESCAPE');
}

function insideOrThrow(root: string, path: string): string {
  if (typeof path !== 'string' || path === '') throw invalidArgument('path', 'a non-empty string', path);
  const target = resolve(root, path);
  if (!within(root, target)) throw pathEscape(path);
  return target;
}

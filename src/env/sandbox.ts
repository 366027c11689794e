/**
 * LocalSandbox (DESIGN.md section 6): a workspace directory in which an agent's commands run
 * isolated from the host.
 *
 * Each exec is `prlimit` (memory, processes, file size) → `setpriv` to a per-sandbox
 * unprivileged uid when swerl runs as root (so the process limit is enforced: the kernel exempts
 * root) → the isolation layer → `bash -c command`:
 * - `bwrap` (bubblewrap): the host root read-only, a private /tmp, the workspace the only writable
 *   path, new user/PID/network/IPC/UTS namespaces (no network unless asked), die-with-parent;
 * - `unshare`: new user/PID/network namespaces; the file system is protected by ownership only
 *   (the command runs as an unprivileged uid), so bwrap is preferred;
 * - `none`: only the limits and the process group; only when asked for, with a warning.
 * A timeout kills the whole process group (and with it the sandbox's PID namespace). Output is
 * capped with a truncation marker; a command flooding far past the cap is killed.
 *
 * The git metadata that diff() uses lives outside the workspace, so nothing an agent writes can
 * configure the host's git. Workspaces are made in defaultSandboxDir() (a tmpfs where there is
 * one) unless the `dir` option says otherwise, named for the owning process, which removes them
 * when it exits; a killed process's are removed by the next sandbox made there
 * (workspace-dirs.ts). Host-side file access resolves symlinks and rejects paths that leave the
 * workspace (PATH_ESCAPE).
 */
import { execFileSync } from 'node:child_process';
import {
  accessSync,
  chownSync,
  constants,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  statfsSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { chmod, cp, lchown, lstat, mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { invalidArgument, SwerlError } from '../errors.js';
import { type SpawnedChild, spawnRelayed } from './spawn-relay.js';
import { useWorkspaceDir, workspacePrefix } from './workspace-dirs.js';

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
  /** 'auto' (default): bwrap, else unshare; never 'none' unless asked for. */
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

/** Whether an isolation mechanism works here (checked once per process). */
export function isolationAvailable(kind: 'bwrap' | 'unshare'): boolean {
  const cached = probed.get(kind);
  if (cached !== undefined) return cached;
  let ok = false;
  try {
    const cmd =
      kind === 'bwrap'
        ? ['bwrap', ...bwrapArgs(null, false), '--', '/bin/true']
        : ['unshare', ...unshareArgs(), '/bin/true'];
    execFileSync(cmd[0] as string, cmd.slice(1), { stdio: 'ignore', timeout: 10_000 });
    ok = true;
  } catch {
    ok = false;
  }
  probed.set(kind, ok);
  return ok;
}

/** Where the workspace appears inside a bwrap sandbox: the same path in every episode. */
export const SANDBOX_WORKDIR = '/project';

let rootBinds: string[] | null = null;

// The host's top-level directories, read-only (symlinks recreated), except the ones the sandbox
// provides itself. Binding them one by one, rather than / as a whole, leaves the sandbox's root a
// fresh tmpfs in which /project can be created.
function hostRootArgs(): string[] {
  if (rootBinds) return rootBinds;
  const skip = new Set(['proc', 'dev', 'tmp', 'sys', 'run', SANDBOX_WORKDIR.slice(1)]);
  const args: string[] = [];
  for (const e of readdirSync('/', { withFileTypes: true })) {
    if (skip.has(e.name)) continue;
    const p = `/${e.name}`;
    if (e.isSymbolicLink()) args.push('--symlink', readlinkSync(p), p);
    else if (e.isDirectory()) args.push('--ro-bind', p, p);
  }
  rootBinds = args;
  return args;
}

function bwrapArgs(workspace: string | null, network: boolean): string[] {
  const args = [...hostRootArgs(), '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp', '--tmpfs', '/run'];
  if (workspace !== null) args.push('--bind', workspace, SANDBOX_WORKDIR, '--chdir', SANDBOX_WORKDIR);
  args.push('--unshare-all', '--die-with-parent', '--new-session');
  if (network) args.push('--share-net');
  return args;
}

function unshareArgs(network = false): string[] {
  return ['--user', '--map-root-user', '--pid', '--fork', '--kill-child', ...(network ? [] : ['--net']), '--'];
}

/** A workspace whose commands run isolated from the host. */
export class LocalSandbox {
  readonly isolation: Isolation;
  /** The workspace on the host. */
  readonly root: string;
  /** The workspace as commands see it: /project under bwrap, else the host path. */
  readonly workdir: string;
  /** The unprivileged uid commands run as (when swerl runs as root), else null. */
  readonly uid: number | null;
  readonly #meta: string; // outside the workspace: git metadata
  readonly #o: Limits;
  readonly #uid: number | null;
  readonly #running = new Set<SpawnedChild>();
  readonly #repository: boolean;
  #closed = false;

  private constructor(
    root: string,
    meta: string,
    isolation: Isolation,
    o: Limits,
    uid: number | null,
    repository: boolean,
  ) {
    this.root = root;
    this.workdir = isolation === 'bwrap' ? SANDBOX_WORKDIR : root;
    this.uid = uid;
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
          'no sandbox isolation is available: install bubblewrap (apt-get install bubblewrap), or allow unprivileged user namespaces; isolation: "none" runs commands unisolated',
          'SANDBOX_UNAVAILABLE',
        );
    } else {
      isolation = wanted as Isolation;
      if (isolation !== 'none' && !isolationAvailable(isolation))
        throw new SwerlError(`isolation '${isolation}' does not work on this machine`, 'SANDBOX_UNAVAILABLE');
    }
    if (isolation === 'none' && !warnedNone) {
      warnedNone = true;
      process.emitWarning(
        'LocalSandbox isolation "none": agent commands run on the host without isolation',
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
    try {
      if (o.fromDir !== undefined) await cp(o.fromDir, root, { recursive: true });
      for (const [path, content] of Object.entries(o.files ?? {})) {
        const target = insideOrThrow(root, path);
        await mkdir(dirname(target), { recursive: true });
        await writeFile(target, content);
      }
      // As root, commands run as a per-sandbox unprivileged uid, which then owns the workspace.
      uid = isRoot ? claimUid() : null;
      if (uid !== null) {
        const owned = uid;
        const paths = (await readdir(root, { recursive: true })).map((p) => join(root, p));
        await Promise.all([root, ...paths].map((p) => lchown(p, owned, owned)));
      }
      await chmod(root, 0o755);
      const sb = new LocalSandbox(root, meta, isolation, opts, uid, repository);
      if (!repository) return sb;
      // The agent's own repository (git checkout, stash, diff work inside the sandbox), made by
      // sandboxed git. The host never reads it: diff() uses the metadata outside the workspace.
      // The two repositories are made side by side (git never adds a work tree's own .git).
      const [init] = await Promise.all([
        sb.exec(
          'git init -q && git add -A && git -c user.name=swerl -c user.email=swerl@localhost commit -q --allow-empty -m initial',
        ),
        (async () => {
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
        })(),
      ]);
      if (init.exitCode !== 0)
        throw new SwerlError(`cannot initialise the workspace repository: ${init.output}`, 'IO_ERROR');
      return sb;
    } catch (e) {
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
    const timeoutMs = o.timeoutMs ?? this.#o.timeoutMs;
    const mem = this.#o.memoryMiB * 2 ** 20;
    const argv: string[] = [
      `--data=${mem}`,
      `--as=${4 * mem}`,
      `--nproc=${this.#o.maxProcesses}`,
      `--fsize=${4 * 2 ** 30}`,
      '--',
    ];
    if (this.#uid !== null)
      argv.push('setpriv', `--reuid=${this.#uid}`, `--regid=${this.#uid}`, '--clear-groups', '--');
    if (this.isolation === 'bwrap')
      argv.push('bwrap', ...bwrapArgs(this.root, this.#o.network), '--setenv', 'HOME', this.workdir, '--');
    else if (this.isolation === 'unshare') argv.push('unshare', ...unshareArgs(this.#o.network));
    // stderr joins stdout in one pipe, as on a terminal: a process's writes to the two then reach
    // the observation in the order it made them. (Over two pipes their order was the event loop's,
    // and a seeded rollout could read them either way.)
    argv.push('/bin/sh', '-c', 'exec 2>&1; exec /bin/bash -c "$0"', command);
    const started = performance.now();
    return new Promise<ExecResult>((resolvePromise) => {
      const child = spawnRelayed('prlimit', argv, {
        cwd: this.root,
        detached: true, // its own process group: a timeout kills all of it
        env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: this.root, LANG: 'C.UTF-8', TERM: 'dumb' },
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

  /** Reads a workspace file (PATH_ESCAPE when it resolves outside). */
  async readFile(path: string): Promise<string> {
    return readFile(await this.#resolveExisting(path), 'utf8');
  }

  /** Writes a workspace file, creating directories (PATH_ESCAPE when it resolves outside). */
  async writeFile(path: string, content: string, o: { executable?: boolean } = {}): Promise<void> {
    const target = insideOrThrow(this.root, path);
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
    if (this.#uid !== null && this.isolation === 'none') {
      // Under bwrap and unshare every process of a command lives in its PID namespace, which the
      // kernel empties when the command ends or is killed; only 'none' can leave processes behind.
      // Off the event loop (pkill reads /proc), which other episodes' generation shares; through
      // the relay, as every spawn here, so that the fork does not copy this process.
      await new Promise<void>((done) => {
        const c = spawnRelayed('pkill', ['-KILL', '-U', String(this.#uid)], { env: { PATH: '/usr/bin:/bin' } });
        c.on('close', () => done()); // exit 1: none left
        c.on('error', () => done());
      });
    }
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

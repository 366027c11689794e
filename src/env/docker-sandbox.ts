/**
 * DockerSandbox: the Sandbox interface over one Docker container per episode (dockerode), for
 * SWE-bench / SWE-rebench images, whose repository sits at /testbed at the task's base commit.
 *
 * The container runs an idle init (bash, which also reaps orphans) with the same limits as the
 * LocalSandbox: memory (no swap), a process count, a file-size limit, no network unless asked,
 * no-new-privileges. Each exec is `bash -c` in the workdir under `timeout -s KILL`, in its own
 * process group whose id is written to /tmp, so the host can kill the whole group on a timeout
 * or an output flood and after the command ends (nothing is left behind). Output is demultiplexed
 * from Docker's stream and capped with a truncation marker. File access resolves paths inside the
 * container and rejects any that leave the workdir (PATH_ESCAPE). diff() is git's, against the
 * commit the container started at.
 *
 * Host folders can be bind-mounted (`mounts`, read-only for a static runtime or the tools).
 * Containers are labelled with their owner (this host, PID namespace and pid): a run killed
 * outright (SIGKILL, the OOM killer) cannot remove its containers, so each create() removes the
 * containers whose owner, in this PID namespace, has ended.
 */
import { randomBytes } from 'node:crypto';
import { readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Duplex } from 'node:stream';
import { Writable } from 'node:stream';
import Docker from 'dockerode';
import { invalidArgument, SwerlError } from '../errors.js';
import {
  INTERRUPT_SCRIPT,
  PersistentShell,
  type Shell,
  type ShellBackend,
  type ShellOptions,
  type ShellProcess,
} from './persistent-shell.js';
import { processEnded } from './process-state.js';
import type { ExecResult } from './sandbox.js';
import type { Sandbox } from './sandbox-api.js';

/** Options of {@link DockerSandbox.create}. */
export interface DockerSandboxOptions {
  /** The image (it must have bash, coreutils and git; docs/docker.md). */
  image: string;
  /** Files to create in the workdir (relative path → content). */
  files?: Record<string, string>;
  /** The workspace inside the container (default /testbed, as in SWE-bench images). */
  workdir?: string;
  network?: boolean;
  timeoutMs?: number;
  maxOutputBytes?: number;
  memoryMiB?: number;
  maxProcesses?: number;
  /**
   * Host folders to bind-mount (absolute paths on the engine's host and in the container), e.g. a
   * static runtime or the scaffold's tools, read-only. A source the engine cannot find is refused
   * (INVALID_ARGUMENT) when the container is created.
   */
  mounts?: DockerMount[];
  /** dockerode connection options (default: DOCKER_HOST or the local socket). */
  docker?: Docker.DockerOptions;
}

/** One bind mount of {@link DockerSandboxOptions.mounts}. */
export interface DockerMount {
  /** The folder or file on the engine's host (absolute). */
  source: string;
  /** Where it appears in the container (absolute). */
  target: string;
  /** Mounted read-only (default false). */
  readOnly?: boolean;
}

// The labels every sandbox container carries: what it is, and who owns it. The owner's scope is
// this host and PID namespace (a pid means nothing outside them); the sweep only judges the
// containers of its own scope.
const SANDBOX_LABEL = 'swerl.sandbox';
const OWNER_SCOPE_LABEL = 'swerl.owner.scope';
const OWNER_PID_LABEL = 'swerl.owner.pid';

function ownerScope(): string {
  let ns = '';
  try {
    ns = /\d+/.exec(readlinkSync('/proc/self/ns/pid'))?.[0] ?? '';
  } catch {
    // no /proc: the host name alone
  }
  return `${hostname()}/${ns}`;
}

/**
 * Removes the sandbox containers whose owner (in this host and PID namespace) has ended; returns
 * how many it removed. Live owners' containers, this process's, and other scopes' are left alone.
 */
async function removeDeadOwnersContainers(docker: Docker): Promise<number> {
  let list: Docker.ContainerInfo[];
  try {
    list = await docker.listContainers({
      all: true,
      filters: { label: [`${SANDBOX_LABEL}=1`, `${OWNER_SCOPE_LABEL}=${ownerScope()}`] },
    });
  } catch {
    return 0; // the create that follows reports an unreachable engine
  }
  const dead = list.filter((c) => {
    const pid = Number(c.Labels?.[OWNER_PID_LABEL]);
    return Number.isInteger(pid) && pid > 0 && pid !== process.pid && processEnded(pid);
  });
  const done = await Promise.all(
    dead.map((c) =>
      docker
        .getContainer(c.Id)
        .remove({ force: true })
        .then(
          () => 1,
          () => 0, // removed by a concurrent create, or being removed
        ),
    ),
  );
  return done.reduce<number>((a, b) => a + b, 0);
}

function checkMounts(mounts: unknown): DockerMount[] {
  if (mounts === undefined) return [];
  if (!Array.isArray(mounts)) throw invalidArgument('mounts', 'an array of { source, target, readOnly? }', mounts);
  const targets = new Set<string>();
  return mounts.map((m, i) => {
    if (typeof m !== 'object' || m === null) throw invalidArgument(`mounts[${i}]`, 'a { source, target } object', m);
    const { source, target, readOnly } = m as Record<string, unknown>;
    for (const [name, p] of [
      ['source', source],
      ['target', target],
    ] as const)
      if (typeof p !== 'string' || !p.startsWith('/') || p.includes('\0'))
        throw invalidArgument(`mounts[${i}].${name}`, 'an absolute path', p);
    if (target === '/') throw invalidArgument(`mounts[${i}].target`, 'a path other than /', target);
    if (readOnly !== undefined && typeof readOnly !== 'boolean')
      throw invalidArgument(`mounts[${i}].readOnly`, 'a boolean', readOnly);
    const t = (target as string).replace(/\/+$/, '');
    if (targets.has(t)) throw invalidArgument(`mounts[${i}].target`, 'a target no other mount has', target);
    targets.add(t);
    return { source: source as string, target: target as string, readOnly: readOnly === true };
  });
}

type Limits = Required<
  Pick<DockerSandboxOptions, 'network' | 'timeoutMs' | 'maxOutputBytes' | 'memoryMiB' | 'maxProcesses'>
>;

/** Whether a Docker engine answers (within `timeoutMs`). */
export async function dockerAvailable(o: Docker.DockerOptions = {}, timeoutMs = 2000): Promise<boolean> {
  try {
    const docker = new Docker({ timeout: timeoutMs, ...o });
    await docker.ping();
    return true;
  } catch {
    return false;
  }
}

// The exec wrapper: records the process group (timeout makes its own, with its pid = $$ after
// exec) and runs the command under a hard in-container timeout, stderr joined to stdout as on a
// terminal (LocalSandbox does the same).
const WRAP = 'echo $$ > "/tmp/.swerl-exec-$1"; cd "$4" || exit 1; exec 2>&1; exec timeout -s KILL "$2" bash -c "$3"';

/** One container per episode, with the LocalSandbox's interface and limits. */
export class DockerSandbox implements Sandbox {
  readonly isolation = 'docker';
  readonly workdir: string;
  /** The container's id. */
  readonly containerId: string;
  readonly #container: Docker.Container;
  readonly #docker: Docker;
  readonly #o: Limits;
  #base: string;
  #execs = 0;
  #closed = false;
  readonly #shells = new Set<Shell>();

  private constructor(docker: Docker, container: Docker.Container, workdir: string, o: Limits, base: string) {
    this.#docker = docker;
    this.#container = container;
    this.containerId = container.id;
    this.workdir = workdir;
    this.#o = o;
    this.#base = base;
  }

  /** Starts a container from `image`, writes `files`, and records the initial state for diff(). */
  static async create(o: DockerSandboxOptions): Promise<DockerSandbox> {
    if (typeof o !== 'object' || o === null) throw invalidArgument('options', 'an object', o);
    if (typeof o.image !== 'string' || o.image === '') throw invalidArgument('image', 'an image name', o.image);
    const workdir = o.workdir ?? '/testbed';
    if (typeof workdir !== 'string' || !workdir.startsWith('/') || workdir.includes('\0'))
      throw invalidArgument('workdir', 'an absolute path', workdir);
    const num = (name: string, v: number | undefined, dflt: number, min: number) => {
      const x = v ?? dflt;
      if (typeof x !== 'number' || !Number.isFinite(x) || x < min) throw invalidArgument(name, `a number >= ${min}`, x);
      return x;
    };
    const limits: Limits = {
      network: o.network ?? false,
      timeoutMs: num('timeoutMs', o.timeoutMs, 60_000, 1),
      maxOutputBytes: num('maxOutputBytes', o.maxOutputBytes, 64 * 1024, 1),
      memoryMiB: num('memoryMiB', o.memoryMiB, 4096, 16),
      maxProcesses: num('maxProcesses', o.maxProcesses, 512, 2),
    };
    const mounts = checkMounts(o.mounts);
    const docker = new Docker(o.docker ?? {});
    try {
      await docker.ping();
    } catch (e) {
      throw new SwerlError(
        `no Docker engine is reachable (${(e as Error).message}): start dockerd, or set DOCKER_HOST`,
        'SANDBOX_UNAVAILABLE',
      );
    }
    await removeDeadOwnersContainers(docker);
    let container: Docker.Container;
    try {
      container = await docker.createContainer({
        Image: o.image,
        Cmd: ['bash', '-c', 'trap "exit 0" TERM; while :; do sleep 3600 & wait $!; done'],
        WorkingDir: '/',
        Labels: {
          [SANDBOX_LABEL]: '1',
          [OWNER_SCOPE_LABEL]: ownerScope(),
          [OWNER_PID_LABEL]: String(process.pid),
        },
        NetworkDisabled: !limits.network,
        HostConfig: {
          NetworkMode: limits.network ? 'bridge' : 'none',
          Memory: limits.memoryMiB * 2 ** 20,
          MemorySwap: limits.memoryMiB * 2 ** 20,
          PidsLimit: limits.maxProcesses,
          Ulimits: [{ Name: 'fsize', Soft: 4 * 2 ** 30, Hard: 4 * 2 ** 30 }],
          SecurityOpt: ['no-new-privileges'],
          CapDrop: ['NET_RAW', 'NET_ADMIN', 'SYS_ADMIN', 'SYS_PTRACE', 'MKNOD'],
          Mounts: mounts.map((m) => ({ Type: 'bind', Source: m.source, Target: m.target, ReadOnly: m.readOnly })),
        },
      });
    } catch (e) {
      const msg = (e as Error).message;
      if (/bind source path does not exist|invalid mount config/i.test(msg))
        throw new SwerlError(`cannot mount into a container from ${o.image}: ${msg}`, 'INVALID_ARGUMENT');
      throw new SwerlError(
        `cannot create a container from ${o.image}: ${msg}${/no such image/i.test(msg) ? ` (docker pull ${o.image})` : ''}`,
        'SANDBOX_UNAVAILABLE',
      );
    }
    const sb = new DockerSandbox(docker, container, workdir, limits, 'HEAD');
    try {
      await container.start().catch((e: Error) => {
        throw new SwerlError(`cannot start a container from ${o.image}: ${e.message}`, 'SANDBOX_UNAVAILABLE');
      });
      const prep = await sb.#run(
        ['bash', '-c', 'mkdir -p -- "$1" && cd -- "$1" && { [ -d .git ] || git init -q; }', 'swerl', workdir],
        { cap: 64 * 1024, timeoutMs: limits.timeoutMs, id: null },
      );
      if (prep.exitCode !== 0) throw new SwerlError(`cannot prepare ${workdir}: ${prep.output}`, 'IO_ERROR');
      for (const [path, content] of Object.entries(o.files ?? {})) await sb.writeFile(path, content);
      // The initial state: a commit of everything present (the base commit itself when clean).
      const base = await sb.exec(
        'git add -A && { git diff --cached --quiet && git rev-parse -q --verify HEAD >/dev/null || git -c user.name=swerl -c user.email=swerl@localhost commit -q --allow-empty --no-verify -m swerl-initial; } && git rev-parse HEAD',
      );
      if (base.exitCode !== 0) throw new SwerlError(`cannot record the initial state: ${base.output}`, 'IO_ERROR');
      sb.#base = base.output.trim().split('\n').pop() ?? 'HEAD';
      return sb;
    } catch (e) {
      await container.remove({ force: true }).catch(() => {});
      throw e;
    }
  }

  /** Runs `bash -c command` in the workdir. */
  async exec(command: string, o: { timeoutMs?: number } = {}): Promise<ExecResult> {
    if (this.#closed) throw new SwerlError('this sandbox is closed', 'DISPOSED');
    if (typeof command !== 'string') throw invalidArgument('command', 'a string', command);
    const timeoutMs = o.timeoutMs ?? this.#o.timeoutMs;
    const id = `${process.pid}-${++this.#execs}`;
    const r = await this.#run(
      ['bash', '-c', WRAP, 'swerl', id, `${Math.ceil(timeoutMs / 1000)}s`, command, this.workdir],
      {
        cap: this.#o.maxOutputBytes,
        timeoutMs,
        id,
      },
    );
    return r;
  }

  /**
   * Opens a persistent shell (persistent-shell.ts): one `docker exec -i` of `bash --noprofile
   * --norc` kept open, in the workdir, in a process group of its own (as exec's, under `timeout`,
   * here with no time limit), which close() kills.
   */
  async openShell(o: ShellOptions = {}): Promise<Shell> {
    if (this.#closed) throw new SwerlError('this sandbox is closed', 'DISPOSED');
    const id = `${process.pid}-shell-${++this.#execs}-${randomBytes(4).toString('hex')}`;
    const backend: ShellBackend = {
      start: () => this.#startShell(id),
      commandFile: `/tmp/.swerl-shell-${id}`,
      workdir: this.workdir,
      maxOutputBytes: this.#o.maxOutputBytes,
      timeoutMs: this.#o.timeoutMs,
    };
    const shell = new PersistentShell(backend, o, () => this.#shells.delete(shell));
    this.#shells.add(shell);
    return shell;
  }

  #startShell(id: string): ShellProcess {
    if (this.#closed) throw new SwerlError('this sandbox is closed', 'DISPOSED');
    const data: ((d: Buffer) => void)[] = [];
    const exits: ((code: number | null, signal: string | null) => void)[] = [];
    let exit: { code: number | null } | null = null;
    let stream: Duplex | null = null;
    const early: Buffer[] = []; // written before the exec's stream is open
    const sink = new Writable({
      write: (d: Buffer, _enc, done) => {
        for (const f of data) f(d);
        done();
      },
    });
    const ended = (async () => {
      try {
        const exec = await this.#container.exec({
          Cmd: [
            'bash',
            '-c',
            'echo $$ > "/tmp/.swerl-exec-$1"; cd "$2" || exit 1; exec 2>&1; exec timeout 0 bash --noprofile --norc',
            'swerl',
            id,
            this.workdir,
          ],
          AttachStdin: true,
          AttachStdout: true,
          AttachStderr: true,
          WorkingDir: '/',
          Env: ['LANG=C.UTF-8', 'TERM=dumb', 'PAGER=cat', 'GIT_PAGER=cat'],
        });
        const s = (await exec.start({ hijack: true, stdin: true })) as Duplex;
        stream = s;
        s.on('error', () => {});
        this.#docker.modem.demuxStream(s, sink, sink);
        for (const d of early.splice(0)) s.write(d);
        await new Promise<void>((res) => {
          s.on('end', res);
          s.on('close', res);
          s.on('error', () => res());
        });
        let code: number | null = -1;
        try {
          code = (await exec.inspect()).ExitCode ?? -1;
        } catch {
          // the container is gone
        }
        exit = { code };
      } catch {
        exit = { code: -1 };
      }
      for (const f of exits) f(exit.code, null);
    })();
    return {
      write: (d) => {
        if (stream) stream.write(d);
        else early.push(d);
      },
      onData: (f) => {
        data.push(f);
      },
      onExit: (f) => {
        exits.push(f);
      },
      interrupt: async (inner, sinceMs) => {
        await this.#run(['bash', '-c', INTERRUPT_SCRIPT, 'swerl', '0', String(inner), String(Math.ceil(sinceMs))], {
          cap: 64 * 1024,
          timeoutMs: 10_000,
          id: null,
        }).catch(() => {});
      },
      kill: async () => {
        await this.#killGroup(id);
        (stream as Duplex | null)?.destroy();
        await ended;
      },
    };
  }

  /** Reads a workspace file (PATH_ESCAPE when it resolves outside the workdir). */
  async readFile(path: string): Promise<string> {
    const rel = this.#checkPath(path);
    const r = await this.#run(
      [
        'bash',
        '-c',
        'cd "$2" && p=$(realpath -e -- "$1") || exit 3; case "$p" in "$2"|"$2"/*) exec cat -- "$p";; *) exit 4;; esac',
        'swerl',
        rel,
        this.workdir,
      ],
      { cap: 1 << 30, timeoutMs: this.#o.timeoutMs, id: null },
    );
    if (r.exitCode === 4) throw pathEscape(path);
    if (r.exitCode !== 0) throw new SwerlError(`cannot read ${path}: ${r.output.trim()}`, 'IO_ERROR');
    return r.output;
  }

  /** Writes a workspace file, creating directories (PATH_ESCAPE when it resolves outside). */
  async writeFile(path: string, content: string, o: { executable?: boolean } = {}): Promise<void> {
    const rel = this.#checkPath(path);
    if (typeof content !== 'string') throw invalidArgument('content', 'a string', content);
    const r = await this.#run(
      [
        'bash',
        '-c',
        'cd "$2" && p=$(realpath -m -- "$1") || exit 3; case "$p" in "$2"/*) ;; *) exit 4;; esac; [ -L "$p" ] && exit 4; mkdir -p -- "$(dirname -- "$p")" && d=$(realpath -e -- "$(dirname -- "$p")") && case "$d" in "$2"|"$2"/*) cat > "$p" || exit 1; [ "$3" = 1 ] && exec chmod 755 -- "$p"; exit 0;; *) exit 4;; esac',
        'swerl',
        rel,
        this.workdir,
        o.executable ? '1' : '0',
      ],
      { cap: 64 * 1024, timeoutMs: this.#o.timeoutMs, id: null, stdin: Buffer.from(content, 'utf8') },
    );
    if (r.exitCode === 4) throw pathEscape(path);
    if (r.exitCode !== 0) throw new SwerlError(`cannot write ${path}: ${r.output.trim()}`, 'IO_ERROR');
  }

  /** The unified diff of the workdir against the initial commit (`.swerl*` excluded). */
  async diff(): Promise<string> {
    const r = await this.#run(
      [
        'bash',
        '-c',
        `cd "$1" && git -c core.hooksPath=/dev/null add -A -- . ':(exclude,glob).swerl*' ':(exclude,glob).swerl*/**' && git -c core.hooksPath=/dev/null diff --cached --no-color --no-ext-diff --no-textconv "$2" -- . ':(exclude,glob).swerl*' ':(exclude,glob).swerl*/**'`,
        'swerl',
        this.workdir,
        this.#base,
      ],
      { cap: 1 << 30, timeoutMs: this.#o.timeoutMs, id: null },
    );
    if (r.exitCode !== 0) throw new SwerlError(`git diff failed: ${r.output.trim()}`, 'IO_ERROR');
    return r.output;
  }

  /** Removes the container (and every process in it). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([...this.#shells].map((sh) => sh.close()));
    await this.#container.remove({ force: true }).catch(() => {});
  }

  #checkPath(path: string): string {
    if (typeof path !== 'string' || path === '' || path.includes('\0'))
      throw invalidArgument('path', 'a non-empty string', path);
    if (path.startsWith('/')) {
      if (path !== this.workdir && !path.startsWith(`${this.workdir}/`)) throw pathEscape(path);
      return path;
    }
    return path;
  }

  // One docker exec: output demultiplexed and capped; `id` names the process group to kill on a
  // timeout or a flood, and after the end.
  async #run(
    cmd: string[],
    o: { cap: number; timeoutMs: number; id: string | null; stdin?: Buffer },
  ): Promise<ExecResult> {
    const started = performance.now();
    const exec = await this.#container.exec({
      Cmd: cmd,
      AttachStdout: true,
      AttachStderr: true,
      AttachStdin: o.stdin !== undefined,
      WorkingDir: '/',
      Env: ['LANG=C.UTF-8', 'TERM=dumb', 'PAGER=cat', 'GIT_PAGER=cat'],
    });
    const stream = (await exec.start({ hijack: true, stdin: o.stdin !== undefined })) as Duplex;
    const chunks: Buffer[] = [];
    let kept = 0;
    let seen = 0;
    let timedOut = false;
    let killed = false;
    const killGroup = async () => {
      if (killed || o.id === null) return;
      killed = true;
      await this.#killGroup(o.id);
    };
    const sink = new Writable({
      write: (d: Buffer, _enc, done) => {
        seen += d.length;
        if (kept < o.cap) {
          const take = d.subarray(0, o.cap - kept);
          chunks.push(take);
          kept += take.length;
        }
        if (o.id !== null && seen > 64 * o.cap + 1_000_000) void killGroup();
        done();
      },
    });
    this.#docker.modem.demuxStream(stream, sink, sink);
    const timer = setTimeout(() => {
      timedOut = true;
      void killGroup();
      // A backstop: if the stream never ends, give up on it.
      setTimeout(() => stream.destroy(), 5000).unref();
    }, o.timeoutMs + 1000);
    if (o.stdin !== undefined) stream.end(o.stdin);
    await new Promise<void>((res) => {
      stream.on('end', res);
      stream.on('close', res);
      stream.on('error', () => res());
    });
    clearTimeout(timer);
    let exitCode = -1;
    try {
      const info = await exec.inspect();
      exitCode = info.ExitCode ?? -1;
    } catch {
      // the container is gone
    }
    if (o.id !== null) {
      if (exitCode === 137 && performance.now() - started >= o.timeoutMs - 50) timedOut = true;
      killed = false;
      await killGroup(); // whatever the command left behind
    }
    let output = Buffer.concat(chunks).toString('utf8');
    const truncated = seen > kept;
    if (truncated) output += `\n[output truncated: ${seen - kept} more bytes]`;
    return { exitCode, output, timedOut, truncated, durationMs: performance.now() - started };
  }

  async #killGroup(id: string): Promise<void> {
    try {
      const exec = await this.#container.exec({
        Cmd: [
          'bash',
          '-c',
          'f="/tmp/.swerl-exec-$1"; [ -f "$f" ] || exit 0; g=$(cat "$f"); rm -f "$f"; kill -KILL -- "-$g" 2>/dev/null; exit 0',
          'swerl',
          id,
        ],
        AttachStdout: true,
        AttachStderr: true,
      });
      const s = (await exec.start({ hijack: true, stdin: false })) as Duplex;
      s.resume();
      await new Promise<void>((res) => {
        s.on('end', res);
        s.on('close', res);
        s.on('error', () => res());
      });
    } catch {
      // the container is gone: so are its processes
    }
  }
}

function pathEscape(path: string): SwerlError {
  return new SwerlError(`${JSON.stringify(path)} resolves outside the sandbox workspace`, 'PATH_ESCAPE');
}

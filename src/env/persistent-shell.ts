/**
 * Persistent shells (as SWE-ReX keeps one for SWE-agent): one long-lived `bash --noprofile --norc`
 * per Shell, reading commands from a pipe, so that the working directory, variables, functions and
 * aliases carry over from one command to the next. The sandboxes start the process (under the same
 * isolation and limits as their exec) and say how to kill it; this file holds the protocol.
 *
 * The protocol cannot be broken by what a command says: each command goes down the pipe as a
 * length-prefixed block of bytes, which the shell reads with `read -N` (bytes, LC_ALL=C) into a file
 * in the sandbox's private /tmp, then `source`s with stdin from /dev/null (a command reading stdin
 * cannot eat the protocol) and stdout/stderr on the protocol pipe (so `exec >/dev/null` lasts only
 * for that command). At top level, so that `declare` makes globals. Then the shell prints an end
 * marker `\0SWERL<nonce>:<status>:<cwd>\0`, with a fresh random nonce per command that is never
 * written down whole before (the host sends it in two halves). Unbalanced quotes and unterminated
 * heredocs end in a syntax error or a warning of that one command; `exit`, `exec` or a killed shell
 * end the process, and the next run starts a new one in the last known directory (the environment
 * is lost then).
 *
 * A timeout (or an output flood) sends SIGUSR1 to the shell, whose trap returns from the sourced
 * command, and SIGKILLs every process the shell started since the command began; this repeats for
 * up to a second, after which the whole shell is killed. `set -e` lasts for one command (it is
 * reset after each), since a lasting errexit would end the shell at the next failing grep.
 */
import { randomBytes } from 'node:crypto';
import { invalidArgument, SwerlError } from '../errors.js';
import type { ExecResult } from './sandbox.js';
import { shellQuote } from './shell-quote.js';

/** A running shell process, as a sandbox starts it. */
export interface ShellProcess {
  /** Writes to the shell's stdin. */
  write(data: Buffer): void;
  /** Output of the shell (stdout and stderr, one stream). */
  onData(f: (d: Buffer) => void): void;
  /** Called once, when the process has ended (exit code, or signal). */
  onExit(f: (code: number | null, signal: string | null) => void): void;
  /**
   * Signals the shell (pid `shellPid` as the shell sees itself) with SIGUSR1 and SIGKILLs the
   * processes it started in the last `sinceMs` ms.
   */
  interrupt(shellPid: number, sinceMs: number): Promise<void>;
  /** Kills the shell and everything it started. */
  kill(): Promise<void>;
}

/** How a sandbox starts its shells. */
export interface ShellBackend {
  /** Starts one `bash --noprofile --norc` reading stdin, stderr joined to stdout. */
  start(): ShellProcess;
  /** The file, inside the sandbox, each command is written to before it is sourced. */
  commandFile: string;
  /** The workspace as commands see it (the directory a shell starts in at first). */
  workdir: string;
  /** Output kept per command. */
  maxOutputBytes: number;
  /** The default per-command timeout. */
  timeoutMs: number;
}

/** Options of a sandbox's openShell(). */
export interface ShellOptions {
  /** Shell code run once each time the shell (re)starts, after the cd (its output is dropped). */
  init?: string;
  /** Shell code run after each command, inside the shell, `$?` kept (its output is dropped). */
  afterEach?: string;
}

/** A persistent shell in a sandbox. */
export interface Shell {
  /** Runs a command in the shell: the same ExecResult as exec (output capped and marked alike). */
  run(command: string, o?: { timeoutMs?: number }): Promise<ExecResult>;
  /** The shell's working directory after the last command (as commands see it). */
  readonly cwd: string;
  /** Kills the shell and everything it started; later runs fail with DISPOSED. */
  close(): Promise<void>;
}

// How long a shell may take to start (the unshare prelude is a few dozen mounts).
const START_TIMEOUT_MS = 30_000;
// How often, and how many times, a timeout signals the shell before it kills it outright.
const INTERRUPT_EVERY_MS = 100;
const INTERRUPT_TRIES = 10;

/**
 * The script the shell runs first: the protocol's functions, the abort trap, the working
 * directory, the caller's init, then a ready marker with the shell's pid.
 */
function bootstrap(b: ShellBackend, cwd: string, o: ShellOptions, ready: [string, string]): string {
  const f = shellQuote(b.commandFile);
  const trap = `trap '[ -n "\${__swerl_busy-}" ] && [ "\${FUNCNAME[0]-}" != __swerl_end ] && return 130' USR1`;
  return [
    // fd 62 is the protocol's: a command's `exec >file` does not hide the markers.
    'exec 2>&1 62>&1',
    trap,
    // The command's bytes, exactly: -N counts bytes under LC_ALL=C, and does not split on IFS.
    `__swerl_read() { IFS= LC_ALL=C builtin read -r -N "$1" __swerl_c; builtin printf '%s' "$__swerl_c" > ${f}; builtin unset __swerl_c; __swerl_busy=1; }`,
    `__swerl_end() { __swerl_busy=; builtin set +e; { ${o.afterEach ?? ':'}; } >/dev/null 2>&1 </dev/null; ${trap}; builtin printf '\\0SWERL%s%s:%d:%s\\0' "$2" "$3" "$1" "$PWD" >&62; }`,
    `builtin cd -- ${shellQuote(cwd)} 2>/dev/null || builtin cd -- ${shellQuote(b.workdir)}`,
    `{ ${o.init ?? ':'}; } >/dev/null 2>&1 </dev/null`,
    `builtin printf '\\0SWERL%s%s:%d:%s\\0' ${ready[0]} ${ready[1]} $$ "$PWD" >&62`,
    '',
  ].join('\n');
}

interface Pending {
  marker: Buffer;
  chunks: Buffer[];
  kept: number;
  seen: number;
  carry: Buffer;
  /** Set once the marker is seen: the bytes after it, up to the closing NUL. */
  tail: Buffer | null;
  done: (r: { status: number; cwd: string } | { exited: number }) => void;
}

/** A Pending that waits for the end marker of nonce halves `a` and `z`, and the promise it settles. */
function expectMarker(
  a: string,
  z: string,
): {
  pending: Pending;
  end: Promise<{ status: number; cwd: string } | { exited: number }>;
} {
  let pending!: Pending;
  const end = new Promise<{ status: number; cwd: string } | { exited: number }>((done) => {
    pending = {
      marker: Buffer.from(`\0SWERL${a}${z}:`),
      chunks: [],
      kept: 0,
      seen: 0,
      carry: Buffer.alloc(0),
      tail: null,
      done,
    };
  });
  return { pending, end };
}

/** A persistent shell over a sandbox's ShellBackend (see the file's header). */
export class PersistentShell implements Shell {
  readonly #b: ShellBackend;
  readonly #o: ShellOptions;
  #proc: ShellProcess | null = null;
  #pid = 0;
  #cwd: string;
  #pending: Pending | null = null;
  // Output that came between commands (a background job's): shown with the next command's.
  #between: Buffer[] = [];
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;
  #onClose: (() => void) | undefined;

  /** A shell over `backend`; `onClose` is called when it is closed. */
  constructor(backend: ShellBackend, o: ShellOptions = {}, onClose?: () => void) {
    if (o.init !== undefined && typeof o.init !== 'string') throw invalidArgument('init', 'a string', o.init);
    if (o.afterEach !== undefined && typeof o.afterEach !== 'string')
      throw invalidArgument('afterEach', 'a string', o.afterEach);
    this.#b = backend;
    this.#o = o;
    this.#cwd = backend.workdir;
    this.#onClose = onClose;
  }

  get cwd(): string {
    return this.#cwd;
  }

  run(command: string, o: { timeoutMs?: number } = {}): Promise<ExecResult> {
    if (this.#closed) return Promise.reject(new SwerlError('this shell is closed', 'DISPOSED'));
    if (typeof command !== 'string') return Promise.reject(invalidArgument('command', 'a string', command));
    // bash drops NUL bytes on read: the length prefix would then be off (exec cannot pass them either).
    if (command.includes('\0'))
      return Promise.reject(invalidArgument('command', 'a string without NUL characters', command));
    const timeoutMs = o.timeoutMs ?? this.#b.timeoutMs;
    if (typeof timeoutMs !== 'number' || !(timeoutMs >= 1))
      return Promise.reject(invalidArgument('timeoutMs', 'a number >= 1', timeoutMs));
    const r = this.#queue.then(() => this.#run(command, timeoutMs));
    this.#queue = r.catch(() => {});
    return r;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const p = this.#proc;
    this.#proc = null;
    if (p) await p.kill();
    this.#onClose?.();
  }

  async #run(command: string, timeoutMs: number): Promise<ExecResult> {
    const started = performance.now();
    if (this.#closed) throw new SwerlError('this shell is closed', 'DISPOSED');
    if (!this.#proc) {
      const err = await this.#start();
      if (err !== null)
        return {
          exitCode: -1,
          output: `cannot start the shell: ${err}`,
          timedOut: false,
          truncated: false,
          durationMs: 0,
        };
    }
    const proc = this.#proc as ShellProcess;
    const cap = this.#b.maxOutputBytes;
    const a = randomBytes(8).toString('hex');
    const z = randomBytes(8).toString('hex');
    const bytes = Buffer.from(command, 'utf8');
    let timedOut = false;
    let flooded = false;
    let aborting: Promise<void> | null = null;
    const abort = () => {
      aborting ??= (async () => {
        for (let k = 0; k < INTERRUPT_TRIES && this.#pending === pending; k++) {
          await proc.interrupt(this.#pid, performance.now() - started + 1000);
          await new Promise((res) => setTimeout(res, INTERRUPT_EVERY_MS));
        }
        if (this.#pending === pending) await proc.kill(); // it would not stop: the shell goes
      })();
    };
    const { pending, end } = expectMarker(a, z);
    this.#pending = pending;
    for (const d of this.#between.splice(0)) this.#take(pending, d);
    const onFlood = setInterval(() => {
      if (pending.seen > 64 * cap + 1_000_000 && !flooded) {
        flooded = true; // stop it rather than drain it forever
        abort();
      }
    }, 50);
    const timer = setTimeout(() => {
      timedOut = true;
      abort();
    }, timeoutMs);
    proc.write(
      Buffer.concat([
        Buffer.from(
          `{ \\__swerl_read ${bytes.length}; \\builtin source ${shellQuote(this.#b.commandFile)} </dev/null >&62 2>&62; \\__swerl_end $? ${a} ${z}; } 2>/dev/null\n`,
        ),
        bytes,
      ]),
    );
    const r = await end;
    clearTimeout(timer);
    clearInterval(onFlood);
    if (aborting) await aborting;
    this.#pending = null;
    let output = Buffer.concat(pending.chunks).toString('utf8');
    const truncated = pending.seen > pending.kept;
    if (truncated) output += `\n[output truncated: ${pending.seen - pending.kept} more bytes]`;
    let exitCode: number;
    if ('exited' in r) exitCode = r.exited;
    else {
      exitCode = r.status;
      this.#cwd = r.cwd;
    }
    // As exec's: a command killed for its timeout or a flood reads as SIGKILLed.
    if (timedOut || flooded) exitCode = 128 + 9;
    return { exitCode, output, timedOut, truncated, durationMs: performance.now() - started };
  }

  // Starts the shell and waits for its ready marker; the error's text, or null.
  async #start(): Promise<string | null> {
    const ready: [string, string] = [randomBytes(8).toString('hex'), randomBytes(8).toString('hex')];
    let proc: ShellProcess;
    try {
      proc = this.#b.start();
    } catch (e) {
      return (e as Error).message;
    }
    this.#proc = proc;
    const { pending, end } = expectMarker(ready[0], ready[1]);
    this.#pending = pending;
    proc.onData((d) => {
      if (this.#proc !== proc) return;
      if (this.#pending) this.#take(this.#pending, d);
      else if (this.#between.reduce((n, b) => n + b.length, 0) < 64 * this.#b.maxOutputBytes) this.#between.push(d);
    });
    proc.onExit((code, signal) => {
      if (this.#proc === proc) this.#proc = null;
      const p = this.#pending;
      if (!p) return;
      this.#pending = null;
      if (p.carry.length > 0) this.#emit(p, p.carry);
      p.carry = Buffer.alloc(0);
      p.done({ exited: code ?? (signal ? 128 + 9 : -1) });
    });
    proc.write(Buffer.from(bootstrap(this.#b, this.#cwd, this.#o, ready)));
    const timer = setTimeout(() => void proc.kill(), START_TIMEOUT_MS);
    const r = await end;
    clearTimeout(timer);
    this.#pending = null;
    if ('exited' in r) {
      this.#proc = null;
      return `the shell exited (${r.exited}) as it started: ${Buffer.concat(pending.chunks).toString('utf8').trim()}`;
    }
    this.#pid = r.status;
    this.#cwd = r.cwd;
    return null;
  }

  // Feeds shell output to a pending command: output up to its marker, then the marker's fields.
  #take(p: Pending, d: Buffer): void {
    if (p.tail !== null) {
      p.tail = Buffer.concat([p.tail, d]);
    } else {
      const scan = p.carry.length > 0 ? Buffer.concat([p.carry, d]) : d;
      const at = scan.indexOf(p.marker);
      if (at < 0) {
        // The marker may straddle two chunks: its length less one byte waits for the next.
        const keep = Math.max(0, scan.length - (p.marker.length - 1));
        this.#emit(p, scan.subarray(0, keep));
        p.carry = Buffer.from(scan.subarray(keep));
        return;
      }
      this.#emit(p, scan.subarray(0, at));
      p.carry = Buffer.alloc(0);
      p.tail = Buffer.from(scan.subarray(at + p.marker.length));
    }
    const nul = p.tail.indexOf(0);
    if (nul < 0) return;
    const fields = p.tail.subarray(0, nul).toString('utf8');
    const rest = p.tail.subarray(nul + 1);
    const colon = fields.indexOf(':');
    this.#pending = null;
    if (rest.length > 0) this.#between.push(Buffer.from(rest));
    p.done({ status: Number(fields.slice(0, colon)), cwd: fields.slice(colon + 1) });
  }

  #emit(p: Pending, d: Buffer): void {
    p.seen += d.length;
    const cap = this.#b.maxOutputBytes;
    if (p.kept < cap && d.length > 0) {
      const take = d.subarray(0, cap - p.kept);
      p.chunks.push(Buffer.from(take));
      p.kept += take.length;
    }
  }
}

/**
 * The SIGUSR1-and-kill step of a timeout, as a bash script (run where the shell's pids are
 * visible: on the host for LocalSandbox, in the container for Docker). Arguments: a pid whose
 * subtree holds the shell (0: any process, as in a container, where a docker exec has no parent), the shell's pid as it sees itself (the last NSpid entry), and the
 * command's age in ms: processes under the shell that started within it are SIGKILLed, older
 * ones (background jobs of earlier commands) are left. Reads /proc with builtins only.
 */
export const INTERRUPT_SCRIPT = `root=$1 inner=$2 age=$3
declare -A parent start
for s in /proc/[0-9]*/stat; do
  IFS= read -r line < "$s" 2>/dev/null || continue
  p=\${s#/proc/}; p=\${p%/stat}
  set -- \${line##*) }
  parent[$p]=$2; start[$p]=\${20}
done
under() { [ "$root" = 0 ] && return 0; local q=$1; while [ -n "$q" ] && [ "$q" != 0 ]; do [ "$q" = "$root" ] && return 0; q=\${parent[$q]-}; done; return 1; }
shell=
for p in "\${!parent[@]}"; do
  under "$p" || continue
  ns=
  while IFS= read -r l; do case $l in NSpid:*) ns=\${l##*[[:space:]]};; esac; done < /proc/$p/status 2>/dev/null
  [ "$ns" = "$inner" ] && { shell=$p; break; }
done
[ -n "$shell" ] || exit 0
kill -USR1 "$shell" 2>/dev/null
read -r up _ < /proc/uptime
now=\${up%.*}\${up#*.}
since=$(( 10#$now - age / 10 - 2 ))
for p in "\${!parent[@]}"; do
  [ "$p" = "$shell" ] && continue
  q=\${parent[$p]}; while [ -n "$q" ] && [ "$q" != 0 ] && [ "$q" != "$shell" ]; do q=\${parent[$q]-}; done
  [ "$q" = "$shell" ] && [ "\${start[$p]}" -ge "$since" ] && kill -KILL "$p" 2>/dev/null
done
exit 0`;

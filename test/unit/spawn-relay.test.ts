import { afterEach, describe, expect, it } from 'vitest';
import { type SpawnedChild, spawnRelayed } from '../../src/env/spawn-relay.js';

const env = { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8' };

function collect(c: SpawnedChild): Promise<{ out: string; err: string; code: number | null; signal: string | null }> {
  let out = '';
  let err = '';
  c.stdout.on('data', (d: Buffer) => {
    out += d;
  });
  c.stderr.on('data', (d: Buffer) => {
    err += d;
  });
  return new Promise((resolve, reject) => {
    c.on('close', (code, signal) => resolve({ out, err, code, signal }));
    c.on('error', reject);
  });
}

describe('the spawn relay', () => {
  const saved = process.env.SWERL_SPAWN_RELAY;
  afterEach(() => {
    if (saved === undefined) delete process.env.SWERL_SPAWN_RELAY;
    else process.env.SWERL_SPAWN_RELAY = saved;
  });

  it('runs a command with the given cwd and environment, and returns its streams and exit as a direct spawn does', async () => {
    const script = 'printf "%s|%s|" "$PWD" "$ONLY"; head -c 300000 /dev/zero | tr "\\0" a; echo oops >&2; exit 3';
    const run = () => collect(spawnRelayed('/bin/sh', ['-c', script], { cwd: '/tmp', env: { ...env, ONLY: 'x' } }));
    const relayed = await run();
    process.env.SWERL_SPAWN_RELAY = '0';
    const direct = await run();
    expect(relayed.out.startsWith('/tmp|x|')).toBe(true);
    expect(relayed.out.length).toBe('/tmp|x|'.length + 300_000); // many chunks, all in order
    expect(relayed).toEqual(direct);
    expect(relayed).toMatchObject({ err: 'oops\n', code: 3, signal: null });
  });

  it('spawns from the relay process, not from this one (unless SWERL_SPAWN_RELAY=0)', async () => {
    const parent = async () => Number((await collect(spawnRelayed('/bin/sh', ['-c', 'echo $PPID'], { env }))).out);
    const relayed = await parent();
    process.env.SWERL_SPAWN_RELAY = '0';
    expect(await parent()).toBe(process.pid);
    expect(relayed).toBeGreaterThan(0);
    expect(relayed).not.toBe(process.pid);
  });

  it('gives the pid of a detached child, whose process group a signal ends; many run at once', async () => {
    const c = spawnRelayed('/bin/sh', ['-c', 'sleep 30 & sleep 30; echo never'], { env, detached: true });
    const done = collect(c);
    for (let i = 0; i < 50 && c.pid === undefined; i++) await new Promise((r) => setTimeout(r, 20));
    expect(c.pid).toBeGreaterThan(0);
    process.kill(-(c.pid as number), 'SIGKILL');
    expect(await done).toMatchObject({ out: '', code: null, signal: 'SIGKILL' });
    const many = await Promise.all(
      Array.from({ length: 24 }, (_, i) => collect(spawnRelayed('/bin/sh', ['-c', `echo ${i}`], { env }))),
    );
    expect(many.map((r) => r.out)).toEqual(Array.from({ length: 24 }, (_, i) => `${i}\n`));
  });

  it('reports a command that cannot start as an error', async () => {
    await expect(collect(spawnRelayed('/no/such/program', [], { env }))).rejects.toThrow(/ENOENT/);
  });
});

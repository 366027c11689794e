/**
 * DockerSandbox against a real Docker engine: exec, limits, timeouts that kill the whole process
 * group, output caps, file access that cannot leave the workdir, diff, and evaluatePatch on a
 * mini-SWE task in a container. Skipped, with the reason printed, when no engine is reachable
 * (CI machines have none; the image is built from this machine's own binaries).
 */
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  DockerSandbox,
  dockerAvailable,
  evaluatePatch,
  expertPolicy,
  generateMiniSweTasks,
  runEpisode,
} from '../../src/index.js';
import { ensureTestImage } from '../helpers/docker-image.js';

const hasDocker = await dockerAvailable();
if (!hasDocker)
  console.warn('DockerSandbox tests skipped: no Docker engine is reachable (start dockerd or set DOCKER_HOST)');
const image = hasDocker ? ensureTestImage() : '';

describe.skipIf(!hasDocker)('DockerSandbox', () => {
  it('runs commands in the workdir with the files, and reports exit codes', async () => {
    const sb = await DockerSandbox.create({
      image,
      workdir: '/project',
      files: { 'src/a.js': 'export const a = 1;\n' },
    });
    try {
      expect(sb.isolation).toBe('docker');
      const r = await sb.exec('cat src/a.js && pwd && exit 3');
      expect(r.exitCode).toBe(3);
      expect(r.output).toContain('export const a = 1;');
      expect(r.output).toContain('/project');
      expect(await sb.readFile('src/a.js')).toBe('export const a = 1;\n');
    } finally {
      await sb.close();
    }
  });

  it('kills the whole process group on a timeout and leaves nothing behind', async () => {
    const sb = await DockerSandbox.create({ image, workdir: '/project' });
    try {
      const r = await sb.exec('(sleep 300 &) ; sleep 300 & echo started; wait', { timeoutMs: 1500 });
      expect(r.timedOut).toBe(true);
      expect(r.output).toContain('started');
      expect(r.durationMs).toBeLessThan(10_000);
      const ps = await sb.exec('ps -eo comm | grep -c "^sleep$" || true');
      // Only the idle init's own sleep may remain.
      expect(Number(ps.output.trim())).toBeLessThanOrEqual(1);
      const bg = await sb.exec('sleep 200 & echo bg');
      expect(bg.exitCode).toBe(0);
      const after = await sb.exec('ps -eo comm | grep -c "^sleep$" || true');
      expect(Number(after.output.trim())).toBeLessThanOrEqual(1);
    } finally {
      await sb.close();
    }
  }, 30_000);

  it('caps output floods with a truncation marker', async () => {
    const sb = await DockerSandbox.create({ image, workdir: '/project', maxOutputBytes: 1000 });
    try {
      const r = await sb.exec('yes swerl | head -c 200000', { timeoutMs: 10_000 });
      expect(r.truncated).toBe(true);
      expect(r.output).toMatch(/\[output truncated: \d+ more bytes\]$/);
      const flood = await sb.exec('yes', { timeoutMs: 20_000 });
      expect(flood.truncated).toBe(true);
      expect(flood.timedOut).toBe(false); // killed for flooding, long before the timeout
    } finally {
      await sb.close();
    }
  }, 40_000);

  it('enforces the process and memory limits and has no network', async () => {
    const server = createServer((s) => s.end('host service\n'));
    await new Promise<void>((r) => server.listen(0, '0.0.0.0', r));
    const port = (server.address() as { port: number }).port;
    const sb = await DockerSandbox.create({ image, workdir: '/project', maxProcesses: 64, memoryMiB: 128 });
    try {
      const bomb = await sb.exec('for i in $(seq 200); do sleep 5 & done 2>/dev/null; jobs -p | wc -l', {
        timeoutMs: 15_000,
      });
      expect(Number(bomb.output.trim().split('\n').pop())).toBeLessThan(64);
      const mem = await sb.exec('node -e "const a=[]; for(;;) a.push(Buffer.alloc(16<<20, 1))"', { timeoutMs: 20_000 });
      expect(mem.exitCode).not.toBe(0);
      const net = await sb.exec(
        `node -e "require('net').connect(${port}, '172.17.0.1').on('error', e => { console.log('ERR', e.code); process.exit(0) }).on('data', d => console.log(String(d)))"`,
        { timeoutMs: 10_000 },
      );
      expect(net.output).not.toContain('host service');
      expect(net.output).toContain('ERR');
    } finally {
      await sb.close();
      server.close();
    }
  }, 60_000);

  it('rejects file paths that leave the workdir, symlinks included', async () => {
    const sb = await DockerSandbox.create({ image, workdir: '/project', files: { 'a.txt': 'a\n' } });
    try {
      await expect(sb.readFile('../etc/passwd')).rejects.toMatchObject({ code: 'PATH_ESCAPE' });
      await expect(sb.readFile('/etc/passwd')).rejects.toMatchObject({ code: 'PATH_ESCAPE' });
      await sb.exec('ln -s /etc link && ln -s /etc/passwd pw');
      await expect(sb.readFile('link/passwd')).rejects.toMatchObject({ code: 'PATH_ESCAPE' });
      await expect(sb.readFile('pw')).rejects.toMatchObject({ code: 'PATH_ESCAPE' });
      await expect(sb.writeFile('link/x', 'x')).rejects.toMatchObject({ code: 'PATH_ESCAPE' });
      await expect(sb.writeFile('pw', 'x')).rejects.toMatchObject({ code: 'PATH_ESCAPE' });
      expect((await sb.exec('cat /etc/passwd')).output).not.toContain('x\nx');
      await expect(sb.readFile('missing.txt')).rejects.toMatchObject({ code: 'IO_ERROR' });
    } finally {
      await sb.close();
    }
  });

  it('diffs edits and new files against the initial state, without .swerl files', async () => {
    const sb = await DockerSandbox.create({ image, workdir: '/project', files: { 'a.js': 'one\ntwo\n' } });
    try {
      expect(await sb.diff()).toBe('');
      await sb.writeFile('a.js', 'one\n2\n');
      await sb.exec(
        'echo new > b.js && mkdir -p .swerl && echo s > .swerl/state && git add -A && git -c user.name=a -c user.email=a@b commit -qm agent',
      );
      const d = await sb.diff();
      expect(d).toContain('-two');
      expect(d).toContain('+2');
      expect(d).toContain('b/b.js');
      expect(d).not.toContain('.swerl');
    } finally {
      await sb.close();
    }
  });

  it('removes the container on close; a closed sandbox refuses work', async () => {
    const sb = await DockerSandbox.create({ image, workdir: '/project' });
    const id = sb.containerId;
    await sb.close();
    await expect(sb.exec('true')).rejects.toMatchObject({ code: 'DISPOSED' });
    const { default: Docker } = await import('dockerode');
    await expect(new Docker().getContainer(id).inspect()).rejects.toThrow();
  });

  it('bad options and a missing image get codes', async () => {
    await expect(DockerSandbox.create({ image: '' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(DockerSandbox.create({ image, workdir: 'rel' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(DockerSandbox.create({ image: 'swerl-test/absent:0' })).rejects.toMatchObject({
      code: 'SANDBOX_UNAVAILABLE',
    });
  });

  it('evaluatePatch in a container: the gold patch resolves a mini-SWE task, an empty one does not', async () => {
    const [task] = await generateMiniSweTasks({ count: 1, seed: 5 });
    if (!task) throw new Error('no task generated');
    const docker = { image };
    const gold = await evaluatePatch(task, task.patch, { sandbox: 'docker', docker });
    expect(gold.resolved).toBe(true);
    const empty = await evaluatePatch(task, '', { sandbox: 'docker', docker });
    expect(empty.resolved).toBe(false);
  }, 60_000);

  it('the expert solves a task through the scaffold tools in a container', async () => {
    const [task] = await generateMiniSweTasks({ count: 1, seed: 9 });
    if (!task) throw new Error('no task generated');
    const tr = await runEpisode({ task, policy: expertPolicy(task), sandbox: { kind: 'docker', image } });
    expect(tr.finishReason).toBe('submit');
    expect(tr.messages[1]?.content).toContain('/project');
    const r = await evaluatePatch(task, tr.patch);
    expect(r.resolved).toBe(true);
  }, 90_000);
});

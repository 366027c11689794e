/**
 * DockerSandbox against a real Docker engine: exec, limits, timeouts that kill the whole process
 * group, output caps, file access that cannot leave the workdir, diff, and evaluatePatch on a
 * mini-SWE task in a container (and in one that lacks a tool the grader needs), bind mounts, and
 * the removal of a killed run's containers.
 * Skipped, with the reason printed, when no engine is reachable (CI starts one:
 * scripts/start-dockerd.sh); SWERL_REQUIRE_DOCKER=1 makes a missing engine a failure. The image
 * is built from this machine's own binaries.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Docker from 'dockerode';
import { describe, expect, it } from 'vitest';
import { DockerSandbox, evaluatePatch, expertPolicy, generateMiniSweTasks, runEpisode } from '../../src/index.js';
import { dockerTestsCanRun } from '../helpers/docker-engine.js';
import { ensureTestImage, ensureTestImageWithout } from '../helpers/docker-image.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const hasDocker = await dockerTestsCanRun('DockerSandbox tests');
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

  it('evaluatePatch in a container that lacks git or node: an error of the grader, whatever the patch', async () => {
    const [task] = await generateMiniSweTasks({ count: 1, seed: 5 });
    if (!task) throw new Error('no task generated');
    // Without node the container starts and the grader's tool check finds it missing, before
    // the patch is applied; without git the workspace's repository cannot be made.
    for (const [tool, code, says] of [
      ['node', 'RUNNER_FAILED', 'git, node or python is missing'],
      ['git', 'IO_ERROR', 'git: command not found'],
    ] as const) {
      const docker = { image: ensureTestImageWithout([tool]) };
      for (const patch of [task.patch, '']) {
        const r = await evaluatePatch(task, patch, { sandbox: 'docker', docker });
        expect(r.outcome, `without ${tool}: ${r.log}`).toBe('error');
        expect(r.resolved).toBe(false);
        expect(r.error?.code).toBe(code);
        expect(r.error?.message).toContain(says);
      }
    }
  }, 90_000);

  it('the expert solves a task through the scaffold tools in a container', async () => {
    const [task] = await generateMiniSweTasks({ count: 1, seed: 9 });
    if (!task) throw new Error('no task generated');
    const tr = await runEpisode({ task, policy: expertPolicy(task), sandbox: { kind: 'docker', image } });
    expect(tr.finishReason).toBe('submit');
    expect(tr.messages[1]?.content).toContain('/project');
    const r = await evaluatePatch(task, tr.patch);
    expect(r.resolved).toBe(true);
  }, 90_000);

  it('bind-mounts host folders, read-only when asked; bad mounts get INVALID_ARGUMENT', async () => {
    const ro = mkdtempSync(join(tmpdir(), 'swerl-mount-ro-'));
    const rw = mkdtempSync(join(tmpdir(), 'swerl-mount-rw-'));
    writeFileSync(join(ro, 'tool.sh'), 'echo from the tool\n');
    try {
      const sb = await DockerSandbox.create({
        image,
        workdir: '/project',
        mounts: [
          { source: ro, target: '/opt/tools', readOnly: true },
          { source: rw, target: '/mnt/out' },
        ],
      });
      try {
        expect((await sb.exec('bash /opt/tools/tool.sh')).output).toBe('from the tool\n');
        const w = await sb.exec('echo x > /opt/tools/new.txt');
        expect(w.exitCode).not.toBe(0);
        expect(w.output).toMatch(/read-only/i);
        expect((await sb.exec('echo written > /mnt/out/r.txt')).exitCode).toBe(0);
        expect(readFileSync(join(rw, 'r.txt'), 'utf8')).toBe('written\n');
        expect(await sb.diff()).toBe(''); // mounts outside the workdir are not the agent's patch
      } finally {
        await sb.close();
      }
      const bad = (mounts: unknown) =>
        expect(DockerSandbox.create({ image, mounts } as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      await bad('/opt');
      await bad([null]);
      await bad([{ source: 'rel', target: '/opt/x' }]);
      await bad([{ source: ro, target: 'opt/x' }]);
      await bad([{ source: ro, target: '/' }]);
      await bad([{ source: ro, target: '/opt/x', readOnly: 'yes' }]);
      await bad([
        { source: ro, target: '/opt/x' },
        { source: rw, target: '/opt/x/' },
      ]);
      await bad([{ source: join(ro, 'absent'), target: '/opt/x' }]); // the engine finds no such folder
    } finally {
      rmSync(ro, { recursive: true, force: true });
      rmSync(rw, { recursive: true, force: true });
    }
  });

  it("a killed run's containers are removed by the next create; live owners' and other scopes' are kept", async () => {
    const docker = new Docker();
    const sandboxes = { label: ['swerl.sandbox=1'] };
    // A run killed outright: its process creates a sandbox (through the built package, as a user
    // would) and dies by SIGKILL, so it never closes it.
    const script = `
      const { DockerSandbox } = await import(${JSON.stringify(pathToFileURL(join(root, 'dist', 'index.js')).href)});
      const sb = await DockerSandbox.create({ image: ${JSON.stringify(image)}, workdir: '/project' });
      console.log(sb.containerId);
      setInterval(() => {}, 1000);`;
    const run = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    run.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const orphan = await new Promise<string>((done, fail) => {
      run.stdout.once('data', (d: Buffer) => done(d.toString().trim()));
      run.once('exit', (code) => fail(new Error(`the run exited (${code}) before creating its sandbox: ${stderr}`)));
    });
    const ended = new Promise((done) => run.once('exit', done));
    run.kill('SIGKILL');
    await ended;
    expect((await docker.getContainer(orphan).inspect()).State.Running).toBe(true);
    // Containers with the same labels whose owners are alive, or live in another PID namespace.
    const holder = spawn('sleep', ['60'], { stdio: 'ignore' });
    const dead = spawnSync('true').pid as number;
    const scope = (await docker.getContainer(orphan).inspect()).Config.Labels['swerl.owner.scope'] ?? '';
    expect(scope).not.toBe('');
    const fake = async (labels: Record<string, string>) =>
      (await docker.createContainer({ Image: image, Cmd: ['true'], Labels: { 'swerl.sandbox': '1', ...labels } })).id;
    const kept = [
      await fake({ 'swerl.owner.scope': scope, 'swerl.owner.pid': String(holder.pid) }),
      await fake({ 'swerl.owner.scope': 'another-host/4026531836', 'swerl.owner.pid': String(dead) }),
      await fake({}), // an earlier version's container: its owner is unknown
    ];
    try {
      const sb = await DockerSandbox.create({ image, workdir: '/project' });
      try {
        const left = (await docker.listContainers({ all: true, filters: sandboxes })).map((c) => c.Id);
        expect(left).not.toContain(orphan);
        for (const id of [...kept, sb.containerId]) expect(left).toContain(id);
      } finally {
        await sb.close();
      }
    } finally {
      holder.kill('SIGKILL');
      for (const id of [orphan, ...kept])
        await docker
          .getContainer(id)
          .remove({ force: true })
          .catch(() => {});
    }
  }, 60_000);
});

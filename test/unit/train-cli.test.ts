/**
 * `node train.js` end to end on the smoke preset: the run folder (summary.json, metrics.jsonl,
 * report.html, the checkpoints each finished stage keeps, read back by Model.load and
 * Tokenizer.load), kills after each kind of checkpoint (base, RFT, a DAPO iteration) and
 * `--resume` that finishes without repeating a finished phase, one phase naming scheme across
 * state, checkpoints, rollout files, metrics and console lines, progress lines on a piped stderr
 * while the warm start runs, Pass@1 printed once when k is 1, and bad configs rejected with the
 * field named before anything runs.
 */
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AdamW, isolationAvailable, Model, readRollouts, Tokenizer } from '../../src/index.js';
import { dapoPhase } from '../../src/pipeline/phases.js';

const root = join(import.meta.dirname, '..', '..');
const canSandbox = isolationAvailable('bwrap') || isolationAvailable('unshare');

function train(args: string[], env: NodeJS.ProcessEnv = process.env) {
  return spawnSync(process.execPath, [join(root, 'train.js'), ...args], { cwd: root, encoding: 'utf8', env });
}

describe('node train.js', () => {
  it('rejects unknown options, presets and bad configs with a message naming the field, exit code 1', () => {
    expect(existsSync(join(root, 'dist', 'cli', 'train.js')), 'run `npm run build:ts` first').toBe(true);
    const r = train(['--nope']);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('usage: node train.js');
    expect(train(['--preset', 'huge']).status).toBe(1);
    expect(train(['--help']).status).toBe(0);
    const dir = mkdtempSync(join(tmpdir(), 'swerl-cfg-'));
    try {
      const bad = (cfg: unknown, field: RegExp) => {
        const p = join(dir, 'c.json');
        writeFileSync(p, typeof cfg === 'string' ? cfg : JSON.stringify(cfg));
        const x = train(['--config', p, '--out', join(dir, 'run')]);
        expect(x.status, x.stderr).toBe(1);
        expect(x.stderr).toMatch(field);
        expect(x.stderr).toContain('INVALID_CONFIG');
      };
      bad({ dapo: { clipHigh: 'x' } }, /dapo\.clipHigh/);
      bad({ episode: { maxTurns: 0 } }, /episode\.maxTurns/);
      bad({ rft: { epochs: 1.5 } }, /rft\.epochs/);
      bad({ sandbox: { kind: 'vm' } }, /sandbox\.kind/);
      bad({ warmStart: { bogus: 1 } }, /warmStart\.bogus/);
      bad({ dapo: { stages: [] } }, /dapo\.stages/);
      bad({ engine: { backend: 'remote' } }, /engine\.url/);
      bad({ engine: { kvBlocks: 64 } }, /engine\.kvBlocks/);
      bad({ miniSwe: { kinds: ['typo'] } }, /miniSwe\.kinds/);
      bad({ embeddedModel: { hiddenSize: 96, heads: 5 } }, /embeddedModel\.heads/);
      bad({ warmStart: { style: 'fast' } }, /warmStart\.style/);
      bad({ warmStart: { copySteps: -1 } }, /warmStart\.copySteps/);
      bad({ miniSwe: { renameLocals: 'yes' } }, /miniSwe\.renameLocals/);
      bad({ dapo: { refillRounds: -1 } }, /dapo\.refillRounds/);
      bad({ miniSwe: { issue: 'terse' } }, /miniSwe\.issue/);
      bad({ miniSwe: { catalogue: 'all' } }, /miniSwe\.catalogue/);
      bad({ episode: { prompt: 'short' } }, /episode\.prompt/);
      bad({ warmStart: { demoTasks: -1 } }, /warmStart\.demoTasks/);
      bad({ preset: 'smoke', warmStart: { demoTasks: 6 } }, /warmStart\.demoTasks/); // none left for RL
      bad({ miniSwe: { issue: 'error' }, warmStart: { style: 'thorough' } }, /warmStart\.style/); // needs the script
      bad({ dapo: { klCoef: 'high' } }, /dapo\.klCoef/);
      bad({ dapo: { maskFormatErrors: 1 } }, /dapo\.maskFormatErrors/);
      bad({ dapo: { maskFormatErrors: 'negative' } }, /dapo\.maskFormatErrors.*'positive'/);
      bad({ rft: { tasks: 64 } }, /rft\.tasks/); // none left for DAPO
      bad({ warmStart: { foreignFormat: -0.1 } }, /warmStart\.foreignFormat/);
      bad({ tokenizer: { split: 'words' } }, /tokenizer\.split/);
      bad({ eval: { every: -1 } }, /eval\.every/);
      bad({ eval: { everyK: 0.5 } }, /eval\.everyK/);
      bad('{ not json', /not valid JSON/);
      bad({ preset: 'nope' }, /preset/);
      expect(existsSync(join(dir, 'run'))).toBe(false); // nothing ran
      const missing = train(['--config', join(dir, 'absent.json')]);
      expect(missing.status).toBe(1);
      expect(missing.stderr).toContain('IO_ERROR');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000); // about 30 node processes: 20-30 s alone, 70 s on a busy machine

  it.skipIf(!canSandbox)(
    'smoke: killed after the base evaluation, after RFT and mid-DAPO, --resume finishes without losing or repeating a phase',
    async () => {
      const out = mkdtempSync(join(tmpdir(), 'swerl-train-'));
      chmodSync(out, 0o755); // the sandboxes' folder is inside: as root, their uid must reach it
      // The smoke preset with two DAPO iterations, the KL penalty (its reference is kept on disk)
      // and refill rounds, so that the second kill lands between DAPO iterations.
      const cfg = join(out, 'smoke2.json');
      writeFileSync(
        cfg,
        JSON.stringify({
          preset: 'smoke',
          // Demonstrations from the first 3 of the 8 training tasks, RFT on the next 2 and DAPO on the
          // last 3 (rft.tasks); the compact prompt.
          miniSwe: { trainTasks: 8 },
          // Three warm-start steps (6 demonstrations, 2 a batch), so that progress shows during it.
          warmStart: { demoTasks: 3, demos: 6, epochs: 1, batchSize: 2 },
          // One sample per task (RFT) and two (DAPO): the smallest run of every stage.
          rft: { tasks: 2, samplesPerTask: 1 },
          episode: { prompt: 'compact' },
          // A validation after DAPO's first iteration (not after the last: eval-dapo), on 3
          // validation tasks. k = 1 for the stages (Pass@1 printed once), 2 for the validation.
          eval: { k: 1, every: 1, everyK: 2, validationTasks: 3 },
          dapo: {
            stages: [{ iterations: 2, maxTurns: 6, maxContextTokens: 2048, tasksPerIteration: 3 }],
            samplesPerTask: 2,
            klCoef: 0.01,
            refillRounds: 1,
          },
        }),
      );
      const statePath = join(out, 'run', 'state.json');
      // The runs' sandbox workspaces, in a folder of their own, so that what they leave is seen.
      const sandboxes = join(out, 'sandboxes');
      mkdirSync(sandboxes, { mode: 0o755 });
      const env = { ...process.env, SWERL_SANDBOX_DIR: sandboxes };
      // The first stop is Ctrl-C's SIGINT, which the CLI handles; the second a SIGKILL, which it
      // cannot, and whose workspaces the resumed run removes.
      // When a warm-start progress line short of its total came (on the piped stderr), and when the
      // state first said the warm start was done.
      let warmLineAt = Number.POSITIVE_INFINITY;
      let warmDoneAt = Number.POSITIVE_INFINITY;
      let firstStderr = '';
      const runUntil = async (phase: string, resume: boolean, signal: 'SIGINT' | 'SIGKILL') => {
        const args = [
          join(root, 'train.js'),
          '--config',
          cfg,
          '--out',
          join(out, 'run'),
          ...(resume ? ['--resume'] : []),
        ];
        const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', 'ignore', 'pipe'] });
        let stderr = '';
        child.stderr.on('data', (d: Buffer) => {
          stderr += d;
          const m = /warm start: step (\d+)\/(\d+)/.exec(stderr);
          if (m && Number(m[1]) < Number(m[2])) warmLineAt = Math.min(warmLineAt, Date.now());
        });
        const deadline = Date.now() + 240_000; // generous: CI runs other test files beside it
        for (;;) {
          if (Date.now() > deadline) throw new Error(`the smoke run never reached ${phase}`);
          await new Promise((r) => setTimeout(r, 250));
          try {
            const done = JSON.parse(readFileSync(statePath, 'utf8')).done;
            if (done.includes('warmstart')) warmDoneAt = Math.min(warmDoneAt, Date.now());
            if (done.includes(phase)) break;
          } catch {
            // not written yet
          }
        }
        if (!resume) firstStderr = stderr;
        const exited = new Promise<[number | null, string | null]>((r) =>
          child.on('exit', (code, sig) => r([code, sig])),
        );
        child.kill(signal);
        const [code, sig] = await exited;
        expect(existsSync(join(out, 'run', 'summary.json'))).toBe(false);
        if (signal === 'SIGINT') {
          // It stops at once, says how to go on, and leaves no workspace behind.
          expect([code, sig], stderr).toEqual([130, null]);
          expect(stderr).toContain(`interrupted (SIGINT)`);
          expect(stderr).toContain(`continue with: node train.js --config ${cfg} --out ${join(out, 'run')} --resume`);
          expect(readdirSync(sandboxes)).toEqual([]);
        } else {
          expect(sig).toBe('SIGKILL');
          // Whether or not the kill found workspaces open, one under the killed run's pid.
          mkdirSync(join(sandboxes, `swerl-ws-${child.pid}-killed`, 'src'), { recursive: true });
        }
      };
      try {
        // Resumed from each kind of checkpoint: base (after the first stop), RFT's, a DAPO iteration's.
        await runUntil('eval-base', false, 'SIGINT');
        // Without a terminal, progress is lines (with the rate, and the time left or taken), and
        // they came while the warm start ran, not only at its end.
        expect(warmLineAt).toBeLessThan(warmDoneAt);
        expect(firstStderr).toMatch(
          // (a line short of the total says the time left; a fast smoke run may show only the last)
          /: (step|episode) \d+\/\d+ \(\d+%\), ([\d.]+ (steps|episodes)\/s|\w+ per (step|episode)), (~\w+ left|took \w+)/,
        );
        expect(firstStderr).not.toContain('\r'); // no bar redraws in a log
        await runUntil('eval-rft', true, 'SIGKILL');
        expect(JSON.parse(readFileSync(statePath, 'utf8')).checkpoint).toBe(join('checkpoints', 'rft'));
        await runUntil(dapoPhase(1, 1), true, 'SIGKILL');
        const resumed = train(['--config', cfg, '--out', join(out, 'run'), '--resume'], env);
        expect(resumed.status, resumed.stderr + resumed.stdout).toBe(0);
        // The killed run's workspaces were removed by the resumed run, which removed its own too.
        expect(readdirSync(sandboxes)).toEqual([]);
        expect(resumed.stdout).toContain('resuming after');
        // The console names the iteration as the state, checkpoints and rollout files do; k = 1:
        // Pass@1 once, in the lines and the table.
        expect(resumed.stdout).toMatch(/^dapo-s1-i002: reward /m);
        expect(resumed.stdout).toMatch(/^dapo {2}Pass@1 [\d.]+% {2}\(3 held-out tasks\)$/m);
        expect(resumed.stdout).toContain('| stage | Pass@1 | k | held-out tasks |');
        expect(resumed.stdout).not.toMatch(/Pass@1 [\d.]+%\s+Pass@1/);
        const run = join(out, 'run');
        const summary = JSON.parse(readFileSync(join(run, 'summary.json'), 'utf8'));
        expect(summary.preset).toBe('smoke');
        expect(summary.stages.map((s: { name: string }) => s.name)).toEqual(['base', 'rft', 'dapo']);
        for (const s of summary.stages) {
          expect(s.pass1).toBeGreaterThanOrEqual(0);
          expect(s.pass1).toBeLessThanOrEqual(s.passK);
          expect(s.passK).toBeLessThanOrEqual(1);
          expect(s.tasks).toBe(3);
        }
        expect(summary.wallSeconds).toBeLessThan(300);
        // No phase ran twice: one base evaluation in the metrics, each phase once in the state.
        const events = readFileSync(join(run, 'metrics.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l));
        expect(events.filter((e) => e.event === 'eval' && e.stage === 'base').length).toBe(1);
        // Each evaluation's per-repository breakdown covers its tasks and averages to its Pass@1.
        for (const e of events.filter((x) => x.event === 'eval' || x.event === 'validation')) {
          const parts = Object.values(e.byRepo) as { pass1: number; passK: number; tasks: number }[];
          expect(parts.reduce((a, p) => a + p.tasks, 0)).toBe(e.tasks);
          expect(parts.reduce((a, p) => a + p.pass1 * p.tasks, 0) / e.tasks).toBeCloseTo(e.pass1, 12);
          expect(parts.reduce((a, p) => a + p.passK * p.tasks, 0) / e.tasks).toBeCloseTo(e.passK, 12);
        }
        expect(events.filter((e) => e.stage === 'warmstart').length).toBeGreaterThan(0);
        // Both DAPO iterations, once each, in order; KL measured against the reference.
        const iterations = events.filter((e) => e.event === 'iteration');
        expect(iterations.map((e) => e.iteration)).toEqual([1, 2]);
        for (const e of iterations) {
          expect(e.kl).toBeGreaterThanOrEqual(0);
          expect(e.refillRounds).toBeLessThanOrEqual(1);
          expect(e.groups).toBeGreaterThanOrEqual(3);
        }
        // The second kill lands after the first iteration, mostly during its validation: one
        // validation, after iteration 1, at everyK samples per validation task.
        const validations = events.filter((e) => e.event === 'validation');
        expect(validations.map((e) => [e.stage, e.phase, e.iteration, e.k, e.episodes])).toEqual([
          ['dapo', 'val-dapo-s1-i001', 1, 2, 6],
        ]);
        expect(validations[0].pass1).toBeLessThanOrEqual(validations[0].passK);
        const state = JSON.parse(readFileSync(statePath, 'utf8'));
        expect(new Set(state.done).size).toBe(state.done.length);
        expect(state.done).toEqual([
          'warmstart',
          'eval-base',
          'rft',
          'eval-rft',
          'dapo-s1-i001',
          'val-dapo-s1-i001',
          'dapo-s1-i002',
          'eval-dapo',
        ]);
        const html = readFileSync(join(run, 'report.html'), 'utf8');
        expect(html).toContain('<svg');
        expect(html).toContain('Pass@1');
        expect(html).toContain('Validation Pass@1 through RL (3 validation tasks)');
        expect(html).not.toMatch(/<script|https?:\/\//);
        // checkpoints.keep 'stages' (the default): each finished stage's (base, RFT, the final DAPO
        // iteration) and the KL reference; not the iteration in between. Each is a Hugging Face
        // folder swerl (and transformers) can load.
        const ckpts = readdirSync(join(run, 'checkpoints')).sort();
        expect(ckpts).toEqual(['base', 'dapo-s1-i002', 'reference', 'rft']);
        expect(state.checkpoint).toBe(join('checkpoints', 'dapo-s1-i002'));
        for (const name of ['base', 'rft']) {
          const m = await Model.load(join(run, 'checkpoints', name));
          expect(m.config.vocab_size).toBe((await Tokenizer.load(join(run, 'checkpoints', name))).vocabSize);
        }
        const dir = join(run, 'checkpoints', 'dapo-s1-i002');
        const model = await Model.load(dir);
        const tok = await Tokenizer.load(dir);
        expect(model.config.vocab_size).toBe(tok.vocabSize);
        // DAPO checkpoints carry the optimizer's state, which a resumed DAPO continues.
        const opt = await AdamW.load(model, join(dir, 'optimizer.safetensors'));
        expect(opt.stepCount).toBe(iterations.reduce((a, e) => a + e.steps, 0));
        expect(state.dapoIterations).toBe(2);
        // RFT sampled 2 tasks the demonstrations did not use, and DAPO the 3 others.
        expect(state.dapoStage.pool).toHaveLength(3);
        expect(events.find((e) => e.stage === 'rft' && e.event === 'rollouts')?.episodes).toBe(2);
        const rftIds = new Set((await readRollouts(join(run, 'rollouts', 'rft.msgpack'))).map((r) => r.instance_id));
        expect(rftIds.size).toBe(2);
        expect(state.dapoStage.pool.some((id: string) => rftIds.has(id))).toBe(false);
        expect(state.dapoStage.index).toBe(0);
        // Every phase's rollouts, once each (the killed phases' were rewritten, not appended).
        expect(readdirSync(join(run, 'rollouts')).sort()).toEqual(
          ['dapo-s1-i001', 'dapo-s1-i002', 'eval-base', 'eval-dapo', 'eval-rft', 'rft', 'val-dapo-s1-i001'].map(
            (p) => `${p}.msgpack`,
          ),
        );
        const evalBase = events.find((e) => e.event === 'eval' && e.stage === 'base');
        expect(await readRollouts(join(run, 'rollouts', 'eval-base.msgpack'))).toHaveLength(evalBase.episodes);
        for (const e of iterations) {
          expect(e.phase).toBe(dapoPhase(1, e.iteration));
          const records = await readRollouts(join(run, 'rollouts', `${e.phase}.msgpack`));
          expect(records).toHaveLength(e.episodes);
          expect(records.every((r) => r.tokens.length === r.logprobs.length)).toBe(true);
        }
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    },
    480_000,
  );
});

/**
 * report.html from a run folder's files: the per-repository table of held-out Pass@1 by stage and
 * the chart of validation Pass@1 through RL, drawn from metrics.jsonl events written as the
 * pipeline writes them; the run's facts (preset, start, wall time, code, machine, CPU kernels); charts that
 * name their axes and are tables under 3 points; Pass@1 once when k is 1.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nativeInfo } from '../../src/index.js';
import { runProvenance } from '../../src/pipeline/provenance.js';
import { writeReport } from '../../src/pipeline/report.js';

const ev = (stage: string, event: string, pass1: number, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ stage, event, pass1, passK: pass1, k: 2, tasks: 3, ...extra });

describe('writeReport', () => {
  it('tabulates held-out Pass@1 per repository and stage, and charts the validations', async () => {
    const out = mkdtempSync(join(tmpdir(), 'swerl-report-'));
    try {
      const repos = (a: number, b: number) => ({
        byRepo: { 'mini-swe/mini-cart': { pass1: a, passK: a, tasks: 1 }, 'x/<y>': { pass1: b, passK: b, tasks: 2 } },
      });
      const lines = [
        ev('base', 'eval', 0.1, repos(0, 0.15)),
        ev('rft', 'eval', 0.4, repos(0.5, 0.35)),
        ev('dapo', 'validation', 0.45, { iteration: 1 }),
        ev('dapo', 'eval', 0.5, repos(1, 0.25)),
      ];
      writeFileSync(join(out, 'metrics.jsonl'), `${lines.join('\n')}\n`);
      await writeReport(out);
      const html = readFileSync(join(out, 'report.html'), 'utf8');
      expect(html).toContain('Held-out Pass@1 by repository');
      // One row per repository, one cell per stage in order, names escaped.
      expect(html).toContain(
        '<tr><td>mini-swe/mini-cart</td><td>1</td><td>0.0%</td><td>50.0%</td><td>100.0%</td></tr>',
      );
      expect(html).toContain('<tr><td>x/&lt;y&gt;</td><td>2</td><td>15.0%</td><td>35.0%</td><td>25.0%</td></tr>');
      // The validations alone (the validation split; RFT's and DAPO's evaluations read the test split).
      expect(html.match(/Validation Pass@1 through RL \(3 validation tasks\)[\s\S]*?(\d+) point/)?.[1]).toBe('1');

      // Without validations and with one repository, neither appears.
      writeFileSync(join(out, 'metrics.jsonl'), `${ev('base', 'eval', 0.1)}\n`);
      await writeReport(out);
      const plain = readFileSync(join(out, 'report.html'), 'utf8');
      expect(plain).not.toContain('by repository');
      expect(plain).not.toContain('through RL');
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('heads the page with the run facts; small charts are tables; k = 1 prints Pass@1 once', async () => {
    const out = mkdtempSync(join(tmpdir(), 'swerl-report-'));
    try {
      const provenance = runProvenance(new Date('2026-12-01T10:20:30.456Z'));
      const stage = (name: string) => ({ name, pass1: 1 / 3, passK: 1 / 3, k: 1, tasks: 3, errors: 0 });
      writeFileSync(join(out, 'config.json'), JSON.stringify({ preset: 'smoke' }));
      writeFileSync(
        join(out, 'state.json'),
        JSON.stringify({ done: ['warmstart', 'eval-base'], stages: [stage('base')], elapsedSeconds: 95, provenance }),
      );
      const lines = [
        JSON.stringify({ stage: 'warmstart', event: 'step', step: 1, loss: 6.4 }),
        JSON.stringify({ stage: 'warmstart', event: 'step', step: 2, loss: 5.2 }),
        ev('base', 'eval', 1 / 3, { k: 1 }),
        JSON.stringify({ stage: 'rft', event: 'skipped', reason: 'no samples', samples: 0 }),
        JSON.stringify({
          stage: 'dapo',
          event: 'iteration',
          phase: 'dapo-s1-i001',
          iteration: 1,
          reward: 0.25,
          resolved: 0.5,
          skipped: 0,
        }),
      ];
      writeFileSync(join(out, 'metrics.jsonl'), `${lines.join('\n')}\n`);
      await writeReport(out);
      let html = readFileSync(join(out, 'report.html'), 'utf8');
      const text = html.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');
      // The facts: preset, start, wall time, a run in progress, code and machine.
      expect(text).toContain('preset smoke');
      expect(text).toContain('started 2026-12-01 10:20:30 UTC');
      expect(text).toContain('wall time 1m35s');
      expect(text).toContain('status in progress or stopped: 2 phases done (last: eval-base)');
      expect(text).toMatch(provenance.commit ? /code git [0-9a-f]{12}/ : /code swerl \d/);
      expect(text).toContain(`${provenance.machine.cores} core`);
      expect(text).toContain('GiB memory');
      const kernels = nativeInfo();
      expect(text).toContain(`CPU kernels ${kernels.simd}, ${kernels.threads} thread`);
      // 2 loss points and 1 DAPO iteration: tables with their axes named, no lone dots.
      expect(text).toContain('Warm-start SFT loss loss (nats per trained token) by optimizer step, 2 points');
      expect(text).toMatch(/optimizer step loss 1 6\.40 2 5\.20/);
      expect(text).toContain(
        'DAPO reward and resolved share reward (mean) and resolved (share) by DAPO iteration, 1 point ',
      );
      expect(text).toMatch(/DAPO iteration reward resolved dapo-s1-i001 0\.250 0\.500/);
      expect(text).not.toMatch(/\b1 points\b/);
      expect(text).toContain('Steps skipped with nothing to train on: rft.');
      // k = 1: one Pass@1 column and no Pass@k, in the table and the bars.
      expect(text).toContain('Held-out Pass@1 by stage');
      expect(html).not.toContain('Pass@k');
      expect(html).toContain('<tr><td>base</td><td>33.3%</td><td>1</td><td>3</td><td>0</td></tr>');

      // Finished, with k = 4 and 3+ points: the summary's wall time, Pass@k beside Pass@1, an SVG line.
      writeFileSync(join(out, 'summary.json'), JSON.stringify({ finished: true, wallSeconds: 3700, provenance }));
      writeFileSync(
        join(out, 'state.json'),
        JSON.stringify({ done: ['warmstart'], stages: [{ ...stage('base'), k: 4, passK: 2 / 3 }], provenance }),
      );
      const steps = [6.4, 5.2, 4.1].map((loss, i) =>
        JSON.stringify({ stage: 'warmstart', event: 'step', step: i + 1, loss }),
      );
      writeFileSync(join(out, 'metrics.jsonl'), `${steps.join('\n')}\n`);
      await writeReport(out);
      html = readFileSync(join(out, 'report.html'), 'utf8');
      expect(html).toContain('wall time</th><td>1h01m');
      expect(html).toContain('status</th><td>finished');
      expect(html).toContain('<tr><td>base</td><td>33.3%</td><td>66.7%</td><td>4</td>');
      expect(html).toContain('Held-out Pass@1 (dark) and Pass@4 (light)');
      expect(html).toMatch(/Warm-start SFT loss[\s\S]*?3 points[\s\S]*?optimizer step<\/text>[\s\S]*?<polyline/);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});

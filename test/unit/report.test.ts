/**
 * report.html from a run folder's files: the per-repository table of held-out Pass@1 by stage and
 * the chart of held-out Pass@1 through RL, drawn from metrics.jsonl events written as the
 * pipeline writes them.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
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
      // RFT, the validation and DAPO: three points.
      expect(html.match(/Held-out Pass@1 through RL[\s\S]*?(\d+) points/)?.[1]).toBe('3');

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
});

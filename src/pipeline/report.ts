/**
 * report.html: one self-contained page (inline SVG and CSS, no scripts or network) drawn from the
 * run folder's metrics.jsonl, state.json and summary.json: the run's facts (preset, start, wall
 * time, commit or version, machine), Pass@1 and Pass@k per stage, and per DAPO iteration
 * the reward, resolved share, turns, response length, entropy, clip fractions and throughput,
 * beside the SFT loss curves of the warm start and RFT, and validation Pass@1 through RL when the
 * run validates during DAPO (eval.every, on the validation split), and a table of held-out Pass@1 per task repository and
 * stage when the held-out tasks come from more than one. Every chart names what it shows and its
 * axes; one of fewer than 3 points is a table (a line through 1 or 2 points says little).
 */
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { RunProvenance } from './provenance.js';
import { count, duration } from './wording.js';

type Event = Record<string, unknown> & { stage?: string; event?: string };

type StageRow = { name: string; pass1: number; passK: number; k: number; tasks: number; errors?: number };

/** What the report reads of state.json (a run in progress has no summary yet). */
interface ReportState {
  stages?: StageRow[];
  done?: string[];
  elapsedSeconds?: number;
  provenance?: RunProvenance;
  /** Tasks of the validation split. */
  validationTasks?: number;
}

/** What the report reads of summary.json (a finished run's). */
interface ReportSummary {
  wallSeconds?: number;
  finished?: boolean;
  provenance?: RunProvenance;
}

function esc(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] as string);
}

function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

/** What a chart shows: its title, what x counts, and y with its unit. */
interface ChartSpec {
  title: string;
  x: string;
  y: string;
  /** A name per point (x = 1..n without). */
  labels?: string[];
}

const fmt = (v: number) => (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 1 ? v.toFixed(2) : v.toFixed(3));

/**
 * A line chart of one or more series over x = 1..n, its axes named. Under 3 points a line says
 * little (a dot, or a segment): those are a small table instead, the figures exact.
 */
function lineChart(spec: ChartSpec, series: { name: string; values: number[]; color: string }[]): string {
  const all = series.flatMap((s) => s.values);
  if (all.length === 0) return '';
  const n = Math.max(...series.map((s) => s.values.length));
  const caption = `<figcaption>${esc(spec.title)}<br><small>${esc(spec.y)} by ${esc(spec.x)}, ${count(n, 'point')}</small></figcaption>`;
  if (n < 3) {
    const rows = Array.from(
      { length: n },
      (_, i) =>
        `<tr><td>${esc(spec.labels?.[i] ?? String(i + 1))}</td>${series
          .map((s) => `<td>${s.values[i] === undefined ? '-' : fmt(s.values[i] as number)}</td>`)
          .join('')}</tr>`,
    ).join('');
    return `<figure class="chart">${caption}<table><tr><th>${esc(spec.x)}</th>${series
      .map((s) => `<th>${esc(s.name)}</th>`)
      .join('')}</tr>${rows}</table></figure>`;
  }
  const W = 340;
  const H = 190;
  const pad = { l: 54, r: 10, t: 24, b: 38 };
  let lo = Math.min(...all);
  let hi = Math.max(...all);
  if (hi === lo) {
    hi += 1;
    lo -= lo === 0 ? 0 : 1;
  }
  const x = (i: number) => pad.l + (i * (W - pad.l - pad.r)) / (n - 1);
  const y = (v: number) => pad.t + (1 - (v - lo) / (hi - lo)) * (H - pad.t - pad.b);
  const paths = series
    .map((s) => {
      const pts = s.values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`);
      const dots =
        n <= 40
          ? s.values
              .map((v, i) => `<circle cx="${x(i).toFixed(1)}" cy="${y(v).toFixed(1)}" r="2.5" fill="${s.color}"/>`)
              .join('')
          : '';
      return `<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${pts.join(' ')}"/>${dots}`;
    })
    .join('');
  const legend = series
    .map((s, i) => `<text x="${pad.l + i * 90}" y="14" fill="${s.color}" font-size="11">${esc(s.name)}</text>`)
    .join('');
  const first = spec.labels?.[0] ?? '1';
  const last = spec.labels?.[n - 1] ?? String(n);
  const midY = (pad.t + H - pad.b) / 2;
  return `<figure class="chart">${caption}<svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${esc(spec.title)}">
<line x1="${pad.l}" y1="${H - pad.b}" x2="${W - pad.r}" y2="${H - pad.b}" stroke="#999"/>
<line x1="${pad.l}" y1="${pad.t}" x2="${pad.l}" y2="${H - pad.b}" stroke="#999"/>
<text x="${pad.l - 4}" y="${y(hi) + 4}" font-size="10" text-anchor="end">${fmt(hi)}</text>
<text x="${pad.l - 4}" y="${y(lo) + 4}" font-size="10" text-anchor="end">${fmt(lo)}</text>
<text x="${pad.l}" y="${H - pad.b + 13}" font-size="10" text-anchor="start">${esc(first)}</text>
<text x="${W - pad.r}" y="${H - pad.b + 13}" font-size="10" text-anchor="end">${esc(last)}</text>
<text x="${(pad.l + W - pad.r) / 2}" y="${H - 6}" font-size="11" text-anchor="middle">${esc(spec.x)}</text>
<text x="12" y="${midY}" font-size="11" text-anchor="middle" transform="rotate(-90 12 ${midY})">${esc(spec.y)}</text>
${legend}${paths}</svg></figure>`;
}

/** Grouped bars: Pass@1 and Pass@k per stage (Pass@1 alone when k is 1), in % of held-out tasks. */
function passChart(stages: { name: string; pass1: number; passK: number; k: number }[]): string {
  if (stages.length === 0) return '<p>No stage evaluated yet.</p>';
  const both = stages.some((s) => s.k !== 1);
  const step = both ? 90 : 56;
  const W = step * stages.length + 70;
  const H = 210;
  const base = H - 36;
  const h = (v: number) => v * (base - 20);
  const bar = (x0: number, v: number, fill: string) =>
    `<rect x="${x0}" y="${base - h(v)}" width="30" height="${h(v)}" fill="${fill}"/>
<text x="${x0 + 15}" y="${base - h(v) - 4}" font-size="10" text-anchor="middle">${(v * 100).toFixed(0)}%</text>`;
  const bars = stages
    .map((s, i) => {
      const x0 = 56 + i * step;
      return `${bar(x0, s.pass1, '#3b6fd4')}${both ? bar(x0 + 34, s.passK, '#9bb7ee') : ''}
<text x="${x0 + (both ? 32 : 15)}" y="${H - 20}" font-size="12" text-anchor="middle">${esc(s.name)}</text>`;
    })
    .join('');
  const ks = [...new Set(stages.map((s) => s.k))];
  const caption = both
    ? `Held-out Pass@1 (dark) and Pass@${ks.length === 1 ? ks[0] : 'k'} (light) by stage, % of tasks`
    : 'Held-out Pass@1 by stage, % of tasks';
  return `<figure><figcaption>${caption}</figcaption>
<svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${esc(caption)}"><line x1="46" y1="${base}" x2="${W}" y2="${base}" stroke="#999"/>
<line x1="46" y1="20" x2="46" y2="${base}" stroke="#999"/><text x="42" y="24" font-size="10" text-anchor="end">100%</text><text x="42" y="${base + 4}" font-size="10" text-anchor="end">0%</text>
<text x="${W / 2}" y="${H - 4}" font-size="11" text-anchor="middle">stage</text>${bars}</svg></figure>`;
}

/** The report's header rows: preset, dates, wall time, progress, code and machine. */
function runFacts(config: Record<string, unknown>, state: ReportState, summary: ReportSummary | null): string {
  const p = summary?.provenance ?? state.provenance;
  const wall = summary?.wallSeconds ?? state.elapsedSeconds;
  const rows: [string, string][] = [['preset', String(config.preset ?? '?')]];
  if (p) rows.push(['started', p.startedAt.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')]);
  if (wall !== undefined) rows.push(['wall time', duration(wall)]);
  if (state.validationTasks !== undefined)
    rows.push([
      'validation split',
      state.validationTasks > 0
        ? `${count(state.validationTasks, 'task')} (DAPO's in-run validations; the test split is read only by the stage evaluations)`
        : 'none',
    ]);
  rows.push([
    'status',
    summary?.finished
      ? 'finished'
      : `in progress or stopped: ${count(state.done?.length ?? 0, 'phase')} done${state.done?.length ? ` (last: ${state.done.at(-1)})` : ''}`,
  ]);
  if (p) {
    rows.push([
      'code',
      p.commit
        ? `git ${p.commit.slice(0, 12)}${p.dirty ? ' with uncommitted changes' : ''} (swerl ${p.version})`
        : `swerl ${p.version}`,
    ]);
    const m = p.machine;
    rows.push(['machine', `${m.cpu}, ${count(m.cores, 'core')}, ${m.memoryGiB} GiB memory, ${m.os}`]);
    if (p.kernels) rows.push(['CPU kernels', `${p.kernels.simd}, ${count(p.kernels.threads, 'thread')}`]);
  }
  return `<table class="facts">${rows.map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`).join('')}</table>`;
}

/** Writes report.html from the run folder's files (atomically). */
export async function writeReport(out: string): Promise<void> {
  let events: Event[] = [];
  try {
    events = (await readFile(join(out, 'metrics.jsonl'), 'utf8'))
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as Event);
  } catch {
    // no metrics yet
  }
  let state: ReportState = {};
  let config: Record<string, unknown> = {};
  let summary: ReportSummary | null = null;
  try {
    state = JSON.parse(await readFile(join(out, 'state.json'), 'utf8'));
  } catch {
    // not yet
  }
  try {
    summary = JSON.parse(await readFile(join(out, 'summary.json'), 'utf8'));
  } catch {
    // not finished
  }
  try {
    config = JSON.parse(await readFile(join(out, 'config.json'), 'utf8'));
  } catch {
    // not yet
  }
  const stages = state.stages ?? [];
  const iters = events.filter((e) => e.stage === 'dapo' && e.event === 'iteration');
  const col = (k: string) => iters.map((e) => num(e[k]));
  const loss = (stage: string) => events.filter((e) => e.stage === stage && e.event === 'step').map((e) => num(e.loss));
  // With k = 1 everywhere, Pass@k is Pass@1: one column, not the same figure twice.
  const withK = stages.some((s) => s.k !== 1);
  const table = stages
    .map(
      (s) =>
        `<tr><td>${esc(s.name)}</td><td>${(s.pass1 * 100).toFixed(1)}%</td>${withK ? `<td>${(s.passK * 100).toFixed(1)}%</td>` : ''}<td>${s.k}</td><td>${s.tasks}</td><td>${s.errors ?? 0}</td></tr>`,
    )
    .join('');
  // Validation Pass@1 through RL (eval.every): on the validation split, so not on one line with
  // the stage evaluations, which read the test split.
  const validations = events.filter((e) => e.event === 'validation');
  const validationTasks = state.validationTasks ?? num(validations[0]?.tasks);
  // DAPO charts: x is the iteration, named as its phase (dapo-s1-i001) where the event has one.
  const it = (y: string, title: string): ChartSpec => ({
    title,
    x: 'DAPO iteration',
    y,
    labels: iters.map((e) => String(e.phase ?? e.iteration ?? '')),
  });
  const step = (title: string): ChartSpec => ({ title, x: 'optimizer step', y: 'loss (nats per trained token)' });
  const charts = [
    validations.length > 0
      ? lineChart(
          {
            title: `Validation Pass@1 through RL (${count(validationTasks, 'validation task')})`,
            x: 'validation',
            y: 'Pass@1 (share of tasks)',
            labels: validations.map((e) => String(e.phase ?? e.iteration)),
          },
          [{ name: 'Pass@1', values: validations.map((e) => num(e.pass1)), color: '#3b6fd4' }],
        )
      : '',
    lineChart(step('Warm-start SFT loss'), [{ name: 'loss', values: loss('warmstart'), color: '#555' }]),
    lineChart(step('RFT SFT loss'), [{ name: 'loss', values: loss('rft'), color: '#555' }]),
    lineChart(it('reward (mean) and resolved (share)', 'DAPO reward and resolved share'), [
      { name: 'reward', values: col('reward'), color: '#d4523b' },
      { name: 'resolved', values: col('resolved'), color: '#3b6fd4' },
    ]),
    lineChart(it('turns (mean per episode)', 'Turns per episode'), [
      { name: 'turns', values: col('turns'), color: '#2e8b57' },
    ]),
    lineChart(it('tokens (mean per episode)', 'Response tokens per episode'), [
      { name: 'tokens', values: col('responseTokens'), color: '#8a2be2' },
    ]),
    lineChart(it('entropy (nats per token)', 'Policy entropy on trained tokens'), [
      { name: 'entropy', values: col('entropy'), color: '#b8860b' },
    ]),
    lineChart(it('share of trained tokens clipped', 'Clip fractions (low and high side)'), [
      { name: 'low', values: col('clipFracLow'), color: '#3b6fd4' },
      { name: 'high', values: col('clipFracHigh'), color: '#d4523b' },
    ]),
    lineChart(it('generated tokens per second', 'Rollout throughput'), [
      { name: 'tokens/s', values: col('rolloutTokensPerSecond'), color: '#444' },
    ]),
  ].join('');
  const skipped = events.filter((e) => e.event === 'skipped' || (e.event === 'iteration' && num(e.skipped) > 0));
  const skippedNote =
    skipped.length > 0
      ? `<p class="note">Steps skipped with nothing to train on: ${esc(
          [...new Set(skipped.map((e) => String(e.phase ?? e.stage)))].join(', '),
        )}.</p>`
      : '';
  // Held-out Pass@1 per task repository and stage (the last evaluation of each stage).
  const evals = new Map<string, Record<string, { pass1: number; tasks: number }>>();
  for (const e of events)
    if (e.event === 'eval' && typeof e.stage === 'string' && e.byRepo && typeof e.byRepo === 'object')
      evals.set(e.stage, e.byRepo as Record<string, { pass1: number; tasks: number }>);
  const repos = [...new Set([...evals.values()].flatMap((b) => Object.keys(b)))].sort();
  const byRepo =
    repos.length > 1
      ? `<h2>Held-out Pass@1 by repository</h2><table><tr><th>repository</th><th>tasks</th>${[...evals.keys()]
          .map((st) => `<th>${esc(st)}</th>`)
          .join('')}</tr>${repos
          .map((repo) => {
            const cells = [...evals.values()].map((b) => {
              const v = b[repo];
              return `<td>${v ? `${(num(v.pass1) * 100).toFixed(1)}%` : '-'}</td>`;
            });
            const tasks = [...evals.values()].find((b) => b[repo])?.[repo]?.tasks ?? 0;
            return `<tr><td>${esc(repo)}</td><td>${tasks}</td>${cells.join('')}</tr>`;
          })
          .join('')}</table>`
      : '';
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>swerl run report</title>
<style>body{font:14px system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}h1{font-size:20px}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 10px;text-align:right}td:first-child{text-align:left}
figure{display:inline-block;margin:8px 16px 8px 0;vertical-align:top}figcaption{font-weight:600;margin-bottom:4px}
figcaption small{font-weight:400;color:#555}table.facts th{text-align:left;background:#f6f6f6}.note{color:#555}
pre{background:#f6f6f6;padding:8px;overflow:auto;max-height:300px}</style></head><body>
<h1>swerl run: preset ${esc(String(config.preset ?? '?'))}</h1>
${runFacts(config, state, summary)}
<h2>Held-out ${withK ? 'Pass@1 and Pass@k' : 'Pass@1'} by stage</h2>
<table><tr><th>stage</th><th>Pass@1</th>${withK ? '<th>Pass@k</th>' : ''}<th>k</th><th>tasks</th><th title="samples the grader could not judge (a sandbox or Docker failure), counted as unsolved">grading errors</th></tr>${table}</table>
${passChart(stages)}
${byRepo}
<h2>Training</h2>${skippedNote}${charts || '<p>No training metrics yet.</p>'}
<h2>Config</h2><pre>${esc(JSON.stringify(config, null, 2))}</pre>
</body></html>`;
  const tmp = join(out, `report.html.tmp-${process.pid}`);
  await writeFile(tmp, html);
  await rename(tmp, join(out, 'report.html'));
}

/**
 * report.html: one self-contained page (inline SVG and CSS, no scripts or network) drawn from the
 * run folder's metrics.jsonl and state.json: Pass@1 and Pass@k per stage, and per DAPO iteration
 * the reward, resolved share, turns, response length, entropy, clip fractions and throughput,
 * beside the SFT loss curves of the warm start and RFT, and held-out Pass@1 through RL when the
 * run validates during DAPO (eval.every), and a table of held-out Pass@1 per task repository and
 * stage when the held-out tasks come from more than one.
 */
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

type Event = Record<string, unknown> & { stage?: string; event?: string };

function esc(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] as string);
}

function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

/** A small line chart of one or more series over x = 1..n. */
function lineChart(title: string, series: { name: string; values: number[]; color: string }[]): string {
  const W = 320;
  const H = 170;
  const pad = { l: 44, r: 10, t: 24, b: 26 };
  const all = series.flatMap((s) => s.values);
  if (all.length === 0) return '';
  const n = Math.max(...series.map((s) => s.values.length));
  let lo = Math.min(...all);
  let hi = Math.max(...all);
  if (hi === lo) {
    hi += 1;
    lo -= lo === 0 ? 0 : 1;
  }
  const x = (i: number) => pad.l + (n <= 1 ? (W - pad.l - pad.r) / 2 : (i * (W - pad.l - pad.r)) / (n - 1));
  const y = (v: number) => pad.t + (1 - (v - lo) / (hi - lo)) * (H - pad.t - pad.b);
  const fmt = (v: number) => (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 1 ? v.toFixed(2) : v.toFixed(3));
  const paths = series
    .map((s) => {
      const pts = s.values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`);
      const dots = s.values
        .map((v, i) => `<circle cx="${x(i).toFixed(1)}" cy="${y(v).toFixed(1)}" r="2.5" fill="${s.color}"/>`)
        .join('');
      return `<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${pts.join(' ')}"/>${dots}`;
    })
    .join('');
  const legend = series
    .map((s, i) => `<text x="${pad.l + i * 90}" y="14" fill="${s.color}" font-size="11">${esc(s.name)}</text>`)
    .join('');
  return `<figure><figcaption>${esc(title)}</figcaption><svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}">
<line x1="${pad.l}" y1="${H - pad.b}" x2="${W - pad.r}" y2="${H - pad.b}" stroke="#999"/>
<line x1="${pad.l}" y1="${pad.t}" x2="${pad.l}" y2="${H - pad.b}" stroke="#999"/>
<text x="${pad.l - 4}" y="${y(hi) + 4}" font-size="10" text-anchor="end">${fmt(hi)}</text>
<text x="${pad.l - 4}" y="${y(lo) + 4}" font-size="10" text-anchor="end">${fmt(lo)}</text>
<text x="${W - pad.r}" y="${H - 8}" font-size="10" text-anchor="end">${n} points</text>
${legend}${paths}</svg></figure>`;
}

/** Grouped bars: Pass@1 and Pass@k per stage. */
function passChart(stages: { name: string; pass1: number; passK: number; k: number }[]): string {
  if (stages.length === 0) return '<p>No stage evaluated yet.</p>';
  const W = 90 * stages.length + 60;
  const H = 200;
  const base = H - 30;
  const h = (v: number) => v * (base - 20);
  const bars = stages
    .map((s, i) => {
      const x0 = 50 + i * 90;
      return `<rect x="${x0}" y="${base - h(s.pass1)}" width="30" height="${h(s.pass1)}" fill="#3b6fd4"/>
<rect x="${x0 + 34}" y="${base - h(s.passK)}" width="30" height="${h(s.passK)}" fill="#9bb7ee"/>
<text x="${x0 + 15}" y="${base - h(s.pass1) - 4}" font-size="10" text-anchor="middle">${(s.pass1 * 100).toFixed(0)}</text>
<text x="${x0 + 49}" y="${base - h(s.passK) - 4}" font-size="10" text-anchor="middle">${(s.passK * 100).toFixed(0)}</text>
<text x="${x0 + 32}" y="${H - 12}" font-size="12" text-anchor="middle">${esc(s.name)}</text>`;
    })
    .join('');
  return `<figure><figcaption>Pass@1 (dark) and Pass@${stages[0]?.k ?? 'k'} (light), % of held-out tasks</figcaption>
<svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}"><line x1="40" y1="${base}" x2="${W}" y2="${base}" stroke="#999"/>${bars}</svg></figure>`;
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
  let state: {
    stages?: { name: string; pass1: number; passK: number; k: number; tasks: number; errors?: number }[];
  } = {};
  let config: Record<string, unknown> = {};
  try {
    state = JSON.parse(await readFile(join(out, 'state.json'), 'utf8'));
  } catch {
    // not yet
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
  const table = stages
    .map(
      (s) =>
        `<tr><td>${esc(s.name)}</td><td>${(s.pass1 * 100).toFixed(1)}%</td><td>${(s.passK * 100).toFixed(1)}%</td><td>${s.k}</td><td>${s.tasks}</td><td>${s.errors ?? 0}</td></tr>`,
    )
    .join('');
  // Held-out Pass@1 through RL: after RFT, at each validation (eval.every), after DAPO.
  const heldOut = events.filter(
    (e) => e.event === 'validation' || (e.event === 'eval' && (e.stage === 'rft' || e.stage === 'dapo')),
  );
  const charts = [
    heldOut.some((e) => e.event === 'validation')
      ? lineChart('Held-out Pass@1 through RL (RFT, validations, DAPO)', [
          { name: 'Pass@1', values: heldOut.map((e) => num(e.pass1)), color: '#3b6fd4' },
        ])
      : '',
    lineChart('Warm-start SFT loss', [{ name: 'loss', values: loss('warmstart'), color: '#555' }]),
    lineChart('RFT SFT loss', [{ name: 'loss', values: loss('rft'), color: '#555' }]),
    lineChart('DAPO reward and resolved share', [
      { name: 'reward', values: col('reward'), color: '#d4523b' },
      { name: 'resolved', values: col('resolved'), color: '#3b6fd4' },
    ]),
    lineChart('Turns per episode', [{ name: 'turns', values: col('turns'), color: '#2e8b57' }]),
    lineChart('Response tokens per episode', [{ name: 'tokens', values: col('responseTokens'), color: '#8a2be2' }]),
    lineChart('Entropy', [{ name: 'entropy', values: col('entropy'), color: '#b8860b' }]),
    lineChart('Clip fractions', [
      { name: 'low', values: col('clipFracLow'), color: '#3b6fd4' },
      { name: 'high', values: col('clipFracHigh'), color: '#d4523b' },
    ]),
    lineChart('Rollout throughput (generated tokens/s)', [
      { name: 'tokens/s', values: col('rolloutTokensPerSecond'), color: '#444' },
    ]),
  ].join('');
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
pre{background:#f6f6f6;padding:8px;overflow:auto;max-height:300px}</style></head><body>
<h1>swerl run: preset ${esc(String(config.preset ?? '?'))}</h1>
<h2>Held-out Pass@1 and Pass@k by stage</h2>
<table><tr><th>stage</th><th>Pass@1</th><th>Pass@k</th><th>k</th><th>tasks</th><th title="samples the grader could not judge (a sandbox or Docker failure), left out of Pass@k">grading errors</th></tr>${table}</table>
${passChart(stages)}
${byRepo}
<h2>Training</h2>${charts}
<h2>Config</h2><pre>${esc(JSON.stringify(config, null, 2))}</pre>
</body></html>`;
  const tmp = join(out, `report.html.tmp-${process.pid}`);
  await writeFile(tmp, html);
  await rename(tmp, join(out, 'report.html'));
}

#!/usr/bin/env node
// Compares two run folders of `node train.js` for reproducibility: metrics.jsonl event by event
// (timing fields left out) and every rollouts/<phase>.msgpack record by record (tokens, logprobs
// bit for bit, reward). For the first differing record of a phase it prints where the tokens part
// and whether the model generated the token there (a sampling difference) or not (an observation).
// Usage: node scripts/compare-runs.mjs RUN_A RUN_B   (exit code 1 when anything differs)
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readRollouts, recordDivergence } from '../dist/index.js';

const [a, b] = process.argv.slice(2);
if (!a || !b) {
  console.error('usage: node scripts/compare-runs.mjs RUN_A RUN_B');
  process.exit(2);
}

const isTiming = (k) => k === 't' || k === 'seconds' || /Seconds$|PerSecond$|Ms$/.test(k);
// Counters a later version added (absent from older runs' events) are compared only when both have them.
const ADDED = new Set(['errors', 'droppedErrors']);
const events = (dir) =>
  readFileSync(join(dir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) =>
      JSON.stringify(
        Object.fromEntries(
          Object.entries(JSON.parse(l)).filter(([k, v]) => !isTiming(k) && !(ADDED.has(k) && v === 0)),
        ),
      ),
    );

let differs = false;
const ea = events(a);
const eb = events(b);
const first = ea.findIndex((e, i) => e !== eb[i]);
if (first < 0 && ea.length === eb.length) console.log(`metrics: ${ea.length} events, identical (timings aside)`);
else {
  differs = true;
  const at = first < 0 ? Math.min(ea.length, eb.length) : first;
  console.log(`metrics: ${ea.length} vs ${eb.length} events; first difference at event ${at}`);
  console.log(`  a: ${ea[at] ?? '(none)'}\n  b: ${eb[at] ?? '(none)'}`);
}

const phases = new Set([...readdirSync(join(a, 'rollouts')), ...readdirSync(join(b, 'rollouts'))]);
for (const f of [...phases].filter((p) => p.endsWith('.msgpack')).sort()) {
  const load = (dir) => readRollouts(join(dir, 'rollouts', f)).catch(() => null);
  const [ra, rb] = [await load(a), await load(b)];
  if (!ra || !rb) {
    differs = true;
    console.log(`${f}: missing in ${ra ? 'b' : 'a'}`);
    continue;
  }
  const parts = ra.map((x, i) => (rb[i] ? recordDivergence(x, rb[i]) : { kind: 'missing', at: 0 }));
  const matched = parts.filter((d) => d.kind === 'identical').length;
  console.log(
    `${f}: ${matched}/${ra.length} records identical${ra.length === rb.length ? '' : ` (b has ${rb.length})`}`,
  );
  const bad = parts.findIndex((d) => d.kind !== 'identical');
  if (bad < 0 && ra.length === rb.length) continue;
  differs = true;
  if (bad < 0) continue;
  const x = ra[bad];
  const { kind, at } = parts[bad];
  const where = {
    observation: 'an observation token (the environment answered differently)',
    generated: 'a generated token (the engine sampled differently)',
    logprobs: "a generated token's logprob",
    reward: 'the reward (the tokens are the same)',
    missing: 'a record missing in b',
  }[kind];
  console.log(
    `  first: record ${bad} (${x.instance_id} #${x.sample}), parts at token ${at} of ${x.tokens.length}: ${where}`,
  );
}
process.exit(differs ? 1 : 0);

#!/usr/bin/env node
// Branches a run folder of `node train.js` under another config, for studies of the later stages
// on one base: copies RUN to OUT and rewrites OUT's config hash, checkpoint path and config.json,
// so that `node train.js --config CONFIG --out OUT --resume` continues from RUN's last finished
// phase with CONFIG's settings for the rest. Phases already done are not rerun, so only settings
// of the phases still to come take effect (docs/results.md, "Why the preset changed", used it to
// run RFT and DAPO settings on one base).
//
// With `--after PHASE` (warmstart, eval-base, rft or eval-rft) the branch goes back to just after
// PHASE of a run that went further: the later phases leave state.json, their metric lines leave
// metrics.jsonl, their rollouts and checkpoints go, and the policy is PHASE's checkpoint (so DAPO
// settings can be compared on one finished run's RFT policy).
// Usage: npm run build:ts && node scripts/branch-run.mjs [--after PHASE] RUN CONFIG OUT
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../dist/pipeline/config.js';
import { checkpointName } from '../dist/pipeline/phases.js';
import { hashConfig } from '../dist/pipeline/run.js';

const { values, positionals } = parseArgs({ options: { after: { type: 'string' } }, allowPositionals: true });
const [run, config, out] = positionals;
const PHASES = ['warmstart', 'eval-base', 'rft', 'eval-rft'];
if (!run || !config || !out || (values.after !== undefined && !PHASES.includes(values.after))) {
  console.error(`usage: node scripts/branch-run.mjs [--after ${PHASES.join('|')}] RUN CONFIG OUT`);
  process.exit(2);
}
if (existsSync(out)) {
  console.error(`${out} exists; branch into a new folder`);
  process.exit(2);
}
const c = await loadConfig(config);
const statePath = join(run, 'state.json');
const state = JSON.parse(readFileSync(statePath, 'utf8'));
if (values.after && !state.done.includes(values.after)) {
  console.error(`${run} has not finished ${values.after} (done: ${state.done.join(', ') || 'nothing'})`);
  process.exit(2);
}
cpSync(run, out, { recursive: true });
// The branch is a run of its own: RUN's lock (held while RUN is still being written) stays with RUN.
rmSync(join(out, 'run.lock'), { force: true });
if (values.after) goBackTo(values.after);
state.configHash = hashConfig(c);
// A relative checkpoint path is relative to the run folder, so it holds in OUT as it is.
if (state.checkpoint && isAbsolute(state.checkpoint))
  state.checkpoint = join(resolve(out), relative(resolve(run), state.checkpoint));
writeFileSync(join(out, 'state.json'), `${JSON.stringify(state, null, 2)}\n`);
writeFileSync(join(out, 'config.json'), `${JSON.stringify(c, null, 2)}\n`);
console.log(`${out}: branched after ${state.done.at(-1) ?? 'nothing'}; resume with`);
console.log(`  node train.js --config ${config} --out ${out} --resume`);

/** The phase a metrics.jsonl line was logged in (the phases before DAPO; 'later' for the rest). */
function phaseOf(line) {
  const { stage, event } = JSON.parse(line);
  if (stage === 'copy' || stage === 'warmstart') return 'warmstart';
  if (stage === 'base' && event === 'eval') return 'eval-base';
  if (stage === 'rft') return event === 'eval' ? 'eval-rft' : 'rft';
  return 'later';
}

/** Rewinds OUT's state, metrics, rollouts and checkpoints to just after `phase`. */
function goBackTo(phase) {
  const kept = state.done.slice(0, state.done.indexOf(phase) + 1);
  const dropped = state.done.slice(kept.length);
  // The policy after PHASE: the last trained phase's checkpoint, or none (a run from a model
  // folder branched after eval-base starts from that folder again).
  const lastTrained = kept.filter((p) => !p.startsWith('eval-')).at(-1);
  const policy = lastTrained && join(out, 'checkpoints', checkpointName(lastTrained));
  if (policy && !existsSync(join(policy, 'config.json'))) {
    rmSync(out, { recursive: true, force: true });
    console.error(`${run} no longer holds ${lastTrained}'s checkpoint (checkpoints/${checkpointName(lastTrained)})`);
    process.exit(2);
  }
  for (const p of dropped) rmSync(join(out, 'checkpoints', checkpointName(p)), { recursive: true, force: true });
  rmSync(join(out, 'checkpoints', 'reference'), { recursive: true, force: true });
  const keptNames = new Set(kept.filter((p) => p.startsWith('eval-')).map((p) => p.slice('eval-'.length)));
  state.done = kept;
  state.stages = state.stages.filter((s) => keptNames.has(s.name));
  if (lastTrained) state.checkpoint = join('checkpoints', checkpointName(lastTrained));
  else delete state.checkpoint;
  delete state.dapoStage;
  state.dapoIterations = 0;
  const metricsPath = join(out, 'metrics.jsonl');
  const lines = existsSync(metricsPath) ? readFileSync(metricsPath, 'utf8').split('\n').filter(Boolean) : [];
  const text = lines
    .filter((l) => kept.includes(phaseOf(l)))
    .map((l) => `${l}\n`)
    .join('');
  writeFileSync(metricsPath, text);
  state.metricsBytes = Buffer.byteLength(text);
  for (const f of ['summary.json', 'report.html']) rmSync(join(out, f), { force: true });
  // Every rollouts file of a later phase goes, the in-run validations' (val-…) too.
  // RFT's later rounds (rft.minKept) write rft-r2, rft-r3, ...: they belong to the rft phase.
  for (const f of existsSync(join(out, 'rollouts')) ? readdirSync(join(out, 'rollouts')) : [])
    if (!kept.includes(f.replace(/\.msgpack$/, '').replace(/^rft-r\d+$/, 'rft')))
      rmSync(join(out, 'rollouts', f), { force: true });
}

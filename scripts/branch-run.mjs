#!/usr/bin/env node
// Branches a run folder of `node train.js` under another config, for studies of the later stages
// on one base: copies RUN to OUT and rewrites OUT's config hash, checkpoint path and config.json,
// so that `node train.js --config CONFIG --out OUT --resume` continues from RUN's last finished
// phase with CONFIG's settings for the rest. Phases already done are not rerun, so only settings
// of the phases still to come take effect (README, "Why the preset changed", used it to run RFT
// and DAPO settings on one base).
// Usage: npm run build:ts && node scripts/branch-run.mjs RUN CONFIG OUT
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { loadConfig } from '../dist/pipeline/config.js';
import { hashConfig } from '../dist/pipeline/run.js';

const [run, config, out] = process.argv.slice(2);
if (!run || !config || !out) {
  console.error('usage: node scripts/branch-run.mjs RUN CONFIG OUT');
  process.exit(2);
}
if (existsSync(out)) {
  console.error(`${out} exists; branch into a new folder`);
  process.exit(2);
}
const c = await loadConfig(config);
cpSync(run, out, { recursive: true });
const statePath = join(out, 'state.json');
const state = JSON.parse(readFileSync(statePath, 'utf8'));
state.configHash = hashConfig(c);
if (state.checkpoint) state.checkpoint = join(resolve(out), relative(resolve(run), resolve(state.checkpoint)));
writeFileSync(statePath, `${JSON.stringify(state, null, 2)}\n`);
writeFileSync(join(out, 'config.json'), `${JSON.stringify(c, null, 2)}\n`);
console.log(`${out}: branched after ${state.done.at(-1) ?? 'nothing'}; resume with`);
console.log(`  node train.js --config ${config} --out ${out} --resume`);

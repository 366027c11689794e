#!/usr/bin/env node
// Checks that every C++/CUDA file under native/ is formatted per .clang-format.
// `--fix` rewrites them. Without clang-format on PATH it says so and fails, unless
// SWERL_SKIP_CLANG_FORMAT=1 (for machines where it cannot be installed).
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const fix = process.argv.includes('--fix');

function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return walk(p);
    return /\.(cc|h|cu|cuh)$/.test(e.name) ? [p] : [];
  });
}

const files = walk(join(root, 'native')).map((f) => relative(root, f));
if (spawnSync('clang-format', ['--version'], { stdio: 'ignore' }).status !== 0) {
  if (process.env.SWERL_SKIP_CLANG_FORMAT === '1') {
    console.log('clang-format not found; skipped (SWERL_SKIP_CLANG_FORMAT=1)');
    process.exit(0);
  }
  console.error(
    'clang-format not found. Install it (apt-get install -y clang-format) or set SWERL_SKIP_CLANG_FORMAT=1.',
  );
  process.exit(1);
}
const args = fix ? ['-i', ...files] : ['--dry-run', '--Werror', ...files];
const r = spawnSync('clang-format', args, { cwd: root, stdio: 'inherit' });
if (r.status !== 0) {
  console.error('\nnative/ is not clang-formatted: run `node scripts/check-clang-format.mjs --fix`.');
  process.exit(1);
}
console.log(`clang-format: ${files.length} native files ok`);

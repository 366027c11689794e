#!/usr/bin/env node
// The main job: `node train.js [--preset default|smoke] [--config FILE] [--out DIR]`.
// The implementation lives in src/cli/train.ts (compiled to dist/ by `npm install`).
const entry = './dist/cli/train.js';
let cli;
try {
  cli = await import(entry);
} catch (err) {
  if (err?.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist')) {
    console.error('swerl is not built yet: run `npm install` (or `npm run build`) in this folder first.');
    process.exit(1);
  }
  throw err;
}
process.exitCode = await cli.main(process.argv.slice(2));

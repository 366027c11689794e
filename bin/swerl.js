#!/usr/bin/env node
// `swerl <command>`: train (the pipeline), info (what the native addon was built with).
const [command, ...rest] = process.argv.slice(2);
if (command === 'train') {
  const { main } = await import('../dist/cli/train.js');
  process.exitCode = main(rest);
} else if (command === 'info') {
  const { nativeInfo } = await import('../dist/index.js');
  console.log(JSON.stringify(nativeInfo(), null, 2));
} else {
  console.log('usage: swerl train [options] | swerl info\n(swerl serve arrives with the rollout engine)');
  process.exitCode = command === undefined || command === '--help' || command === '-h' ? 0 : 1;
}

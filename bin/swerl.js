#!/usr/bin/env node
// `swerl <command>`: train (the pipeline), serve (an OpenAI-compatible server), info (what the
// native addon was built with).
const [command, ...rest] = process.argv.slice(2);
if (command === 'train') {
  const { main } = await import('../dist/cli/train.js');
  process.exitCode = await main(rest, 'swerl train');
} else if (command === 'serve') {
  const { main } = await import('../dist/cli/serve.js');
  process.exitCode = await main(rest);
} else if (command === 'info') {
  const { nativeInfo } = await import('../dist/index.js');
  console.log(JSON.stringify(nativeInfo(), null, 2));
} else {
  console.log('usage: swerl train [options] | swerl serve --model DIR [--port N] | swerl info');
  process.exitCode = command === undefined || command === '--help' || command === '-h' ? 0 : 1;
}

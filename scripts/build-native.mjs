#!/usr/bin/env node
// Builds the native addon; run by `npm install` and `npm run build:native`.
//
// With CMake on PATH: cmake-js into build/cmake (CPU always, CUDA when nvcc is found; pass
// --CDSWERL_CUDA=OFF or set SWERL_CUDA=OFF to skip it). Without CMake: node-gyp into build/
// (CPU only). Extra arguments go to cmake-js. SWERL_SKIP_NATIVE_BUILD=1 skips the build.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const args = process.argv.slice(2);

function has(cmd) {
  return spawnSync(cmd, ['--version'], { stdio: 'ignore' }).status === 0;
}

function run(cmd, cmdArgs) {
  console.log(`swerl: ${[cmd, ...cmdArgs].join(' ')}`);
  const r = spawnSync(cmd, cmdArgs, { cwd: root, stdio: 'inherit', env: process.env });
  if (r.status !== 0) {
    console.error(
      `\nswerl: the native build failed (${cmd} exited with ${r.status ?? r.signal}).\n` +
        'It needs a C++17 compiler and either CMake >= 3.21 or node-gyp (Python 3 + make).\n' +
        'On Debian/Ubuntu: apt-get install -y build-essential cmake python3. Then run: npm run build:native\n' +
        'To build without CUDA: SWERL_CUDA=OFF npm run build:native',
    );
    process.exit(r.status ?? 1);
  }
}

if (process.env.SWERL_SKIP_NATIVE_BUILD === '1') {
  console.log('swerl: SWERL_SKIP_NATIVE_BUILD=1, not building the native addon');
} else if (has('cmake')) {
  const cmakeJs = join(dirname(require.resolve('cmake-js/package.json')), 'bin', 'cmake-js');
  const extra = [...args];
  if (process.env.SWERL_CUDA && !extra.some((a) => a.startsWith('--CDSWERL_CUDA'))) {
    extra.push(`--CDSWERL_CUDA=${process.env.SWERL_CUDA}`);
  }
  run(process.execPath, [
    cmakeJs,
    'compile',
    '--out',
    'build/cmake',
    '--parallel',
    String(availableParallelism()),
    ...extra,
  ]);
} else {
  const gyp = process.env.npm_config_node_gyp;
  console.log('swerl: cmake not found; building the CPU-only addon with node-gyp');
  if (gyp) run(process.execPath, [gyp, 'rebuild']);
  else run('node-gyp', ['rebuild']);
}

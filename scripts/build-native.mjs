#!/usr/bin/env node
// Builds the native addon; run by `npm install` and `npm run build:native`.
//
// With CMake on PATH: cmake-js into build/cmake (CPU always, CUDA when nvcc is found; pass
// --CDSWERL_CUDA=OFF or set SWERL_CUDA=OFF to skip it). Without CMake: node-gyp into build/
// (CPU only). Extra arguments go to cmake-js. SWERL_SKIP_NATIVE_BUILD=1 skips the build.
//
// Quiet by default: the CMake/compiler output goes to build/native-build.log, and what is printed
// is a few lines (what is built, whether CUDA is in, the warning count, the time). When the build
// fails, the whole log is printed, then what to do next. SWERL_VERBOSE_BUILD=1 streams the output
// as it comes, as before.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const args = process.argv.slice(2);
const verbose = process.env.SWERL_VERBOSE_BUILD === '1';
const logPath = join('build', 'native-build.log');

function has(cmd) {
  return spawnSync(cmd, ['--version'], { stdio: 'ignore' }).status === 0;
}

/** What to do when the build fails (printed after the log). */
const NEXT_STEP =
  'It needs a C++17 compiler and either CMake >= 3.21 or node-gyp (Python 3 + make).\n' +
  'On Debian/Ubuntu: apt-get install -y build-essential cmake python3. Then run: npm run build:native\n' +
  'To build without CUDA: SWERL_CUDA=OFF npm run build:native\n' +
  'To see the build as it runs: SWERL_VERBOSE_BUILD=1 npm run build:native';

/**
 * Runs the build command with its output captured into the log (and streamed too when verbose);
 * resolves with the log's text. On failure prints the log and the next step, and exits.
 */
async function run(cmd, cmdArgs) {
  // Kept in memory and written at the end: node-gyp's rebuild deletes build/ as it starts.
  const chunks = [Buffer.from(`$ ${[cmd, ...cmdArgs].join(' ')}\n`)];
  const child = spawn(cmd, cmdArgs, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
  for (const s of [child.stdout, child.stderr]) {
    s.on('data', (d) => {
      chunks.push(d);
      if (verbose) process.stdout.write(d);
    });
  }
  const [code, signal] = await new Promise((resolve) => {
    child.on('error', (e) => {
      chunks.push(Buffer.from(`\n${e.message}\n`));
      resolve([null, e.message]);
    });
    child.on('close', (c, s) => resolve([c, s]));
  });
  const text = Buffer.concat(chunks).toString('utf8');
  mkdirSync(join(root, 'build'), { recursive: true });
  writeFileSync(join(root, logPath), text);
  if (code !== 0) {
    if (!verbose) process.stderr.write(`${text}\n`);
    console.error(
      `\nswerl: the native build failed (${cmd} exited with ${code ?? signal}); its output is above and in ${logPath}.\n${NEXT_STEP}`,
    );
    process.exit(code || 1);
  }
  return text;
}

/** 'ON' when the CMake cache of build/cmake took the CUDA compiler with SWERL_CUDA on, else 'OFF'. */
function cachedCuda() {
  try {
    const cache = readFileSync(join(root, 'build', 'cmake', 'CMakeCache.txt'), 'utf8');
    const on = /^SWERL_CUDA:BOOL=ON$/m.test(cache) && /^CMAKE_CUDA_COMPILER:[A-Z]+=.+$/m.test(cache);
    return on ? 'ON' : 'OFF';
  } catch {
    return 'OFF';
  }
}

/** The one-line summary of a finished build: the warning count, when any, and where the log is. */
function summary(what, text, t0) {
  const warnings = (text.match(/\bwarning:/g) ?? []).length;
  const seconds = Math.round((Date.now() - t0) / 1000);
  const w = warnings > 0 ? `, ${warnings} compiler warning(s)` : '';
  console.log(`swerl: built the native addon (${what}) in ${seconds} s${w}; log: ${logPath}`);
}

const t0 = Date.now();
if (process.env.SWERL_SKIP_NATIVE_BUILD === '1') {
  console.log('swerl: SWERL_SKIP_NATIVE_BUILD=1, not building the native addon');
} else if (has('cmake')) {
  const cmakeJs = join(dirname(require.resolve('cmake-js/package.json')), 'bin', 'cmake-js');
  const extra = [...args];
  if (process.env.SWERL_CUDA && !extra.some((a) => a.startsWith('--CDSWERL_CUDA'))) {
    extra.push(`--CDSWERL_CUDA=${process.env.SWERL_CUDA}`);
  }
  console.log(`swerl: building the native addon with CMake (a minute or two; output in ${logPath})`);
  const text = await run(process.execPath, [
    cmakeJs,
    'compile',
    '--out',
    'build/cmake',
    '--parallel',
    String(availableParallelism()),
    ...extra,
  ]);
  // CMakeLists.txt prints "swerl <version>: CUDA kernels ON|OFF" and, when it looked for nvcc
  // and found none, a note saying so; each becomes one line here.
  // Without a reconfigure CMake prints nothing: the cache then says whether nvcc was taken.
  const cuda = /swerl [^:\n]*: CUDA kernels (ON|OFF)/.exec(text)?.[1] ?? cachedCuda();
  if (cuda === 'OFF') {
    const why = /swerl: no CUDA compiler found/.test(text)
      ? 'no CUDA compiler (nvcc) found; install the CUDA toolkit for the GPU kernels'
      : 'SWERL_CUDA=OFF';
    console.log(`swerl: CPU kernels only (${why})`);
  }
  const sim = existsSync(join(root, 'build', 'cmake', 'Release', 'swerl_cudasim.node'))
    ? ', and the CUDA simulation addon swerl_cudasim.node for tests'
    : '';
  summary(`${cuda === 'ON' ? 'CPU + CUDA kernels' : 'CPU kernels'}${sim}`, text, t0);
} else {
  const gyp = process.env.npm_config_node_gyp;
  console.log(`swerl: cmake not found; building the CPU-only addon with node-gyp (output in ${logPath})`);
  const text = gyp ? await run(process.execPath, [gyp, 'rebuild']) : await run('node-gyp', ['rebuild']);
  summary('CPU kernels, node-gyp', text, t0);
}

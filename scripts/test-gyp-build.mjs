#!/usr/bin/env node
// Builds the CPU addon with node-gyp (binding.gyp) into a scratch copy and checks that it
// loads and works like the cmake-js build: `npm run test:gyp`. Slow (a full compile), so it is
// not part of `npm test`; .ci/run runs it.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const work = mkdtempSync(join(tmpdir(), 'swerl-gyp-'));
try {
  for (const f of ['binding.gyp', 'package.json', 'native']) cpSync(join(root, f), join(work, f), { recursive: true });
  symlinkSync(join(root, 'node_modules'), join(work, 'node_modules'));
  const gyp = process.env.npm_config_node_gyp;
  const [cmd, args] = gyp ? [process.execPath, [gyp, 'rebuild']] : ['node-gyp', ['rebuild']];
  console.log(`test:gyp: ${cmd} ${args.join(' ')} in a scratch copy`);
  const r = spawnSync(cmd, args, { cwd: work, stdio: 'inherit', env: { ...process.env, JOBS: 'max' } });
  if (r.status !== 0) throw new Error(`node-gyp failed with ${r.status}`);
  const addon = join(work, 'build', 'Release', 'swerl.node');
  const check = `
    import { PagedKvCache, nativeInfo } from ${JSON.stringify(join(root, 'dist', 'index.js'))};
    const info = nativeInfo();
    if (info.cuda !== false || info.cudaDevices !== 0) throw new Error('gyp build must be CPU-only: ' + JSON.stringify(info));
    const kv = new PagedKvCache({ numBlocks: 8, blockSize: 4, numLayers: 1, numKvHeads: 1, headDim: 2 });
    const a = kv.createSequence(); kv.append(a, [1, 2, 3, 4, 5]); kv.commit(a); kv.free(a);
    const b = kv.createSequence(); const r = kv.append(b, [1, 2, 3, 4, 5]);
    if (r.cachedTokens !== 4) throw new Error('prefix cache hit expected, got ' + JSON.stringify(r));
    console.log('test:gyp: node-gyp addon loads and works', JSON.stringify(info));`;
  execFileSync(process.execPath, ['--input-type=module', '-e', check], {
    stdio: 'inherit',
    env: { ...process.env, SWERL_NATIVE_PATH: addon },
  });
  console.log('test:gyp: ok');
} finally {
  rmSync(work, { recursive: true, force: true });
}

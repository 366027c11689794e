// Native memory is returned when caches are garbage-collected, and the addon works in worker
// threads (per-environment state), as piscina workers will use it.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const dist = join(root, 'dist', 'index.js');

/** Runs an ES module script in a fresh node; returns its stdout, or throws with its stderr. */
function runModule(script: string, execArgv: string[] = []): string {
  const r = spawnSync(process.execPath, [...execArgv, '--input-type=module', '-e', script], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`node exited with ${r.status}:\n${r.stderr}`);
  return r.stdout;
}

describe('native lifecycle', () => {
  it('frees the KV pages of dropped caches once the event loop turns', () => {
    // 24 caches of 64 MiB, every page touched: 1.5 GiB if nothing were freed. Node runs Node-API
    // finalizers after a garbage collection, from the event loop, hence the awaits.
    const out = runModule(
      `
      import { PagedKvCache } from ${JSON.stringify(dist)};
      const rows = 4096, heads = 8, dim = 128;
      const k = new Float32Array(rows * heads * dim).fill(1);
      const tick = () => new Promise((r) => setImmediate(r));
      for (let i = 0; i < 24; i++) {
        const kv = new PagedKvCache({ numBlocks: rows / 16, numLayers: 2, numKvHeads: heads, headDim: dim });
        const s = kv.createSequence();
        kv.append(s, new Int32Array(rows));
        kv.writeKv(s, 0, 0, k, k);
        kv.writeKv(s, 1, 0, k, k);
        if (i % 5 === 4) { globalThis.gc(); await tick(); }
      }
      globalThis.gc();
      await tick();
      console.log(process.memoryUsage().rss);`,
      ['--expose-gc'],
    );
    expect(Number(out.trim())).toBeLessThan(768 * 1024 * 1024);
  });

  it('frees them at once on dispose(), after which every call throws DISPOSED', () => {
    const out = runModule(`
      import { PagedKvCache } from ${JSON.stringify(dist)};
      const rows = 4096, heads = 8, dim = 128;
      const k = new Float32Array(rows * heads * dim).fill(1);
      const keep = [];
      for (let i = 0; i < 24; i++) {
        const kv = new PagedKvCache({ numBlocks: rows / 16, numLayers: 2, numKvHeads: heads, headDim: dim });
        const s = kv.createSequence();
        kv.append(s, new Int32Array(rows));
        kv.writeKv(s, 0, 0, k, k);
        kv.writeKv(s, 1, 0, k, k);
        kv.dispose();
        kv.dispose();
        keep.push(kv);
      }
      let code;
      try { keep[0].createSequence(); } catch (e) { code = e.code; }
      console.log(JSON.stringify({ rss: process.memoryUsage().rss, code }));`);
    const r = JSON.parse(out);
    expect(r.code).toBe('DISPOSED');
    expect(r.rss).toBeLessThan(768 * 1024 * 1024);
  });

  it('works in worker threads alongside the main thread', () => {
    const dir = mkdtempSync(join(tmpdir(), 'swerl-worker-'));
    const worker = join(dir, 'worker.mjs');
    const work = `(n) => {
      const kv = new PagedKvCache({ numBlocks: 64, numLayers: 1, numKvHeads: 1, headDim: 4 });
      const a = kv.createSequence();
      kv.append(a, Array.from({ length: 100 }, (_, i) => i + n));
      kv.commit(a);
      kv.free(a);
      const b = kv.createSequence();
      return kv.append(b, Array.from({ length: 100 }, (_, i) => i + n)).cachedTokens;
    }`;
    writeFileSync(
      worker,
      `import { workerData, parentPort } from 'node:worker_threads';
      import { PagedKvCache } from ${JSON.stringify(dist)};
      parentPort.postMessage((${work})(workerData));
      try { new PagedKvCache({}); } catch (e) { parentPort.postMessage(e.code); }`,
    );
    try {
      const out = runModule(`
        import { Worker } from 'node:worker_threads';
        import { PagedKvCache } from ${JSON.stringify(dist)};
        // Workers load and unload the addon before the main thread ever loads it: Node then
        // dlcloses it, which crashed the process while the kernel threads still ran its code.
        const round = () => Promise.all([1, 2, 3].map((n) => new Promise((resolve, reject) => {
          const w = new Worker(${JSON.stringify(worker)}, { workerData: n, execArgv: [] });
          const msgs = [];
          w.on('message', (m) => msgs.push(m));
          w.on('error', reject);
          w.on('exit', () => resolve(msgs));
        })));
        let results;
        for (let r = 0; r < 4; r++) results = await round();
        console.log(JSON.stringify({ main: (${work})(7), workers: results }));`);
      expect(JSON.parse(out)).toEqual({
        main: 96,
        workers: [
          [96, 'INVALID_ARGUMENT'],
          [96, 'INVALID_ARGUMENT'],
          [96, 'INVALID_ARGUMENT'],
        ],
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

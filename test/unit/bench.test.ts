// `npm run bench --quick` writes well-formed records (DESIGN.md section 8) with every KV figure.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

interface BenchRecord {
  name: string;
  value: number;
  unit: string;
  baseline?: { name: string; value: number };
  ratio?: number;
  roofline?: { value: number; unit: string; fraction: number };
}

describe('bench harness', () => {
  it('runs every suite in quick mode with well-formed records', { timeout: 300_000 }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'swerl-bench-'));
    try {
      const out = join(dir, 'r.json');
      const r = spawnSync(process.execPath, [join(root, 'bench', 'run.mjs'), '--quick', '--out', out], {
        cwd: root,
        encoding: 'utf8',
      });
      expect(r.status, r.stderr).toBe(0);
      const records = JSON.parse(readFileSync(out, 'utf8')) as BenchRecord[];
      const byName = new Map(records.map((x) => [x.name, x]));
      for (const name of [
        'machine.stream_gbps',
        'machine.peak_fma_gflops',
        'kv.bookkeeping',
        'kv.multiturn.hit_rate',
        'kv.multiturn.memory_utilization',
        'kv.write',
        'sample.greedy.B8.V151936',
        'loss.policy.T64.V151936',
        'gemm.f32.M512.N4864.K896',
        'gemm.f32.M1.N4864.K896',
        'model.forward.tokens_per_s.embedded',
        'model.train.mfu.embedded',
        'engine.decode.B64.tokens_per_s.embedded',
        'engine.multiturn.prefill_ratio',
        'engine.multiturn.vs_stateless',
        'env.sandbox.exec_per_s',
        'rollout.text_workers.episodes_per_s',
        'shell.true.shell_per_s',
      ]) {
        expect(byName.has(name), name).toBe(true);
      }
      for (const x of records) {
        expect(typeof x.unit).toBe('string');
        expect(Number.isFinite(x.value) && x.value >= 0, x.name).toBe(true);
        if (x.ratio !== undefined) expect(x.ratio).toBeCloseTo(x.value / (x.baseline?.value as number), 6);
        if (x.roofline) expect(x.roofline.fraction).toBeCloseTo(x.value / x.roofline.value, 6);
      }
      expect(byName.get('kv.multiturn.hit_rate')?.value).toBe(1);
      expect(byName.get('kv.multiturn.memory_utilization')?.value).toBeGreaterThan(0.96);
      expect(byName.get('kv.bookkeeping')?.baseline?.value).toBeGreaterThan(0);
      const meta = JSON.parse(readFileSync(join(dir, 'r.meta.json'), 'utf8'));
      expect(meta).toBeTypeOf('object');
      expect(meta.rollout.identicalRecords).toBe(true); // the text workers change no record
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

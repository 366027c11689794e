#!/usr/bin/env node
// Prints the README's results table from bench/results/latest.json (one run): each row the
// record, its value, its baseline and ratio, and its roofline and fraction.
// Usage: node scripts/results-table.mjs [path/to/latest.json]
import { readFileSync } from 'node:fs';

const path = process.argv[2] ?? new URL('../bench/results/latest.json', import.meta.url);
const records = JSON.parse(readFileSync(path, 'utf8'));
const byName = new Map(records.map((r) => [r.name, r]));

/** [record name, label suffix] in table order. */
const ROWS = [
  ['machine.stream_gbps', '(copy, read + write, all threads)'],
  ['machine.peak_fma_gflops', '(fp32, all threads, the widest FMA)'],
  ['kv.bookkeeping', '(append + commit + free, 256-token appends, one core)'],
  ['kv.bookkeeping.decode', '(1-token `append` calls)'],
  ['kv.bookkeeping.decode_batch', '(64 sequences per `appendBatch`)'],
  ['kv.multiturn.hit_rate', '(64 sessions x 20 turns, history resent each turn)'],
  ['kv.multiturn.memory_utilization', '(live tokens / allocated slots)'],
  ['kv.write', '(4096-token K/V scatter, f32)'],
  ['kv.write.bf16', '(with f32 -> bf16 rounding)'],
  ['sample.greedy.B64.V151936', '(GB/s of logits read)'],
  ['sample.temperature.B64.V151936', '(T 0.7)'],
  ['sample.topp.B64.V151936', '(top-p 0.95)'],
  ['sample.topk_topp.B64.V151936', '(top-k 50, top-p 0.95)'],
  ['sample.greedy.cached.B8.V151936', '(rows resident in cache: the compute ceiling)'],
  ['sample.temperature.cached.B8.V151936', ''],
  ['loss.policy.T4096.V151936', '(forward + gradient)'],
  ['loss.policy.cached.T8.V151936', '(rows resident in cache)'],
  ['loss.sft.T4096.V151936', ''],
  ['loss.fused_lmhead.T4096.H896.V151936.gflops', '(LM head + loss + both gradients)'],
  ['gemm.f32.M512.N4864.K896', '(x·Wᵀ, packed weights)'],
  ['gemm.f32.M1.N4864.K896', '(one decode token)'],
  ['model.forward.tokens_per_s', '(Qwen2.5-0.5B shape, random weights, 512 tokens)'],
  ['model.train.tokens_per_s', '(SFT forward + backward, 256 tokens)'],
  ['model.train.mfu', ''],
  ['model.forward.tokens_per_s.embedded', '(the 7.5 M-parameter embedded model, 512 tokens)'],
  ['model.train.tokens_per_s.embedded', ''],
  ['model.train.mfu.embedded', ''],
  ['engine.decode.B1.tokens_per_s', '(Qwen2.5-0.5B shape, 16 generated tokens per request)'],
  ['engine.decode.B16.tokens_per_s', ''],
  ['engine.decode.B64.tokens_per_s', ''],
  ['engine.decode.B1.tokens_per_s.embedded', '(64 generated tokens per request)'],
  ['engine.decode.B16.tokens_per_s.embedded', ''],
  ['engine.decode.B64.tokens_per_s.embedded', ''],
  ['engine.multiturn.prefill_ratio', '(64 sessions x 10 turns, observations 200-2000 tokens; goal <= 1.05)'],
  [
    'engine.multiturn.vs_stateless',
    '(8 of those sessions against stateless resend, 2 layers of the Qwen2.5-0.5B shape; goal >= 4)',
  ],
  ['engine.multiturn.vs_stateless.small', '(the same on a hidden-64 model, attention-bound)'],
  ['env.sandbox.exec_per_s', '(create + exec + close)'],
];

const fmt = (v) => {
  const a = Math.abs(v);
  if (a >= 1e6) return `${(v / 1e6).toFixed(1)} M`;
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  if (a >= 1) return v.toFixed(2);
  return v.toPrecision(3);
};
const pct = (f) => (f >= 0.1 ? `${(f * 100).toFixed(0)}%` : `${(f * 100).toFixed(1)}%`);

console.log('| figure | swerl | baseline | ratio | limit | of limit |');
console.log('|---|---|---|---|---|---|');
for (const [name, label] of ROWS) {
  const r = byName.get(name);
  if (!r) continue;
  const unit = r.unit === 'fraction' || r.unit === 'ratio' ? '' : ` ${r.unit}`;
  const base = r.baseline ? `${r.baseline.name}: ${fmt(r.baseline.value)}` : '';
  const ratio = r.ratio !== undefined ? `${r.ratio.toFixed(2)}x` : '';
  const limit = r.roofline ? `${fmt(r.roofline.value)} ${r.roofline.unit}` : '';
  const frac = r.roofline ? pct(r.roofline.fraction) : '';
  console.log(`| \`${name}\` ${label} | ${fmt(r.value)}${unit} | ${base} | ${ratio} | ${limit} | ${frac} |`);
}

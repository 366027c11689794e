/**
 * The engine suite:
 * - engine.decode.B{1,16,64}.tokens_per_s: B concurrent requests (16-token prompts, temperature
 *   1, no stop) each generating G tokens; tokens/s = B·G / wall time, the short prefill included.
 *   For the Qwen2.5-0.5B shape (G 16; unsuffixed) and the embedded model (G 64; `.embedded`).
 * - A multi-turn workload: S sessions × 10 turns, observations uniform in [200, 2000] tokens,
 *   50 generated tokens per turn, all sessions concurrent:
 *   engine.multiturn.prefill_ratio = prefill tokens computed ÷ tokens appended (64 sessions, on a
 *   one-layer model: the count does not depend on the model);
 *   engine.multiturn.vs_stateless = wall time of the same workload through a stateless engine
 *   (full history resent each turn, prefix caching off) ÷ the session engine's (8 sessions, the
 *   same ones and the same tokens on both sides: the engine's output does not depend on how the
 *   history arrives), on two decoder layers of the Qwen2.5-0.5B shape with the vocabulary cut in
 *   the same proportion (2/24), so that the per-token mix of attention, linear layers and LM head
 *   is the full model's; `.small` is the same comparison on a hidden-64 model, which is
 *   attention-bound at these context lengths: keeping KV saves less attention work (Σ obs·history
 *   against Σ history²/2) than linear-layer work (Σ obs against Σ history), so that figure stays
 *   below the attention work ratio (about 3.9) whatever the engine does.
 */
import { EMBEDDED_MODEL_CONFIG, Engine, Model, QWEN2_5_0_5B_CONFIG } from '../dist/index.js';
import { mulberry32, progress } from './lib.mjs';

/** @param {import('./sample.mjs').SuiteContext} ctx */
export async function engineSuite(ctx) {
  /** @type {Record<string, unknown>} */
  const meta = {};
  ctx.meta.engine = meta;
  const shapes = ctx.quick
    ? [{ suffix: '.embedded', config: EMBEDDED_MODEL_CONFIG, gen: 16 }]
    : [
        { suffix: '', config: QWEN2_5_0_5B_CONFIG, gen: 16 },
        { suffix: '.embedded', config: EMBEDDED_MODEL_CONFIG, gen: 64 },
      ];
  for (const s of shapes) await decodeRecords(ctx, meta, s);
  await multiturn(ctx, meta);
}

/**
 * @param {import('./sample.mjs').SuiteContext} ctx
 * @param {Record<string, unknown>} meta
 * @param {{ suffix: string, config: object, gen: number }} s
 */
async function decodeRecords(ctx, meta, s) {
  progress(`engine.decode${s.suffix}: random model`);
  const model = Model.random(s.config, 1);
  const V = model.config.vocab_size;
  const engine = new Engine({ model, kvBlocks: 1024, blockSize: 16 });
  await engine.generate({ prompt: [1, 2, 3], maxTokens: 2, sampling: { seed: 0 } }); // packs the weights
  for (const B of [1, 16, 64]) {
    const name = `engine.decode.B${B}.tokens_per_s${s.suffix}`;
    progress(`${name}: ${B} requests x ${s.gen} tokens`);
    const reqs = Array.from({ length: B }, (_, i) => ({
      prompt: Array.from({ length: 16 }, (_, j) => (i * 131 + j * 7 + 5) % V),
      maxTokens: s.gen,
      sampling: { seed: i },
    }));
    const t0 = performance.now();
    const out = await Promise.all(reqs.map((r) => engine.generate(r)));
    const seconds = (performance.now() - t0) / 1000;
    const tokens = out.reduce((a, g) => a + g.tokens.length, 0);
    ctx.report.add({ name, value: tokens / seconds, unit: 'tokens/s' });
    meta[name] = { requests: B, generatedPerRequest: s.gen, promptTokens: 16, seconds, tokens };
  }
}

/**
 * Two of the Qwen2.5-0.5B's 24 decoder layers, the vocabulary cut by the same 2/24: per token the
 * model's work splits between attention, linear layers and the LM head as the full model's does,
 * at a twelfth of its cost.
 */
const QWEN_LAYERS = {
  ...QWEN2_5_0_5B_CONFIG,
  num_hidden_layers: 2,
  vocab_size: Math.round((QWEN2_5_0_5B_CONFIG.vocab_size * 2) / QWEN2_5_0_5B_CONFIG.num_hidden_layers),
};

/** A small Qwen2 (hidden 64): attention-bound at the workload's context lengths. */
const SMALL = {
  architectures: ['Qwen2ForCausalLM'],
  vocab_size: 4096,
  hidden_size: 64,
  intermediate_size: 128,
  num_hidden_layers: 2,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  head_dim: 32,
  tie_word_embeddings: true,
};

/**
 * @param {import('./sample.mjs').SuiteContext} ctx
 * @param {Record<string, unknown>} meta
 */
async function multiturn(ctx, meta) {
  const sessions = ctx.quick ? 8 : 64;
  const compared = ctx.quick ? 4 : 8;
  const turns = ctx.quick ? 3 : 10;
  const [lo, hi] = ctx.quick ? [200, 400] : [200, 2000];
  const gen = ctx.quick ? 10 : 50;
  // The prefill ratio is a count; a one-layer model computes it in a fraction of the time.
  const counter = Model.random(
    { ...SMALL, hidden_size: 32, intermediate_size: 64, num_hidden_layers: 1, num_attention_heads: 1, head_dim: 16 },
    4,
  );
  const rng = mulberry32(77);
  const obs = Array.from({ length: sessions }, () =>
    Array.from({ length: turns }, () =>
      Array.from({ length: lo + Math.floor(rng() * (hi - lo + 1)) }, () => Math.floor(rng() * SMALL.vocab_size)),
    ),
  );
  const blocksFor = (n) => Math.ceil((n * turns * (hi + gen + 16)) / 16);
  /** Runs sessions [0, n) through a session engine; returns the wall time and the histories. */
  const stateful = async (n, m, warm) => {
    const engine = new Engine({ model: m, kvBlocks: blocksFor(n), blockSize: 16, idleWatermark: 1 });
    // Packs the weights before the clock starts (the timed side only: it would add to the counts).
    if (warm) await engine.generate({ prompt: [1, 2, 3], maxTokens: 2, sampling: { seed: 0 } });
    const t0 = performance.now();
    const histories = await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const s = engine.openSession();
        for (let k = 0; k < turns; k++)
          await s.generate({ append: obs[i][k], maxTokens: gen, sampling: { seed: i, temperature: 1 } });
        return Array.from(s.tokens);
      }),
    );
    return { seconds: (performance.now() - t0) / 1000, stats: engine.stats(), histories };
  };
  /** Sessions [0, n) through a session engine, then resent whole to a stateless one. */
  const compare = async (label, m) => {
    progress(`engine.multiturn${label}: ${compared} sessions, session engine vs stateless resend`);
    const part = await stateful(compared, m, true);
    const stateless = new Engine({ model: m, kvBlocks: blocksFor(compared), blockSize: 16, prefixCaching: false });
    await stateless.generate({ prompt: [1, 2, 3], maxTokens: 2, sampling: { seed: 0 } });
    const t0 = performance.now();
    const same = await Promise.all(
      Array.from({ length: compared }, async (_, i) => {
        let history = [];
        for (let k = 0; k < turns; k++) {
          history = [...history, ...obs[i][k]];
          const g = await stateless.generate({
            prompt: history,
            maxTokens: gen,
            sampling: { seed: i, temperature: 1 },
          });
          history = [...history, ...g.tokens];
        }
        return history.join(',') === part.histories[i].join(',');
      }),
    );
    const statelessSeconds = (performance.now() - t0) / 1000;
    ctx.report.add({
      name: `engine.multiturn.vs_stateless${label}`,
      value: statelessSeconds / part.seconds,
      unit: 'x',
      baseline: { name: 'the same engine, stateless, prefix caching off', value: 1 },
    });
    return {
      model: m.config,
      sessionSeconds: part.seconds,
      statelessSeconds,
      statelessPrefillTokens: stateless.stats().prefillTokens,
      identicalOutputs: same.every(Boolean),
    };
  };

  progress(
    `engine.multiturn: ${sessions} sessions x ${turns} turns, observations ${lo}-${hi}, ${gen} generated per turn`,
  );
  const all = await stateful(sessions, counter, false);
  const appended = obs.reduce((a, o) => a + o.reduce((b, x) => b + x.length, 0), 0);
  const prefillRatio = all.stats.prefillTokens / appended;
  ctx.report.add({ name: 'engine.multiturn.prefill_ratio', value: prefillRatio, unit: 'ratio' });

  // The quick run compares on the small model only (seconds, not minutes), under the main name.
  const comparisons = {};
  if (!ctx.quick) comparisons[''] = await compare('', Model.random(QWEN_LAYERS, 3));
  const smallLabel = ctx.quick ? '' : '.small';
  comparisons[smallLabel] = await compare(smallLabel, Model.random(SMALL, 3));
  // What keeping KV can save on these sessions, by kind of work (prefill only): attention
  // multiply-adds ∝ Σ appended · (history + appended/2) with sessions against Σ (history)²/2 resent,
  // linear-layer ones ∝ Σ appended against Σ history. The measured speedup sits between the two,
  // nearer the linear one the larger the linear layers' share (and less the decode steps' share,
  // the same on both sides).
  let attSession = 0;
  let attStateless = 0;
  let linSession = 0;
  let linStateless = 0;
  for (let i = 0; i < compared; i++) {
    let h = 0;
    for (let k = 0; k < turns; k++) {
      const a = obs[i][k].length;
      attSession += a * (h + a / 2);
      attStateless += (h + a) ** 2 / 2;
      linSession += a;
      linStateless += h + a;
      h += a + gen;
    }
  }
  meta.multiturn = {
    workRatios: { attention: attStateless / attSession, linear: linStateless / linSession },
    sessions,
    turns,
    observationTokens: [lo, hi],
    generatedPerTurn: gen,
    appendedTokens: appended,
    stats: all.stats,
    wallSeconds: all.seconds,
    comparedSessions: compared,
    comparisons,
    goals: { prefillRatio: '<= 1.05', vsStateless: '>= 4' },
  };
}

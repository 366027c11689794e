/**
 * The decoder's backward pass and AdamW: directional finite differences for every parameter
 * tensor (SFT and policy losses, Qwen2 with biases and untied head, Llama with a tied head), the
 * recompute option (bitwise the same gradients), gradient accumulation, the trainer's logprobs
 * against the sampler's (bitwise), and a tiny model overfitting a fixed batch.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AdamW, Model, sample, Trainer, warmupCosineLr } from '../../src/index.js';
import { normal, rng } from '../helpers/random.js';

type Cfg = Record<string, unknown>;
const TINY = {
  vocab_size: 11,
  hidden_size: 8,
  intermediate_size: 12,
  num_hidden_layers: 2,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  head_dim: 4,
  rms_norm_eps: 1e-5,
};
const QWEN: Cfg = { ...TINY, architectures: ['Qwen2ForCausalLM'] };
const LLAMA: Cfg = { ...TINY, architectures: ['LlamaForCausalLM'], tie_word_embeddings: true, num_key_value_heads: 2 };

function randomize(m: Model, seed: number): void {
  const r = rng(seed);
  for (const { name, shape } of m.parameters()) {
    const n = shape.reduce((a, d) => a * d, 1);
    const fanIn = shape[1] ?? 1;
    const v = Float32Array.from({ length: n }, () => {
      const z = normal(r);
      if (name.endsWith('norm.weight')) return 1 + 0.3 * z;
      if (name.endsWith('.bias')) return 0.3 * z;
      if (name === 'model.embed_tokens.weight') return z;
      return (1.2 * z) / Math.sqrt(fanIn);
    });
    m.setParameter(name, v);
  }
}

/** −Σ m·logp / Σ m from the model's logits, in float64. */
async function sftLossOf(m: Model, tokens: number[], targets: number[], mask: Float32Array): Promise<number> {
  const V = m.config.vocab_size;
  const logits = await m.forward(tokens);
  let num = 0;
  let den = 0;
  for (let t = 0; t < tokens.length; t++) {
    const row = Array.from(logits.subarray(t * V, (t + 1) * V));
    const mx = Math.max(...row);
    const lse = mx + Math.log(row.reduce((a, x) => a + Math.exp(x - mx), 0));
    num -= (mask[t] as number) * ((row[targets[t] as number] as number) - lse);
    den += mask[t] as number;
  }
  return num / den;
}

/** Checks g·d against the central difference of loss along d, per parameter tensor. */
async function checkDirectional(m: Model, loss: () => Promise<number>, seed: number): Promise<number> {
  const r = rng(seed);
  let worst = 0;
  for (const { name, shape } of m.parameters()) {
    const n = shape.reduce((a, d) => a * d, 1);
    const g = m.getGradient(name);
    const w0 = m.getParameter(name);
    const d = Float32Array.from({ length: n }, () => normal(r));
    const norm = Math.sqrt(d.reduce((a, x) => a + x * x, 0));
    const eps = 3e-3;
    let analytic = 0;
    for (let i = 0; i < n; i++) analytic += (g[i] as number) * ((d[i] as number) / norm);
    m.setParameter(
      name,
      w0.map((w, i) => w + (eps * (d[i] as number)) / norm),
    );
    const up = await loss();
    m.setParameter(
      name,
      w0.map((w, i) => w - (eps * (d[i] as number)) / norm),
    );
    const down = await loss();
    m.setParameter(name, w0);
    const numeric = (up - down) / (2 * eps);
    const err = Math.abs(numeric - analytic) / (Math.abs(analytic) + 1e-3);
    expect(err, `${name}: analytic ${analytic}, finite difference ${numeric}`).toBeLessThan(2e-2);
    worst = Math.max(worst, err);
  }
  return worst;
}

describe('backward: finite differences for every parameter', () => {
  for (const [label, cfg] of [
    ['Qwen2 (q/k/v biases, untied head, GQA)', QWEN],
    ['Llama (tied head, MHA)', LLAMA],
  ] as const) {
    it(`SFT loss, ${label}`, async () => {
      const m = Model.random(cfg, 1);
      randomize(m, 2);
      const tokens = [3, 1, 4, 1, 5, 9, 2, 6];
      const targets = [1, 4, 1, 5, 9, 2, 6, 5];
      const mask = Float32Array.from([0, 1, 1, 0, 1, 1, 1, 1]);
      m.zeroGrad();
      const r = await m.sftBackward({ tokens, targets, mask });
      const ref = await sftLossOf(m, tokens, targets, mask);
      expect(Math.abs(r.loss - ref)).toBeLessThan(1e-5 * Math.abs(ref));
      await checkDirectional(m, () => sftLossOf(m, tokens, targets, mask), 3);
    });
  }

  // Full 16-row tiles at each unmasked axpy width: 64 columns, and 32 (the default preset's) or 48
  // in one pass of 2 or 3 vector chunks.
  for (const hd of [32, 48, 64])
    it(`SFT loss, head_dim ${hd} over 20 positions (the attention kernels' full 16-row tiles)`, async () => {
      const cfg = { ...QWEN, hidden_size: 64, intermediate_size: 32, num_attention_heads: 2, head_dim: hd };
      const m = Model.random(cfg, 8);
      randomize(m, 9);
      const r = rng(10);
      const tokens = Array.from({ length: 20 }, () => Math.floor(r() * TINY.vocab_size));
      const targets = [...tokens.slice(1), 0];
      const mask = Float32Array.from({ length: 20 }, (_, t) => (t % 4 === 1 ? 0 : 1));
      m.zeroGrad();
      const res = await m.sftBackward({ tokens, targets, mask });
      const ref = await sftLossOf(m, tokens, targets, mask);
      expect(Math.abs(res.loss - ref)).toBeLessThan(1e-5 * Math.abs(ref));
      await checkDirectional(m, () => sftLossOf(m, tokens, targets, mask), 11);
    });

  it('policy loss (clipped ratios, entropy bonus), Qwen2', async () => {
    const m = Model.random(QWEN, 4);
    randomize(m, 5);
    const tokens = [2, 7, 1, 8, 2, 8, 1, 8, 2];
    const targets = [7, 1, 8, 2, 8, 1, 8, 2, 8];
    const T = tokens.length;
    const mask = new Float32Array(T).fill(1);
    m.zeroGrad();
    // Old logprobs near the current ones, so some ratios clip and some do not.
    const first = await m.sftBackward({ tokens, targets, mask });
    m.zeroGrad();
    const r = rng(6);
    const oldLogprobs = first.logprobs.map((x) => x + 0.25 * normal(r));
    const advantages = Float32Array.from({ length: T }, (_, t) => (t % 3 === 0 ? -1 : 1));
    const cfg = { clipLow: 0.2, clipHigh: 0.28, entropyCoef: 0.01 };
    const seq = { tokens, targets, mask, oldLogprobs, advantages };
    const res = await m.policyBackward(seq, cfg);
    expect(res.clipFracLow + res.clipFracHigh).toBeGreaterThan(0);
    const { policyLoss } = await import('../../src/index.js');
    const lossAt = async () => {
      const logits = await m.forward(tokens);
      return policyLoss(
        { logits, vocab: m.config.vocab_size, targets: Int32Array.from(targets), oldLogprobs, advantages, mask },
        cfg,
      ).loss;
    };
    expect(Math.abs(res.loss - (await lossAt()))).toBeLessThan(1e-6);
    await checkDirectional(m, lossAt, 7);
  });
});

describe('backward options and bookkeeping', () => {
  const tokens = Array.from({ length: 40 }, (_, i) => (i * 7 + 3) % 11);
  const targets = tokens.slice(1).concat([0]);

  it('recompute gives bitwise the same gradients', async () => {
    const m = Model.random(QWEN, 8);
    randomize(m, 9);
    m.zeroGrad();
    const a = await m.sftBackward({ tokens, targets });
    const ga = m.parameters().map((p) => m.getGradient(p.name));
    m.zeroGrad();
    const b = await m.sftBackward({ tokens, targets }, { recompute: true });
    expect(b.loss).toBe(a.loss);
    m.parameters().forEach((p, i) => {
      expect(Array.from(m.getGradient(p.name)), p.name).toEqual(Array.from(ga[i] as Float32Array));
    });
  });

  it('accumulates: two halves at lossScale 0.5 equal the mean of the two gradients', async () => {
    const m = Model.random(LLAMA, 10);
    randomize(m, 11);
    const s1 = { tokens: tokens.slice(0, 20), targets: targets.slice(0, 20) };
    const s2 = { tokens: tokens.slice(20), targets: targets.slice(20) };
    m.zeroGrad();
    await m.sftBackward(s1);
    const g1 = m.getGradient('model.layers.0.mlp.up_proj.weight');
    m.zeroGrad();
    await m.sftBackward(s2);
    const g2 = m.getGradient('model.layers.0.mlp.up_proj.weight');
    m.zeroGrad();
    await m.sftBackward(s1, { lossScale: 0.5 });
    await m.sftBackward(s2, { lossScale: 0.5 });
    const g = m.getGradient('model.layers.0.mlp.up_proj.weight');
    for (let i = 0; i < g.length; i++)
      expect(Math.abs((g[i] as number) - 0.5 * ((g1[i] as number) + (g2[i] as number)))).toBeLessThan(1e-6);
  });

  it("the trainer's logprobs equal the sampler's raw logprobs bitwise (same weights)", async () => {
    const m = Model.random({ ...QWEN, vocab_size: 301, hidden_size: 32, intermediate_size: 48 }, 12);
    const seqTokens = Array.from({ length: 33 }, (_, i) => (i * 37 + 5) % 301);
    const seqTargets = seqTokens.slice(1).concat([7]);
    const logits = await m.forward(seqTokens);
    const raw = sample(
      logits,
      301,
      seqTargets.map(() => ({ temperature: 0 })),
    );
    m.zeroGrad();
    const tr = await m.sftBackward({ tokens: seqTokens, targets: seqTargets }, { chunkTokens: 5 });
    // Score the targets the sampler would report: rawLogprobs of its greedy tokens, and the
    // trainer's logprob wherever the greedy token is the target.
    let compared = 0;
    seqTargets.forEach((tgt, t) => {
      if (raw.tokens[t] !== tgt) return;
      compared++;
      expect(Object.is(tr.logprobs[t], raw.rawLogprobs[t]), `row ${t}`).toBe(true);
    });
    // And for every row through the sampler's own targets: sample with the targets forced by a
    // one-hot temperature-0 row is the same as above; compare against sftLoss's logprobs instead.
    const { sftLoss } = await import('../../src/index.js');
    const direct = sftLoss({
      logits,
      vocab: 301,
      targets: Int32Array.from(seqTargets),
      mask: new Float32Array(33).fill(1),
    });
    for (let t = 0; t < 33; t++) expect(Object.is(tr.logprobs[t], direct.logprobs[t]), `row ${t}`).toBe(true);
    expect(compared).toBeGreaterThanOrEqual(0);
  });

  it('rejects bad inputs without touching the gradients', async () => {
    const m = Model.random(QWEN, 13);
    m.zeroGrad();
    await expect(m.sftBackward({ tokens: [1, 2], targets: [1] })).rejects.toThrow(/targets/);
    await expect(m.sftBackward({ tokens: [1, 2], targets: [1, 11] })).rejects.toThrow(/targets\[1\]/);
    await expect(m.sftBackward({ tokens: [], targets: [] })).rejects.toThrow(/at least one/);
    await expect(m.sftBackward({ tokens: [1], targets: [1] }, { lossScale: 0 })).rejects.toThrow(/lossScale/);
    for (const p of m.parameters()) expect(m.getGradient(p.name).every((x) => x === 0)).toBe(true);
  });
});

describe('gradient slots and sample lanes', () => {
  const seqs = [0, 1, 2, 3].map((k) => {
    const tokens = Array.from({ length: 24 + 5 * k }, (_, i) => (i * (3 + k) + k) % 11);
    return { tokens, targets: tokens.slice(1).concat([k]) };
  });
  const allGrads = (m: Model) => m.parameters().map((p) => m.getGradient(p.name));

  it('backward on two slots at once: the gradient is slot 0 + slot 1, bitwise, whatever the timing', async () => {
    const m = Model.random(QWEN, 21);
    randomize(m, 22);
    // References: each lane's samples alone, in order, on the gradient itself.
    m.zeroGrad();
    for (const s of [seqs[0], seqs[2]]) await m.sftBackward(s as (typeof seqs)[0]);
    const lane0 = allGrads(m);
    m.zeroGrad();
    for (const s of [seqs[1], seqs[3]]) await m.sftBackward(s as (typeof seqs)[0]);
    const lane1 = allGrads(m);
    for (let trial = 0; trial < 3; trial++) {
      m.zeroGrad();
      const lane = async (slot: number, list: number[]) => {
        for (const i of list) await m.sftBackward(seqs[i] as (typeof seqs)[0], { gradSlot: slot });
      };
      // Lane 1 starts first in odd trials: the order the jobs finish must not matter.
      await (trial % 2
        ? Promise.all([lane(1, [1, 3]), lane(0, [0, 2])])
        : Promise.all([lane(0, [0, 2]), lane(1, [1, 3])]));
      allGrads(m).forEach((g, k) => {
        const want = Float32Array.from(g, (_, i) => Math.fround((lane0[k]?.[i] as number) + (lane1[k]?.[i] as number)));
        expect(Array.from(g), m.parameters()[k]?.name).toEqual(Array.from(want));
      });
    }
    // A call on its own thread (ownThread) computes bitwise what the shared pool does.
    m.zeroGrad();
    for (const i of [0, 2]) await m.sftBackward(seqs[i] as (typeof seqs)[0], { ownThread: true });
    allGrads(m).forEach((g, k) => {
      expect(Array.from(g), m.parameters()[k]?.name).toEqual(Array.from(lane0[k] as Float32Array));
    });
    // zeroGrad clears the slots too.
    await m.sftBackward(seqs[1] as (typeof seqs)[0], { gradSlot: 3 });
    m.zeroGrad();
    for (const g of allGrads(m)) expect(g.every((x) => x === 0)).toBe(true);
  });

  it("a long call on its own thread gives the pool's bits, alone (with the pool's help) and beside another", async () => {
    // 320 tokens: at or above the length where a lone ownThread call takes the pool's help.
    const long = [0, 1].map((k) => {
      const tokens = Array.from({ length: 320 }, (_, i) => (i * (5 + k) + 3 * k) % 11);
      return { tokens, targets: tokens.slice(1).concat([k]) };
    });
    const m = Model.random(QWEN, 25);
    randomize(m, 26);
    const [a, b] = long as [(typeof long)[0], (typeof long)[0]];
    m.zeroGrad();
    await m.sftBackward(a); // the shared pool
    const pool = allGrads(m);
    m.zeroGrad();
    await m.sftBackward(a, { ownThread: true }); // alone: its kernels take the pool's help
    allGrads(m).forEach((g, k) => {
      expect(Array.from(g), m.parameters()[k]?.name).toEqual(Array.from(pool[k] ?? []));
    });
    // Beside another ownThread call: inline while both run, helped once the other is done (soon,
    // for a short neighbour). Reference: the two on their slots one after the other, on the pool.
    const short = { tokens: b.tokens.slice(0, 40), targets: b.targets.slice(0, 40) };
    for (const other of [short, b]) {
      m.zeroGrad();
      await m.sftBackward(a, { gradSlot: 0 });
      await m.sftBackward(other, { gradSlot: 1 });
      const want = allGrads(m);
      m.zeroGrad();
      await Promise.all([
        m.sftBackward(a, { gradSlot: 0, ownThread: true }),
        m.sftBackward(other, { gradSlot: 1, ownThread: true }),
      ]);
      allGrads(m).forEach((g, k) => {
        expect(Array.from(g), m.parameters()[k]?.name).toEqual(Array.from(want[k] ?? []));
      });
    }
  });

  it('refuses a busy slot, a slot out of range, and an optimizer step or read while a slot runs', async () => {
    const m = Model.random(QWEN, 23);
    m.zeroGrad();
    const s = seqs[0] as (typeof seqs)[0];
    await expect(m.sftBackward(s, { gradSlot: 8 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(m.sftBackward(s, { gradSlot: -1 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    const opt = new AdamW(m, { lr: 1e-3 });
    const running = m.sftBackward(s, { gradSlot: 1 });
    await expect(m.sftBackward(s, { gradSlot: 1 })).rejects.toThrow(/slot/);
    expect(() => m.getGradient('lm_head.weight')).toThrow(/busy/);
    await expect(opt.step()).rejects.toThrow(/busy/);
    await running;
    // Nothing was added by the refused calls: the gradient is the one job's.
    const g = m.getGradient('lm_head.weight');
    m.zeroGrad();
    await m.sftBackward(s);
    expect(Array.from(g)).toEqual(Array.from(m.getGradient('lm_head.weight')));
  });

  it('a Trainer step is the same for every run at a given lane count, and close across lane counts', async () => {
    const step = async (lanes: number) => {
      const m = Model.random({ ...QWEN, vocab_size: 301, hidden_size: 32, intermediate_size: 48 }, 24);
      const t = new Trainer(m, { optimizer: new AdamW(m, { lr: 1e-2 }), sampleLanes: lanes });
      const samples = Array.from({ length: 5 }, (_, k) => {
        const tokens = Int32Array.from({ length: 30 + 7 * k }, (_, i) => (i * 13 + k * 29) % 301);
        return { tokens, lossMask: new Uint8Array(tokens.length).fill(1) };
      });
      const r = await t.sftStep(samples);
      return { loss: r.loss, gradNorm: r.gradNorm, w: m.getParameter('model.layers.0.mlp.up_proj.weight') };
    };
    const a = await step(2);
    const b = await step(2);
    expect(b.loss).toBe(a.loss);
    expect(b.gradNorm).toBe(a.gradNorm);
    expect(Array.from(b.w)).toEqual(Array.from(a.w));
    const one = await step(1);
    expect(one.loss).toBe(a.loss); // the losses are per-sample values summed in sample order
    expect(Math.abs(one.gradNorm - a.gradNorm) / one.gradNorm).toBeLessThan(1e-5);
    expect(
      () => new Trainer(Model.random(QWEN, 1), { optimizer: new AdamW(Model.random(QWEN, 1)), sampleLanes: 9 }),
    ).toThrow(/sampleLanes/);
  });
});

describe('AdamW', () => {
  it('a tiny model overfits a fixed batch to near-zero loss', async () => {
    const m = Model.random({ ...QWEN, vocab_size: 23, hidden_size: 32, intermediate_size: 64, head_dim: 16 }, 14);
    const r = rng(15);
    const tokens = Array.from({ length: 24 }, () => Math.floor(r() * 23));
    const targets = Array.from({ length: 24 }, () => Math.floor(r() * 23));
    const steps = 120;
    const opt = new AdamW(m, {
      lr: warmupCosineLr({ peak: 2e-2, warmupSteps: 10, totalSteps: steps, minRatio: 0.1 }),
      weightDecay: 0,
    });
    m.zeroGrad();
    let first = 0;
    let last = 0;
    for (let s = 0; s < steps; s++) {
      const { loss } = await m.sftBackward({ tokens, targets });
      if (s === 0) first = loss;
      last = loss;
      const st = await opt.step();
      expect(st.step).toBe(s + 1);
      expect(Number.isFinite(st.gradNorm)).toBe(true);
    }
    expect(first).toBeGreaterThan(2.5); // about log(23) at initialisation
    expect(last).toBeLessThan(0.05);
    expect(opt.stepCount).toBe(steps);
  });

  it('a second optimizer on the same model starts afresh: its schedule from step 1, zero moments', async () => {
    const m = Model.random({ ...QWEN, vocab_size: 23, hidden_size: 32, intermediate_size: 64, head_dim: 16 }, 18);
    const batch = { tokens: [1, 2, 3, 4], targets: [2, 3, 4, 5] };
    const first = new AdamW(m, { lr: warmupCosineLr({ peak: 1e-2, warmupSteps: 1, totalSteps: 4 }) });
    for (let s = 0; s < 4; s++) {
      await m.sftBackward(batch);
      await first.step();
    }
    // A schedule evaluated at the model's lifetime step count would give lr 0 here (past its end).
    const second = new AdamW(m, { lr: warmupCosineLr({ peak: 1e-2, warmupSteps: 1, totalSteps: 4 }) });
    expect(second.stepCount).toBe(0);
    const before = Float32Array.from(m.getParameter('model.embed_tokens.weight'));
    await m.sftBackward(batch);
    const st = await second.step();
    expect(st.step).toBe(1);
    expect(st.lr).toBeCloseTo(1e-2, 12);
    const after = m.getParameter('model.embed_tokens.weight');
    // With fresh moments, AdamW's first step moves each touched weight by about lr.
    let moved = 0;
    for (let i = 0; i < after.length; i++)
      moved = Math.max(moved, Math.abs((after[i] as number) - (before[i] as number)));
    expect(moved).toBeGreaterThan(5e-3);
    // resume keeps the state (a checkpoint's restored moments).
    expect(new AdamW(m, { lr: 1e-3, resume: true }).stepCount).toBe(1);
  });

  it('save and load continue the state exactly: the resumed step equals the uninterrupted one bitwise', async () => {
    const cfg = { ...QWEN, vocab_size: 23, hidden_size: 32, intermediate_size: 64, head_dim: 16 };
    const m = Model.random(cfg, 19);
    const batch = { tokens: [1, 2, 3, 4, 5], targets: [2, 3, 4, 5, 6] };
    const opt = new AdamW(m, { lr: 1e-2 });
    for (let s = 0; s < 2; s++) {
      await m.sftBackward(batch);
      await opt.step();
    }
    const dir = mkdtempSync(join(tmpdir(), 'swerl-adamw-'));
    try {
      await opt.save(join(dir, 'optimizer.safetensors'));
      const snapshot = m.parameters().map((p) => [p.name, Float32Array.from(m.getParameter(p.name))] as const);
      await m.sftBackward(batch);
      await opt.step();
      const straight = m.parameters().map((p) => Float32Array.from(m.getParameter(p.name)));
      // Back to the saved weights, with a fresh optimizer in between (which resets the state).
      for (const [name, v] of snapshot) m.setParameter(name, v);
      new AdamW(m, { lr: 1 });
      const resumed = await AdamW.load(m, join(dir, 'optimizer.safetensors'), { lr: 1e-2 });
      expect(resumed.stepCount).toBe(2);
      await m.sftBackward(batch);
      expect((await resumed.step()).step).toBe(3);
      m.parameters().forEach((p, i) => {
        expect(m.getParameter(p.name)).toEqual(straight[i]);
      });
      // A state for another model shape is refused.
      const other = Model.random({ ...cfg, hidden_size: 16, head_dim: 8, intermediate_size: 32 }, 1);
      await expect(AdamW.load(other, join(dir, 'optimizer.safetensors'))).rejects.toMatchObject({
        code: 'CORRUPT_FILE',
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('matches a float64 AdamW reference on one parameter for three steps', async () => {
    const m = Model.random(QWEN, 16);
    randomize(m, 17);
    const name = 'model.layers.1.self_attn.o_proj.weight';
    const opt = new AdamW(m, { lr: 1e-2, betas: [0.9, 0.95], eps: 1e-6, weightDecay: 0.1, maxGradNorm: 0 });
    let w = Float64Array.from(m.getParameter(name));
    const mom = new Float64Array(w.length);
    const vel = new Float64Array(w.length);
    m.zeroGrad();
    for (let step = 1; step <= 3; step++) {
      await m.sftBackward({ tokens: [1, 2, 3, 4], targets: [2, 3, 4, 5] });
      const g = m.getGradient(name);
      await opt.step();
      w = w.map((x, i) => {
        const gi = g[i] as number;
        mom[i] = 0.9 * (mom[i] as number) + 0.1 * gi;
        vel[i] = 0.95 * (vel[i] as number) + 0.05 * gi * gi;
        const mh = (mom[i] as number) / (1 - 0.9 ** step);
        const vh = (vel[i] as number) / (1 - 0.95 ** step);
        return x * (1 - 1e-2 * 0.1) - (1e-2 * mh) / (Math.sqrt(vh) + 1e-6);
      });
      const got = m.getParameter(name);
      for (let i = 0; i < w.length; i++) expect(Math.abs((got[i] as number) - (w[i] as number))).toBeLessThan(1e-5);
      for (const x of m.getGradient(name)) expect(x).toBe(0); // zeroed by the step
    }
  });
});

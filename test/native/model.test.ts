/**
 * The decoder against the float64 reference of test/helpers/decoder-reference.ts (written from
 * transformers' modeling code): random Qwen2 and Llama models with every parameter randomised
 * (norms and biases too), tied and untied, GQA/MQA/MHA, head_dim != hidden/heads, and default,
 * YaRN, linear and Llama 3 rotary scaling. Then the paged forward against the dense one, bitwise:
 * chunked prefill, token-by-token decode, batched decode, and prefix-cache hits.
 */
import { describe, expect, it } from 'vitest';
import { Model, PagedKvCache } from '../../src/index.js';
import { type RefConfig, referenceForward } from '../helpers/decoder-reference.js';
import { normal, rng } from '../helpers/random.js';

type Cfg = Record<string, unknown>;

const BASE = {
  vocab_size: 97,
  hidden_size: 48,
  intermediate_size: 80,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  rms_norm_eps: 1e-5,
  max_position_embeddings: 64,
};

/** A model whose every parameter is random and O(1)-scaled, so activations stay O(1). */
function randomModel(cfg: Cfg, seed: number): Model {
  const m = Model.random(cfg, seed);
  const r = rng(seed + 1000);
  for (const { name, shape } of m.parameters()) {
    const n = shape.reduce((a, d) => a * d, 1);
    const fanIn = shape[1] ?? 1;
    const v = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      const z = normal(r);
      if (name.endsWith('norm.weight')) v[i] = 1 + 0.3 * z;
      else if (name.endsWith('.bias')) v[i] = 0.3 * z;
      else if (name === 'model.embed_tokens.weight') v[i] = z;
      else v[i] = (1.5 * z) / Math.sqrt(fanIn);
    }
    m.setParameter(name, v);
  }
  return m;
}

function refConfig(m: Model): RefConfig {
  return m.config as unknown as RefConfig;
}

function tokensOf(n: number, vocab: number, seed: number): number[] {
  const r = rng(seed);
  return Array.from({ length: n }, () => Math.floor(r() * vocab));
}

function maxRowError(got: Float32Array, want: Float64Array[], vocab: number): number {
  let worst = 0;
  want.forEach((row, t) => {
    let scale = 0;
    let err = 0;
    for (let j = 0; j < vocab; j++) {
      scale = Math.max(scale, Math.abs(row[j] as number));
      err = Math.max(err, Math.abs((got[t * vocab + j] as number) - (row[j] as number)));
    }
    worst = Math.max(worst, err / scale);
  });
  return worst;
}

const CASES: [string, Cfg][] = [
  ['Qwen2, untied, rope_theta 1e6, GQA', { ...BASE, architectures: ['Qwen2ForCausalLM'], rope_theta: 1e6 }],
  [
    // head_dim 64 and 23 positions: the attention kernels' full 16-key tiles (dots and the
    // unmasked 64-column axpy) as well as the partial last tile.
    'Qwen2, head_dim 64, GQA 2:1 (full attention tiles)',
    {
      ...BASE,
      architectures: ['Qwen2ForCausalLM'],
      hidden_size: 64,
      num_attention_heads: 2,
      num_key_value_heads: 1,
      head_dim: 64,
    },
  ],
  [
    // head_dim 48: the 16-key tiles' axpy as one unmasked pass of three vector chunks.
    'Qwen2, head_dim 48, GQA 2:1',
    {
      ...BASE,
      architectures: ['Qwen2ForCausalLM'],
      hidden_size: 64,
      num_attention_heads: 2,
      num_key_value_heads: 1,
      head_dim: 48,
    },
  ],
  [
    'Llama, tied, head_dim 16 != hidden/heads, MQA',
    { ...BASE, architectures: ['LlamaForCausalLM'], tie_word_embeddings: true, head_dim: 16, num_key_value_heads: 1 },
  ],
  [
    'Qwen2, tied, YaRN factor 4 (original 8 positions), MHA',
    {
      ...BASE,
      architectures: ['Qwen2ForCausalLM'],
      tie_word_embeddings: true,
      num_key_value_heads: 4,
      rope_scaling: { type: 'yarn', factor: 4, original_max_position_embeddings: 8 },
    },
  ],
  [
    'Llama, linear rope scaling 2',
    { ...BASE, architectures: ['LlamaForCausalLM'], rope_scaling: { rope_type: 'linear', factor: 2 } },
  ],
  [
    'Llama 3.1 rope scaling',
    {
      ...BASE,
      architectures: ['LlamaForCausalLM'],
      rope_theta: 500000,
      head_dim: 32,
      rope_scaling: {
        rope_type: 'llama3',
        factor: 8,
        low_freq_factor: 1,
        high_freq_factor: 4,
        original_max_position_embeddings: 16,
      },
    },
  ],
];

describe('Model.forward matches the float64 reference', () => {
  for (const [name, cfg] of CASES) {
    it(name, async () => {
      const m = randomModel(cfg, 11);
      const tokens = tokensOf(23, BASE.vocab_size, 5);
      const logits = await m.forward(tokens);
      expect(logits.length).toBe(tokens.length * BASE.vocab_size);
      const want = referenceForward(refConfig(m), (n) => m.getParameter(n), tokens);
      const err = maxRowError(logits, want, BASE.vocab_size);
      expect(err).toBeLessThan(1e-4);
      expect(err).toBeGreaterThan(0); // f32 against f64: a zero would mean the check compared nothing
    });
  }

  it("a token's logits do not depend on later tokens (causality), and positions matter", async () => {
    const m = randomModel(CASES[0]?.[1] as Cfg, 3);
    const tokens = tokensOf(12, BASE.vocab_size, 9);
    const full = await m.forward(tokens);
    const prefix = await m.forward(tokens.slice(0, 7));
    expect(Array.from(prefix)).toEqual(Array.from(full.subarray(0, 7 * BASE.vocab_size)));
    const shifted = await m.forward([tokens[1] as number, ...tokens.slice(1, 7)]);
    expect(Array.from(shifted.subarray(BASE.vocab_size, 2 * BASE.vocab_size))).not.toEqual(
      Array.from(full.subarray(BASE.vocab_size, 2 * BASE.vocab_size)),
    );
  });
});

describe('paged forward equals the dense forward bitwise', () => {
  const cfg = CASES[0]?.[1] as Cfg;
  const newCache = (m: Model) =>
    new PagedKvCache({
      numBlocks: 64,
      blockSize: 4,
      numLayers: m.config.num_hidden_layers,
      numKvHeads: m.config.num_key_value_heads as number,
      headDim: m.config.head_dim as number,
      dtype: 'f32',
    });
  const V = BASE.vocab_size;
  const row = (a: Float32Array, t: number) => Array.from(a.subarray(t * V, (t + 1) * V));

  it('chunked prefill, then token-by-token decode', async () => {
    const m = randomModel(cfg, 21);
    const tokens = tokensOf(22, V, 77);
    const dense = await m.forward(tokens);
    const cache = newCache(m);
    const seq = cache.createSequence();
    let at = 0;
    for (const chunk of [7, 5]) {
      const part = tokens.slice(at, at + chunk);
      cache.append(seq, part);
      const l = m.forwardPaged(cache, [{ seq, tokens: part }], { logits: 'all' });
      cache.commit(seq);
      for (let i = 0; i < chunk; i++) expect(row(l, i), `position ${at + i}`).toEqual(row(dense, at + i));
      at += chunk;
    }
    for (; at < tokens.length; at++) {
      cache.append(seq, [tokens[at] as number]);
      const l = m.forwardPaged(cache, [{ seq, tokens: [tokens[at] as number] }]);
      cache.commit(seq);
      expect(row(l, 0), `position ${at}`).toEqual(row(dense, at));
    }
  });

  it('three sequences decoded in one batch, and a prefix-cache hit, give the dense logits', async () => {
    const m = randomModel(cfg, 22);
    const prompts = [tokensOf(9, V, 1), tokensOf(6, V, 2), tokensOf(13, V, 3)];
    const next = [5, 17, 42];
    const dense = await Promise.all(prompts.map((p, i) => m.forward([...p, next[i] as number])));
    const cache = newCache(m);
    const seqs = prompts.map((p) => {
      const s = cache.createSequence();
      cache.append(s, p);
      m.forwardPaged(cache, [{ seq: s, tokens: p }]);
      cache.commit(s);
      return s;
    });
    seqs.forEach((s, i) => {
      cache.append(s, [next[i] as number]);
    });
    const l = m.forwardPaged(
      cache,
      seqs.map((seq, i) => ({ seq, tokens: [next[i] as number] })),
    );
    seqs.forEach((_, i) => {
      const p = prompts[i] as number[];
      expect(row(l, i), `sequence ${i}`).toEqual(row(dense[i] as Float32Array, p.length));
    });
    // A new sequence whose first 12 tokens (3 full blocks) are the third prompt's: hits, then only
    // the rest is computed.
    const third = prompts[2] as number[];
    const s = cache.createSequence();
    const { cachedTokens } = cache.append(s, third);
    expect(cachedTokens).toBe(12);
    const rest = third.slice(cachedTokens);
    const lh = m.forwardPaged(cache, [{ seq: s, tokens: rest }]);
    expect(row(lh, 0)).toEqual(row(dense[2] as Float32Array, third.length - 1));
  });

  it('rejects a cache of another geometry or dtype and an out-of-vocabulary token', async () => {
    const m = randomModel(cfg, 23);
    const bad = new PagedKvCache({ numBlocks: 8, blockSize: 4, numLayers: 1, numKvHeads: 2, headDim: 12 });
    const s = bad.createSequence();
    bad.append(s, [1, 2]);
    expect(() => m.forwardPaged(bad, [{ seq: s, tokens: [1, 2] }])).toThrow(/f32 PagedKvCache/);
    const bf = new PagedKvCache({
      numBlocks: 8,
      blockSize: 4,
      numLayers: 2,
      numKvHeads: 2,
      headDim: 12,
      dtype: 'bf16',
    });
    const s2 = bf.createSequence();
    bf.append(s2, [1]);
    expect(() => m.forwardPaged(bf, [{ seq: s2, tokens: [1] }])).toThrow(/f32/);
    const cache = newCache(m);
    const s3 = cache.createSequence();
    cache.append(s3, [1, V]);
    expect(() => m.forwardPaged(cache, [{ seq: s3, tokens: [1, V] }])).toThrow(/token ids/);
  });
});

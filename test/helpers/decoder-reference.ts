/**
 * A plain float64 forward pass of Hugging Face's Qwen2ForCausalLM / LlamaForCausalLM, written
 * from transformers' modeling code, independent of native/ and src/model: embedding, per layer
 * RMSNorm -> q/k/v (+bias for Qwen2) -> rotary (rotate-half; default, linear, YaRN or Llama 3
 * frequencies, cos/sin times the YaRN attention factor) -> causal GQA softmax attention -> o_proj
 * -> residual -> RMSNorm -> down(silu(gate) * up) -> residual, then the final norm and the LM head
 * (the embedding when tied).
 */

/** The config fields the reference reads (Hugging Face names). */
export interface RefConfig {
  model_type: 'qwen2' | 'llama';
  vocab_size: number;
  hidden_size: number;
  intermediate_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  head_dim: number;
  rms_norm_eps: number;
  rope_theta: number;
  rope_scaling: Record<string, number | string | boolean> | null;
  max_position_embeddings: number;
  tie_word_embeddings: boolean;
}

/** Rotary frequencies and the cos/sin scale, per transformers' modeling_rope_utils. */
export function refRope(c: RefConfig): { freq: number[]; scale: number } {
  const d = c.head_dim;
  const base = c.rope_theta;
  const freq: number[] = [];
  for (let i = 0; i < d; i += 2) freq.push(base ** (-i / d));
  const s = c.rope_scaling;
  const kind = s ? String(s.rope_type ?? s.type) : 'default';
  if (kind === 'default') return { freq, scale: 1 };
  const factor = Number(s?.factor);
  if (kind === 'linear') return { freq: freq.map((f) => f / factor), scale: 1 };
  if (kind === 'llama3') {
    const lo = Number(s?.low_freq_factor ?? 1);
    const hi = Number(s?.high_freq_factor ?? 4);
    const old = Number(s?.original_max_position_embeddings);
    return {
      scale: 1,
      freq: freq.map((f) => {
        const wl = (2 * Math.PI) / f;
        if (wl > old / lo) return f / factor;
        if (wl < old / hi) return f;
        const sm = (old / wl - lo) / (hi - lo);
        return (1 - sm) * (f / factor) + sm * f;
      }),
    };
  }
  if (kind !== 'yarn') throw new Error(`reference: rope type ${kind}`);
  const orig = Number(s?.original_max_position_embeddings ?? c.max_position_embeddings);
  const dimAt = (rot: number) => (d * Math.log(orig / (rot * 2 * Math.PI))) / (2 * Math.log(base));
  const low = Math.max(Math.floor(dimAt(Number(s?.beta_fast ?? 32))), 0);
  let high = Math.min(Math.ceil(dimAt(Number(s?.beta_slow ?? 1))), d - 1);
  if (low === high) high += 0.001;
  const out = freq.map((f, i) => {
    const ramp = Math.min(Math.max((i - low) / (high - low), 0), 1);
    // ramp 0: extrapolation (f), ramp 1: interpolation (f / factor)
    return (f / factor) * ramp + f * (1 - ramp);
  });
  return { freq: out, scale: factor <= 1 ? 1 : 0.1 * Math.log(factor) + 1 };
}

type Params = (name: string) => Float32Array;

function rmsNorm(x: Float64Array, w: Float32Array, eps: number): Float64Array {
  let ss = 0;
  for (const v of x) ss += v * v;
  const inv = 1 / Math.sqrt(ss / x.length + eps);
  return x.map((v, j) => v * inv * (w[j] as number));
}

/** y = W x (+ b) for W [out, in] row-major. */
function matvec(W: Float32Array, x: Float64Array, out: number, b?: Float32Array): Float64Array {
  const n = x.length;
  const y = new Float64Array(out);
  for (let o = 0; o < out; o++) {
    let s = b ? (b[o] as number) : 0;
    for (let i = 0; i < n; i++) s += (W[o * n + i] as number) * (x[i] as number);
    y[o] = s;
  }
  return y;
}

/** Logits [T][vocab] for tokens at positions 0..T-1. */
export function referenceForward(c: RefConfig, p: Params, tokens: number[]): Float64Array[] {
  const H = c.hidden_size;
  const hd = c.head_dim;
  const nh = c.num_attention_heads;
  const nkv = c.num_key_value_heads;
  const { freq, scale } = refRope(c);
  const E = p('model.embed_tokens.weight');
  let xs = tokens.map((t) => Float64Array.from(E.subarray(t * H, (t + 1) * H)));
  const rope = (v: Float64Array, heads: number, pos: number) => {
    for (let h = 0; h < heads; h++) {
      for (let i = 0; i < hd / 2; i++) {
        const a = pos * (freq[i] as number);
        const cs = Math.cos(a) * scale;
        const sn = Math.sin(a) * scale;
        const x1 = v[h * hd + i] as number;
        const x2 = v[h * hd + i + hd / 2] as number;
        v[h * hd + i] = x1 * cs - x2 * sn;
        v[h * hd + i + hd / 2] = x2 * cs + x1 * sn;
      }
    }
  };
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const pre = `model.layers.${l}.`;
    const bias = (n: string) => (c.model_type === 'qwen2' ? p(`${pre}self_attn.${n}_proj.bias`) : undefined);
    const qs: Float64Array[] = [];
    const ks: Float64Array[] = [];
    const vs: Float64Array[] = [];
    xs.forEach((x, t) => {
      const h = rmsNorm(x, p(`${pre}input_layernorm.weight`), c.rms_norm_eps);
      const q = matvec(p(`${pre}self_attn.q_proj.weight`), h, nh * hd, bias('q'));
      const k = matvec(p(`${pre}self_attn.k_proj.weight`), h, nkv * hd, bias('k'));
      rope(q, nh, t);
      rope(k, nkv, t);
      qs.push(q);
      ks.push(k);
      vs.push(matvec(p(`${pre}self_attn.v_proj.weight`), h, nkv * hd, bias('v')));
    });
    xs = xs.map((x, t) => {
      const att = new Float64Array(nh * hd);
      for (let h = 0; h < nh; h++) {
        const g = Math.floor(h / (nh / nkv));
        const sc: number[] = [];
        for (let s = 0; s <= t; s++) {
          let d = 0;
          for (let i = 0; i < hd; i++) d += (qs[t]?.[h * hd + i] as number) * (ks[s]?.[g * hd + i] as number);
          sc.push(d / Math.sqrt(hd));
        }
        const m = Math.max(...sc);
        const e = sc.map((v) => Math.exp(v - m));
        const z = e.reduce((a, b) => a + b, 0);
        for (let i = 0; i < hd; i++) {
          let acc = 0;
          for (let s = 0; s <= t; s++) acc += ((e[s] as number) / z) * (vs[s]?.[g * hd + i] as number);
          att[h * hd + i] = acc;
        }
      }
      const o = matvec(p(`${pre}self_attn.o_proj.weight`), att, H);
      const x1 = x.map((v, j) => v + (o[j] as number));
      const h2 = rmsNorm(x1, p(`${pre}post_attention_layernorm.weight`), c.rms_norm_eps);
      const I = c.intermediate_size;
      const gate = matvec(p(`${pre}mlp.gate_proj.weight`), h2, I);
      const up = matvec(p(`${pre}mlp.up_proj.weight`), h2, I);
      const a = gate.map((g, j) => (g / (1 + Math.exp(-g))) * (up[j] as number));
      const down = matvec(p(`${pre}mlp.down_proj.weight`), a, H);
      return x1.map((v, j) => v + (down[j] as number));
    });
  }
  const head = c.tie_word_embeddings ? E : p('lm_head.weight');
  return xs.map((x) => matvec(head, rmsNorm(x, p('model.norm.weight'), c.rms_norm_eps), c.vocab_size));
}

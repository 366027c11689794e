/**
 * Hugging Face config.json handling for the Qwen2 / Llama family: defaults, checks, and the rotary
 * frequencies (default, linear, YaRN and Llama 3 scaling, as transformers' modeling_rope_utils
 * computes them, here in float64).
 */
import { SwerlError } from '../errors.js';

/** A Hugging Face config for Qwen2ForCausalLM or LlamaForCausalLM (field names as in config.json). */
export interface HfModelConfig {
  architectures?: string[];
  model_type?: string;
  vocab_size: number;
  hidden_size: number;
  intermediate_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads?: number;
  head_dim?: number;
  rms_norm_eps?: number;
  rope_theta?: number;
  rope_scaling?: RopeScaling | null;
  tie_word_embeddings?: boolean;
  max_position_embeddings?: number;
  attention_bias?: boolean;
  mlp_bias?: boolean;
  hidden_act?: string;
  initializer_range?: number;
  torch_dtype?: string;
  [key: string]: unknown;
}

/** `rope_scaling` as config.json spells it (`type` in older files, `rope_type` in newer). */
export interface RopeScaling {
  type?: string;
  rope_type?: string;
  factor?: number;
  original_max_position_embeddings?: number;
  attention_factor?: number;
  beta_fast?: number;
  beta_slow?: number;
  mscale?: number;
  mscale_all_dim?: number;
  truncate?: boolean;
  low_freq_factor?: number;
  high_freq_factor?: number;
  [key: string]: unknown;
}

/** What the native decoder takes (native/model/model_config.h). */
export interface NativeModelConfig {
  vocab: number;
  hidden: number;
  intermediate: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  rmsEps: number;
  qkvBias: boolean;
  tiedEmbeddings: boolean;
  invFreq: Float64Array;
  ropeAttentionFactor: number;
}

const ARCHITECTURES: Record<string, 'qwen2' | 'llama'> = {
  Qwen2ForCausalLM: 'qwen2',
  LlamaForCausalLM: 'llama',
};

function unsupported(what: string): SwerlError {
  return new SwerlError(
    `${what}; swerl runs Qwen2ForCausalLM and LlamaForCausalLM checkpoints (Qwen2 / Qwen2.5, Llama 2 / 3)`,
    'UNSUPPORTED_MODEL',
  );
}

function field(o: Record<string, unknown>, name: string, integer: boolean, min: number): number {
  const v = o[name];
  if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isInteger(v)) || v < min) {
    throw new SwerlError(
      `config.${name} must be ${integer ? 'an integer' : 'a number'} >= ${min}, got ${JSON.stringify(v)}`,
      'INVALID_ARGUMENT',
    );
  }
  return v;
}

/**
 * The config with every field the model uses filled in (transformers' defaults for the family),
 * after checking that swerl can run it. Throws UNSUPPORTED_MODEL or INVALID_ARGUMENT.
 */
export function normalizeConfig(raw: unknown): HfModelConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new SwerlError('config must be an object (the contents of config.json)', 'INVALID_ARGUMENT');
  }
  const o = raw as Record<string, unknown>;
  const archs = Array.isArray(o.architectures) ? (o.architectures as unknown[]) : undefined;
  const arch = archs?.[0];
  let family: 'qwen2' | 'llama' | undefined;
  if (typeof arch === 'string') {
    family = ARCHITECTURES[arch];
    if (!family) throw unsupported(`architecture ${JSON.stringify(arch)} is not supported`);
  } else if (o.model_type === 'qwen2' || o.model_type === 'llama') {
    family = o.model_type;
  } else {
    throw unsupported(
      `config names no known architecture (architectures ${JSON.stringify(archs)}, model_type ${JSON.stringify(o.model_type)})`,
    );
  }
  for (const name of ['vocab_size', 'hidden_size', 'intermediate_size', 'num_hidden_layers', 'num_attention_heads'])
    field(o, name, true, 1);
  const heads = o.num_attention_heads as number;
  const out: HfModelConfig = {
    ...(o as HfModelConfig),
    architectures: [family === 'qwen2' ? 'Qwen2ForCausalLM' : 'LlamaForCausalLM'],
    model_type: family,
    num_key_value_heads: (o.num_key_value_heads as number | undefined) ?? heads,
    head_dim: (o.head_dim as number | undefined) ?? Math.floor((o.hidden_size as number) / heads),
    rms_norm_eps: (o.rms_norm_eps as number | undefined) ?? 1e-6,
    rope_theta: (o.rope_theta as number | undefined) ?? 10000,
    rope_scaling: (o.rope_scaling as RopeScaling | null | undefined) ?? null,
    tie_word_embeddings: (o.tie_word_embeddings as boolean | undefined) ?? false,
    max_position_embeddings: (o.max_position_embeddings as number | undefined) ?? (family === 'qwen2' ? 32768 : 2048),
    hidden_act: (o.hidden_act as string | undefined) ?? 'silu',
    initializer_range: (o.initializer_range as number | undefined) ?? 0.02,
  };
  field(out, 'num_key_value_heads', true, 1);
  field(out, 'head_dim', true, 2);
  field(out, 'rms_norm_eps', false, Number.MIN_VALUE);
  field(out, 'rope_theta', false, Number.MIN_VALUE);
  field(out, 'max_position_embeddings', true, 1);
  if (heads % (out.num_key_value_heads as number) !== 0)
    throw new SwerlError('config.num_attention_heads must be a multiple of num_key_value_heads', 'INVALID_ARGUMENT');
  if ((out.head_dim as number) % 2 !== 0) throw new SwerlError('config.head_dim must be even', 'INVALID_ARGUMENT');
  if (out.hidden_act !== 'silu')
    throw unsupported(`hidden_act ${JSON.stringify(out.hidden_act)} is not supported (only silu)`);
  if (family === 'llama' && (out.attention_bias === true || out.mlp_bias === true))
    throw unsupported('Llama attention_bias / mlp_bias are not supported');
  if (family === 'qwen2' && out.use_sliding_window === true)
    throw unsupported('Qwen2 sliding-window attention (use_sliding_window) is not supported');
  if (typeof out.tie_word_embeddings !== 'boolean')
    throw new SwerlError('config.tie_word_embeddings must be a boolean', 'INVALID_ARGUMENT');
  ropeParameters(out); // checks rope_scaling
  return out;
}

/** The rotary inverse frequencies (head_dim / 2) and the attention factor on cos/sin. */
export function ropeParameters(c: HfModelConfig): { invFreq: Float64Array; attentionFactor: number } {
  const dim = c.head_dim as number;
  const base = c.rope_theta as number;
  const half = dim / 2;
  const invFreq = Float64Array.from({ length: half }, (_, i) => 1 / base ** ((2 * i) / dim));
  const s = c.rope_scaling;
  const type = s ? (s.rope_type ?? s.type ?? 'default') : 'default';
  if (type === 'default') return { invFreq, attentionFactor: 1 };
  const rs = s as RopeScaling;
  const factor = rs.factor;
  if (typeof factor !== 'number' || !(factor >= 1))
    throw new SwerlError(
      `rope_scaling.factor must be a number >= 1, got ${JSON.stringify(factor)}`,
      'INVALID_ARGUMENT',
    );
  if (type === 'linear') return { invFreq: invFreq.map((f) => f / factor), attentionFactor: 1 };
  if (type === 'yarn') return yarn(rs, factor, dim, base, c.max_position_embeddings as number);
  if (type === 'llama3') return llama3(rs, factor, invFreq, c.max_position_embeddings as number);
  throw unsupported(`rope_scaling type ${JSON.stringify(type)} is not supported (default, linear, yarn, llama3)`);
}

function yarn(
  s: RopeScaling,
  factor: number,
  dim: number,
  base: number,
  maxPos: number,
): { invFreq: Float64Array; attentionFactor: number } {
  const original = s.original_max_position_embeddings ?? maxPos;
  const getMscale = (scale: number, m = 1) => (scale <= 1 ? 1 : 0.1 * m * Math.log(scale) + 1);
  let attentionFactor = s.attention_factor;
  if (attentionFactor === undefined) {
    attentionFactor =
      s.mscale && s.mscale_all_dim
        ? getMscale(factor, s.mscale) / getMscale(factor, s.mscale_all_dim)
        : getMscale(factor);
  }
  const betaFast = s.beta_fast ?? 32;
  const betaSlow = s.beta_slow ?? 1;
  const correctionDim = (rot: number) => (dim * Math.log(original / (rot * 2 * Math.PI))) / (2 * Math.log(base));
  let low = correctionDim(betaFast);
  let high = correctionDim(betaSlow);
  if (s.truncate ?? true) {
    low = Math.floor(low);
    high = Math.ceil(high);
  }
  low = Math.max(low, 0);
  high = Math.min(high, dim - 1);
  if (low === high) high += 0.001;
  const half = dim / 2;
  const invFreq = new Float64Array(half);
  for (let i = 0; i < half; i++) {
    const posFreq = base ** ((2 * i) / dim);
    const extrapolation = 1 / posFreq;
    const interpolation = 1 / (factor * posFreq);
    const ramp = Math.min(1, Math.max(0, (i - low) / (high - low)));
    const extrapolationFactor = 1 - ramp;
    invFreq[i] = interpolation * (1 - extrapolationFactor) + extrapolation * extrapolationFactor;
  }
  return { invFreq, attentionFactor };
}

function llama3(
  s: RopeScaling,
  factor: number,
  invFreq: Float64Array,
  maxPos: number,
): { invFreq: Float64Array; attentionFactor: number } {
  const lowFreqFactor = s.low_freq_factor ?? 1;
  const highFreqFactor = s.high_freq_factor ?? 4;
  const old = s.original_max_position_embeddings ?? maxPos;
  const lowWavelen = old / lowFreqFactor;
  const highWavelen = old / highFreqFactor;
  const out = invFreq.map((f) => {
    const wavelen = (2 * Math.PI) / f;
    if (wavelen < highWavelen) return f;
    if (wavelen > lowWavelen) return f / factor;
    const smooth = (old / wavelen - lowFreqFactor) / (highFreqFactor - lowFreqFactor);
    return ((1 - smooth) * f) / factor + smooth * f;
  });
  return { invFreq: out, attentionFactor: 1 };
}

/** The native decoder's config for a normalized HF config. */
export function nativeConfig(c: HfModelConfig): NativeModelConfig {
  const { invFreq, attentionFactor } = ropeParameters(c);
  return {
    vocab: c.vocab_size,
    hidden: c.hidden_size,
    intermediate: c.intermediate_size,
    layers: c.num_hidden_layers,
    heads: c.num_attention_heads,
    kvHeads: c.num_key_value_heads as number,
    headDim: c.head_dim as number,
    rmsEps: c.rms_norm_eps as number,
    qkvBias: c.model_type === 'qwen2',
    tiedEmbeddings: c.tie_word_embeddings as boolean,
    invFreq,
    ropeAttentionFactor: attentionFactor,
  };
}

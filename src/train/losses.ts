/**
 * Token losses over logits rows, exact to verl's math (DESIGN.md section 6): the PPO-clip policy
 * loss with DAPO's asymmetric clip, dual clip, loss aggregation modes, k3 KL, entropy bonus and
 * truncated importance sampling; and masked cross-entropy for SFT/RFT. Native, multi-threaded,
 * two reads of each row, the gradient written directly. A temperature T scales the logits by 1 / T
 * first (verl's actor temperature), with the engine's arithmetic for bitwise equal logprobs.
 * `policyLoss` and `sftLoss` also take the logits as a {@link DeviceTensor} (the CUDA kernels of
 * native/kernels/cuda/losses.cu): the gradient then stays on the device, the rest comes back.
 * `policyLossFused` and `sftLossFused` likewise take the hidden states and the LM-head weight as
 * DeviceTensors (native/kernels/cuda/fused_loss.cu: cuBLAS bf16 products around the same loss rows).
 */
import { DeviceTensor } from '../device-tensor.js';
import { invalidArgument } from '../errors.js';
import { type NativePolicyLossConfig, native } from '../native.js';
import { checkEnum, checkInteger, checkObject } from '../validate.js';

/** Loss aggregation, as verl's `loss_agg_mode`. */
export type LossAggregation = 'token-mean' | 'seq-mean-token-mean' | 'seq-mean-token-sum' | 'seq-mean-token-sum-norm';

/** Options of {@link policyLoss}. */
export interface PolicyLossConfig {
  /** ε_low of the clip range [1 − ε_low, 1 + ε_high] (default 0.2). */
  clipLow?: number;
  /** ε_high, DAPO's clip-higher (default 0.28). */
  clipHigh?: number;
  /** Dual-clip constant c > 1 for negative advantages (default 0 = off; verl uses 3). */
  dualClip?: number;
  /** Aggregation over tokens (default 'token-mean', as DAPO). */
  agg?: LossAggregation;
  /** Dr.GRPO's constant for 'seq-mean-token-sum-norm' (required there). */
  normLength?: number;
  /** Weight of the k3 KL penalty against refLogprobs (default 0). */
  klCoef?: number;
  /** Weight of the entropy bonus (subtracted; default 0). */
  entropyCoef?: number;
  /** Truncated importance sampling cap on exp(old − rollout) logprobs (default 0 = off). */
  tisCap?: number;
  /**
   * The rollout temperature T (default 1; a finite number > 0): the loss is that of
   * softmax(logits / T), as verl divides the actor's logits by the rollout temperature. The
   * logprobs, entropy, ratios and KL are of that distribution and the gradient is with respect to
   * the unscaled logits (the chain-rule factor 1 / T included). The logits are scaled by the f32
   * 1 / T and the row statistics follow the engine's sampler, so the logprobs are bitwise the
   * engine's at temperature T (without top-k/top-p/min-p or penalties). At 1 nothing is scaled.
   */
  temperature?: number;
}

/** Inputs of {@link policyLoss}: row t of logits [T, vocab] scores targets[t]. */
export interface PolicyLossInputs {
  logits: Float32Array;
  vocab: number;
  targets: Int32Array;
  oldLogprobs: Float32Array;
  advantages: Float32Array;
  mask: Float32Array;
  /** Sequence of each token, for the seq-mean modes (default: one sequence). */
  seqIds?: Int32Array;
  refLogprobs?: Float32Array;
  rolloutLogprobs?: Float32Array;
}

/**
 * Inputs of {@link policyLoss} on the GPU: the logits [T, vocab] (f32) in device memory; the
 * per-token arrays stay on the host.
 */
export interface DevicePolicyLossInputs extends Omit<PolicyLossInputs, 'logits'> {
  logits: DeviceTensor;
}

/** Result of {@link policyLoss}. */
export interface PolicyLossResult {
  loss: number;
  /** d loss / d logits, [T, vocab]. */
  gradLogits: Float32Array;
  /** log p(target) of every row (masked or not). */
  logprobs: Float32Array;
  /** Masked mean entropy. */
  entropy: number;
  /** Share of masked tokens with A < 0 and ratio < 1 − clipLow. */
  clipFracLow: number;
  /** Share of masked tokens with A > 0 and ratio > 1 + clipHigh. */
  clipFracHigh: number;
}

/**
 * Where to write the gradient: a reused [T, vocab] buffer, or the logits themselves (in place,
 * as verl and Liger do). Without it a new array is allocated each call, and for long sequences
 * first-touching that memory costs more than the loss.
 */
export interface LossOutput {
  gradLogits?: Float32Array;
}

/**
 * Where the losses on a {@link DeviceTensor} write the gradient: a reused f32 tensor of T × vocab
 * elements, or the logits tensor itself (in place). Without it a new [T, vocab] tensor is
 * allocated each call; the caller owns it (dispose() frees it).
 */
export interface DeviceLossOutput {
  gradLogits?: DeviceTensor;
}

/** Result of {@link policyLoss} on a {@link DeviceTensor}: the gradient on the device, the rest on the host. */
export interface DevicePolicyLossResult extends Omit<PolicyLossResult, 'gradLogits'> {
  /** d loss / d logits, [T, vocab]: `out.gradLogits` when given, else a new tensor. */
  gradLogits: DeviceTensor;
}

/** The logits' temperature of the SFT losses ({@link sftLoss}, {@link sftLossFused}). */
export interface LossTemperature {
  /**
   * The loss is of softmax(logits / temperature) (default 1; a finite number > 0), as
   * {@link PolicyLossConfig.temperature}; `sequenceLogprobs` uses it for reference logprobs at
   * the rollout temperature.
   */
  temperature?: number;
}

/** Result of {@link sftLoss}. */
export interface SftLossResult {
  loss: number;
  gradLogits: Float32Array;
  logprobs: Float32Array;
}

/** Result of {@link sftLoss} on a {@link DeviceTensor}: the gradient on the device, the rest on the host. */
export interface DeviceSftLossResult extends Omit<SftLossResult, 'gradLogits'> {
  /** d loss / d logits, [T, vocab]: `out.gradLogits` when given, else a new tensor. */
  gradLogits: DeviceTensor;
}

const AGGREGATIONS = ['token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum', 'seq-mean-token-sum-norm'] as const;

/**
 * The policy-gradient loss: per token ℓ = max(−A·r, −A·clip(r, 1−clipLow, 1+clipHigh)),
 * r = exp(clamp(logp − old, ±20)), with dual clip min(ℓ, −A·c) for A < 0, times the TIS weight;
 * aggregated by `agg`, plus klCoef·agg(k3) minus entropyCoef·agg(H), all of
 * softmax(logits / `cfg.temperature`). Errors: INVALID_ARGUMENT
 * for shapes, targets or options; NON_FINITE_LOGITS for NaN or ±Inf logits.
 *
 * With the logits in a {@link DeviceTensor} (f32, T × vocab elements) the CUDA kernels compute the
 * same loss (same options, checks and errors, results equal to the CPU's within float rounding):
 * the gradient is written to `out.gradLogits` (a DeviceTensor; may be the logits tensor, in place)
 * or a new [T, vocab] tensor, the logprobs and statistics come back on the host. A row's logprob
 * and gradient do not depend on the other rows of the batch. A refused call (NON_FINITE_LOGITS
 * included) writes no gradient. CUDA_UNAVAILABLE without a CUDA build and device.
 */
export function policyLoss(a: PolicyLossInputs, cfg?: PolicyLossConfig, out?: LossOutput): PolicyLossResult;
export function policyLoss(
  a: DevicePolicyLossInputs,
  cfg?: PolicyLossConfig,
  out?: DeviceLossOutput,
): DevicePolicyLossResult;
export function policyLoss(
  a: PolicyLossInputs | DevicePolicyLossInputs,
  cfg: PolicyLossConfig = {},
  out: LossOutput | DeviceLossOutput = {},
): PolicyLossResult | DevicePolicyLossResult {
  const o = checkObject('inputs', a);
  const T = checkRows(o);
  const config = checkConfig(cfg);
  const seqIds = optionalArray(o, 'seqIds', Int32Array, T);
  if (o.logits instanceof DeviceTensor) {
    const logits = o.logits;
    const oldLogprobs = requiredFloats(o, 'oldLogprobs', T);
    const advantages = requiredFloats(o, 'advantages', T);
    const mask = requiredFloats(o, 'mask', T);
    const refLogprobs = optionalArray(o, 'refLogprobs', Float32Array, T) ?? null;
    const rolloutLogprobs = optionalArray(o, 'rolloutLogprobs', Float32Array, T) ?? null;
    return withDeviceGrad(out, T, o.vocab as number, (grad) => ({
      ...native().policyLossDevice(
        logits.buffer,
        o.vocab as number,
        o.targets as Int32Array,
        oldLogprobs,
        advantages,
        mask,
        seqIds ?? null,
        refLogprobs,
        rolloutLogprobs,
        config,
        grad.buffer,
      ),
      gradLogits: grad,
    }));
  }
  const r = native().policyLoss(
    o.logits as Float32Array,
    o.vocab as number,
    o.targets as Int32Array,
    requiredFloats(o, 'oldLogprobs', T),
    requiredFloats(o, 'advantages', T),
    requiredFloats(o, 'mask', T),
    seqIds ?? null,
    optionalArray(o, 'refLogprobs', Float32Array, T) ?? null,
    optionalArray(o, 'rolloutLogprobs', Float32Array, T) ?? null,
    config,
    gradOut(out, T * (o.vocab as number)),
  );
  return r;
}

/** The LM head of the fused losses: logits = hidden · weightᵀ, never materialised whole. */
export interface LmHeadInputs {
  /** Final hidden states [T, hiddenSize]. */
  hidden: Float32Array;
  /** The LM-head weight [vocab, hiddenSize] (Hugging Face's lm_head.weight). */
  weight: Float32Array;
  hiddenSize: number;
  vocab: number;
  targets: Int32Array;
}

/** Options of the fused losses. */
export interface FusedLossOptions {
  /** Tokens per chunk (default 256): peak extra memory is chunkTokens × vocab floats. */
  chunkTokens?: number;
  /** Write d loss / d hidden here ([T, hiddenSize]) instead of a new array. */
  gradHidden?: Float32Array;
  /**
   * Accumulate d loss / d weight into this [vocab, hiddenSize] array (gradient accumulation:
   * gradWeight += ...), instead of a new zeroed one. Reusing it also spares first-touching
   * vocab × hiddenSize floats on every call.
   */
  gradWeight?: Float32Array;
}

/** Result of {@link policyLossFused}: the gradients with respect to the hidden states and the weight. */
export interface FusedPolicyLossResult extends Omit<PolicyLossResult, 'gradLogits'> {
  /** d loss / d hidden, [T, hiddenSize]. */
  gradHidden: Float32Array;
  /** d loss / d weight, [vocab, hiddenSize]. */
  gradWeight: Float32Array;
}

/** Result of {@link sftLossFused}. */
export interface FusedSftLossResult {
  loss: number;
  gradHidden: Float32Array;
  gradWeight: Float32Array;
  logprobs: Float32Array;
}

/**
 * The LM head of the fused losses on the GPU: the hidden states [T, hiddenSize] and the weight
 * [vocab, hiddenSize] as f32 {@link DeviceTensor}s (only their sizes are checked against these
 * shapes); the targets and other per-token inputs stay on the host.
 */
export interface DeviceLmHeadInputs extends Omit<LmHeadInputs, 'hidden' | 'weight'> {
  /** Final hidden states, T × hiddenSize f32 elements on the device. */
  hidden: DeviceTensor;
  /** The LM-head weight, vocab × hiddenSize f32 elements on the device. */
  weight: DeviceTensor;
}

/** Options of the fused losses on {@link DeviceTensor}s. */
export interface DeviceFusedLossOptions {
  /**
   * Tokens per chunk (default 256): the call holds chunkTokens × vocab × 6 bytes of logits (f32
   * and their bf16 copy) plus vocab × hiddenSize × 2 bytes of bf16 weight on the device. Larger
   * chunks (e.g. 1024) feed the GPU's matrix units better.
   */
  chunkTokens?: number;
  /** Write d loss / d hidden here (an f32 DeviceTensor of T × hiddenSize elements) instead of a new tensor. */
  gradHidden?: DeviceTensor;
  /**
   * Accumulate d loss / d weight into this f32 DeviceTensor of vocab × hiddenSize elements
   * (gradWeight += ..., gradient accumulation), instead of a new zeroed one.
   */
  gradWeight?: DeviceTensor;
}

/** Result of {@link policyLossFused} on {@link DeviceTensor}s: the gradients on the device, the rest on the host. */
export interface DeviceFusedPolicyLossResult extends Omit<FusedPolicyLossResult, 'gradHidden' | 'gradWeight'> {
  /** d loss / d hidden, [T, hiddenSize]: `options.gradHidden` when given, else a new tensor. */
  gradHidden: DeviceTensor;
  /** d loss / d weight, [vocab, hiddenSize]: `options.gradWeight` (added to) when given, else a new tensor. */
  gradWeight: DeviceTensor;
}

/** Result of {@link sftLossFused} on {@link DeviceTensor}s: the gradients on the device, the rest on the host. */
export interface DeviceFusedSftLossResult extends Omit<FusedSftLossResult, 'gradHidden' | 'gradWeight'> {
  /** d loss / d hidden, [T, hiddenSize]. */
  gradHidden: DeviceTensor;
  /** d loss / d weight, [vocab, hiddenSize] (accumulated into `options.gradWeight` when given). */
  gradWeight: DeviceTensor;
}

/**
 * {@link policyLoss} fused with the LM head: from the final hidden states and the LM-head weight,
 * in chunks of tokens, so the [T, vocab] logits never exist (Liger's fused linear loss). The
 * loss and logprobs equal the unfused path's on the same logits.
 *
 * With `hidden` and `weight` as f32 {@link DeviceTensor}s the GPU computes it
 * (native/kernels/cuda/fused_loss.cu): per chunk, logits = hidden_c · weightᵀ, the gradient G of
 * the loss rows in place, gradHidden_c = G · weight and gradWeight += Gᵀ · hidden_c, the three
 * products by cuBLAS on bf16 operands (hidden, weight and G rounded to bf16) with f32 accumulation,
 * the loss rows as {@link policyLoss} on a DeviceTensor. The gradients stay on the device
 * (`options.gradHidden` / `options.gradWeight`, the latter added to, or new tensors the caller owns),
 * the loss, logprobs and statistics come back. Against a float64 evaluation on the bf16-rounded
 * hidden and weight, the loss and logprobs agree to 1e-5 (relative) and each gradient element to
 * 5e-3 of the sum of the absolute terms of its product (G's bf16 rounding, 2^-8, plus f32; bounds
 * and measured errors in native/kernels/cuda/fused_loss_cuda.h); the CPU path on the unrounded f32
 * inputs differs further by the inputs' rounding (each logit by at most 2^-7 of its
 * Σ|hidden·weight| terms). Errors as the CPU path's: INVALID_ARGUMENT (also for gradient tensors
 * of the wrong size or dtype, or aliasing the inputs or each other), NON_FINITE_LOGITS when hidden
 * or weight holds NaN or ±Inf (nothing written); CUDA_UNAVAILABLE without a CUDA build and device.
 */
export function policyLossFused(
  a: LmHeadInputs & Omit<PolicyLossInputs, 'logits' | 'vocab' | 'targets'>,
  cfg?: PolicyLossConfig,
  options?: FusedLossOptions,
): FusedPolicyLossResult;
export function policyLossFused(
  a: DeviceLmHeadInputs & Omit<PolicyLossInputs, 'logits' | 'vocab' | 'targets'>,
  cfg?: PolicyLossConfig,
  options?: DeviceFusedLossOptions,
): DeviceFusedPolicyLossResult;
export function policyLossFused(
  a: (LmHeadInputs | DeviceLmHeadInputs) & Omit<PolicyLossInputs, 'logits' | 'vocab' | 'targets'>,
  cfg: PolicyLossConfig = {},
  options: FusedLossOptions | DeviceFusedLossOptions = {},
): FusedPolicyLossResult | DeviceFusedPolicyLossResult {
  const o = checkObject('inputs', a);
  const T = checkLmHead(o);
  const config = checkConfig(cfg);
  const H = o.hiddenSize as number;
  const V = o.vocab as number;
  const oldLogprobs = requiredFloats(o, 'oldLogprobs', T);
  const advantages = requiredFloats(o, 'advantages', T);
  const mask = requiredFloats(o, 'mask', T);
  const seqIds = optionalArray(o, 'seqIds', Int32Array, T) ?? null;
  const refLogprobs = optionalArray(o, 'refLogprobs', Float32Array, T) ?? null;
  const rolloutLogprobs = optionalArray(o, 'rolloutLogprobs', Float32Array, T) ?? null;
  if (o.hidden instanceof DeviceTensor) {
    const [hidden, weight] = [o.hidden, o.weight as DeviceTensor];
    return withDeviceFusedGrads(options, T, H, V, hidden, weight, (chunkTokens, gradHidden, gradWeight) => ({
      ...native().policyLossFusedDevice(
        hidden.buffer,
        weight.buffer,
        H,
        V,
        o.targets as Int32Array,
        oldLogprobs,
        advantages,
        mask,
        seqIds,
        refLogprobs,
        rolloutLogprobs,
        config,
        chunkTokens,
        gradHidden.buffer,
        gradWeight.buffer,
      ),
      gradHidden,
      gradWeight,
    }));
  }
  return native().policyLossFused(
    o.hidden as Float32Array,
    o.weight as Float32Array,
    H,
    V,
    o.targets as Int32Array,
    oldLogprobs,
    advantages,
    mask,
    seqIds,
    refLogprobs,
    rolloutLogprobs,
    config,
    ...fusedOptions(options, T, H, V),
  );
}

/**
 * {@link sftLoss} fused with the LM head (see {@link policyLossFused}, also for `hidden` and
 * `weight` as {@link DeviceTensor}s on the GPU); `temperature` scales its logits as
 * {@link PolicyLossConfig.temperature}.
 */
export function sftLossFused(
  a: LmHeadInputs & { mask: Float32Array } & LossTemperature,
  options?: FusedLossOptions,
): FusedSftLossResult;
export function sftLossFused(
  a: DeviceLmHeadInputs & { mask: Float32Array } & LossTemperature,
  options?: DeviceFusedLossOptions,
): DeviceFusedSftLossResult;
export function sftLossFused(
  a: (LmHeadInputs | DeviceLmHeadInputs) & { mask: Float32Array } & LossTemperature,
  options: FusedLossOptions | DeviceFusedLossOptions = {},
): FusedSftLossResult | DeviceFusedSftLossResult {
  const o = checkObject('inputs', a);
  const T = checkLmHead(o);
  const scale = invTemperature('temperature', o.temperature ?? 1);
  const H = o.hiddenSize as number;
  const V = o.vocab as number;
  const mask = requiredFloats(o, 'mask', T);
  if (o.hidden instanceof DeviceTensor) {
    const [hidden, weight] = [o.hidden, o.weight as DeviceTensor];
    return withDeviceFusedGrads(options, T, H, V, hidden, weight, (chunkTokens, gradHidden, gradWeight) => ({
      ...native().sftLossFusedDevice(
        hidden.buffer,
        weight.buffer,
        H,
        V,
        o.targets as Int32Array,
        mask,
        chunkTokens,
        gradHidden.buffer,
        gradWeight.buffer,
        scale,
      ),
      gradHidden,
      gradWeight,
    }));
  }
  return native().sftLossFused(
    o.hidden as Float32Array,
    o.weight as Float32Array,
    H,
    V,
    o.targets as Int32Array,
    mask,
    ...fusedOptions(options, T, H, V),
    scale,
  );
}

// T, after checking hidden [T, hiddenSize] and weight [vocab, hiddenSize]: both Float32Arrays, or
// both f32 DeviceTensors of those sizes.
function checkLmHead(o: Record<string, unknown>): number {
  const onDevice = o.hidden instanceof DeviceTensor;
  for (const name of ['hidden', 'weight'] as const) {
    const v = o[name];
    if (onDevice) {
      if (!(v instanceof DeviceTensor) || v.dtype !== 'f32')
        throw invalidArgument(name, 'an f32 DeviceTensor (as hidden is one)', v);
    } else if (!(v instanceof Float32Array)) throw invalidArgument(name, 'a Float32Array or an f32 DeviceTensor', v);
  }
  const H = checkInteger('hiddenSize', o.hiddenSize, 1, 0x7fffffff);
  const V = checkInteger('vocab', o.vocab, 1, 0x7fffffff);
  if (!(o.targets instanceof Int32Array)) throw invalidArgument('targets', 'an Int32Array', o.targets);
  const T = o.targets.length;
  const size = (v: unknown) => (v instanceof DeviceTensor ? v.size : (v as Float32Array).length);
  if (size(o.hidden) !== T * H)
    throw invalidArgument('hidden', `[targets.length, hiddenSize] = ${T * H} values`, `${size(o.hidden)} values`);
  if (size(o.weight) !== V * H)
    throw invalidArgument('weight', `[vocab, hiddenSize] = ${V * H} values`, `${size(o.weight)} values`);
  return T;
}

function fusedOptions(
  options: unknown,
  T: number,
  H: number,
  V: number,
): [number, Float32Array | undefined, Float32Array | undefined] {
  const o = checkObject('options', options);
  return [
    checkInteger('chunkTokens', o.chunkTokens ?? 256, 1, 1 << 20),
    optionalArray(o, 'gradHidden', Float32Array, T * H),
    optionalArray(o, 'gradWeight', Float32Array, V * H),
  ];
}

/**
 * Runs a fused loss on the device with its gradient tensors: options.gradHidden / gradWeight (f32
 * DeviceTensors of T × H and V × H elements, distinct from each other and from the inputs) or new
 * zeroed [T, H] / [V, H] ones, the new ones disposed again if the call throws.
 */
function withDeviceFusedGrads<R>(
  options: unknown,
  T: number,
  H: number,
  V: number,
  hidden: DeviceTensor,
  weight: DeviceTensor,
  run: (chunkTokens: number, gradHidden: DeviceTensor, gradWeight: DeviceTensor) => R,
): R {
  const o = checkObject('options', options);
  const chunkTokens = checkInteger('chunkTokens', o.chunkTokens ?? 256, 1, 1 << 20);
  const given = (name: 'gradHidden' | 'gradWeight', n: number): DeviceTensor | undefined => {
    const g = o[name];
    if (g === undefined || g === null) return undefined;
    if (!(g instanceof DeviceTensor) || g.dtype !== 'f32' || g.size !== n)
      throw invalidArgument(name, `an f32 DeviceTensor of ${n} elements`, g);
    if (g === hidden || g === weight) throw invalidArgument(name, 'a tensor other than hidden and weight', name);
    return g;
  };
  const gh = given('gradHidden', T * H);
  const gw = given('gradWeight', V * H);
  if (gh !== undefined && gh === gw) throw invalidArgument('gradWeight', 'a tensor other than gradHidden', 'the same');
  const created: DeviceTensor[] = [];
  const fresh = (shape: number[]): DeviceTensor => {
    const t = DeviceTensor.zeros(shape);
    created.push(t);
    return t;
  };
  try {
    return run(chunkTokens, gh ?? fresh([T, H]), gw ?? fresh([V, H]));
  } catch (e) {
    for (const t of created) t.dispose();
    throw e;
  }
}

/**
 * Masked mean cross-entropy −Σ m·logp / Σ m (0 when Σ m = 0), its gradient and the logprobs, of
 * softmax(logits / temperature) (default temperature 1).
 *
 * With the logits in a {@link DeviceTensor} the CUDA kernels compute it, as {@link policyLoss}
 * does: the gradient goes to `out.gradLogits` (a DeviceTensor, possibly the logits) or a new one.
 */
export function sftLoss(
  a: { logits: Float32Array; vocab: number; targets: Int32Array; mask: Float32Array } & LossTemperature,
  out?: LossOutput,
): SftLossResult;
export function sftLoss(
  a: { logits: DeviceTensor; vocab: number; targets: Int32Array; mask: Float32Array } & LossTemperature,
  out?: DeviceLossOutput,
): DeviceSftLossResult;
export function sftLoss(
  a: { logits: Float32Array | DeviceTensor; vocab: number; targets: Int32Array; mask: Float32Array } & LossTemperature,
  out: LossOutput | DeviceLossOutput = {},
): SftLossResult | DeviceSftLossResult {
  const o = checkObject('inputs', a);
  const T = checkRows(o);
  const scale = invTemperature('temperature', o.temperature ?? 1);
  if (o.logits instanceof DeviceTensor) {
    const logits = o.logits;
    const mask = requiredFloats(o, 'mask', T);
    return withDeviceGrad(out, T, o.vocab as number, (grad) => ({
      ...native().sftLossDevice(logits.buffer, o.vocab as number, o.targets as Int32Array, mask, grad.buffer, scale),
      gradLogits: grad,
    }));
  }
  return native().sftLoss(
    o.logits as Float32Array,
    o.vocab as number,
    o.targets as Int32Array,
    requiredFloats(o, 'mask', T),
    gradOut(out, T * (o.vocab as number)),
    scale,
  );
}

function gradOut(out: unknown, n: number): Float32Array | undefined {
  return optionalArray(checkObject('out', out), 'gradLogits', Float32Array, n);
}

/**
 * Runs a device loss with its gradient tensor: out.gradLogits (an f32 DeviceTensor of T × vocab
 * elements) or a new [T, vocab] one, disposed again if the call throws.
 */
function withDeviceGrad<R>(out: unknown, T: number, vocab: number, run: (grad: DeviceTensor) => R): R {
  const g = checkObject('out', out).gradLogits;
  if (g !== undefined && g !== null) {
    if (!(g instanceof DeviceTensor) || g.dtype !== 'f32' || g.size !== T * vocab)
      throw invalidArgument('gradLogits', `an f32 DeviceTensor of [targets.length, vocab] = ${T * vocab} elements`, g);
    return run(g);
  }
  const grad = DeviceTensor.zeros([T, vocab]);
  try {
    return run(grad);
  } catch (e) {
    grad.dispose();
    throw e;
  }
}

/** @internal The policy-loss config with defaults filled in, checked (INVALID_ARGUMENT). */
export function checkConfig(cfg: unknown): NativePolicyLossConfig {
  const c = checkObject('config', cfg);
  const agg = checkEnum('agg', c.agg ?? 'token-mean', AGGREGATIONS);
  const config = {
    clipLow: checkNumber('clipLow', c.clipLow ?? 0.2, 0, 1),
    clipHigh: checkNumber('clipHigh', c.clipHigh ?? 0.28, 0),
    dualClip: checkNumber('dualClip', c.dualClip ?? 0, 0),
    agg,
    normLength: checkNumber('normLength', c.normLength ?? 0, 0),
    klCoef: checkNumber('klCoef', c.klCoef ?? 0, 0),
    entropyCoef: checkNumber('entropyCoef', c.entropyCoef ?? 0),
    tisCap: checkNumber('tisCap', c.tisCap ?? 0, 0),
    invTemperature: invTemperature('temperature', c.temperature ?? 1),
  };
  if (config.dualClip !== 0 && config.dualClip <= 1)
    throw invalidArgument('dualClip', '0 (off) or > 1', config.dualClip);
  if (agg === 'seq-mean-token-sum-norm' && config.normLength <= 0) {
    throw invalidArgument('normLength', "> 0 with agg 'seq-mean-token-sum-norm'", c.normLength);
  }
  return config;
}

/**
 * @internal The logit scale of temperature `t`: 1 / t as the engine's sampler computes it, the f32
 * quotient 1.0f / t of t rounded to f32 (the f64 quotient of two f32 values rounded to f32 is that
 * quotient: double rounding is exact for division since 53 ≥ 2·24 + 2). INVALID_ARGUMENT unless t
 * is a finite number > 0 with a finite f32 reciprocal.
 */
export function invTemperature(name: string, t: unknown): number {
  if (typeof t !== 'number' || !Number.isFinite(t) || t <= 0) throw invalidArgument(name, 'a finite number > 0', t);
  const s = Math.fround(1 / Math.fround(t));
  if (!Number.isFinite(s) || s <= 0) throw invalidArgument(name, 'a temperature with a finite, nonzero f32 1 / T', t);
  return s;
}

// T, after checking the logits (a Float32Array, or an f32 DeviceTensor) hold [T, vocab] values.
function checkRows(o: Record<string, unknown>): number {
  const logits = o.logits;
  const onDevice = logits instanceof DeviceTensor;
  if (!(logits instanceof Float32Array) && !onDevice)
    throw invalidArgument('logits', 'a Float32Array or a DeviceTensor', logits);
  if (onDevice && logits.dtype !== 'f32') throw invalidArgument('logits', 'an f32 DeviceTensor', `${logits.dtype}`);
  const vocab = checkInteger('vocab', o.vocab, 1, 0x7fffffff);
  if (!(o.targets instanceof Int32Array)) throw invalidArgument('targets', 'an Int32Array', o.targets);
  const T = o.targets.length;
  const n = onDevice ? logits.size : logits.length;
  if (n !== T * vocab) {
    throw invalidArgument('logits', `[targets.length, vocab] = ${T * vocab} values`, `${n} values`);
  }
  return T;
}

/** @internal o[name]: a Float32Array of T values. */
export function requiredFloats(o: Record<string, unknown>, name: string, T: number): Float32Array {
  const v = optionalArray(o, name, Float32Array, T);
  if (v === undefined) throw invalidArgument(name, 'a Float32Array', undefined);
  return v;
}

/** @internal o[name] when present: a `type` of T values (INVALID_ARGUMENT otherwise). */
export function optionalArray<A extends Float32Array | Int32Array>(
  o: Record<string, unknown>,
  name: string,
  type: { new (n: number): A; name: string },
  T: number,
): A | undefined {
  const v = o[name];
  if (v === undefined || v === null) return undefined;
  if (!(v instanceof type) || v.length !== T) throw invalidArgument(name, `a ${type.name} of ${T} values`, v);
  return v;
}

function checkNumber(name: string, v: unknown, min = Number.NEGATIVE_INFINITY, max = Number.POSITIVE_INFINITY): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
    const range =
      max === Number.POSITIVE_INFINITY
        ? min === Number.NEGATIVE_INFINITY
          ? ''
          : ` >= ${min}`
        : ` in [${min}, ${max}]`;
    throw invalidArgument(name, `a finite number${range}`, v);
  }
  return v;
}

/**
 * Error codes that swerl raises. Native errors carry the code the addon gives them (the loader
 * checks at start-up that every native code is listed here); TypeScript validation uses the same
 * codes. Codes are stable: new ones may be added, none is ever renamed.
 */
export const ErrorCodes = [
  /** An argument has the wrong type, range or shape. */
  'INVALID_ARGUMENT',
  /** A sequence id that was never created or was already freed. */
  'UNKNOWN_SEQUENCE',
  /** Not enough free KV blocks; nothing was changed. */
  'KV_CACHE_FULL',
  /** CUDA was asked for but this build has no CUDA kernels or no device is visible. */
  'CUDA_UNAVAILABLE',
  /** A CUDA runtime call failed. */
  'CUDA_ERROR',
  /** A host allocation failed. */
  'OUT_OF_MEMORY',
  /** A broken internal invariant: a bug in swerl. */
  'INTERNAL',
  /** The object was disposed (its native memory released); create a new one. */
  'DISPOSED',
  /** NaN or ±Inf among the logits given to the sampler or a loss; nothing was returned. */
  'NON_FINITE_LOGITS',
  /** The native addon could not be found or loaded. */
  'NATIVE_LOAD_FAILED',
  /** A model file is truncated, or its header or contents are inconsistent. */
  'CORRUPT_FILE',
  /** A file could not be opened, read, mapped or written. */
  'IO_ERROR',
  /** A model directory lacks a tensor the config needs. */
  'MISSING_TENSOR',
  /** A checkpoint holds a tensor the architecture does not have. */
  'UNKNOWN_TENSOR',
  /** A tensor's shape differs from what the config implies. */
  'SHAPE_MISMATCH',
  /** The architecture, a dtype or a config option is not supported. */
  'UNSUPPORTED_MODEL',
  /** NaN or ±Inf in the accumulated gradients; the optimizer step was skipped, the weights are unchanged. */
  'NON_FINITE_GRADIENT',
  /** A request needs more KV blocks than the whole cache holds. */
  'PROMPT_TOO_LONG',
  /** No isolation mechanism is available for a sandbox (install bubblewrap). */
  'SANDBOX_UNAVAILABLE',
  /** A sandbox file path resolves outside its workspace. */
  'PATH_ESCAPE',
  /** A task file row is not a valid SWE-bench-format task (the message names the row and field). */
  'INVALID_TASK',
  /** A pipeline config (a JSON file or overrides) has a bad or unknown field; the message names it. */
  'INVALID_CONFIG',
  /** A run folder cannot be resumed (no checkpoint, or one from a different config). */
  'CANNOT_RESUME',
  /** A new run was started into a folder that holds a run (resume it, force a new one, or choose another). */
  'RUN_EXISTS',
  /** Another live process is writing the run folder (its run.lock); wait for it or stop it. */
  'RUN_LOCKED',
] as const;

/** One of {@link ErrorCodes}. */
export type ErrorCode = (typeof ErrorCodes)[number];

/**
 * Every error swerl raises, native or not. `code` is stable and meant for programs; `message` is
 * meant for people and says what to do next.
 */
export class SwerlError extends Error {
  /** A stable machine-readable code, one of {@link ErrorCodes}. */
  readonly code: ErrorCode;

  constructor(message: string, code: ErrorCode) {
    super(message);
    this.name = 'SwerlError';
    this.code = code;
  }
}

/** An INVALID_ARGUMENT error: `name` should be `expected`, but was `actual`. */
export function invalidArgument(name: string, expected: string, actual: unknown): SwerlError {
  return new SwerlError(`${name} must be ${expected}, got ${describe(actual)}`, 'INVALID_ARGUMENT');
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (value === null || value === undefined) return String(value);
  if (ArrayBuffer.isView(value)) return `a ${value.constructor.name}`;
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  return `a ${typeof value === 'object' ? (value.constructor?.name ?? 'object') : typeof value}`;
}

/**
 * Argument checks shared by the public classes. Each throws SwerlError('INVALID_ARGUMENT') with
 * a message that names the argument, what it should be and what it was.
 * @internal
 */
import { invalidArgument } from './errors.js';

/** An integer in [min, max]. */
export function checkInteger(
  name: string,
  value: unknown,
  min = Number.MIN_SAFE_INTEGER,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `in [${min}, ${max}]`;
    throw invalidArgument(name, `an integer ${range}`, value);
  }
  return value;
}

/** One of the allowed strings. */
export function checkEnum<T extends string>(name: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !allowed.includes(value as T)) {
    throw invalidArgument(name, `one of ${allowed.map((a) => `'${a}'`).join(', ')}`, value);
  }
  return value as T;
}

/** A boolean. */
export function checkBoolean(name: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw invalidArgument(name, 'a boolean', value);
  return value;
}

/** A plain options object (or undefined when optional). */
export function checkObject(name: string, value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalidArgument(name, 'an object', value);
  return value as Record<string, unknown>;
}

const MAX_TOKEN = 0x7fffffff;

/**
 * Token ids as an Int32Array. An Int32Array is passed through as is (the native side rejects
 * negative ids); any other array-like is checked element by element and copied.
 */
export function toTokenArray(name: string, tokens: unknown): Int32Array {
  if (tokens instanceof Int32Array) return tokens;
  if (tokens === null || typeof tokens !== 'object' || typeof (tokens as { length?: unknown }).length !== 'number') {
    throw invalidArgument(name, 'an array or typed array of token ids', tokens);
  }
  const src = tokens as ArrayLike<unknown>;
  const out = new Int32Array(src.length);
  for (let i = 0; i < src.length; i++) {
    const t = src[i];
    if (typeof t !== 'number' || !Number.isInteger(t) || t < 0 || t > MAX_TOKEN) {
      throw invalidArgument(`${name}[${i}]`, 'an integer token id in [0, 2^31)', t);
    }
    out[i] = t;
  }
  return out;
}

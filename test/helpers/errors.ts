/** Assertions about the errors swerl throws. */
import { expect } from 'vitest';
import { SwerlError } from '../../src/index.js';

/** fn must throw a SwerlError with this code; returns it. */
export function expectSwerlError(fn: () => unknown, code: string): SwerlError {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught, `expected a SwerlError ${code}`).toBeInstanceOf(SwerlError);
  expect((caught as SwerlError).code).toBe(code);
  return caught as SwerlError;
}

/** The code of the SwerlError fn throws (anything else thrown fails the test), or undefined. */
export function errorCode(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(SwerlError);
    return (e as SwerlError).code;
  }
  return undefined;
}

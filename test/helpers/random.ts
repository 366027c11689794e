/** Seeded randomness for tests, so that a failing case replays from its seed. */

/** mulberry32 (src/random.ts): a small seeded PRNG returning floats in [0, 1). */
export { mulberry32 as rng } from '../../src/random.js';

/** A standard normal draw (Box–Muller) from r. */
export function normal(r: () => number): number {
  const u = Math.max(r(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * r());
}

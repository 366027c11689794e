/**
 * The sampler's draw written from its specification (native/kernels/cpu/race.h), independent of
 * native/: an exponential race keyed by (seed, position, vocabulary index).
 *
 * - row key: h = splitmix64(splitmix64(seed) ^ position · 0xd6e8feb86659fd93) (64-bit), split into
 *   a = low 32 bits, b = high 32 bits;
 * - token j: bits = mix(mix(j + a) ^ b) with mix = lowbias32, v_j = ((bits >>> 8) + 1) / 2^24;
 * - score s_j = y_j / T − log(−log1p(−v_j)); the winner is the kept token with the largest score
 *   (lowest index on a tie).
 */

const M64 = (1n << 64n) - 1n;

function splitmix64(x: bigint): bigint {
  let z = (x + 0x9e3779b97f4a7c15n) & M64;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & M64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & M64;
  return z ^ (z >> 31n);
}

/** The row key [a, b] for (seed, position). */
export function raceKey(seed: number, position: number): [number, number] {
  const pos = BigInt.asUintN(64, BigInt(position));
  const h = splitmix64(splitmix64(BigInt(seed)) ^ ((pos * 0xd6e8feb86659fd93n) & M64));
  return [Number(h & 0xffffffffn), Number(h >> 32n)];
}

function mix(x: number): number {
  let z = x >>> 0;
  z ^= z >>> 16;
  z = Math.imul(z, 0x7feb352d);
  z ^= z >>> 15;
  z = Math.imul(z, 0x846ca68b | 0);
  z ^= z >>> 16;
  return z >>> 0;
}

/** 1 − u_j for token j under key. */
export function raceV(key: [number, number], j: number): number {
  const bits = mix(mix(j + key[0]) ^ key[1]);
  return ((bits >>> 8) + 1) * 2 ** -24;
}

/** Token j's Gumbel noise −log(E_j), E_j = −log1p(−v_j) ~ Exp(1). */
export function raceGumbel(key: [number, number], j: number): number {
  return -Math.log(-Math.log1p(-raceV(key, j)));
}

/**
 * The race's winner over scaled logits z_j = y_j / T, among kept tokens (all when kept is null);
 * also the gap between the best and second-best score, so tests can skip near-ties that f32 and
 * f64 could order differently.
 */
export function raceWinner(
  z: ArrayLike<number>,
  kept: ArrayLike<number> | null,
  key: [number, number],
): { token: number; gap: number } {
  let best = Number.NEGATIVE_INFINITY;
  let second = Number.NEGATIVE_INFINITY;
  let token = -1;
  for (let j = 0; j < z.length; j++) {
    if (kept && !kept[j]) continue;
    const s = (z[j] as number) + raceGumbel(key, j);
    if (s > best) {
      second = best;
      best = s;
      token = j;
    } else if (s > second) {
      second = s;
    }
  }
  return { token, gap: best - second };
}

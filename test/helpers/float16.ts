// Plain float64 references for the 16-bit KV storage types: the value of f32 x rounded to the
// nearest representable binary16 / bfloat16 value, ties to even. Independent of native/common/half.h.

function roundToBits(x: number, mantissaBits: number, minExp: number, maxFinite: number): number {
  if (Number.isNaN(x)) return Number.NaN;
  if (x === 0 || !Number.isFinite(x)) return x;
  const sign = x < 0 ? -1 : 1;
  const a = Math.abs(x);
  const exp = Math.max(Math.floor(Math.log2(a)), minExp);
  // Correct log2 rounding at exact powers of two.
  let e = exp;
  if (2 ** e > a) e -= 1;
  if (2 ** (e + 1) <= a) e += 1;
  e = Math.max(e, minExp);
  const ulp = 2 ** (e - mantissaBits);
  const q = a / ulp;
  let r = Math.floor(q);
  const frac = q - r;
  if (frac > 0.5 || (frac === 0.5 && r % 2 === 1)) r += 1;
  const out = r * ulp;
  if (out > maxFinite) return sign * Number.POSITIVE_INFINITY;
  return sign * out;
}

/** Nearest binary16 value (10 mantissa bits, subnormals below 2^-14, max 65504). */
export function roundF16(x: number): number {
  return roundToBits(Math.fround(x), 10, -14, 65504);
}

/** Nearest bfloat16 value (7 mantissa bits, f32's exponent range). */
export function roundBf16(x: number): number {
  const f = Math.fround(x);
  const r = roundToBits(f, 7, -126, 3.3895313892515355e38);
  return r;
}

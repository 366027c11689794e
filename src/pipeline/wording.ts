/**
 * Wording the console lines, the CLI's table and report.html share: Pass@1 / Pass@k figures that
 * print Pass@1 once when k is 1, counts with the right plural, and durations.
 */

/** `Pass@1 12.5%  Pass@4 25.0%`, or only `Pass@1 12.5%` when k is 1 (Pass@1 and Pass@k are one figure). */
export function passFigures(pass1: number, passK: number, k: number): string {
  const p1 = `Pass@1 ${(pass1 * 100).toFixed(1)}%`;
  return k === 1 ? p1 : `${p1}  Pass@${k} ${(passK * 100).toFixed(1)}%`;
}

/** `1 point`, `2 points`: `n` and the noun, plural unless n is 1 (`plural` for irregular nouns). */
export function count(n: number, noun: string, plural = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : plural}`;
}

/** A duration as `45s`, `3m10s` or `2h05m`. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

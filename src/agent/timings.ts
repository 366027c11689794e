/**
 * maskTimings: the wall-clock figures test runners print, replaced by `[time]`. Node's test runner
 * writes `duration_ms` for every test and for the run, pytest ends with `in 0.12s`; left as they
 * are, an observation depends on the machine's load, the model's next tokens depend on the
 * observation, and a seeded rollout stops being a function of its seed and the weights.
 */

/** What replaces a masked figure. */
export const TIME_MASK = '[time]';

const NUMBER = String.raw`\d+(?:\.\d+)?(?:e[+-]?\d+)?`;

// Each rule keeps the text around the figure, so the output keeps its layout and line count.
const RULES: [RegExp, string][] = [
  // node --test, TAP and spec reporters: `duration_ms: 2.18` (a test), `# duration_ms 155.9` (the run).
  [new RegExp(String.raw`\bduration_ms(:?[ \t]+)${NUMBER}`, 'g'), `duration_ms$1${TIME_MASK}`],
  // The spec reporter's and mocha's per-test figure: `✔ adds (0.51ms)`, `(12ms)`.
  [new RegExp(String.raw`\((?:${NUMBER})m?s\)`, 'g'), `(${TIME_MASK})`],
  // pytest's summary line: `==== 1 failed, 2 passed in 0.12s ====` (also `in 61.02s (0:01:01)`).
  [new RegExp(String.raw`^(=+ .* in )${NUMBER}s(?: \(\d+:\d\d:\d\d\))?( =+)$`, 'gm'), `$1${TIME_MASK}$2`],
];

/** `output` with the test runners' wall-clock figures masked (see the module doc). */
export function maskTimings(output: string): string {
  let s = output;
  for (const [re, to] of RULES) s = s.replace(re, to);
  return s;
}

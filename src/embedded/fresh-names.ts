/**
 * Name augmentation for the warm start: a misspelled-name demonstration with its two names (the
 * slip the error reports and the name it should be) swapped for another pair from the generator's
 * name pool, consistently through the issue, the observations and the expert's commands.
 *
 * Why: the embedded model learns from a few dozen demonstrations, and 40 epochs over them teach it
 * the demonstrated slips by heart; on a held-out task it greps a name it remembers instead of the
 * one in the error. A fresh pair per epoch leaves nothing to remember, so the only way to fit the
 * data is to copy the name from the issue, as a pretrained model would.
 */
import type { Trajectory } from '../agent/episode.js';
import type { AgentMessage } from '../agent/scaffold.js';
import { diffLines, JS_WORD } from '../env/tasks.js';

/** The slip and the right name of a one-name fix (`offsets` -> `offset`), or null for any other patch. */
export function slipPair(patch: string): { slip: string; right: string } | null {
  const { added, removed } = diffLines(patch);
  if (added.length !== 1 || removed.length !== 1) return null;
  const a = (added[0] as string).match(JS_WORD) ?? [];
  const r = (removed[0] as string).match(JS_WORD) ?? [];
  if (a.length !== r.length) return null;
  const diffs = a.map((w, i) => [r[i] as string, w] as const).filter(([x, y]) => x !== y);
  if (diffs.length === 0) return null;
  const [slip, right] = diffs[0] as readonly [string, string];
  // Every difference is the same substitution, and it is a plural slip (an `s` added or dropped).
  if (diffs.some(([x, y]) => x !== slip || y !== right)) return null;
  if (slip !== `${right}s` && right !== `${slip}s`) return null;
  return { slip, right };
}

/** Replaces whole words by `map` (identifier boundaries: `rate` is not replaced inside `rates`). */
function replaceWords(text: string, map: Map<string, string>): string {
  return text.replace(JS_WORD, (w) => map.get(w) ?? w);
}

/**
 * An assistant message with `map` applied to its code only: its ```command blocks and its
 * `backticked` spans. The prose around them is left alone (a name in the pool may be an English
 * word the expert also writes, as `line`).
 */
function replaceInCode(text: string, map: Map<string, string>): string {
  return text.replace(/```[\s\S]*?```|`[^`\n]*`/g, (m) => replaceWords(m, map));
}

/**
 * `t` with its slip and right name replaced by a pair drawn from `pool` with `rng`, or `t` itself
 * when it is not a one-name slip fix or no pair fits. The new right name is a pool word that
 * occurs nowhere in the conversation (so that it cannot merge with another of its names) and has
 * the same plural relation to its slip; the system prompt is not touched.
 */
export function withFreshNames(t: Trajectory, pool: readonly string[], rng: () => number): Trajectory {
  const pair = slipPair(t.patch);
  if (pair === null) return t;
  const seen = new Set(t.messages.flatMap((m) => m.content.match(JS_WORD) ?? []));
  const dropsS = pair.right === `${pair.slip}s`; // `items` written `item`
  const slipOf = (w: string) => (dropsS ? w.slice(0, -1) : `${w}s`);
  const fits = pool.filter(
    (w) => (dropsS ? w.endsWith('s') && w.length >= 4 : !w.endsWith('s')) && !seen.has(w) && !seen.has(slipOf(w)),
  );
  if (fits.length === 0) return t;
  const right = fits[Math.floor(rng() * fits.length)] as string;
  const slip = slipOf(right);
  const map = new Map([
    [pair.slip, slip],
    [pair.right, right],
  ]);
  const messages: AgentMessage[] = t.messages.map((m) => {
    if (m.role === 'system') return m;
    return { ...m, content: m.role === 'assistant' ? replaceInCode(m.content, map) : replaceWords(m.content, map) };
  });
  const turns = t.turns.map((x) => ({
    ...x,
    action: replaceInCode(x.action, map),
    command: x.command === null ? null : replaceWords(x.command, map),
    observation: replaceWords(x.observation, map),
  }));
  return { ...t, messages, turns, patch: replaceWords(t.patch, map) };
}

/** The stem of the module file a patch changes (`src/<stem>.js`), or null. */
function patchStem(patch: string): string | null {
  return /^\+\+\+ b\/src\/([\w-]+)\.js$/m.exec(patch)?.[1] ?? null;
}

/**
 * `t` with the module its patch changes renamed to another of `stems` drawn with `rng`, in every
 * path through the issue, the observations, the commands and the patch (`src/<stem>.js` and
 * `test/<stem>.test.js`, as a listing or a grep prints them), or `t` itself when the patch
 * changes no `src/*.js` module or no other stem is given. The system prompt is not touched.
 *
 * Why: with fifteen modules (miniSwe.catalogue 'wide') a model that learned which file goes with
 * which demonstration writes its fix into a file it remembers, not the one grep printed; a file
 * name drawn afresh each epoch can only be fitted by copying it from the observation.
 */
export function withFreshFiles(t: Trajectory, stems: readonly string[], rng: () => number): Trajectory {
  const stem = patchStem(t.patch);
  const others = stems.filter((s) => s !== stem);
  if (stem === null || others.length === 0) return t;
  const to = others[Math.floor(rng() * others.length)] as string;
  const path = new RegExp(`(?<![\\w$-])${stem}((?:\\.test)?\\.js)(?![\\w$])`, 'g');
  const rename = (s: string) => s.replace(path, `${to}$1`);
  const messages: AgentMessage[] = t.messages.map((m) =>
    m.role === 'system' ? m : { ...m, content: rename(m.content) },
  );
  const turns = t.turns.map((x) => ({
    ...x,
    action: rename(x.action),
    command: x.command === null ? null : rename(x.command),
    observation: rename(x.observation),
  }));
  return { ...t, messages, turns, patch: rename(t.patch) };
}

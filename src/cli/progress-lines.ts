/**
 * Progress as plain lines, for a stderr that is not a terminal (`node train.js > log 2>&1`, CI, a
 * pipe), where progress bars would be a stream of carriage returns: a line when a unit of work
 * starts, then one each time it passes a tenth of its total (at most every `minSeconds`) or every
 * `everySeconds` in any case, and one when it ends, each with its rate and the time left:
 * `warm start: step 120/900 (13%), 4.1 steps/s, ~3m10s left`.
 */
import { count, duration } from '../pipeline/wording.js';

/** Options of {@link progressLines}. */
export interface ProgressLineOptions {
  /** Where a line goes (without its newline). */
  write: (line: string) => void;
  /** The clock, in milliseconds (tests pass their own). */
  now?: () => number;
  /** A line at least this often while a unit of work runs (default 20 s). */
  everySeconds?: number;
  /** The least time between two lines for a tenth passed (default 2 s), so fast work stays short. */
  minSeconds?: number;
}

/** A progress callback (label, done, total, unit) that writes lines as {@link ProgressLineOptions} says. */
export function progressLines(
  o: ProgressLineOptions,
): (label: string, done: number, total: number, unit?: string) => void {
  const now = o.now ?? (() => performance.now());
  const every = (o.everySeconds ?? 20) * 1000;
  const least = (o.minSeconds ?? 2) * 1000;
  let cur: { label: string; t0: number; done0: number; last: number; tenth: number; lastDone: number } | null = null;
  return (label, done, total, unit = 'item') => {
    const t = now();
    const tenth = total > 0 ? Math.floor((10 * done) / total) : 0;
    const line = (withRate: boolean) => {
      const pct = total > 0 ? Math.floor((100 * done) / total) : 100;
      let text = `${label}: ${unit} ${done}/${total} (${pct}%)`;
      const s = cur ? (t - cur.t0) / 1000 : 0;
      if (withRate && cur && s > 0 && done > cur.done0) {
        const rate = (done - cur.done0) / s;
        text +=
          rate >= 0.1 ? `, ${rate.toFixed(rate >= 10 ? 0 : 1)} ${unit}s/s` : `, ${duration(1 / rate)} per ${unit}`;
        text += done >= total ? `, took ${duration(s)}` : `, ~${duration((total - done) / rate)} left`;
      } else if (done >= total && cur) text += `, took ${duration(s)}`;
      o.write(text);
    };
    if (!cur || cur.label !== label || done < cur.lastDone) {
      // A new unit of work (or the same label started over): its first line, the clock from here.
      cur = { label, t0: t, done0: done, last: t, tenth, lastDone: done };
      if (done < total) line(false);
      else o.write(`${label}: ${count(total, unit)} done`);
      return;
    }
    if (done >= total && cur.lastDone >= total) return; // its last line is out
    const due = t - cur.last >= every || (tenth > cur.tenth && t - cur.last >= least) || done >= total;
    cur.lastDone = done;
    if (!due) return;
    line(true);
    cur.last = t;
    cur.tenth = tenth;
  };
}

/**
 * `node train.js` / `swerl train`: the main job. Resolves the preset or config, runs the pipeline
 * into the run folder with a progress bar per unit of work on a terminal (progress lines with
 * rate and time left otherwise: a log file, a pipe) and a line per phase and DAPO iteration, and
 * prints the held-out Pass@1 / Pass@k table at the end (Pass@1 alone when k is 1).
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import cliProgress from 'cli-progress';
import { SwerlError } from '../errors.js';
import { loadConfig, type PipelineConfig, PRESETS, resolveConfig } from '../pipeline/config.js';
import { runPipeline } from '../pipeline/run.js';
import { duration } from '../pipeline/wording.js';
import { progressLines } from './progress-lines.js';

const USAGE = `usage: node train.js [--preset default|smoke] [--config FILE] [--out DIR] [--resume | --force]

Runs the swerl pipeline: mini-SWE tasks -> warm-start -> eval -> RFT -> eval -> DAPO -> eval.
  --preset NAME   default (about 24 min on 2 cores) or smoke (under 2 min)
  --config FILE   a JSON config over a preset (model dir, tasks file, sandbox, engine, hyperparameters)
  --out DIR       the run folder (default runs/<preset>): summary.json, metrics.jsonl, report.html, checkpoints/
  --resume        continue the run in --out from its last checkpoint
  --force         start over in an --out that holds a run (the old run is moved aside, whole)
  -h, --help      this text`;

/**
 * Runs the CLI with argv (without node and script) and returns the process exit code.
 * `command` is how the user started it, for the resume hint after Ctrl-C.
 */
export async function main(argv: string[], command = 'node train.js'): Promise<number> {
  let values: { preset?: string; config?: string; out?: string; resume?: boolean; force?: boolean; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        preset: { type: 'string' },
        config: { type: 'string' },
        out: { type: 'string' },
        resume: { type: 'boolean' },
        force: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${USAGE}`);
    return 1;
  }
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (values.resume && values.force) {
    console.error(
      `--resume continues the run in --out and --force starts a new one there: give one of them\n\n${USAGE}`,
    );
    return 1;
  }
  let config: PipelineConfig;
  try {
    if (values.config) {
      config = await loadConfig(values.config);
      if (values.preset) console.error('note: --config sets its own preset; --preset is ignored');
    } else {
      const preset = values.preset ?? 'default';
      if (!(preset in PRESETS)) {
        console.error(`unknown preset '${preset}': use ${Object.keys(PRESETS).join(' or ')}\n\n${USAGE}`);
        return 1;
      }
      config = resolveConfig({}, preset);
    }
  } catch (err) {
    if (err instanceof SwerlError) {
      console.error(`swerl: ${err.message} [${err.code}]`);
      return 1;
    }
    throw err;
  }
  const out = resolve(values.out ?? `runs/${config.preset}`);
  const interactive = process.stderr.isTTY === true;
  const bar = new cliProgress.SingleBar(
    {
      format: '  {label} [{bar}] {value}/{total} {unit}s  {duration_formatted} elapsed, ~{eta_formatted} left',
      hideCursor: true,
      clearOnComplete: true,
    },
    cliProgress.Presets.shades_classic,
  );
  let current = '';
  // Without a terminal, lines on stderr (where the bars would be), with rate and time left.
  const lines = progressLines({ write: (line) => console.error(`  ${line}`) });
  const progress = (label: string, done: number, total: number, unit = 'item') => {
    if (!interactive) {
      lines(label, done, total, unit);
      return;
    }
    if (label !== current) {
      if (current) bar.stop();
      current = label;
      bar.start(total, done, { label, unit });
    } else bar.update(done, { label, unit });
    if (done >= total) {
      bar.stop();
      current = '';
    }
  };
  const say = (line: string) => {
    if (current) {
      bar.stop();
      current = '';
    }
    console.log(line);
  };
  console.log(`swerl train: preset ${config.preset}${values.config ? ` (config ${values.config})` : ''} -> ${out}`);
  // Ctrl-C (or a SIGTERM) stops at once: every finished phase is on disk (state.json and the
  // checkpoints are written atomically), the exit hook removes the sandboxes' workspaces, and the
  // user is told how to continue. The exit code is the shell's for a death by that signal.
  const interrupted = (signal: NodeJS.Signals) => {
    if (current) bar.stop();
    const again = [command, ...argv.filter((a) => a !== '--resume' && a !== '--force').map(shellWord), '--resume'].join(
      ' ',
    );
    console.error(
      `\nswerl: interrupted (${signal}). Finished phases are saved in ${out}; continue with: ${again}${values.out ? '' : ` --out ${shellWord(out)}`}`,
    );
    process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    const summary = await runPipeline(config, {
      out,
      resume: values.resume ?? false,
      force: values.force ?? false,
      progress,
      say,
    });
    if (current) bar.stop();
    // With k = 1 everywhere Pass@k is Pass@1: one column, not the same figure twice.
    const withK = summary.stages.some((s) => s.k !== 1);
    console.log(
      withK
        ? `\n| stage | Pass@1 | Pass@k | k | held-out tasks |\n|---|---|---|---|---|`
        : `\n| stage | Pass@1 | k | held-out tasks |\n|---|---|---|---|`,
    );
    for (const s of summary.stages)
      console.log(
        `| ${s.name} | ${(s.pass1 * 100).toFixed(1)}% |${withK ? ` ${(s.passK * 100).toFixed(1)}% |` : ''} ${s.k} | ${s.tasks} |`,
      );
    console.log(
      `\n${duration(summary.wallSeconds)}. Report: ${resolve(out, 'report.html')}; summary: ${resolve(out, 'summary.json')}`,
    );
    return 0;
  } catch (err) {
    if (current) bar.stop();
    if (err instanceof SwerlError) {
      console.error(`swerl: ${err.message} [${err.code}]`);
      return 1;
    }
    throw err;
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
  }
}

/** `word` as one shell word: quoted when it holds anything beyond a path's usual characters. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}

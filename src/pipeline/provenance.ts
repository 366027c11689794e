/**
 * What a run ran on, for state.json, summary.json and the report's header: the start date, the
 * package's git commit when the package folder is a git checkout (else its version), the
 * machine (CPU model, cores, memory, OS), and what the CPU kernels ran with (SIMD level and
 * threads; a resumed run records the process that resumed it).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { cpus, release, totalmem, type } from 'node:os';
import { join } from 'node:path';
import { nativeInfo } from '../info.js';

/** A run's provenance. */
export interface RunProvenance {
  /** When the run started (ISO 8601). */
  startedAt: string;
  /** The package's version (package.json). */
  version: string;
  /** The checkout's commit, when the package folder is a git checkout; `dirty` with uncommitted changes. */
  commit?: string;
  dirty?: boolean;
  machine: { cpu: string; cores: number; memoryGiB: number; os: string };
  /** The CPU kernels' SIMD level and thread count (SWERL_SIMD, SWERL_NUM_THREADS) in this process. */
  kernels?: { simd: string; threads: number };
}

// dist/pipeline/ or src/pipeline/: the package folder is two up.
const PACKAGE_DIR = join(import.meta.dirname, '..', '..');

function git(args: string[]): string | null {
  try {
    return execFileSync('git', args, { cwd: PACKAGE_DIR, stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 })
      .toString()
      .trim();
  } catch {
    return null;
  }
}

/** The provenance of a run started at `startedAt`, as this process sees its package and machine. */
export function runProvenance(startedAt: Date): RunProvenance {
  let version = 'unknown';
  try {
    version = String(JSON.parse(readFileSync(join(PACKAGE_DIR, 'package.json'), 'utf8')).version ?? version);
  } catch {
    // an unusual install: the version stays unknown
  }
  // Only the package's own checkout: an installed package inside another repository is not one.
  const commit = existsSync(join(PACKAGE_DIR, '.git')) ? git(['rev-parse', 'HEAD']) : null;
  const dirty = commit ? git(['status', '--porcelain', '--untracked-files=no']) : null;
  const cpu = cpus();
  const info = nativeInfo();
  return {
    startedAt: startedAt.toISOString(),
    version,
    ...(commit ? { commit, dirty: dirty !== null && dirty !== '' } : {}),
    machine: {
      cpu: cpu[0]?.model.trim() ?? 'unknown',
      cores: cpu.length,
      memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
      os: `${type()} ${release()}`,
    },
    kernels: { simd: info.simd, threads: info.threads },
  };
}

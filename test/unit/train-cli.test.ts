// `node train.js` exists, checks what is built, and never fakes training.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

function train(args: string[]) {
  return spawnSync(process.execPath, [join(root, 'train.js'), ...args], { cwd: root, encoding: 'utf8' });
}

describe('node train.js', () => {
  it('says which stages are not built, writes nothing and exits with 2', () => {
    expect(existsSync(join(root, 'dist', 'cli', 'train.js')), 'run `npm run build:ts` first').toBe(true);
    const out = mkdtempSync(join(tmpdir(), 'swerl-train-'));
    try {
      const r = train(['--preset', 'smoke', '--out', out]);
      expect(r.status).toBe(2);
      expect(r.stdout).toContain('[built]     paged KV cache');
      expect(r.stdout).toContain('[built]     sampler and DAPO/GRPO/SFT loss kernels');
      expect(r.stdout).toContain('[built]     policy model');
      expect(r.stdout).toContain('[built]     rollout engine');
      expect(r.stdout).toContain('[not built]');
      expect(r.stdout).toContain('No training was run');
      expect(readdirSync(out)).toEqual([]);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('rejects unknown options and presets with usage and exit code 1', () => {
    const r = train(['--nope']);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('usage: node train.js');
    expect(train(['--preset', 'huge']).status).toBe(1);
    expect(train(['--help']).status).toBe(0);
  });
});

// The CUDA simulation's execution model (test/cuda/execution-model.cu, built by CMake as
// build/cmake/selftest/swerl_cudasim_selftest): block reductions over shuffles and shared memory
// with partial warps, barrier ordering, every shuffle variant, votes, 3-D indices, atomics, launch
// limits, opt-in shared memory, and what only the simulation reports (deadlocks, host pointers in
// device copies). The same source runs on a GPU as swerl_cuda_selftest (scripts/device-check.sh).
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { cmakeSelftest } from '../helpers/selftest.js';

const { path: selftest, built } = cmakeSelftest('swerl_cudasim_selftest', 'CUDA simulation checks');

describe.skipIf(!built)('the CUDA simulation runs CUDA execution-model checks', () => {
  it('passes every check, with the source nvcc compiles', () => {
    const r = spawnSync(selftest, { encoding: 'utf8', timeout: 60_000 });
    const lines = r.stdout.split('\n').filter((l) => /^(not )?ok /.test(l));
    const failed = lines.filter((l) => l.startsWith('not ok'));
    expect(failed).toEqual([]);
    expect(r.status).toBe(0);
    expect(lines.length).toBeGreaterThanOrEqual(18);
    expect(r.stdout).toContain('the simulation reports a deadlocked barrier');
  });
});

// The kernel thread pool's stress checks (test/native/thread-pool-selftest.cc, built by CMake as
// build/cmake/selftest/swerl_pool_selftest): every task of every run runs exactly once, back to back
// and after the workers sleep; exceptions reach the caller; concurrent callers; a run of 70000
// tasks; teardown; every worker wakes for a run. A lost wake-up shows as a hang, caught by the
// timeout.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { cmakeSelftest } from '../helpers/selftest.js';

const { path: selftest, built } = cmakeSelftest('swerl_pool_selftest', 'thread pool checks');

describe.skipIf(!built)('the kernel thread pool', () => {
  it('runs every task once, wakes every worker, passes exceptions on, serialises callers', () => {
    const r = spawnSync(selftest, { encoding: 'utf8', timeout: 90_000 });
    expect(r.signal, 'the checks hung (a lost wake-up?) or crashed').toBeNull();
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('thread pool: all checks passed');
  }, 100_000);
});

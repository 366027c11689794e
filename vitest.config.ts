import { resolve } from 'node:path';
import { defineConfig } from 'vitest/config';

// The native addon runs in child processes ('forks'): a native crash kills one fork, not the run.
// Two projects: `main` (everything on the CPU addon) and `cuda` (test/cuda/: the CUDA kernels). The
// cuda project loads the simulation addon, swerl_cudasim.node, which runs the same .cu sources on
// the CPU with CUDA's execution model; SWERL_CUDA_TESTS_ADDON names another addon, e.g. the CUDA
// build on a GPU machine (scripts/device-check.sh).
const cudaAddon = resolve(process.env.SWERL_CUDA_TESTS_ADDON ?? 'build/cmake/Release/swerl_cudasim.node');

export default defineConfig({
  test: {
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'main', include: ['test/**/*.test.ts'], exclude: ['test/cuda/**'] } },
      {
        extends: true,
        test: { name: 'cuda', include: ['test/cuda/**/*.test.ts'], env: { SWERL_NATIVE_PATH: cudaAddon } },
      },
    ],
  },
});

import { defineConfig } from 'vitest/config';

// The native addon runs in child processes ('forks'): a native crash kills one fork, not the run.
export default defineConfig({
  test: {
    pool: 'forks',
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    maxWorkers: 2,
  },
});

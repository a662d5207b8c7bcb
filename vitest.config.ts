import { defineConfig } from 'vitest/config';

// Temporal's native core and vitest worker threads do not mix: every test file runs in a fork.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});

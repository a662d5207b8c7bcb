import { defineConfig } from 'vitest/config';

// Two projects: `pglite` runs every test on the embedded database; `postgres` runs the service
// suites once more with startHarness on a real PostgreSQL (ACS_TEST_DATABASE_URL; .ci/run
// starts one). Suites that bring their own PostgreSQL databases or spawn the binary on a data
// dir run in `pglite` only.
const databaseUrl = process.env.ACS_TEST_DATABASE_URL;
const postgresOnlyInPglite = ['test/service/postgres.test.ts', 'test/service/multi-process.test.ts', 'test/service/acs-server.test.ts', 'test/service/admin.test.ts'];

// The config is evaluated more than once per run (root and each project): say it once.
const noticeKey = Symbol.for('acs.postgres-project-notice');
if (!databaseUrl && !(globalThis as Record<symbol, unknown>)[noticeKey]) {
  (globalThis as Record<symbol, unknown>)[noticeKey] = true;
  console.log('vitest: project "postgres" skipped: ACS_TEST_DATABASE_URL is not set (bash scripts/with-postgres.sh -- bash -c \'ACS_TEST_DATABASE_URL=$ACS_POSTGRES_URL npm test\' runs it)');
}

// Temporal's native core and vitest worker threads do not mix: every test file runs in a fork.
export default defineConfig({
  test: {
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      { extends: true, test: { name: 'pglite', include: ['test/**/*.test.ts'] } },
      ...(databaseUrl
        ? [
            {
              extends: true as const,
              test: {
                name: 'postgres',
                include: ['test/service/**/*.test.ts'],
                exclude: postgresOnlyInPglite,
                env: { ACS_TEST_BACKEND: 'postgres' },
              },
            },
          ]
        : []),
    ],
  },
});

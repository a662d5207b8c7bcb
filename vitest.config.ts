import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * The test suites, split by what they cost (docs/development.md, "Tests"):
 *
 * - `quick` (`npm test`, the README's test command): every test file but the long ones, on
 *   embedded PGlite, with no server to start; a few minutes on two cores.
 * - `long` (`npm run test:long`, which CI runs next to a real Temporal server and PostgreSQL):
 *   the suites that need a real Temporal server or PostgreSQL, run several processes or a
 *   browser, or take long — {@link LONG_FILES} and every `*.long.test.ts`.
 * - `postgres` (in `npm run test:long`): the service suites once more with startHarness on a real
 *   PostgreSQL; defined only when a server is given (`ACS_TEST_DATABASE_URL`, or the
 *   `ACS_POSTGRES_URL` that scripts/with-postgres.sh exports).
 *
 * `npx vitest run FILE` runs one file whichever suite holds it; `npx vitest run` runs all three.
 */

/**
 * The long files written before the `*.long.test.ts` rule, by name (new long files follow the
 * rule instead). Each is long for the reason given; the seconds are its duration in a full run on
 * the shared 2-core machine (2026-11-27, loaded by other work: read them as relative).
 */
export const LONG_FILES = [
  'test/workflows/temporal.test.ts', // a real Temporal server; workers in child processes (166 s)
  'test/workflows/pipelines.test.ts', // a real Temporal server (119 s)
  'test/workflows/schedules.test.ts', // a real Temporal server (30 s)
  'test/workflows/telemetry.test.ts', // a real Temporal server (8 s)
  'test/service/providers.test.ts', // stand-in vendor servers, provider timeouts and backoff (69 s)
  'test/conformance/bad-input.test.ts', // generated hostile requests against a server process (49 s)
  'test/service/server-cli.test.ts', // acs-server processes started and stopped (47 s)
  'test/cli/quick-start.test.ts', // the README block through npx: several processes (32 s)
  'test/cli/terminal.test.ts', // teamctl processes on pseudo-terminals (27 s)
  'test/service/acs-server.test.ts', // acs-server processes on data dirs (25 s)
  'test/service/admin.test.ts', // acs-server admin processes on data dirs (16 s; timed out beside three other files)
  'test/service/multi-process.test.ts', // PostgreSQL only, two server processes (10 s)
  'test/service/postgres.test.ts', // PostgreSQL only
];

/** New long files are named so, wherever they are. */
export const LONG_PATTERN = 'test/**/*.long.test.ts';

/** What runs the long suites as CI does: a throwaway Temporal server and PostgreSQL around `npm run test:long`. */
export const LONG_COMMAND = 'bash scripts/with-temporal.sh --install -- bash scripts/with-postgres.sh --install --fast -- npm run test:long';

// scripts/with-postgres.sh exports ACS_POSTGRES_URL: inside it, the suites use that server.
const databaseUrl = process.env.ACS_TEST_DATABASE_URL || process.env.ACS_POSTGRES_URL || undefined;

// Suites that bring their own PostgreSQL databases or spawn the binary on a data dir run on the
// `postgres` project's server from the `long` project already.
const notInPostgresProject = [
  'test/service/postgres.test.ts',
  'test/service/multi-process.test.ts',
  'test/service/thread-stream-processes.long.test.ts',
  'test/service/acs-server.test.ts',
  'test/service/admin.test.ts',
];

/**
 * Test files run at once, each in a fork. vitest's default is one fewer than the cores — one on
 * two cores, so the quick suite ran file after file — but most of these files wait (on servers,
 * child processes, long polls, timers) far more than they compute: on two cores four at a time
 * halve the quick suite's wall time. The long suites keep two: a real Temporal server and
 * process-heavy files beside each other stretch their waits into timeouts.
 */
const cores = availableParallelism();
const QUICK_WORKERS = Math.min(8, 2 * cores);
const LONG_WORKERS = Math.min(4, cores);

// Temporal's native core and vitest worker threads do not mix: every test file runs in a fork.
export default defineConfig({
  test: {
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // What a passing test prints is expected (figures, deliberate failures): shown only for failed tests.
    silent: 'passed-only',
    ...(databaseUrl ? { env: { ACS_TEST_DATABASE_URL: databaseUrl } } : {}),
    reporters: [
      'default',
      ['./test/support/suites-reporter.ts', { longCommand: LONG_COMMAND, longFileCount: LONG_FILES.length }],
      // .ci/run counts what each run did from this file.
      ...(process.env.VITEST_JSON_REPORT ? [['json', { outputFile: process.env.VITEST_JSON_REPORT }] as ['json', { outputFile: string }]] : []),
    ],
    // Projects of different worker counts must run in groups of their own (vitest refuses to mix
    // them): the quick suite first, then the long and PostgreSQL ones, which share their count and
    // run side by side — so `npx vitest run FILE` under scripts/with-postgres.sh runs both backends.
    projects: [
      { extends: true, test: { name: 'quick', include: ['test/**/*.test.ts'], exclude: [...LONG_FILES, LONG_PATTERN], maxWorkers: QUICK_WORKERS, sequence: { groupOrder: 0 } } },
      { extends: true, test: { name: 'long', include: [...LONG_FILES, LONG_PATTERN], maxWorkers: LONG_WORKERS, sequence: { groupOrder: 1 } } },
      ...(databaseUrl
        ? [
            {
              extends: true as const,
              test: {
                name: 'postgres',
                include: ['test/service/**/*.test.ts', 'test/a2a/remote-*.test.ts'],
                exclude: notInPostgresProject,
                env: { ACS_TEST_DATABASE_URL: databaseUrl, ACS_TEST_BACKEND: 'postgres' },
                maxWorkers: LONG_WORKERS,
                sequence: { groupOrder: 1 },
              },
            },
          ]
        : []),
    ],
  },
});

/**
 * `npm run bench:streams`: replies as they are written (contract §13, issue 39) on PGlite (data
 * dir) and PostgreSQL — the latency a streamed reply's tokens gain on the way from the model to a
 * reader of the thread's stream, with one reader and with 1,000 on one thread, the time to first
 * event and the memory of an open stream (bench/streams-scenarios.ts says how). `npm run bench`
 * runs the same as its `streams` phase.
 *
 * PostgreSQL: `ACS_BENCH_DATABASE_URL` or `ACS_POSTGRES_URL` (a superuser URL; a scratch database
 * is created and dropped), else a throwaway cluster through scripts/with-postgres.sh when
 * PostgreSQL binaries are installed, else PGlite only (said so). `BENCH_BACKENDS=pglite` (or
 * `postgres`) measures one backend. `BENCH_QUICK=1`: a smoke run (200 readers, shorter replies).
 * Only a full run (both backends, not quick) replaces the part of docs/performance.md between the
 * `bench-streams` markers; any other prints its figures. `BENCH_SERVER_ARGS` (node options of the
 * server process, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`) profiles the server. Not part of the
 * tests: the figures depend on the machine.
 */
import { join } from 'node:path';
import { rerunNextToPostgres } from './host.ts';
import { runStreamsBench } from './streams-report.ts';

const root = join(import.meta.dirname, '..');
const backends = (process.env.BENCH_BACKENDS ?? 'pglite,postgres').split(',');
// No URL given but PostgreSQL is installed: run this script again next to a throwaway cluster.
if (backends.includes('postgres')) rerunNextToPostgres(root);
await runStreamsBench({
  root,
  adminUrl: process.env.ACS_BENCH_DATABASE_URL || process.env.ACS_POSTGRES_URL || undefined,
  quick: process.env.BENCH_QUICK === '1',
  backends,
  log: (line) => process.stdout.write(`${line}\n`),
});

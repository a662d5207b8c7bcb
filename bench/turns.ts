/**
 * `npm run bench:turns`: what agents that act cost acs-server (contract §11, issue 37), on PGlite
 * (data dir) and PostgreSQL — turns of 100 tool calls (service time and storage per call) and the
 * idle tick with 500 turns suspended on `ask` (bench/turns-scenarios.ts says how). `npm run bench`
 * runs the same as its `turns` phase.
 *
 * PostgreSQL: `ACS_BENCH_DATABASE_URL` or `ACS_POSTGRES_URL` (a superuser URL; scratch databases
 * are created and dropped), else a throwaway cluster through scripts/with-postgres.sh when
 * PostgreSQL binaries are installed, else PGlite only (said so). `BENCH_BACKENDS=pglite` (or
 * `postgres`) measures one backend; `BENCH_TURNS_PARTS=tools` (or `ticks`) one part.
 * `BENCH_QUICK=1`: a smoke run (fewer turns and samples). Only a full run (both backends, both
 * parts, not quick) replaces the part of docs/performance.md between the `bench-turns` markers;
 * any other prints its figures. Not part of the tests: the figures depend on the machine.
 */
import { join } from 'node:path';
import { rerunNextToPostgres } from './host.ts';
import { runTurnsBench } from './turns-report.ts';

const root = join(import.meta.dirname, '..');
const backends = (process.env.BENCH_BACKENDS ?? 'pglite,postgres').split(',');
// No URL given but PostgreSQL is installed: run this script again next to a throwaway cluster.
if (backends.includes('postgres')) rerunNextToPostgres(root);
await runTurnsBench({
  root,
  adminUrl: process.env.ACS_BENCH_DATABASE_URL || process.env.ACS_POSTGRES_URL || undefined,
  quick: process.env.BENCH_QUICK === '1',
  backends,
  parts: (process.env.BENCH_TURNS_PARTS ?? 'tools,ticks').split(','),
  log: (line) => process.stdout.write(`${line}\n`),
});

/**
 * `npm run bench`: acs-server's throughput, latency and memory on PGlite and PostgreSQL, plus
 * pgbench's single-row insert rate on the same PostgreSQL as the floor to compare against.
 * Writes the figures to docs/performance.md (between the bench markers) and prints them.
 *
 * PostgreSQL: `ACS_BENCH_DATABASE_URL` (a superuser URL; a scratch database is created and
 * dropped), else a throwaway cluster through scripts/with-postgres.sh when PostgreSQL binaries
 * are installed, else PGlite only (said so). `BENCH_QUICK=1` shortens every step (smoke run).
 * `BENCH_PHASES=appends,reads,wake,memory,turns,streams` (a subset) measures only those phases; like a quick
 * run, a partial run prints its figures and leaves docs/performance.md alone; so does
 * `BENCH_BACKENDS=postgres` (or `pglite`), which measures one backend only. The `turns` phase
 * (agents that act: tool calls and suspended turns, bench/turns-report.ts; also
 * `npm run bench:turns` alone) writes its own section of docs/performance.md on a full run; so does
 * the `streams` phase (replies as they are written: latency per token with one reader and 1,000,
 * memory per open stream; bench/streams-report.ts, also `npm run bench:streams` alone).
 * Not part of the tests: numbers depend on the machine.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { runBackend, startServerProcess, type BackendResult, type BenchPlan } from './scenarios.ts';
import { renderReport, writeReport, type Machine, type PgbenchResult } from './report.ts';
import { adminQuery, cpuModel, pgbenchPath, rerunNextToPostgres } from './host.ts';
import { runTurnsBench } from './turns-report.ts';
import { runStreamsBench } from './streams-report.ts';

const root = join(import.meta.dirname, '..');
const log = (line: string) => process.stdout.write(`${line}\n`);

// No URL given but PostgreSQL is installed: run this script again next to a throwaway cluster.
rerunNextToPostgres(root);
const adminUrl = process.env.ACS_BENCH_DATABASE_URL || process.env.ACS_POSTGRES_URL || undefined;
const quick = process.env.BENCH_QUICK === '1';
// A partial run would write '–' over the phases it skipped.
const backends = (process.env.BENCH_BACKENDS ?? 'pglite,postgres').split(',');
const partial = process.env.BENCH_PHASES !== undefined || process.env.BENCH_BACKENDS !== undefined;
const phases = (process.env.BENCH_PHASES ?? 'appends,reads,wake,memory,turns,streams').split(',');
// The phases measured on a server process per backend (scenarios.ts reads BENCH_PHASES itself).
const serverPhases = phases.some((p) => ['appends', 'reads', 'wake', 'memory'].includes(p));

function openFileLimit(): number {
  const out = spawnSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).stdout.trim();
  return out === 'unlimited' ? Infinity : Number(out);
}

// Each held poll costs one socket in this process and one in the server's; keep headroom.
const fdLimit = openFileLimit();
const wantedHeld = quick ? 500 : 10_000;
const plan: BenchPlan = {
  seconds: quick ? 2 : 10,
  clients: 32,
  seedMessages: quick ? 10_000 : 100_000,
  // A p99 of 300 samples is the 3rd slowest, moved by one scavenge or one stall of the host; of
  // 1,000 it is the 10th (~20 s more of one-at-a-time samples).
  wakeSamples: quick ? 30 : 1_000,
  held: Math.max(100, Math.min(wantedHeld, fdLimit - 1000)),
};
if (plan.held < wantedHeld) log(`bench: open-file limit ${fdLimit} allows only ${plan.held} held polls (raise ulimit -n for ${wantedHeld})`);



// The append statement alone, without the service: one organization, key, team, two humans,
// an edge and 32 threads made in SQL; pgbench client i appends to thread i (as the service's
// 32-client measurement does), calling the same function an HTTP append calls.
const appendFixture = `DO $$
DECLARE o uuid := gen_random_uuid(); k uuid := gen_random_uuid(); t uuid := gen_random_uuid();
        a uuid := gen_random_uuid(); b uuid := gen_random_uuid(); e uuid := gen_random_uuid();
BEGIN
  INSERT INTO organizations (id, name) VALUES (o, 'pgbench-floor');
  INSERT INTO org_keys (id, org_id, key_hash, prefix) VALUES (k, o, md5(random()::text), 'acs_org_pgbe');
  INSERT INTO teams (id, org_id, name, engine_id) VALUES (t, o, 'pgbench', gen_random_uuid());
  INSERT INTO participants (id, team_id, kind, name) VALUES (a, t, 'human', 'ann'), (b, t, 'human', 'bob');
  INSERT INTO edges (id, team_id, participant_a, participant_b) VALUES (e, t, a, b);
  INSERT INTO threads (id, edge_id, team_id, opener_id) SELECT gen_random_uuid(), e, t, a FROM generate_series(1, 32);
  CREATE TABLE bench_threads AS SELECT (row_number() OVER ())::int - 1 AS n, id AS thread_id, b AS sender, o AS org_id, k AS key_id
    FROM threads WHERE edge_id = e;
END $$`;

/**
 * pgbench at 1 and 32 clients: one INSERT per transaction into a scratch table shaped like
 * `messages` (the floor), and one call of the append function `acs_append_message` (the append's
 * own SQL, as the service runs it: key, reach and participant checks, counter update, insert).
 */
async function runPgbench(url: string, dir: string): Promise<PgbenchResult[]> {
  const binary = pgbenchPath();
  if (!binary) {
    log('bench: pgbench not found; no floor figures');
    return [];
  }
  await adminQuery(
    url,
    `CREATE TABLE bench_scratch (id uuid PRIMARY KEY, thread_id uuid NOT NULL, seq integer NOT NULL, sender_id uuid NOT NULL,
       content text NOT NULL, attachments jsonb NOT NULL DEFAULT '[]', sent_at timestamptz NOT NULL DEFAULT now())`,
  );
  await adminQuery(url, appendFixture);
  const insert = join(dir, 'insert.sql');
  await writeFile(insert, `INSERT INTO bench_scratch (id, thread_id, seq, sender_id, content) VALUES (gen_random_uuid(), gen_random_uuid(), 1, gen_random_uuid(), 'message');\n`);
  const append = join(dir, 'append.sql');
  await writeFile(
    append,
    `SELECT acs_append_message(gen_random_uuid(), t.thread_id, t.sender, 'message', '[]'::jsonb, NULL, t.org_id, t.key_id, false) FROM bench_threads t WHERE t.n = :client_id % 32;\n`,
  );
  const tps = (script: string, clients: number): number => {
    const out = execFileSync(binary, ['-n', '-f', script, '-T', String(plan.seconds), '-c', String(clients), '-j', String(Math.min(clients, 2)), url], {
      encoding: 'utf8',
    });
    return Number(/tps = ([\d.]+)/.exec(out)?.[1] ?? NaN);
  };
  const results: PgbenchResult[] = [];
  for (const clients of [1, 32]) {
    const insertTps = tps(insert, clients);
    log(`postgres: pgbench single-row INSERT, ${clients} client(s): ${insertTps.toFixed(0)}/s`);
    const appendTps = tps(append, clients);
    log(`postgres: pgbench append function, ${clients} client(s): ${appendTps.toFixed(0)}/s`);
    // What the agent loop's trigger on messages (it keeps the loop's work rows) costs an append.
    await adminQuery(url, `ALTER TABLE messages DISABLE TRIGGER messages_agent_work`);
    const appendWithoutTriggerTps = tps(append, clients);
    await adminQuery(url, `ALTER TABLE messages ENABLE TRIGGER messages_agent_work`);
    log(`postgres: pgbench append function without the agent-work trigger, ${clients} client(s): ${appendWithoutTriggerTps.toFixed(0)}/s`);
    results.push({ clients, tps: insertTps, appendTps, appendWithoutTriggerTps });
  }
  await adminQuery(url, `DROP TABLE bench_scratch`);
  return results;
}

function machine(serverVersion: string | undefined): Machine {
  return {
    cpu: cpuModel(),
    cores: os.availableParallelism(),
    memoryGiB: os.totalmem() / 2 ** 30,
    node: process.version,
    postgres: serverVersion,
    date: new Date().toISOString().slice(0, 10),
    held: plan.held,
    fdLimit,
    load: startLoad,
  };
}

const started = performance.now();
const startLoad = os.loadavg()[0]!;
const work = await mkdtemp(join(os.tmpdir(), 'acs-bench-'));
const results: BackendResult[] = [];
let pgbench: PgbenchResult[] = [];
let serverVersion: string | undefined;
try {
  if (serverPhases && backends.includes('pglite')) {
    const pgliteDir = join(work, 'pglite');
    log('bench: PGlite (data dir on disk, one process)');
    const pglite = await startServerProcess({ BENCH_BACKEND: 'pglite', BENCH_DATA_DIR: pgliteDir });
    try {
      results.push(await runBackend('pglite', pglite, plan, log));
    } finally {
      await pglite.stop();
    }
  }

  if (serverPhases && adminUrl && backends.includes('postgres')) {
    serverVersion = (await adminQuery(adminUrl, 'SHOW server_version')).rows[0].server_version;
    const name = `acs_bench_${process.pid}`;
    await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    try {
      log(`bench: PostgreSQL ${serverVersion}`);
      const server = await startServerProcess({ BENCH_BACKEND: 'postgres', BENCH_DATABASE_URL: url.toString() });
      try {
        results.push(await runBackend('postgres', server, plan, log));
      } finally {
        await server.stop();
      }
      pgbench = await runPgbench(url.toString(), work);
    } finally {
      await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
  } else if (!adminUrl) {
    log('bench: PostgreSQL skipped: no ACS_BENCH_DATABASE_URL and no local PostgreSQL binaries (initdb, pg_ctl)');
  }
} finally {
  await rm(work, { recursive: true, force: true });
}

if (serverPhases) {
  const report = renderReport(machine(serverVersion), plan, results, pgbench);
  if (quick || partial) log(report);
  else await writeReport(join(root, 'docs/performance.md'), report);
}
// Agents that act (issue 37): in this process, each backend on a scratch place of its own.
if (phases.includes('turns')) {
  log('bench: agents that act (turns with tool calls, suspended turns)');
  await runTurnsBench({ root, adminUrl, quick, backends, parts: ['tools', 'ticks'], log, write: !(quick || partial) });
}
// Replies as they are written (issue 39): a server process per backend, its model a stand-in here.
if (phases.includes('streams')) {
  log('bench: replies as they are written (one reader and 1,000 of a streaming thread)');
  await runStreamsBench({ root, adminUrl, quick, backends, log, write: !(quick || partial) });
}
log(
  `bench: done in ${((performance.now() - started) / 60_000).toFixed(1)} min` +
    (quick || partial ? ` (${quick ? 'quick' : 'partial'} run: docs/performance.md left alone)` : '; figures written to docs/performance.md'),
);

/**
 * `npm run bench:temporal-noop`: where the time of a no-op re-apply on Temporal goes, beside the
 * local engine's, at two sizes of definition, so that the fixed cost of a workflow can be told
 * from the part that grows with the definition.
 *
 *   bash scripts/with-temporal.sh --install -- bash scripts/with-postgres.sh --install -- npm run bench:temporal-noop
 *
 * For each size (10 and 100 teams of 10 agents and 20 edges) it applies the definition once on
 * the local engine, then `BENCH_NOOP_RUNS` times (default 15) in turn: a no-op re-apply on the
 * local engine, the read activity alone called in this process (what the workflow's one local
 * activity does), and a no-op re-apply on Temporal, whose phases come from its history's event
 * times: the client's start call up to the first workflow task's start (the server records the
 * start and hands the task to the worker), that task (the workflow's first activation, the read
 * activity, the second activation), and its end up to the client holding the result. Medians and
 * ranges; nothing is asserted. PostgreSQL: `ACS_BENCH_DATABASE_URL` or `ACS_POSTGRES_URL` (a
 * scratch database is created and dropped), else PGlite in a data dir. Temporal: `TEMPORAL_ADDRESS`
 * (required). `BENCH_NOOP_OUT`: write the markdown there; by default it replaces the part of
 * docs/performance.md between the `bench-temporal-noop` markers.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { createApplyActivities } from '../activities/apply-activities.ts';
import { applyLocally } from '../engine/local-engine.ts';
import { applyWorkflowId } from '../engine/temporal-engine.ts';
import { loadTemporalSettings } from '../temporal/settings.ts';
import { resourceCount, syntheticDefinition, type SyntheticSize } from '../test/support/synthetic.ts';
import { createWorker } from '../worker/worker.ts';
import { READ_BYTES, TEAMS_PER_READ, type ApplyInput } from '../workflows/apply-orchestration.ts';
import { applyWorkflow } from '../workflows/apply-workflow.ts';
import { adminQuery, cpuModel, writeMarkedSection } from './host.ts';
import { startServerProcess, type ServerProcess } from './scenarios.ts';

const log = (line: string) => process.stdout.write(`${line}\n`);
const RUNS = Number(process.env.BENCH_NOOP_RUNS ?? 15);
const SIZES: SyntheticSize[] = [
  { teams: 10, agents: 10, humans: 0, edges: 20 },
  { teams: 100, agents: 10, humans: 0, edges: 20 },
];
const PARALLELISM = 8;
const KEY_ENV = 'BENCH_NOOP_KEY';

if (!process.env.TEMPORAL_ADDRESS) {
  log('bench:temporal-noop: TEMPORAL_ADDRESS is not set: run it through scripts/with-temporal.sh --install');
  process.exit(1);
}

/** One size's figures, each a list over the runs, in milliseconds. */
interface SizeFigures {
  size: SyntheticSize;
  inputKiB: number;
  local: number[];
  activity: number[];
  temporal: number[];
  toFirstTask: number[];
  firstTask: number[];
  toResult: number[];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const range = (xs: number[]) => `${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}`;
const ms = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) => Number(t?.seconds ?? 0) * 1000 + (t?.nanos ?? 0) / 1e6;

async function measureSize(server: ServerProcess, client: Client, taskQueue: string, env: NodeJS.ProcessEnv, size: SyntheticSize): Promise<SizeFigures> {
  const connection = { baseUrl: server.url, apiKeyEnv: KEY_ENV };
  const local: ApplyInput = { connection, desired: syntheticDefinition(`noop-local-${randomUUID().slice(0, 8)}`, size), parallelism: PARALLELISM };
  const onTemporal: ApplyInput = { connection, desired: syntheticDefinition(`noop-temporal-${randomUUID().slice(0, 8)}`, size), parallelism: PARALLELISM };
  await applyLocally(local, createApplyActivities({ env }));
  await applyLocally(onTemporal, createApplyActivities({ env }));
  const figures: SizeFigures = { size, inputKiB: Buffer.byteLength(JSON.stringify(onTemporal)) / 1024, local: [], activity: [], temporal: [], toFirstTask: [], firstTask: [], toResult: [] };
  // One unmeasured round first: JIT, connections, the workflow thread's caches.
  for (let run = 0; run <= RUNS; run++) {
    let started = performance.now();
    const localResult = await applyLocally(local, createApplyActivities({ env }));
    const localMs = performance.now() - started;
    if (localResult.applied.length > 0) throw new Error('the local re-apply changed something');

    // What the workflow's one local activity does, called directly.
    const acts = createApplyActivities({ env });
    started = performance.now();
    const read = await acts.readOrganization({
      connection,
      desired: onTemporal.desired,
      compareProviderKeys: true,
      teamGraphs: { parallelism: PARALLELISM, maxTeams: TEAMS_PER_READ, maxBytes: READ_BYTES },
      inSyncFor: {},
    });
    const activityMs = performance.now() - started;
    if (!read.inSync) throw new Error('the read activity found changes to make');

    const wallStart = Date.now();
    started = performance.now();
    const handle = await client.workflow.start(applyWorkflow, { taskQueue, workflowId: applyWorkflowId(onTemporal.desired.organization.name), args: [onTemporal] });
    const result = await handle.result();
    const temporalMs = performance.now() - started;
    const resultAt = wallStart + temporalMs;
    if (result.applied.length > 0) throw new Error('the Temporal re-apply changed something');
    const events = (await handle.fetchHistory()).events ?? [];
    const taskStarted = events.find((e) => e.workflowTaskStartedEventAttributes);
    const taskCompleted = events.find((e) => e.workflowTaskCompletedEventAttributes);
    if (!taskStarted || !taskCompleted) throw new Error('no workflow task in the history');
    if (run === 0) continue;
    figures.local.push(localMs);
    figures.activity.push(activityMs);
    figures.temporal.push(temporalMs);
    figures.toFirstTask.push(ms(taskStarted.eventTime) - wallStart);
    figures.firstTask.push(ms(taskCompleted.eventTime) - ms(taskStarted.eventTime));
    figures.toResult.push(resultAt - ms(taskCompleted.eventTime));
  }
  log(
    `bench:temporal-noop: ${size.teams} teams: local ${median(figures.local).toFixed(0)} ms, read activity ${median(figures.activity).toFixed(0)} ms, Temporal ${median(figures.temporal).toFixed(0)} ms (medians of ${RUNS})`,
  );
  return figures;
}

function render(figures: SizeFigures[], backend: string, load: number[]): string {
  const lines = [
    '### Temporal no-op re-apply: where its time goes (`npm run bench:temporal-noop`)',
    '',
    `Measured ${new Date().toISOString().slice(0, 10)} on ${cpuModel()}, ${os.availableParallelism()} cores, Node ${process.version}, ${backend}; load average ${load.map((l) => l.toFixed(2)).join(' / ')} at the start, ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' / ')} at the end. acs-server in a child process; the engines, the worker and this script in one process. ${RUNS} runs per size after one unmeasured; medians (min–max), ms. The phases come from the history's event times (the server's clock, the same machine's).`,
    '',
    '| teams (creates) | input, KiB | local no-op | read activity alone | Temporal no-op | Temporal − local | Temporal ÷ local | start call → first task started | first task (read activity in it) | task done → client has the result |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const f of figures) {
    const over = f.temporal.map((t, i) => t - f.local[i]!);
    const ratio = f.temporal.map((t, i) => t / f.local[i]!);
    lines.push(
      `| ${f.size.teams} (${resourceCount(f.size)}) | ${f.inputKiB.toFixed(0)} | ${median(f.local).toFixed(0)} (${range(f.local)}) | ${median(f.activity).toFixed(0)} (${range(f.activity)}) | ${median(f.temporal).toFixed(0)} (${range(f.temporal)}) | ${median(over).toFixed(0)} | ${median(ratio).toFixed(2)} | ${median(f.toFirstTask).toFixed(0)} | ${median(f.firstTask).toFixed(0)} | ${median(f.toResult).toFixed(0)} |`,
    );
  }
  return lines.join('\n');
}

const load = os.loadavg();
const adminUrl = process.env.ACS_BENCH_DATABASE_URL || process.env.ACS_POSTGRES_URL || undefined;
const work = await mkdtemp(join(os.tmpdir(), 'acs-bench-noop-'));
Runtime.install({ logger: new DefaultLogger('WARN') });
const settings = loadTemporalSettings(process.env);
const taskQueue = `bench-noop-${randomUUID()}`;
const env: NodeJS.ProcessEnv = {};
const worker = await createWorker(settings, { taskQueue, activityDeps: { env } });
const running = worker.run();
const connection = await Connection.connect(settings.connectionOptions as Parameters<typeof Connection.connect>[0]);
const client = new Client({ connection, namespace: settings.namespace });
const database = adminUrl ? `acs_bench_noop_${process.pid}` : undefined;
let backend = 'PGlite (data dir)';
let report: string;
try {
  let server: ServerProcess;
  if (adminUrl && database) {
    await adminQuery(adminUrl, `CREATE DATABASE ${database}`);
    const url = new URL(adminUrl);
    url.pathname = `/${database}`;
    backend = `PostgreSQL ${(await adminQuery(adminUrl, 'SHOW server_version')).rows[0].server_version}`;
    server = await startServerProcess({ BENCH_BACKEND: 'postgres', BENCH_DATABASE_URL: url.toString() });
  } else {
    server = await startServerProcess({ BENCH_BACKEND: 'pglite', BENCH_DATA_DIR: join(work, 'pglite') });
  }
  env[KEY_ENV] = server.apiKey;
  try {
    const figures: SizeFigures[] = [];
    for (const size of SIZES) figures.push(await measureSize(server, client, taskQueue, env, size));
    report = render(figures, backend, load);
  } finally {
    await server.stop();
  }
} finally {
  worker.worker.shutdown();
  await running;
  await connection.close();
  if (adminUrl && database) await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await rm(work, { recursive: true, force: true });
}
const outPath = process.env.BENCH_NOOP_OUT;
if (outPath) await writeFile(outPath, `${report}\n`);
else {
  await writeMarkedSection(
    join(import.meta.dirname, '..', 'docs', 'performance.md'),
    '<!-- bench-temporal-noop:begin (generated by `npm run bench:temporal-noop`; edit outside the markers) -->',
    '<!-- bench-temporal-noop:end -->',
    report,
  );
}
log('');
log(report);
log(`bench:temporal-noop: ${outPath ? `written to ${outPath}` : 'written to docs/performance.md'}`);

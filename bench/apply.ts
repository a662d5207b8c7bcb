/**
 * `npm run bench:apply`: an apply of 100 teams × 10 agents × 20 edges (3,101 creates) on the local
 * engine and on Temporal, on PGlite and on PostgreSQL, against the floor: the requests it sends ÷
 * the service's own create rate at 32 concurrent clients, measured before and after the applies
 * (the mean of the two; bench/apply-report.ts `floorRate`). Also a no-op re-apply of each, the
 * Temporal apply's history (events, bytes, runs of its continue-as-new chain, largest payload), and
 * the client's CPU per request beside a plain `node:http` client's. Everything is measured
 * `BENCH_APPLY_RUNS` times (default 5), each run on a fresh server, so that every ratio compares
 * figures of one run; the report gives each ratio's range over the runs and the machine.
 *
 *   bash scripts/with-temporal.sh --install -- bash scripts/with-postgres.sh --install -- npm run bench:apply
 *
 * PostgreSQL: `ACS_BENCH_DATABASE_URL` or `ACS_POSTGRES_URL` (a superuser URL; a scratch database
 * is created and dropped per run), else PGlite only (said so). Temporal: `TEMPORAL_ADDRESS` (and
 * the rest of temporal/settings.ts), else the local engine only (said so). `BENCH_QUICK=1`: 10
 * teams, 2 s rates, one run (smoke run). `BENCH_APPLY_PARALLELISM` / `BENCH_APPLY_TEMPORAL_PARALLELISM`:
 * comma-separated parallelisms of the local / Temporal applies (default 8 / 8; `none` for none).
 * `BENCH_APPLY_BACKENDS`: `pglite`, `postgres` or both (default). `BENCH_APPLY_OUT`: a file to
 * write the markdown to instead; by default a full run replaces the part of docs/performance.md
 * between the `bench-apply` markers (a quick run only prints).
 *
 * acs-server runs in a child process (bench/server.ts, rate limit off) so that it does not share an
 * event loop with the engine; the Temporal worker runs in this process, like the local engine.
 * Requests are counted by an interceptor on undici's global dispatcher, which the client sends
 * through, so the client measured is the one teamctl runs. Not part of the tests: numbers depend on
 * the machine.
 */
import { fork, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { Agent, DecoratorHandler, setGlobalDispatcher, type Dispatcher } from 'undici';
import { createApplyActivities } from '../activities/apply-activities.ts';
import { applyLocally } from '../engine/local-engine.ts';
import { applyWorkflowId } from '../engine/temporal-engine.ts';
import { loadTemporalSettings } from '../temporal/settings.ts';
import { resourceCount, syntheticDefinition, type SyntheticSize } from '../test/support/synthetic.ts';
import { createWorker, type TeamctlWorker } from '../worker/worker.ts';
import type { ApplyInput, ApplyResult } from '../workflows/apply-orchestration.ts';
import { applyWorkflow } from '../workflows/apply-workflow.ts';
import {
  renderApplyReport,
  type ApplyMachine,
  type ApplyPlan,
  type ApplyRun,
  type BackendApplyResult,
  type BackendRun,
  type ClientCpu,
  type CpuSeconds,
  type HistoryStats,
  type ThroughputResult,
} from './apply-report.ts';
import { createClient, expectStatus } from './client.ts';
import { startServerProcess, type ServerProcess } from './scenarios.ts';
import { adminQuery, cpuModel, writeMarkedSection } from './host.ts';

const root = join(import.meta.dirname, '..');
const log = (line: string) => process.stdout.write(`${line}\n`);
const quick = process.env.BENCH_QUICK === '1';
const adminUrl = process.env.ACS_BENCH_DATABASE_URL || process.env.ACS_POSTGRES_URL || undefined;
const hasTemporal = Boolean(process.env.TEMPORAL_ADDRESS);
// `BENCH_APPLY_BACKENDS=postgres` (or `pglite`) measures one backend only (a rerun of one).
const backends = (process.env.BENCH_APPLY_BACKENDS || 'pglite,postgres').split(',').map((b) => b.trim());
const outPath = process.env.BENCH_APPLY_OUT || undefined;
const size: SyntheticSize = { teams: quick ? 10 : 100, agents: 10, humans: 0, edges: 20 };
const seconds = quick ? 2 : 10;
const RUNS = quick ? 1 : Number(process.env.BENCH_APPLY_RUNS ?? 5);
const CLIENT_REQUESTS = quick ? 300 : 1_000;
const parallelisms = (name: string, fallback: string) =>
  (process.env[name] || fallback)
    .split(',')
    .map((s) => Number(s.trim()))
    .filter((p) => Number.isInteger(p) && p > 0);
const localParallelisms = parallelisms('BENCH_APPLY_PARALLELISM', '8');
const temporalParallelisms = hasTemporal ? parallelisms('BENCH_APPLY_TEMPORAL_PARALLELISM', '8') : [];
const KEY_ENV = 'BENCH_APPLY_KEY';

// ---------------------------------------------------------------------------------------------
// Counting requests: an interceptor on undici's global dispatcher, which AcsClient sends through
// (the worker's activities included), with counters reset before each apply. It is installed only
// while applies run, so that the client CPU measurement pays nothing for it.

const counts = { gets: 0, mutations: 0, failed: 0 };
const resetCounts = () => Object.assign(counts, { gets: 0, mutations: 0, failed: 0 });

// Requests in flight over time: the mean (their time integral ÷ the wall time) says how much of
// the parallelism an engine keeps busy; an engine that waits between requests shows it here.
const inFlight = { now: 0, since: 0, integral: 0, atLevel: [] as number[] };
function inFlightChange(delta: number): void {
  const t = performance.now();
  inFlight.integral += inFlight.now * (t - inFlight.since);
  inFlight.atLevel[inFlight.now] = (inFlight.atLevel[inFlight.now] ?? 0) + (t - inFlight.since);
  inFlight.since = t;
  inFlight.now += delta;
}

/** Counts the answers other than 2xx and the requests in flight (undici's handler API). */
class FailureCounter extends DecoratorHandler {
  #open = true;
  #done(): void {
    if (!this.#open) return;
    this.#open = false;
    inFlightChange(-1);
  }
  /** The decorated handler's method of that name (undici's types do not declare the controller API on DecoratorHandler). */
  #forward(name: 'onResponseStart' | 'onResponseEnd' | 'onResponseError', ...args: unknown[]): void {
    (DecoratorHandler.prototype as unknown as Record<typeof name, (...a: unknown[]) => void>)[name].call(this, ...args);
  }
  onResponseStart(controller: unknown, statusCode: number, headers: unknown, statusMessage?: string): void {
    if (statusCode < 200 || statusCode >= 300) counts.failed++;
    this.#forward('onResponseStart', controller, statusCode, headers, statusMessage);
  }
  onResponseEnd(controller: unknown, trailers: unknown): void {
    this.#done();
    this.#forward('onResponseEnd', controller, trailers);
  }
  onResponseError(controller: unknown, error: Error): void {
    this.#done();
    this.#forward('onResponseError', controller, error);
  }
}
const plainDispatcher = new Agent();
const countingDispatcher = plainDispatcher.compose((dispatch) => (options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler) => {
  if ((options.method ?? 'GET') === 'GET') counts.gets++;
  else counts.mutations++;
  inFlightChange(1);
  return dispatch(options, new FailureCounter(handler));
});
setGlobalDispatcher(plainDispatcher);

// The activities read the key from here at call time; each backend's server has its own key.
const activityEnv: NodeJS.ProcessEnv = {};

// ---------------------------------------------------------------------------------------------
// CPU per process from /proc (Linux): where the time of a run goes. NaN elsewhere.

const ticksPerSecond = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

/** utime + stime (+ reaped children's, for the postmaster) of `pid`, in seconds; NaN when gone. */
function processCpu(pid: number, withChildren = false): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which may itself hold spaces and parentheses.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
    return (f[11]! + f[12]! + (withChildren ? f[13]! + f[14]! : 0)) / ticksPerSecond;
  } catch {
    return NaN;
  }
}

function pids(): number[] {
  return existsSync('/proc') ? readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map(Number) : [];
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return '';
  }
}

/** The pid of the bench/server.ts child of this process (startServerProcess does not expose it). */
function serverPid(): number | undefined {
  if (!existsSync(`/proc/${process.pid}/task`)) return undefined;
  const children = readdirSync(`/proc/${process.pid}/task`).flatMap((tid) => {
    try {
      return readFileSync(`/proc/${process.pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    } catch {
      return [];
    }
  });
  return children.find((pid) => cmdline(pid).includes('bench/server.ts'));
}

/** The Temporal dev server listening on TEMPORAL_ADDRESS's port (scripts/with-temporal.sh starts it). */
function temporalServerPid(): number | undefined {
  const port = process.env.TEMPORAL_ADDRESS?.split(':').at(-1);
  if (!port) return undefined;
  return pids().find((pid) => {
    const cmd = cmdline(pid);
    return cmd.includes('start-dev') && cmd.includes(`--port ${port} `);
  });
}

/** CPU seconds of every PostgreSQL process; the postmaster's reaped children (ended backends) included. */
function postgresCpu(): number {
  let total = 0;
  for (const pid of pids()) {
    let comm = '';
    try {
      comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    } catch {
      continue;
    }
    if (comm === 'postgres') total += processCpu(pid, true) || 0;
  }
  return total;
}

/** Busy CPU seconds of the whole machine (all cores) from /proc/stat. */
function machineCpu(): number {
  try {
    const [, ...f] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
    const v = f.map(Number);
    const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
    return (total - v[3]! - v[4]!) / ticksPerSecond;
  } catch {
    return NaN;
  }
}

interface CpuProbe {
  server: number | undefined;
  temporal: number | undefined;
  postgres: boolean;
}

function sampleCpu(probe: CpuProbe): CpuSeconds {
  const usage = process.cpuUsage();
  return {
    bench: (usage.user + usage.system) / 1e6,
    server: probe.server ? processCpu(probe.server) : NaN,
    temporal: probe.temporal ? processCpu(probe.temporal) : NaN,
    postgres: probe.postgres ? postgresCpu() : NaN,
    machine: machineCpu(),
  };
}

function cpuSince(probe: CpuProbe, before: CpuSeconds): CpuSeconds {
  const now = sampleCpu(probe);
  return {
    bench: now.bench - before.bench,
    server: now.server - before.server,
    temporal: now.temporal - before.temporal,
    postgres: now.postgres - before.postgres,
    machine: now.machine - before.machine,
  };
}

// ---------------------------------------------------------------------------------------------
// The floor's denominator: the service's create rate with many clients, in the apply's shape.

/**
 * Creates as fast as `clients` loops can for `secs` seconds, each loop on teams of its own (no
 * row lock shared between loops, as the apply spreads its calls over teams), in a new child
 * organization of the key's (where the apply creates its teams): create a team, its agents one by
 * one, its edges one by one (the apply's bodies, from the synthetic definition), then the next
 * team. Returns the creates per second; every create must answer 201.
 */
async function createRate(server: ServerProcess, probe: CpuProbe, clients: number, secs: number): Promise<ThroughputResult> {
  const client = createClient(server.url, server.apiKey);
  const template = syntheticDefinition('template', { teams: 1, agents: size.agents, humans: 0, edges: size.edges }).teams[0]!;
  const tag = randomUUID().slice(0, 8);
  // A child organization of the key's, as the apply creates its teams in one (same access checks).
  const org = expectStatus(await client.call('POST', '/organizations', { org_name: `rate-${tag}` }), 201, 'create organization');
  const orgId = org.body.org_id as string;
  let creates = 0;
  const cpuBefore = sampleCpu(probe);
  const deadline = performance.now() + secs * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async (_, w) => {
      for (let round = 0; performance.now() < deadline; round++) {
        const name = `rate-${tag}-${w}-${round}`;
        const team = expectStatus(await client.call('POST', `/organizations/${orgId}/teams`, { ...template.fields, team_name: name }), 201, 'create team');
        creates++;
        const teamId = team.body.team_id as string;
        const ids = new Map<string, string>();
        for (let i = 0; performance.now() < deadline && i < template.agents.length; i++) {
          const agent = template.agents[i]!.fields;
          const created = await client.call('POST', `/teams/${teamId}/agents`, agent);
          ids.set(agent.name, expectStatus(created, 201, 'create agent').body.agent_id as string);
          creates++;
        }
        for (const [a, b] of template.edges) {
          if (performance.now() >= deadline) break;
          expectStatus(await client.call('POST', `/teams/${teamId}/edges`, { participants: [ids.get(a), ids.get(b)] }), 201, 'create edge');
          creates++;
        }
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const cpu = cpuSince(probe, cpuBefore);
  client.destroy();
  return { clients, creates, seconds: elapsed, perSecond: creates / elapsed, cpu };
}

/**
 * The CPU per request of each client, over `count` sequential creates of agents (the apply's most
 * common request, with the apply's bodies) into a team of each client's own: plain `node:http` +
 * `JSON.parse` (bench/client.ts, the floor's load generator), `AcsClient` as teamctl sends (undici's
 * `request`), and `AcsClient` over `fetch` (the transport before). Each client runs in a process of
 * its own (bench/client-cpu.ts says why), sends 200 requests unmeasured (JIT, connections), then
 * five rounds, the clients taking turns within each and the order reversed every other round, so
 * that a change of the machine's load falls on every client alike.
 */
async function clientCpu(server: ServerProcess, count: number): Promise<ClientCpu[]> {
  const plain = createClient(server.url, server.apiKey);
  const tag = randomUUID().slice(0, 8);
  const org = expectStatus(await plain.call('POST', '/organizations', { org_name: `client-${tag}` }), 201, 'create organization').body.org_id as string;
  const names: ClientCpu['client'][] = ['node-http', 'acs-client', 'acs-client-fetch'];
  const children = new Map<ClientCpu['client'], { run: (count: number) => Promise<number>; stop: () => void }>();
  try {
    for (const name of names) {
      const team = expectStatus(await plain.call('POST', `/organizations/${org}/teams`, { team_name: `${name}-${tag}` }), 201, 'create team').body.team_id as string;
      children.set(name, await clientProcess(name, server, team));
    }
    for (const name of names) await children.get(name)!.run(200);
    const rounds = 5;
    const perRound = Math.ceil(count / rounds);
    const used = new Map(names.map((name) => [name, 0]));
    for (let round = 0; round < rounds; round++) {
      for (const name of round % 2 === 0 ? names : [...names].reverse()) used.set(name, used.get(name)! + (await children.get(name)!.run(perRound)));
    }
    return names.map((name) => ({ client: name, requests: perRound * rounds, microsPerRequest: used.get(name)! / (perRound * rounds) }));
  } finally {
    for (const child of children.values()) child.stop();
    plain.destroy();
  }
}

/** Starts bench/client-cpu.ts for one client; `run(n)` has it send n creates and resolves with its CPU microseconds. */
async function clientProcess(name: ClientCpu['client'], server: ServerProcess, team: string): Promise<{ run: (count: number) => Promise<number>; stop: () => void }> {
  const child = fork(join(import.meta.dirname, 'client-cpu.ts'), [], {
    env: { ...process.env, BENCH_CLIENT: name, BENCH_CLIENT_URL: server.url, BENCH_CLIENT_KEY: server.apiKey, BENCH_CLIENT_TEAM: team },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<number, { resolve: (micros: number) => void; reject: (error: Error) => void }>();
  let nextId = 1;
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => {
      reject(new Error(`bench/client-cpu.ts (${name}) exited with ${code}`));
      for (const waiter of pending.values()) waiter.reject(new Error(`bench/client-cpu.ts (${name}) exited with ${code}`));
    });
    child.on('message', (message: { type?: string; id?: number; micros?: number; error?: string }) => {
      if (message.type === 'ready') return resolve();
      const waiter = pending.get(message.id!);
      if (!waiter) return;
      pending.delete(message.id!);
      if (message.error) waiter.reject(new Error(`bench/client-cpu.ts (${name}): ${message.error}`));
      else waiter.resolve(message.micros!);
    });
  });
  return {
    run: (count) =>
      new Promise((resolve, reject) => {
        const id = nextId++;
        pending.set(id, { resolve, reject });
        child.send({ id, count });
      }),
    stop: () => {
      child.removeAllListeners('exit');
      child.kill();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Temporal: one in-process worker for the whole bench, one client connection.

interface TemporalSide {
  client: Client;
  connection: Connection;
  worker: TeamctlWorker;
  running: Promise<void>;
  taskQueue: string;
}

async function startTemporal(): Promise<{ side: TemporalSide; startSeconds: number }> {
  // Retries would be worth a warning; the SDK's info lines would bury the figures.
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const settings = loadTemporalSettings(process.env);
  const taskQueue = `bench-apply-${randomUUID()}`;
  const started = performance.now();
  const worker = await createWorker(settings, { taskQueue, activityDeps: { env: activityEnv } });
  const running = worker.run();
  const connection = await Connection.connect(settings.connectionOptions as Parameters<typeof Connection.connect>[0]);
  const client = new Client({ connection, namespace: settings.namespace });
  return { side: { client, connection, worker, running, taskQueue }, startSeconds: (performance.now() - started) / 1000 };
}

async function stopTemporal(side: TemporalSide): Promise<void> {
  side.worker.worker.shutdown();
  await side.running;
  await side.connection.close();
}

/** Sum of the payloads' bytes of one payload field of an event (undefined: no such field). */
function payloadBytes(payloads: { payloads?: Array<{ data?: Uint8Array | null }> | null } | null | undefined): number {
  return (payloads?.payloads ?? []).reduce((sum, p) => sum + (p.data?.length ?? 0), 0);
}

/**
 * The histories of the chain that began with `firstRunId`: each run's events and the server's
 * `historySizeBytes`, followed through continue-as-new to the last run.
 */
async function historyOf(client: Client, workflowId: string, firstRunId: string): Promise<HistoryStats> {
  const stats: HistoryStats = { runs: 0, events: 0, maxEventsPerRun: 0, bytes: 0, maxBytesPerRun: 0, largestPayload: 0, largestPayloadAt: '', activities: 0, localActivities: 0, workflowTasks: 0, eventsPerRun: [] };
  let runId: string | undefined = firstRunId;
  while (runId) {
    const handle: WorkflowHandle = client.workflow.getHandle(workflowId, runId);
    const [history, description] = await Promise.all([handle.fetchHistory(), handle.describe()]);
    const events = history.events ?? [];
    stats.runs++;
    stats.events += events.length;
    stats.maxEventsPerRun = Math.max(stats.maxEventsPerRun, events.length);
    stats.eventsPerRun.push(events.length);
    const bytes = description.historySize ?? NaN;
    stats.bytes += bytes;
    stats.maxBytesPerRun = Math.max(stats.maxBytesPerRun, bytes);
    for (const event of events) {
      if (event.activityTaskScheduledEventAttributes) stats.activities++;
      // A local activity leaves one marker (its result) and no activity events; patch markers are not activities.
      if (event.markerRecordedEventAttributes?.markerName === 'core_local_activity') stats.localActivities++;
      if (event.workflowTaskCompletedEventAttributes) stats.workflowTasks++;
      const fields: Array<[string, Parameters<typeof payloadBytes>[0]]> = [
        ['input', event.workflowExecutionStartedEventAttributes?.input],
        ['result', event.workflowExecutionCompletedEventAttributes?.result],
        ['continue-as-new input', event.workflowExecutionContinuedAsNewEventAttributes?.input],
        ['activity input', event.activityTaskScheduledEventAttributes?.input],
        ['activity result', event.activityTaskCompletedEventAttributes?.result],
        ...Object.values(event.markerRecordedEventAttributes?.details ?? {}).map((p): [string, Parameters<typeof payloadBytes>[0]] => ['marker', p]),
      ];
      for (const [what, field] of fields) {
        const size = payloadBytes(field);
        if (size > stats.largestPayload) Object.assign(stats, { largestPayload: size, largestPayloadAt: `run ${stats.runs} ${what}` });
      }
    }
    runId = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return stats;
}

// ---------------------------------------------------------------------------------------------
// One apply, measured.

/**
 * Runs `apply` with fresh counters and CPU samples around it; checks that a fresh apply created
 * everything and a no-op one changed nothing (a problem is recorded, not thrown: the rest of a
 * long run is still worth having).
 */
async function measure(
  engine: ApplyRun['engine'],
  parallelism: number,
  kind: ApplyRun['kind'],
  probe: CpuProbe,
  apply: () => Promise<{ result: ApplyResult; after?: () => Promise<HistoryStats> }>,
): Promise<ApplyRun> {
  resetCounts();
  setGlobalDispatcher(countingDispatcher);
  const cpuBefore = sampleCpu(probe);
  const started = performance.now();
  Object.assign(inFlight, { now: 0, since: started, integral: 0, atLevel: [] });
  const { result, after } = await apply().finally(() => setGlobalDispatcher(plainDispatcher));
  const wallSeconds = (performance.now() - started) / 1000;
  inFlightChange(0);
  const meanInFlight = inFlight.integral / (wallSeconds * 1000);
  const levels = [...inFlight.atLevel].map((ms, n) => `${n}: ${Math.round(((ms ?? 0) / (wallSeconds * 1000)) * 100)}%`).join(', ');
  const cpu = cpuSince(probe, cpuBefore);
  const snapshot = { ...counts };
  const history = after ? await after() : undefined;
  const expected = resourceCount(size);
  let problem = '';
  if (kind === 'fresh' && (result.applied.length !== expected || result.applied.some((c) => c.outcome !== 'created'))) {
    problem = `expected ${expected} creates, got ${result.applied.filter((c) => c.outcome === 'created').length} of ${result.applied.length} changes`;
  }
  if (kind === 'no-op' && (result.applied.length > 0 || snapshot.mutations > 0)) {
    problem = `expected nothing to change, got ${result.applied.length} changes and ${snapshot.mutations} mutating requests`;
  }
  const run: ApplyRun = { engine, parallelism, kind, wallSeconds, ...snapshot, changes: result.applied.length, cpu, ...(history ? { history } : {}), problem };
  log(
    `  ${engine} p${parallelism} ${kind}: ${wallSeconds.toFixed(2)} s, ${snapshot.gets} GET + ${snapshot.mutations} mutating (${snapshot.failed} non-2xx), ` +
      `${run.changes} changes, ${meanInFlight.toFixed(1)} requests in flight on average (share of the time at each count: ${levels}); CPU bench ${cpu.bench.toFixed(1)} s, server ${cpu.server.toFixed(1)} s, temporal ${cpu.temporal.toFixed(1)} s, pg ${cpu.postgres.toFixed(1)} s, machine ${cpu.machine.toFixed(1)} s` +
      (history ? `; history ${history.events} events / ${history.runs} runs (max ${history.maxEventsPerRun}), ${(history.bytes / 1024).toFixed(0)} KiB, largest payload ${(history.largestPayload / 1024).toFixed(1)} KiB (${history.largestPayloadAt})` : '') +
      (problem ? `; PROBLEM: ${problem}` : ''),
  );
  return run;
}

/**
 * One run of one backend on `server` (fresh): warm-up, the floor, then at each parallelism a fresh
 * apply and a no-op re-apply on the local engine and on Temporal, the floor again, the client CPU.
 */
async function runOnce(backend: BackendApplyResult['backend'], server: ServerProcess, temporal: TemporalSide | undefined, run: number): Promise<BackendRun> {
  activityEnv[KEY_ENV] = server.apiKey;
  const probe: CpuProbe = { server: serverPid(), temporal: temporal ? temporalServerPid() : undefined, postgres: backend === 'postgres' };
  const connection = { baseUrl: server.url, apiKeyEnv: KEY_ENV };

  // Warm-up: JIT, pool connections, caches (as bench/run.ts does before its rates).
  await createRate(server, probe, 8, 2);
  const logFloor = (what: string, r: ThroughputResult) =>
    log(`${backend} run ${run}: ${what} ${r.perSecond.toFixed(0)} creates/s (${r.creates} in ${r.seconds.toFixed(1)} s); CPU bench ${r.cpu.bench.toFixed(1)} s, server ${r.cpu.server.toFixed(1)} s, pg ${r.cpu.postgres.toFixed(1)} s, machine ${r.cpu.machine.toFixed(1)} s`);
  const floor = await createRate(server, probe, 32, seconds);
  logFloor('floor', floor);

  const applies: ApplyRun[] = [];
  const all = [...new Set([...localParallelisms, ...temporalParallelisms])].sort((a, b) => a - b);
  // Local and Temporal at the same parallelism run back to back, so both see the same database size.
  for (const parallelism of all) {
    if (localParallelisms.includes(parallelism)) {
      const desired = syntheticDefinition(`apply-local-p${parallelism}-${randomUUID().slice(0, 8)}`, size);
      const input: ApplyInput = { connection, desired, parallelism };
      for (const kind of ['fresh', 'no-op'] as const) {
        applies.push(await measure('local', parallelism, kind, probe, async () => ({ result: await applyLocally(input, createApplyActivities({ env: activityEnv })) })));
      }
    }
    if (temporal && temporalParallelisms.includes(parallelism)) {
      const desired = syntheticDefinition(`apply-temporal-p${parallelism}-${randomUUID().slice(0, 8)}`, size);
      const input: ApplyInput = { connection, desired, parallelism };
      const workflowId = applyWorkflowId(desired.organization.name);
      for (const kind of ['fresh', 'no-op'] as const) {
        applies.push(
          await measure('temporal', parallelism, kind, probe, async () => {
            const handle = await temporal.client.workflow.start(applyWorkflow, { taskQueue: temporal.taskQueue, workflowId, args: [input] });
            const result = await handle.result();
            return { result, after: () => historyOf(temporal.client, workflowId, handle.firstExecutionRunId) };
          }),
        );
      }
    }
  }
  // The floor again: the machine's speed drifts over a run, and the mean of both sides averages a drift between them out of the ratio.
  const floorAfter = await createRate(server, probe, 32, seconds);
  logFloor('floor after the applies', floorAfter);
  const cpu = await clientCpu(server, CLIENT_REQUESTS);
  log(`${backend} run ${run}: client CPU per request ${cpu.map((c) => `${c.client} ${c.microsPerRequest.toFixed(0)} µs`).join(', ')}`);
  return { floor, floorAfter, clientCpu: cpu, applies };
}

// ---------------------------------------------------------------------------------------------


/** The commit measured, and whether the code an apply runs differs from it (others may be editing it). */
function revision(): string {
  const git = (...args: string[]) => spawnSync('git', ['-C', root, ...args], { encoding: 'utf8' }).stdout?.trim() ?? '';
  const commit = git('rev-parse', '--short', 'HEAD') || 'unknown';
  const dirty = git('status', '--porcelain', '--', 'workflows', 'activities', 'engine', 'worker', 'client', 'plan', 'service');
  return dirty ? `${commit} + uncommitted changes to the apply or the service` : commit;
}

function machine(postgres: string | undefined, load: number[]): ApplyMachine {
  const cli = process.env.TEMPORAL_CLI;
  // "temporal version 1.5.1 (Server 1.29.1, UI 2.42.1)" -> "1.29.1 (CLI 1.5.1)"
  const version = cli ? spawnSync(cli, ['--version'], { encoding: 'utf8' }).stdout ?? '' : '';
  const m = /version (\S+) \(Server (\S+?),/.exec(version);
  return {
    cpu: cpuModel(),
    cores: os.availableParallelism(),
    memoryGiB: os.totalmem() / 2 ** 30,
    node: process.version,
    postgres,
    temporal: hasTemporal ? (m ? `${m[2]} (CLI ${m[1]})` : 'unknown version') : undefined,
    date: new Date().toISOString().slice(0, 10),
    revision: revision(),
    load,
    loadAtEnd: os.loadavg(),
  };
}

const startedAt = performance.now();
const load = os.loadavg();
log(
  `bench:apply: ${size.teams} teams × ${size.agents} agents × ${size.edges} edges = ${resourceCount(size)} creates; ` +
    `${RUNS} run${RUNS === 1 ? '' : 's'}; local parallelism ${localParallelisms.join(',')}; Temporal ${hasTemporal ? `parallelism ${temporalParallelisms.join(',')}` : 'skipped (TEMPORAL_ADDRESS unset: run through scripts/with-temporal.sh --install)'}` +
    `${adminUrl ? '' : '; PostgreSQL skipped (no ACS_BENCH_DATABASE_URL / ACS_POSTGRES_URL: run through scripts/with-postgres.sh --install)'}`,
);
const work = await mkdtemp(join(os.tmpdir(), 'acs-bench-apply-'));
const results: BackendApplyResult[] = [];
let postgresVersion: string | undefined;
let temporal: TemporalSide | undefined;
let workerStartSeconds = NaN;
try {
  if (hasTemporal) {
    const started = await startTemporal();
    temporal = started.side;
    workerStartSeconds = started.startSeconds;
    log(`bench:apply: Temporal worker started in ${workerStartSeconds.toFixed(1)} s (bundling included), task queue ${temporal.taskQueue}`);
  }

  if (backends.includes('pglite')) {
    const result: BackendApplyResult = { backend: 'pglite', runs: [] };
    for (let run = 1; run <= RUNS; run++) {
      log(`bench:apply: PGlite run ${run} of ${RUNS} (a new data dir on disk, server in a child process)`);
      const pglite = await startServerProcess({ BENCH_BACKEND: 'pglite', BENCH_DATA_DIR: join(work, `pglite-${run}`) });
      try {
        result.runs.push(await runOnce('pglite', pglite, temporal, run));
      } finally {
        await pglite.stop();
      }
    }
    results.push(result);
  }

  if (adminUrl && backends.includes('postgres')) {
    postgresVersion = (await adminQuery(adminUrl, 'SHOW server_version')).rows[0].server_version;
    const result: BackendApplyResult = { backend: 'postgres', runs: [] };
    for (let run = 1; run <= RUNS; run++) {
      const name = `acs_bench_apply_${process.pid}_${run}`;
      await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
      const url = new URL(adminUrl);
      url.pathname = `/${name}`;
      try {
        log(`bench:apply: PostgreSQL ${postgresVersion} run ${run} of ${RUNS} (a new database, server in a child process)`);
        const server = await startServerProcess({ BENCH_BACKEND: 'postgres', BENCH_DATABASE_URL: url.toString() });
        try {
          result.runs.push(await runOnce('postgres', server, temporal, run));
        } finally {
          await server.stop();
        }
      } finally {
        await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      }
    }
    results.push(result);
  }
} finally {
  if (temporal) await stopTemporal(temporal);
  await rm(work, { recursive: true, force: true });
}

const plan: ApplyPlan = {
  teams: size.teams,
  agents: size.agents,
  edges: size.edges,
  creates: resourceCount(size),
  seconds,
  clientRequests: CLIENT_REQUESTS,
  quick,
  temporal: hasTemporal ? 'in-process' : 'skipped',
  workerStartSeconds,
};
const report = renderApplyReport(machine(postgresVersion, load), plan, results);
const BEGIN = '<!-- bench-apply:begin (generated by `npm run bench:apply`; edit outside the markers) -->';
const END = '<!-- bench-apply:end -->';
let written = 'printed only (quick run)';
if (outPath) {
  await writeFile(outPath, `${report}\n`);
  written = `written to ${outPath}`;
} else if (!quick) {
  await writeMarkedSection(join(import.meta.dirname, '..', 'docs', 'performance.md'), BEGIN, END, report);
  written = 'written to docs/performance.md';
}
log('');
log(report);
log('');
log(`bench:apply: done in ${((performance.now() - startedAt) / 60_000).toFixed(1)} min; ${written}`);

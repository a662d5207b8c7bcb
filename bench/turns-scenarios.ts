/**
 * The measurements of the turn benchmark (bench/turns.ts; `npm run bench` runs them as its
 * `turns` phase): what an agent that acts costs acs-server (contract §11, issue 37).
 *
 * 1. Turns with tool calls. acs-server in this process on a fresh database; an agent with
 *    `provider: openai`, `tools: {team: true}` and `max_steps: 100` whose model is a loopback
 *    stand-in (bench/openai-stand-in.ts) answering at once: S steps of K `whoami` calls, then text.
 *    Turns run one at a time, each on a new thread opened by a human. Per turn the benchmark reads
 *    the service's own spans (`invoke_agent`: the turn as the loop ran it; `execute_tool`: each
 *    tool's own run), the stand-in's timings (each request from its arrival to its answer
 *    written: the provider's own time), every SQL statement (a wrapper of the `Db`), and, after
 *    the turns, the bytes they stored.
 * 2. Suspended turns and the idle tick. 50 echo agents with `tools: {team: true}`, each on 10
 *    threads with a human; the idle tick (`claimWork`, the one statement a tick runs when nothing
 *    is due) is timed with the 500 threads answered, with 500 turns suspended on `ask` to a human
 *    who does not answer, and again after that human answered them all and the turns finished.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { defaultProviders } from '../service/agent-loop/providers/registry.ts';
import { claimWork } from '../service/agent-loop/work.ts';
import { startServer } from '../service/index.ts';
import type { Db } from '../service/storage/db.ts';
import { openDb } from '../service/storage/open-db.ts';
import { startOpenAiStandIn, type ServedRequest } from './openai-stand-in.ts';
import { catchSpans, isBackground, profiledDb, timedProviders, type TimedSpan, type TimedStatement, type TimedStep } from './turn-probes.ts';

/** A full garbage collection, also without `--expose-gc` (V8's flag set at run time, `gc` taken from a fresh context). */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/** Where a backend's data lives for one server: a PGlite data dir or a PostgreSQL database. */
export interface TurnsStorage {
  dataDir?: string;
  databaseUrl?: string;
}

/** A storage backend: `open()` gives a fresh, empty place (`drop()` removes it). */
export interface TurnsBackend {
  name: 'pglite' | 'postgres';
  label: string;
  open(): Promise<{ storage: TurnsStorage; drop(): Promise<void> }>;
}

/** A turn's shape: `steps` steps of `calls` tool calls each, then a text reply (steps = 0: text at once). */
export interface TurnShape {
  steps: number;
  calls: number;
}

/** Sizes of a run. */
export interface TurnsPlan {
  /** Turns measured per shape, after `warmup` turns that are not. */
  turns: number;
  warmup: number;
  shapes: TurnShape[];
  /** Part 2: agents, and threads of each (each thread: one suspended turn). */
  agents: number;
  threadsPerAgent: number;
  /** `claimWork` samples per state. */
  tickSamples: number;
  /** Seconds the idle server's CPU is read per state. */
  idleSeconds: number;
}

/**
 * The default plan; `quick` for a smoke run. `BENCH_TURNS_SHAPES` (e.g. `0x0,99x1`: steps × calls)
 * replaces the shapes, `BENCH_TURNS_COUNT` the turns measured per shape (for a closer look at one).
 */
export function turnsPlan(quick: boolean, env: NodeJS.ProcessEnv = process.env): TurnsPlan {
  const plan = defaultPlan(quick);
  if (env.BENCH_TURNS_SHAPES) {
    plan.shapes = env.BENCH_TURNS_SHAPES.split(',').map((s) => {
      const m = /^(\d+)x(\d+)$/.exec(s.trim());
      if (!m || Number(m[1]) > 99 || Number(m[2]) > 32) throw new Error(`BENCH_TURNS_SHAPES: "${s}" is not STEPSxCALLS (at most 99 steps of 32 calls)`);
      return { steps: Number(m[1]), calls: Number(m[2]) };
    });
  }
  if (env.BENCH_TURNS_COUNT) {
    const turns = Number(env.BENCH_TURNS_COUNT);
    if (!Number.isInteger(turns) || turns < 1) throw new Error(`BENCH_TURNS_COUNT: "${env.BENCH_TURNS_COUNT}" is not a positive integer`);
    plan.turns = turns;
  }
  return plan;
}

/** The plan before the environment's overrides. */
function defaultPlan(quick: boolean): TurnsPlan {
  return quick
    ? { turns: 2, warmup: 1, shapes: [{ steps: 0, calls: 0 }, { steps: 4, calls: 25 }, { steps: 50, calls: 2 }], agents: 50, threadsPerAgent: 2, tickSamples: 50, idleSeconds: 1 }
    : {
        turns: 8,
        warmup: 2,
        shapes: [{ steps: 0, calls: 0 }, { steps: 4, calls: 25 }, { steps: 50, calls: 2 }, { steps: 99, calls: 1 }],
        agents: 50,
        threadsPerAgent: 10,
        tickSamples: 300,
        idleSeconds: 5,
      };
}

/** One measured turn; times in ms. */
export interface TurnSample {
  /** The `invoke_agent` span: from the claimed row handed to the turn runner to the row parked. */
  wallMs: number;
  /** Σ of the stand-in's own time (request arrival → answer written). */
  providerMs: number;
  /** Σ of the service's provider steps (AI SDK request, HTTP exchange, answer parsed). */
  stepMs: number;
  /** Time during which at least one tool ran (union of the `execute_tool` spans). */
  toolMs: number;
  /** wall − provider − tools: the service's own time in the turn. */
  serviceMs: number;
  /** Per step of tool calls: (gap between the stand-in's answer and the next request − tools in it) ÷ calls of the step. */
  perCallMs: number[];
  /**
   * The turn runner's SQL: time during which one of its statements or transactions was in
   * progress (union; the tools' own statements and the process's background work — ticks, the
   * event sequencer, heartbeats — left out), its statements, and its commits (transactions, and
   * writes outside one).
   */
  sqlMs: number;
  statements: number;
  commits: number;
  /** The AI SDK's side of the model calls: Σ steps − the provider's own time (request built and sent, answer read). */
  sdkMs: number;
  /** The same for each model call, in order. */
  sdkPerStepMs: number[];
}

/** Bytes stored by the measured turns of a shape. */
export interface TurnStorage {
  /** Σ `pg_column_size(row)` of the rows the turns left: tool_calls, agent_turns, the tool_call.* events, agent_usage. */
  rows: { toolCalls: number; turns: number; events: number; usage: number };
  /** `pg_total_relation_size` (table, TOAST, indexes) growth of the same tables over the measured turns. */
  relations: { toolCalls: number; turns: number; events: number; usage: number };
  /** tool_call.* events the turns wrote. */
  events: number;
}

/** A shape's figures. */
export interface ShapeResult {
  shape: TurnShape;
  samples: TurnSample[];
  storage: TurnStorage;
  /** Statements by label over the measured turns: count and total ms (the top ones). */
  profile: Array<{ sql: string; count: number; ms: number }>;
}

/** Part 2's figures for one state of the team. */
export interface TickState {
  state: string;
  /** Work rows in the claim's partial index (work to do, due or not). */
  rowsWithWork: number;
  openTurns: number;
  medianMs: number;
  p95Ms: number;
  /** The in-process server's CPU while nothing happens (tick 100 ms), ms per s. */
  idleCpuMsPerS: number;
  /** Statements outside a transaction, and transactions, it runs per second meanwhile. */
  idleStatementsPerS: number;
}

/** A backend's figures. */
export interface TurnsResult {
  backend: TurnsBackend['name'];
  label: string;
  shapes: ShapeResult[];
  ticks: TickState[];
  /** Part 2's setup: turns that went suspended, and how long 500 echo turns and 500 asks took. */
  suspended: number;
  helloSeconds: number;
  askSeconds: number;
}

/** The p-th percentile (nearest rank) of `values`; NaN when there are none. */
export const percentile = (values: readonly number[], p: number): number => {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
};

/** The length of the union of intervals. */
function unionMs(intervals: ReadonlyArray<{ start: number; end: number }>): number {
  const sorted = [...intervals].sort((a, b) => a.start - b.start);
  if (sorted.length === 0) return 0;
  let total = 0;
  let from = sorted[0]!.start;
  let to = sorted[0]!.end;
  for (const { start, end } of sorted.slice(1)) {
    if (start > to) {
      total += to - from;
      from = start;
      to = end;
    } else to = Math.max(to, end);
  }
  return total + (to - from);
}

/** One REST call to acs-server with an organization key; the JSON answer. Errors: throws on a status that is not 2xx. */
async function call(url: string, apiKey: string, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(`${url}/api/v1${path}`, {
    method,
    headers: { 'x-api-key': apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.status === 204 ? undefined : response.json();
}

/** Runs `work` over `items`, `width` at a time. */
async function inBatches<T>(items: readonly T[], width: number, work: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

/** The tables a turn's tool calls write. */
const tables = { toolCalls: 'tool_calls', turns: 'agent_turns', events: 'events', usage: 'agent_usage' } as const;

/** `pg_total_relation_size` of each of {@link tables} now, in bytes. */
async function relationSizes(db: Db): Promise<TurnStorage['relations']> {
  const rows = await db.query<{ name: string; bytes: string }>(
    `SELECT c.relname AS name, pg_total_relation_size(c.oid)::text AS bytes FROM pg_class c WHERE c.relname = ANY($1) AND c.relkind = 'r'`,
    [Object.values(tables)],
  );
  const size = (name: string) => Number(rows.find((r) => r.name === name)?.bytes ?? NaN);
  return { toolCalls: size(tables.toolCalls), turns: size(tables.turns), events: size(tables.events), usage: size(tables.usage) };
}

/** The row bytes the turns of `threads` left (see {@link TurnStorage}). */
async function rowBytes(db: Db, threads: string[]): Promise<{ rows: TurnStorage['rows']; events: number }> {
  const one = async (sql: string) => Number((await db.query<{ n: string | null }>(sql, [threads]))[0]?.n ?? 0);
  const events = await db.query<{ bytes: string | null; n: number }>(
    `SELECT sum(pg_column_size(e.*))::text AS bytes, count(*)::int AS n FROM events e
      WHERE e.type IN ('tool_call.started', 'tool_call.finished') AND (e.data->>'thread_id') = ANY($1::text[])`,
    [threads],
  );
  return {
    rows: {
      toolCalls: await one(`SELECT sum(pg_column_size(c.*))::text AS n FROM tool_calls c WHERE c.thread_id = ANY($1::uuid[])`),
      turns: await one(`SELECT sum(pg_column_size(t.*))::text AS n FROM agent_turns t WHERE t.thread_id = ANY($1::uuid[])`),
      events: Number(events[0]?.bytes ?? 0),
      usage: await one(`SELECT sum(pg_column_size(u.*))::text AS n FROM agent_usage u WHERE u.thread_id = ANY($1::uuid[])`),
    },
    events: events[0]?.n ?? 0,
  };
}

/** Part 1 on one backend: every shape of `plan`, turns one at a time. */
export async function measureToolTurns(backend: TurnsBackend, plan: TurnsPlan, log: (line: string) => void): Promise<ShapeResult[]> {
  const spans = catchSpans();
  const standIn = await startOpenAiStandIn();
  const place = await backend.open();
  const db = profiledDb(await openDb(place.storage.databaseUrl ? { databaseUrl: place.storage.databaseUrl } : { dataDir: place.storage.dataDir! }));
  const steps: TimedStep[] = [];
  const env = { OPENAI_BASE_URL: `${standIn.origin}/v1`, ACS_ENCRYPTION_KEY: randomBytes(32).toString('hex') };
  const server = await startServer({
    db,
    ...(place.storage.databaseUrl ? { databaseUrl: place.storage.databaseUrl } : {}),
    port: 0,
    // The tick only sets how soon a turn starts after its message (outside what is measured); a
    // short one keeps the run short, and costs one idle statement per tick.
    tickMs: 100,
    rateLimit: false,
    logger: false,
    connectionLimits: { maxConnectionsPerClient: 0 },
    env,
    providers: timedProviders(defaultProviders(env), steps),
    tracerProvider: spans.provider,
  });
  const results: ShapeResult[] = [];
  try {
    const org = await server.provisionOrganization('bench-turns');
    const api = (method: string, path: string, body?: unknown) => call(server.url, org.api_key, method, path, body);
    await api('PUT', `/organizations/${org.org_id}/api-keys/openai`, { api_key: 'sk-bench-stand-in' });
    const team = await api('POST', `/organizations/${org.org_id}/teams`, { team_name: 'acts' });
    const human = await api('POST', `/teams/${team.team_id}/humans`, { name: 'ann' });
    const agent = await api('POST', `/teams/${team.team_id}/agents`, { name: 'worker', provider: 'openai', model: 'gpt-bench', max_steps: 100, tools: { team: true } });
    const edge = await api('POST', `/teams/${team.team_id}/edges`, { participants: [human.human_id, agent.agent_id] });

    /** Runs one turn of `shape` on a new thread and reads what it cost. */
    const runTurn = async (shape: TurnShape): Promise<{ sample: TurnSample; threadId: string; statements: TimedStatement[] }> => {
      db.statements.length = 0;
      standIn.served.length = 0;
      steps.length = 0;
      db.recording = true;
      const thread = await api('POST', `/edges/${edge.edge_id}/threads`, { sender_agent_id: human.human_id, content: `bench: steps=${shape.steps} calls=${shape.calls}` });
      const turnSpan = await Promise.race([
        spans.next((s) => s.name.startsWith('invoke_agent') && s.attributes['gen_ai.conversation.id'] === thread.thread_id),
        sleep(120_000, undefined, { ref: false }).then(() => {
          throw new Error(`turn of ${shape.steps} × ${shape.calls}: no turn ran on thread ${thread.thread_id} within 120 s`);
        }),
      ]);
      db.recording = false;
      const within = <T extends { start: number; end: number }>(xs: readonly T[]) => xs.filter((x) => x.start >= turnSpan.start && x.end <= turnSpan.end);
      const tools: TimedSpan[] = within(spans.spans.filter((s) => s.name.startsWith('execute_tool')));
      const served: ServedRequest[] = standIn.served.filter((r) => r.arrivedAt >= turnSpan.start && r.answeredAt <= turnSpan.end).sort((a, b) => a.arrivedAt - b.arrivedAt);
      const calls = served.reduce((n, r) => n + r.calls, 0);
      if (served.length !== shape.steps + 1 || calls !== shape.steps * shape.calls || tools.length !== calls) {
        throw new Error(`turn of ${shape.steps} × ${shape.calls}: ${served.length} model calls, ${calls} tool calls asked, ${tools.length} run (the turn did not go as scripted)`);
      }
      const perCallMs: number[] = [];
      for (let i = 1; i < served.length; i += 1) {
        const from = served[i - 1]!.answeredAt;
        const to = served[i]!.arrivedAt;
        const toolTime = unionMs(tools.filter((t) => t.start >= from && t.end <= to));
        perCallMs.push((to - from - toolTime) / served[i - 1]!.calls);
      }
      const providerMs = served.reduce((sum, r) => sum + (r.answeredAt - r.arrivedAt), 0);
      const toolMs = unionMs(tools);
      const wallMs = turnSpan.end - turnSpan.start;
      const statements = within(db.statements);
      const inTool = (s: TimedStatement) => tools.some((t) => s.start >= t.start && s.end <= t.end);
      const runner = statements.filter((s) => !isBackground(s.sql) && !inTool(s));
      const isTx = (s: TimedStatement) => s.sql.startsWith('(transaction)');
      const stepMs = within(steps).reduce((sum, s) => sum + (s.end - s.start), 0);
      const sample: TurnSample = {
        wallMs,
        providerMs,
        stepMs,
        toolMs,
        serviceMs: wallMs - providerMs - toolMs,
        perCallMs,
        // Outside the tools' own time: side by side, a call's records are written while a sibling's tool runs.
        sqlMs: unionMs([...runner.filter((s) => !s.inTx), ...tools]) - toolMs,
        statements: runner.filter((s) => !isTx(s)).length,
        // A write outside a transaction commits on its own.
        commits: runner.filter((s) => isTx(s) || (!s.inTx && /\b(INSERT|UPDATE|DELETE)\b|acs_append_/.test(s.sql))).length,
        sdkMs: stepMs - providerMs,
        sdkPerStepMs: within(steps)
          .sort((a, b) => a.start - b.start)
          .map((st, i) => st.end - st.start - (served[i] ? served[i]!.answeredAt - served[i]!.arrivedAt : 0)),
      };
      return { sample, threadId: thread.thread_id, statements };
    };

    for (const shape of plan.shapes) {
      for (let i = 0; i < plan.warmup; i += 1) await runTurn(shape);
      const before = await relationSizes(db);
      const samples: TurnSample[] = [];
      const threads: string[] = [];
      const byLabel = new Map<string, { count: number; ms: number }>();
      for (let i = 0; i < plan.turns; i += 1) {
        const { sample, threadId, statements } = await runTurn(shape);
        samples.push(sample);
        threads.push(threadId);
        for (const s of statements) {
          const entry = byLabel.get(s.sql) ?? { count: 0, ms: 0 };
          entry.count += 1;
          entry.ms += s.end - s.start;
          byLabel.set(s.sql, entry);
        }
      }
      const after = await relationSizes(db);
      const stored = await rowBytes(db, threads);
      const storage: TurnStorage = {
        rows: stored.rows,
        relations: {
          toolCalls: after.toolCalls - before.toolCalls,
          turns: after.turns - before.turns,
          events: after.events - before.events,
          usage: after.usage - before.usage,
        },
        events: stored.events,
      };
      const profile = [...byLabel].map(([sql, v]) => ({ sql, ...v })).sort((a, b) => b.ms - a.ms);
      results.push({ shape, samples, storage, profile });
      if (shape.steps >= 20) {
        const early = (f: (x: TurnSample) => number[]) => percentile(samples.flatMap((x) => f(x).slice(0, 10)), 50).toFixed(2);
        const late = (f: (x: TurnSample) => number[]) => percentile(samples.flatMap((x) => f(x).slice(shape.steps - 10, shape.steps)), 50).toFixed(2);
        log(
          `    steps 1–10 / ${shape.steps - 9}–${shape.steps}: service per call ${early((x) => x.perCallMs)} / ${late((x) => x.perCallMs)} ms; ` +
            `AI SDK per model call ${early((x) => x.sdkPerStepMs)} / ${late((x) => x.sdkPerStepMs)} ms`,
        );
      }
      if (process.env.BENCH_TURNS_PROFILE === '1') {
        for (const p of profile.slice(0, 25)) log(`    ${(p.count / plan.turns).toFixed(1).padStart(7)}× ${(p.ms / plan.turns).toFixed(1).padStart(8)} ms per turn  ${p.sql}`);
      }
      const calls = shape.steps * shape.calls;
      const med = (f: (s: TurnSample) => number) => percentile(samples.map(f), 50).toFixed(1);
      log(
        `  ${backend.name} ${shape.steps} × ${shape.calls}: wall ${med((s) => s.wallMs)} ms (provider ${med((s) => s.providerMs)}, AI SDK steps ${med((s) => s.stepMs)}, tools ${med((s) => s.toolMs)}; service ${med((s) => s.serviceMs)})` +
          (calls > 0
            ? `; per call: service ${percentile(samples.flatMap((s) => s.perCallMs), 50).toFixed(2)} ms median, ${percentile(samples.flatMap((s) => s.perCallMs), 95).toFixed(2)} p95; ` +
              `SQL ${(percentile(samples.map((s) => s.sqlMs), 50) / calls).toFixed(2)} ms, AI SDK ${(percentile(samples.map((s) => s.sdkMs), 50) / calls).toFixed(2)} ms; ` +
              `${(percentile(samples.map((s) => s.statements), 50) / calls).toFixed(1)} statements, ${(percentile(samples.map((s) => s.commits), 50) / calls).toFixed(1)} commits; ` +
              `rows ${((storage.rows.toolCalls + storage.rows.events + storage.rows.turns + storage.rows.usage) / (calls * plan.turns)).toFixed(0)} B, relations ${((storage.relations.toolCalls + storage.relations.events + storage.relations.turns + storage.relations.usage) / (calls * plan.turns)).toFixed(0)} B`
            : ''),
      );
    }
  } finally {
    await server.close();
    await standIn.close();
    await place.drop();
  }
  return results;
}

/** Part 2 on one backend. */
export async function measureSuspendedTicks(backend: TurnsBackend, plan: TurnsPlan, log: (line: string) => void): Promise<Omit<TurnsResult, 'shapes' | 'backend' | 'label'>> {
  const place = await backend.open();
  // One key for every server of the place, so provider keys sealed by one open in the next.
  const env = { ACS_ENCRYPTION_KEY: randomBytes(32).toString('hex') };
  const open = () => openDb(place.storage.databaseUrl ? { databaseUrl: place.storage.databaseUrl } : { dataDir: place.storage.dataDir! });
  const ticks: TickState[] = [];
  let org: { org_id: string; api_key: string } | undefined;
  type Api = (method: string, path: string, body?: unknown) => Promise<any>;

  /**
   * Runs a server on the place while `work` runs, lets it idle, and returns its CPU while idle
   * (ms per s; this process's, so on PostgreSQL the database's own is not in it). The storage is
   * opened here and handed to the server (one handle, as PGlite needs), which closes it.
   */
  const withServer = async (work: (api: Api, db: Db) => Promise<void>): Promise<{ cpu: number; statements: number }> => {
    const db = profiledDb(await open());
    const server = await startServer({
      db,
      ...(place.storage.databaseUrl ? { databaseUrl: place.storage.databaseUrl } : {}),
      port: 0,
      tickMs: 100,
      rateLimit: false,
      logger: false,
      connectionLimits: { maxConnectionsPerClient: 0 },
      env,
    });
    try {
      org ??= await server.provisionOrganization('bench-suspended');
      const key = org.api_key;
      await work((method, path, body) => call(server.url, key, method, path, body), db);
      // What the setup left behind is collected first, so the idle figure is the idle server's.
      await sleep(1_000);
      collectGarbage();
      await sleep(500);
      db.statements.length = 0;
      db.recording = true;
      const cpu = process.cpuUsage();
      const started = performance.now();
      await sleep(plan.idleSeconds * 1000);
      const used = process.cpuUsage(cpu);
      db.recording = false;
      const seconds = (performance.now() - started) / 1000;
      const byLabel = new Map<string, number>();
      for (const st of db.statements) byLabel.set(st.sql, (byLabel.get(st.sql) ?? 0) + 1);
      if (process.env.BENCH_TURNS_PROFILE === '1') {
        for (const [sql, n] of [...byLabel].sort((a, b) => b[1] - a[1])) log(`    idle: ${(n / seconds).toFixed(1).padStart(6)}/s  ${sql}`);
      }
      return { cpu: (used.user + used.system) / 1000 / seconds, statements: db.statements.filter((st) => !st.inTx).length / seconds };
    } finally {
      await server.close();
    }
  };
  const count = async (db: Db, sql: string) => Number((await db.query<{ n: number }>(sql))[0]!.n);
  const until = async (db: Db, sql: string, want: number, what: string) => {
    const deadline = performance.now() + 600_000;
    for (;;) {
      const n = await count(db, sql);
      if (n >= want) return;
      if (performance.now() > deadline) throw new Error(`${what}: ${n} of ${want} after 10 minutes`);
      await sleep(200);
    }
  };
  /** The idle tick, timed with no server running (as bench/agent-loop.ts does). */
  const measureTicks = async (state: string, idle: { cpu: number; statements: number }) => {
    const idleCpuMsPerS = idle.cpu;
    const db = await open();
    try {
      await db.query('ANALYZE');
      const rowsWithWork = await count(db, `SELECT count(*)::int AS n FROM agent_work WHERE latest_seq > handled_seq`);
      const openTurns = await count(db, `SELECT count(*)::int AS n FROM agent_turns WHERE state IN ('running', 'suspended')`);
      const samples: number[] = [];
      for (let i = 0; i < plan.tickSamples; i += 1) {
        const started = performance.now();
        const claimed = await claimWork(db, 8, 150, randomUUID());
        samples.push(performance.now() - started);
        if (claimed.length > 0) throw new Error(`${state}: a tick claimed work (${claimed.length} rows): the team was not idle`);
      }
      const tick: TickState = { state, rowsWithWork, openTurns, medianMs: percentile(samples, 50), p95Ms: percentile(samples, 95), idleCpuMsPerS, idleStatementsPerS: idle.statements };
      ticks.push(tick);
      log(
        `  ${backend.name} ${state}: tick ${tick.medianMs.toFixed(3)} ms (p95 ${tick.p95Ms.toFixed(3)}); ${rowsWithWork} rows with work, ${openTurns} open turns; ` +
          `idle server CPU ${idleCpuMsPerS.toFixed(1)} ms/s, ${idle.statements.toFixed(1)} statements/s`,
      );
    } finally {
      await db.close();
    }
  };

  const total = plan.agents * plan.threadsPerAgent;
  const threads: string[] = [];
  let ann = '';
  let nobody = '';
  let helloSeconds = NaN;
  let askSeconds = NaN;
  let suspended = 0;
  try {
    // The team, and one finished turn on each of its threads (a message that asks for no tool).
    let cpu = await withServer(async (api, db) => {
      await api('PUT', `/organizations/${org!.org_id}/api-keys/echo`, { api_key: 'bench' });
      const team = await api('POST', `/organizations/${org!.org_id}/teams`, { team_name: 'waiting' });
      ann = (await api('POST', `/teams/${team.team_id}/humans`, { name: 'ann' })).human_id;
      nobody = (await api('POST', `/teams/${team.team_id}/humans`, { name: 'nobody' })).human_id;
      const edges: string[] = [];
      for (let a = 0; a < plan.agents; a += 1) {
        const agent = await api('POST', `/teams/${team.team_id}/agents`, { name: `agent-${a}`, provider: 'echo', tools: { team: true } });
        edges.push((await api('POST', `/teams/${team.team_id}/edges`, { participants: [ann, agent.agent_id] })).edge_id);
        await api('POST', `/teams/${team.team_id}/edges`, { participants: [agent.agent_id, nobody] });
      }
      const started = performance.now();
      await inBatches(
        edges.flatMap((edge) => Array.from({ length: plan.threadsPerAgent }, () => edge)),
        16,
        async (edge) => threads.push((await api('POST', `/edges/${edge}/threads`, { sender_agent_id: ann, content: 'hello' })).thread_id),
      );
      await until(db, `SELECT count(*)::int AS n FROM agent_turns WHERE state = 'completed'`, total, 'echo turns');
      helloSeconds = (performance.now() - started) / 1000;
    });
    await measureTicks(`${total} answered threads of ${plan.agents} agents, no turn open`, cpu);

    // A turn suspended on `ask` in each thread: the question goes to nobody, who does not answer.
    cpu = await withServer(async (api, db) => {
      const started = performance.now();
      await inBatches(threads, 16, (thread) => api('POST', `/threads/${thread}/messages`, { sender_agent_id: ann, content: 'ask nobody: are you there?' }));
      await until(
        db,
        `SELECT count(*)::int AS n FROM agent_turns t WHERE t.state = 'suspended'
           AND EXISTS (SELECT 1 FROM agent_work w WHERE w.agent_id = t.agent_id AND w.thread_id = t.thread_id AND w.lease_token IS NULL AND w.due_at > now())`,
        total,
        'suspended turns',
      );
      askSeconds = (performance.now() - started) / 1000;
      suspended = await count(db, `SELECT count(*)::int AS n FROM tool_calls WHERE tool = 'ask' AND status = 'running' AND wait_thread IS NOT NULL`);
    });
    await measureTicks(`the same with ${suspended} turns suspended on ask`, cpu);

    // Nobody answers every question: the turns wake, finish, and the team is idle again.
    cpu = await withServer(async (api, db) => {
      const waits = await db.query<{ wait_thread: string }>(`SELECT wait_thread FROM tool_calls WHERE tool = 'ask' AND status = 'running' AND wait_thread IS NOT NULL`);
      await inBatches(waits, 16, (w) => api('POST', `/threads/${w.wait_thread}/messages`, { sender_agent_id: nobody, content: 'yes' }));
      await until(db, `SELECT count(*)::int AS n FROM agent_turns WHERE state = 'completed'`, 2 * total, 'answered turns');
    });
    await measureTicks('the same after the asks were answered and the turns finished', cpu);
  } finally {
    await place.drop();
  }
  return { ticks, suspended, helloSeconds, askSeconds };
}

/**
 * Rendering of `npm run bench:apply` (bench/apply.ts): one markdown section with the machine, the
 * goals checked in each of the runs (each ratio measured within one run, reported as the range over
 * the runs), the client's CPU per request against a plain `node:http` client, and every apply of
 * every run with its floor, CPU per process and Temporal history. Pure: no I/O.
 */

/** Where the figures were measured. */
export interface ApplyMachine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  node: string;
  /** Undefined when no PostgreSQL was given (PGlite only). */
  postgres: string | undefined;
  /** Temporal CLI/dev server version, undefined when no Temporal server was given. */
  temporal: string | undefined;
  date: string;
  /** The code measured: commit, and whether the apply's code had uncommitted changes. */
  revision: string;
  /** 1-, 5- and 15-minute load averages when the bench started: other work skews every figure. */
  load: number[];
  /** The same when it ended. */
  loadAtEnd: number[];
}

/** CPU seconds spent during one measurement, per process (NaN: not measured). */
export interface CpuSeconds {
  /** The bench process: load generator, local engine, or the in-process Temporal worker. */
  bench: number;
  /** The acs-server child process. */
  server: number;
  /** The Temporal dev server (`temporal server start-dev`). */
  temporal: number;
  /** Every PostgreSQL process (backends included). */
  postgres: number;
  /** The whole machine (all cores, busy time from /proc/stat). */
  machine: number;
}

/** The service's create rate with `clients` loops, each on teams of its own (see bench/apply.ts). */
export interface ThroughputResult {
  clients: number;
  creates: number;
  seconds: number;
  perSecond: number;
  /** CPU spent while measuring (the load generator is the bench process here). */
  cpu: CpuSeconds;
}

/** The histories of one Temporal apply, over every run of its continue-as-new chain. */
export interface HistoryStats {
  runs: number;
  events: number;
  maxEventsPerRun: number;
  /** The server's `historySizeBytes` (what its 50 MB limit counts), summed over the runs. */
  bytes: number;
  maxBytesPerRun: number;
  /** Largest single payload field (a workflow input or result, an activity input or result), bytes. */
  largestPayload: number;
  /** Where that payload was, e.g. `run 3 input`. */
  largestPayloadAt: string;
  /** Activities scheduled through the server (`ActivityTaskScheduled` events). */
  activities: number;
  /** Local activities (`MarkerRecorded` events). */
  localActivities: number;
  workflowTasks: number;
  /** Events of each run, in order (a run ends by continuing as new, except the last). */
  eventsPerRun: number[];
}

/** One apply as measured. */
export interface ApplyRun {
  engine: 'local' | 'temporal';
  parallelism: number;
  kind: 'fresh' | 'no-op';
  wallSeconds: number;
  gets: number;
  mutations: number;
  /** Answers other than 2xx (409 adoptions, 429s, 5xx): 0 in a clean run. */
  failed: number;
  /** Changes the apply reported (`applied.length`). */
  changes: number;
  cpu: CpuSeconds;
  history?: HistoryStats;
  /** Empty when the run did what it should; else what was wrong (the figures are then suspect). */
  problem: string;
}

/** The client CPU of one way of sending the apply's requests: microseconds of the bench process per request. */
export interface ClientCpu {
  /** `node-http`: plain `node:http` + `JSON.parse` (bench/client.ts); `acs-client`: `AcsClient` as teamctl sends; `acs-client-fetch`: `AcsClient` over `fetch` (before). */
  client: 'node-http' | 'acs-client' | 'acs-client-fetch';
  requests: number;
  microsPerRequest: number;
}

/** One run of one backend: a fresh server, its floor (measured before and after the applies), the client CPU and the applies. */
export interface BackendRun {
  floor: ThroughputResult;
  /** The same measurement again after the applies. */
  floorAfter: ThroughputResult;
  clientCpu: ClientCpu[];
  applies: ApplyRun[];
}

/** One backend's runs. */
export interface BackendApplyResult {
  backend: 'pglite' | 'postgres';
  runs: BackendRun[];
}

/** What was applied and how each run measured. */
export interface ApplyPlan {
  teams: number;
  agents: number;
  edges: number;
  /** Creates of a fresh apply (organization included). */
  creates: number;
  /** Seconds of the floor's rate measurement. */
  seconds: number;
  /** Requests per client in the client CPU measurement. */
  clientRequests: number;
  quick: boolean;
  /** Temporal worker: in this process (`in-process`) or skipped. */
  temporal: 'in-process' | 'skipped';
  /** Wall time of bundling the workflows and starting the worker, seconds (not in any apply's wall time). */
  workerStartSeconds: number;
}

/** The goals of issue 23, checked at the default parallelism (8). */
export const Goals = {
  /** Local engine's fresh apply ÷ the floor. */
  localVsFloor: 1.1,
  /** Temporal's apply ÷ the local engine's, fresh and no-op. */
  temporalVsLocal: 1.15,
  /** The client's CPU per request ÷ a plain `node:http` client's. */
  clientVsPlain: 1,
} as const;

const n = (x: number, digits = 0) => (Number.isFinite(x) ? x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '–');
const kib = (bytes: number) => `${n(bytes / 1024, 1)} KiB`;

/** `min–max` of the finite values (the value alone when they agree at that precision; `–` for none). */
export function range(values: number[], digits = 2): string {
  const finite = values.filter(Number.isFinite);
  if (finite.length === 0) return '–';
  const lo = n(Math.min(...finite), digits);
  const hi = n(Math.max(...finite), digits);
  return lo === hi ? lo : `${lo}–${hi}`;
}

/**
 * The service's create rate at 32 clients around the run's applies, creates/s: the harmonic mean
 * of the rates measured before and after them, so the floor's seconds are the mean of the two.
 */
export function floorRate(run: BackendRun): number {
  return 2 / (1 / run.floor.perSecond + 1 / run.floorAfter.perSecond);
}

/** The floor's drift within one run: the rate after the applies ÷ the rate before them. */
export function floorDrift(run: BackendRun): number {
  return run.floorAfter.perSecond / run.floor.perSecond;
}

/** The floor of one apply: its requests at the service's create rate with 32 clients ({@link floorRate}), seconds. */
export function floorSeconds(run: BackendRun, apply: ApplyRun): number {
  return (apply.gets + apply.mutations) / floorRate(run);
}

/** The run's apply of `engine`, `kind` and `parallelism`, if measured. */
function find(run: BackendRun, engine: ApplyRun['engine'], kind: ApplyRun['kind'], parallelism: number): ApplyRun | undefined {
  return run.applies.find((a) => a.engine === engine && a.kind === kind && a.parallelism === parallelism);
}

/** The ratios of one run at `parallelism` (NaN where an apply was not measured). */
export function ratios(run: BackendRun, parallelism: number) {
  const local = find(run, 'local', 'fresh', parallelism);
  const temporal = find(run, 'temporal', 'fresh', parallelism);
  const localNoop = find(run, 'local', 'no-op', parallelism);
  const temporalNoop = find(run, 'temporal', 'no-op', parallelism);
  const plain = run.clientCpu.find((c) => c.client === 'node-http')?.microsPerRequest ?? NaN;
  const client = run.clientCpu.find((c) => c.client === 'acs-client')?.microsPerRequest ?? NaN;
  return {
    localVsFloor: local ? local.wallSeconds / floorSeconds(run, local) : NaN,
    temporalVsFloor: temporal ? temporal.wallSeconds / floorSeconds(run, temporal) : NaN,
    temporalVsLocal: temporal && local ? temporal.wallSeconds / local.wallSeconds : NaN,
    noopTemporalVsLocal: temporalNoop && localNoop ? temporalNoop.wallSeconds / localNoop.wallSeconds : NaN,
    clientVsPlain: client / plain,
  };
}

function cpuCell(cpu: CpuSeconds, per: number, withTemporal: boolean): string {
  const parts = [`bench ${n(cpu.bench, 1)}`, `server ${n(cpu.server, 1)}`];
  if (withTemporal && Number.isFinite(cpu.temporal)) parts.push(`temporal ${n(cpu.temporal, 1)}`);
  if (Number.isFinite(cpu.postgres)) parts.push(`pg ${n(cpu.postgres, 1)}`);
  // The rest of the machine's busy time: other work on it (an idle Temporal server included when not shown).
  const known = [cpu.bench, cpu.server, withTemporal ? cpu.temporal : NaN, cpu.postgres].filter(Number.isFinite).reduce((a, b) => a + b, 0);
  parts.push(`other ${n(cpu.machine - known, 1)}`);
  return `${parts.join(' · ')} = ${n(cpu.machine, 1)} s${per > 0 ? ` (${n((cpu.machine * 1000) / per, 1)} ms each)` : ''}`;
}

function historyCell(h: HistoryStats | undefined): string {
  if (!h) return '–';
  return (
    `${n(h.events)} events in ${h.runs} run${h.runs === 1 ? '' : 's'}; ${kib(h.maxBytesPerRun)}/run; largest payload ${kib(h.largestPayload)} (${h.largestPayloadAt}); ` +
    `${n(h.activities)} activities, ${n(h.localActivities)} local activities, ${n(h.workflowTasks)} workflow tasks`
  );
}

function label(backend: BackendApplyResult['backend']): string {
  return backend === 'pglite' ? 'PGlite (data dir)' : 'PostgreSQL';
}

/** `k/N` runs whose value met `goal` (≤), with the range. */
function verdict(values: number[], goal: number): string {
  const finite = values.filter(Number.isFinite);
  if (finite.length === 0) return 'not measured';
  const met = finite.filter((v) => v <= goal).length;
  return `**${range(finite)}** (goal ≤ ${goal}: met in ${met} of ${finite.length} runs)`;
}

/**
 * Renders the section: machine and method; the goals with each run's ratio as a range; the summary
 * table in the shape of issue 23's (seconds as ranges); the client's CPU per request; then every
 * apply of every run.
 */
export function renderApplyReport(machine: ApplyMachine, plan: ApplyPlan, results: BackendApplyResult[], parallelism = 8): string {
  const runs = Math.max(0, ...results.map((r) => r.runs.length));
  const lines: string[] = [];
  lines.push(`## Apply: ${n(plan.teams)} teams × ${plan.agents} agents × ${plan.edges} edges, ${runs} run${runs === 1 ? '' : 's'}${plan.quick ? ' (BENCH_QUICK: smoke run, not the goal size)' : ''}`);
  lines.push('');
  lines.push(
    `Measured ${machine.date} (code ${machine.revision}) on ${machine.cpu}, ${machine.cores} cores, ${n(machine.memoryGiB, 1)} GiB RAM, Node ${machine.node}` +
      `${machine.postgres ? `, PostgreSQL ${machine.postgres}` : ' (no PostgreSQL: PGlite only)'}` +
      `${machine.temporal ? `, Temporal dev server ${machine.temporal}` : ' (no Temporal server: local engine only)'}. ` +
      `Load average (1/5/15 min) ${machine.load.map((l) => n(l, 2)).join(' / ')} at the start, ${machine.loadAtEnd.map((l) => n(l, 2)).join(' / ')} at the end. ` +
      `acs-server runs in a child process (rate limit off; PGlite with V8's optimising compiler, as before); the local engine, the load generator and ` +
      `${plan.temporal === 'in-process' ? `the Temporal worker (in-process, started once in ${n(plan.workerStartSeconds, 1)} s, not counted)` : 'no Temporal worker'} run in the bench process; ` +
      `everything shares the machine.`,
  );
  lines.push('');
  lines.push(
    `Each run starts a fresh server (a new data dir, a new database) and measures, in this order: the floor, a fresh apply of ${n(plan.creates)} creates ` +
      `(1 organization, ${n(plan.teams)} teams, ${n(plan.teams * plan.agents)} agents, ${n(plan.teams * plan.edges)} edges) and a no-op re-apply on each engine, the floor again, then the client's CPU per request, ` +
      `so every ratio below compares figures of one run. Floor = the apply's requests ÷ the service's create rate at 32 clients in the apply's shape ` +
      `(each client on teams of its own: create the team, its ${plan.agents} agents one by one, its ${plan.edges} edges one by one, then the next team; ${plan.seconds} s, the first time after a warm-up), ` +
      `the mean of its seconds before and after the applies: the machine's speed drifts within a run (the floor's drift row), and a floor taken on one side only carries that drift into the ratio. ` +
      `Client CPU = the CPU time per request of a process running one client alone (bench/client-cpu.ts), over ${n(plan.clientRequests)} sequential creates with each client after 200 unmeasured, in five rounds with the clients in turn.`,
  );
  lines.push('');
  lines.push(`Goals at parallelism ${parallelism} (the default), each ratio from one run, the range over the runs:`);
  lines.push('');
  for (const result of results) {
    const r = result.runs.map((run) => ratios(run, parallelism));
    lines.push(
      `- ${label(result.backend)}: local engine ÷ floor ${verdict(r.map((x) => x.localVsFloor), Goals.localVsFloor)}; ` +
        `Temporal ÷ local engine, fresh ${verdict(r.map((x) => x.temporalVsLocal), Goals.temporalVsLocal)}, no-op ${verdict(r.map((x) => x.noopTemporalVsLocal), Goals.temporalVsLocal)}; ` +
        `client CPU ÷ plain node:http ${verdict(r.map((x) => x.clientVsPlain), Goals.clientVsPlain)}.`,
    );
  }
  lines.push('');
  // The summary in the shape of the issue's table.
  const cell = (result: BackendApplyResult, pick: (run: BackendRun) => number, digits = 2) => range(result.runs.map(pick), digits);
  const wall = (engine: ApplyRun['engine'], kind: ApplyRun['kind']) => (run: BackendRun) => find(run, engine, kind, parallelism)?.wallSeconds ?? NaN;
  lines.push(`| parallelism ${parallelism}, ${runs} runs (min–max) | ${results.map((r) => label(r.backend)).join(' | ')} |`);
  lines.push(`|---|${results.map(() => '---:').join('|')}|`);
  lines.push(`| floor (service's create rate at 32 clients), s | ${results.map((r) => cell(r, (run) => { const a = find(run, 'local', 'fresh', parallelism) ?? run.applies[0]; return a ? floorSeconds(run, a) : NaN; })).join(' | ')} |`);
  lines.push(`| floor's drift within a run: its rate after the applies ÷ before | ${results.map((r) => cell(r, floorDrift)).join(' | ')} |`);
  lines.push(`| local engine, fresh, s (× floor) | ${results.map((r) => `${cell(r, wall('local', 'fresh'))} (${cell(r, (run) => ratios(run, parallelism).localVsFloor)} ×)`).join(' | ')} |`);
  lines.push(
    `| Temporal, fresh, s (× floor, × local) | ${results.map((r) => `${cell(r, wall('temporal', 'fresh'))} (${cell(r, (run) => ratios(run, parallelism).temporalVsFloor)} × floor, ${cell(r, (run) => ratios(run, parallelism).temporalVsLocal)} × local)`).join(' | ')} |`,
  );
  lines.push(
    `| no-op re-apply, local / Temporal, s (Temporal × local) | ${results.map((r) => `${cell(r, wall('local', 'no-op'))} / ${cell(r, wall('temporal', 'no-op'))} (${cell(r, (run) => ratios(run, parallelism).noopTemporalVsLocal)} ×)`).join(' | ')} |`,
  );
  lines.push(`| client CPU per request, µs: plain node:http + JSON / AcsClient (undici request) / AcsClient over fetch (before) | ${results
    .map((r) => (['node-http', 'acs-client', 'acs-client-fetch'] as const).map((c) => cell(r, (run) => run.clientCpu.find((x) => x.client === c)?.microsPerRequest ?? NaN, 0)).join(' / '))
    .join(' | ')} |`);
  for (const result of results) {
    lines.push('');
    lines.push(`### ${label(result.backend)}: every apply`);
    lines.push('');
    lines.push('| run | engine | parallelism | apply | wall, s | requests (GET + mutating, non-2xx) | floor, s | wall ÷ floor | CPU s during the apply (per request) | history |');
    lines.push('|---:|---|---:|---|---:|---|---:|---:|---|---|');
    result.runs.forEach((run, i) => {
      for (const apply of run.applies) {
        const requests = apply.gets + apply.mutations;
        const floor = apply.kind === 'fresh' ? floorSeconds(run, apply) : NaN;
        lines.push(
          `| ${i + 1} | ${apply.engine} | ${apply.parallelism} | ${apply.kind}${apply.problem ? ` ⚠ ${apply.problem}` : ''} | ${n(apply.wallSeconds, 2)} | ` +
            `${n(requests)} (${n(apply.gets)} + ${n(apply.mutations)}, ${n(apply.failed)}) | ${n(floor, 2)} | ${n(apply.wallSeconds / floor, 2)} | ` +
            `${cpuCell(apply.cpu, requests, apply.engine === 'temporal')} | ${historyCell(apply.history)} |`,
        );
      }
    });
  }
  return lines.join('\n');
}

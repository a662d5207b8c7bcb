/**
 * Rendering of `npm run bench:apply` (bench/apply.ts): one markdown section with the machine,
 * the service's create throughput (the floor's denominator) and, per backend, every apply run
 * against that floor. Pure: no I/O.
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
  /** 1-, 5- and 15-minute load averages when the run started: other work skews every figure. */
  load: number[];
  /** The same when it ended. */
  loadAtEnd: number[];
}

/** The service's create rate with `clients` loops, each on a team of its own (see bench/apply.ts). */
export interface ThroughputResult {
  /** `mix`: team, then its 10 agents, then its 20 edges, as an apply creates them; `agents`: agents only. */
  shape: 'mix' | 'agents';
  clients: number;
  creates: number;
  seconds: number;
  perSecond: number;
  /** CPU spent while measuring (the load generator is the bench process here). */
  cpu: CpuSeconds;
}

/** CPU seconds spent during one run, per process (NaN: not measured). */
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

/** One backend's figures. */
export interface BackendApplyResult {
  backend: 'pglite' | 'postgres';
  throughput: ThroughputResult[];
  runs: ApplyRun[];
}

/** What was applied and how long each throughput measurement ran. */
export interface ApplyPlan {
  teams: number;
  agents: number;
  edges: number;
  /** Creates of a fresh apply (organization included). */
  creates: number;
  seconds: number;
  quick: boolean;
  /** Temporal worker: in this process (`in-process`) or skipped. */
  temporal: 'in-process' | 'skipped';
  /** Wall time of bundling the workflows and starting the worker, seconds (not in any apply's wall time). */
  workerStartSeconds: number;
}

const n = (x: number, digits = 0) => (Number.isFinite(x) ? x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '–');
const kib = (bytes: number) => `${n(bytes / 1024, 1)} KiB`;

/** The create rate at 32 clients in the apply's shape: the floor's denominator. */
export function floorRate(result: BackendApplyResult): number {
  return result.throughput.find((t) => t.shape === 'mix' && t.clients === 32)?.perSecond ?? NaN;
}

/**
 * CPU seconds per process (Temporal's only when `withTemporal`), then the machine's busy time in
 * all and per request (`per`), so runs of different sizes compare.
 */
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
    `${n(h.events)} events in ${h.runs} run${h.runs === 1 ? '' : 's'} (${h.eventsPerRun.map((e) => n(e)).join(' + ')}); ` +
    `${kib(h.bytes)} (max ${kib(h.maxBytesPerRun)}/run); largest payload ${kib(h.largestPayload)} (${h.largestPayloadAt}); ` +
    `${n(h.activities)} activities, ${n(h.localActivities)} local activities, ${n(h.workflowTasks)} workflow tasks`
  );
}

/**
 * Renders the section: machine line, throughput table, then per backend one table of apply runs
 * with their floor ratios and (Temporal) their histories, and the goals checked against them.
 */
export function renderApplyReport(machine: ApplyMachine, plan: ApplyPlan, results: BackendApplyResult[]): string {
  const lines: string[] = [];
  lines.push(`## Apply: ${n(plan.teams)} teams × ${plan.agents} agents × ${plan.edges} edges${plan.quick ? ' (BENCH_QUICK: smoke run, not the goal size)' : ''}`);
  lines.push('');
  lines.push(
    `Measured ${machine.date} (code ${machine.revision}) on ${machine.cpu}, ${machine.cores} cores, ${n(machine.memoryGiB, 1)} GiB RAM, Node ${machine.node}` +
      `${machine.postgres ? `, PostgreSQL ${machine.postgres}` : ' (no PostgreSQL: PGlite only)'}` +
      `${machine.temporal ? `, Temporal dev server ${machine.temporal}` : ' (no Temporal server: local engine only)'}. ` +
      `Load average (1/5/15 min) ${machine.load.map((l) => n(l, 2)).join(' / ')} at the start, ${machine.loadAtEnd.map((l) => n(l, 2)).join(' / ')} at the end; ` +
      `"other" CPU below is the machine's busy time outside the probed processes, i.e. other work on the machine. ` +
      `acs-server runs in a child process (rate limit off); the local engine, the load generator and ` +
      `${plan.temporal === 'in-process' ? `the Temporal worker (in-process, started once in ${n(plan.workerStartSeconds, 1)} s, not counted)` : 'no Temporal worker'} run in the bench process; ` +
      `everything shares the machine.`,
  );
  lines.push('');
  lines.push(
    `A fresh apply makes ${n(plan.creates)} creates (1 organization, ${n(plan.teams)} teams, ${n(plan.teams * plan.agents)} agents, ${n(plan.teams * plan.edges)} edges). ` +
      `Floor = requests ÷ the service's create rate at 32 clients in the apply's shape (in a child organization of the key's, as the apply's; each client on a team of its own: ` +
      `create the team, its ${plan.agents} agents one by one, its ${plan.edges} edges one by one, then the next team; ${plan.seconds} s after a warm-up). ` +
      `Goals: wall ≤ 1.3 × floor on both backends; Temporal ≤ 1.5 × local at the same parallelism; history within Temporal's limits ` +
      `(51,200 events and 50 MB per run, warnings at 10,240 events and 10 MB; 2 MB per payload).`,
  );
  lines.push('');
  lines.push(`| create rate, per second | ${results.map((r) => label(r.backend)).join(' | ')} |`);
  lines.push(`|---|${results.map(() => '---:').join('|')}|`);
  const shapes = [...new Set(results.flatMap((r) => r.throughput.map((t) => `${t.shape}\u0000${t.clients}`)))];
  for (const key of shapes) {
    const [shape, clients] = key.split('\u0000') as ['mix' | 'agents', string];
    const what = shape === 'mix' ? 'team + 10 agents + 20 edges per client' : 'agents only, one team per client';
    lines.push(
      `| ${what}, ${clients} clients${shape === 'mix' && clients === '32' ? ' (**floor**)' : ''} | ${results
        .map((r) => {
          const t = r.throughput.find((x) => x.shape === shape && String(x.clients) === clients);
          return t ? `${n(t.perSecond)} (CPU ${cpuCell(t.cpu, t.creates, false)})` : '–';
        })
        .join(' | ')} |`,
    );
  }
  for (const result of results) {
    const rate = floorRate(result);
    lines.push('');
    lines.push(`### ${label(result.backend)}`);
    lines.push('');
    lines.push('| engine | parallelism | apply | wall, s | requests (GET + mutating, non-2xx) | floor, s | wall ÷ floor | Temporal ÷ local | CPU s during the run (per request) | history |');
    lines.push('|---|---:|---|---:|---|---:|---:|---:|---|---|');
    for (const run of result.runs) {
      const requests = run.gets + run.mutations;
      const floor = run.kind === 'fresh' ? requests / rate : NaN;
      const local = result.runs.find((r) => r.engine === 'local' && r.kind === run.kind && r.parallelism === run.parallelism);
      const vsLocal = run.engine === 'temporal' && local ? run.wallSeconds / local.wallSeconds : NaN;
      lines.push(
        `| ${run.engine} | ${run.parallelism} | ${run.kind}${run.problem ? ` ⚠ ${run.problem}` : ''} | ${n(run.wallSeconds, 2)} | ` +
          `${n(requests)} (${n(run.gets)} + ${n(run.mutations)}, ${n(run.failed)}) | ${n(floor, 2)} | ${n(run.wallSeconds / floor, 2)} | ${n(vsLocal, 2)} | ` +
          `${cpuCell(run.cpu, requests, run.engine === 'temporal')} | ${historyCell(run.history)} |`,
      );
    }
  }
  lines.push('');
  lines.push(...goals(results));
  return lines.join('\n');
}

function label(backend: BackendApplyResult['backend']): string {
  return backend === 'pglite' ? 'PGlite (data dir)' : 'PostgreSQL';
}

/** One line per goal and backend at the default parallelism (8): met or not, with the figure. */
function goals(results: BackendApplyResult[]): string[] {
  const out = ['Goals at the default parallelism (8):', ''];
  for (const result of results) {
    const rate = floorRate(result);
    const fresh = (engine: ApplyRun['engine']) => result.runs.find((r) => r.engine === engine && r.kind === 'fresh' && r.parallelism === 8);
    const local = fresh('local');
    const temporal = fresh('temporal');
    const ratio = (run: ApplyRun | undefined) => (run ? run.wallSeconds / ((run.gets + run.mutations) / rate) : NaN);
    const verdict = (value: number, limit: number) => (Number.isFinite(value) ? `${n(value, 2)} (${value <= limit ? 'met' : 'missed'}, goal ≤ ${limit})` : 'not measured');
    out.push(`- ${label(result.backend)}: local wall ÷ floor ${verdict(ratio(local), 1.3)}; Temporal wall ÷ floor ${verdict(ratio(temporal), 1.3)}; ` +
      `Temporal ÷ local ${verdict(temporal && local ? temporal.wallSeconds / local.wallSeconds : NaN, 1.5)}` +
      `${temporal?.history ? `; history max ${n(temporal.history.maxEventsPerRun)} events and ${kib(temporal.history.maxBytesPerRun)} per run, largest payload ${kib(temporal.history.largestPayload)} (${temporal.history.maxEventsPerRun <= 51_200 && temporal.history.maxBytesPerRun <= 50 * 2 ** 20 && temporal.history.largestPayload <= 2 * 2 ** 20 ? 'within the limits' : 'OVER a limit'})` : ''}.`);
  }
  return out;
}

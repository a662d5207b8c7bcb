/**
 * `npm run bench:conversations`: what a durable conversation (a pipeline step that waits for a
 * reply) costs, on a real Temporal server and a real acs-server with echo agents.
 *
 *   bash scripts/with-temporal.sh --install -- npm run bench:conversations
 *
 * 1. Requests per conversation-hour of waiting (goal ≤ 120; polling once a second would be
 *    3,600): the `approval` pipeline of examples/triage.yaml waits in its `ask` step for the human
 *    dana for W seconds while the worker's HTTP requests to acs-server are counted, then dana
 *    answers over REST. On Temporal (in-process worker) and on the local engine, at once.
 * 2. History events per awaited reply (goal ≤ 6): every event of a completed `triage` and
 *    `approval` history attributed to the run's fixed overhead or to one step (see
 *    {@link attributeHistory}), and each step's span as the brief of the bench defines it.
 * 3. N concurrent `triage` runs on one worker, a child `teamctl worker` process as users run it:
 *    all completed, wall time, the worker's RSS (sampled from /proc), and the messages on the
 *    service counted against the 4 that each run sends from dana.
 *
 * 4. Pipelines that decide: history events per loop iteration and per map item (goal ≤ 8 per
 *    awaited reply: the 6 of a step plus the expression work, which runs in the workflow and
 *    should cost nothing), each awaited step with a typed reply and a `when`, on the in-process
 *    worker; and a map of M items (default 1,000) on a child `teamctl worker`, its list the typed
 *    reply of an external planner (the bench answers as it): wall time, the whole chain's history
 *    (events, bytes, continue-as-new), the worker's peak RSS, and dana's messages counted (one
 *    per item). `BENCH_CONVERSATIONS_PARTS=4` runs this part alone; it has its own section in
 *    docs/performance.md. `BENCH_CONVERSATIONS_MAP_ITEMS` overrides M (quick: 100).
 *
 * 5. Waiting for people, push and poll side by side (bench/conversation-waits.ts): N `approval`
 *    runs (default 2,000) waiting at once on one child worker, with 10 activity slots and
 *    `--events-listen` (push) or N + 20 slots (poll): requests per waiting run-hour (goal ≤ 4 with
 *    push), history events per awaited reply (goal ≤ 8), the worker's RSS, a SIGKILL of the
 *    worker, and the latency from dana's answer to the step's completion (goal p99 ≤ 1 s with
 *    push). `BENCH_CONVERSATIONS_PARTS=5` runs it alone; its own section of docs/performance.md.
 *
 * acs-server runs in this process (in memory, agent loop tick 100 ms, rate limit off), as in
 * test/workflows/pipelines.test.ts; every part has an organization (and key) of its own, so the
 * requests of one part are told from another's by their key. `BENCH_QUICK=1`: W = 65 s and
 * N = 20 (smoke run, printed only). `BENCH_CONVERSATIONS_WAIT_SECONDS` / `BENCH_CONVERSATIONS_RUNS`
 * override W / N. `BENCH_CONVERSATIONS_OUT`: a file to write the markdown to instead; by default a
 * full run replaces the part of docs/performance.md between the `bench-conversations` markers.
 * Not part of the tests: the figures depend on the machine.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { createConversationActivities } from '../activities/conversation-activities.ts';
import { AcsClient } from '../client/acs-client.ts';
import { runCli } from '../cli/program.ts';
import { loadDefinitionFile } from '../definitions/load.ts';
import { flatSteps } from '../definitions/pipeline-graph.ts';
import type { PipelineDefinition } from '../definitions/pipeline-schema.ts';
import { runPipelineLocally } from '../engine/local-engine.ts';
import { newRunId, startPipelineRun } from '../engine/temporal-runs.ts';
import { startServer } from '../service/index.ts';
import { loadTemporalSettings } from '../temporal/settings.ts';
import { createWorker } from '../worker/worker.ts';
import type { PipelineResult, PipelineRunInput } from '../workflows/pipeline-orchestration.ts';
import { pipelineWorkflow } from '../workflows/pipeline-workflow.ts';
import { cpuModel, writeMarkedSection } from './host.ts';
import { renderWaitModes, waitModes } from './conversation-waits.ts';

const root = join(import.meta.dirname, '..');
const log = (line: string) => process.stdout.write(`${line}\n`);
const quick = process.env.BENCH_QUICK === '1';
const waitSeconds = Number(process.env.BENCH_CONVERSATIONS_WAIT_SECONDS) || (quick ? 65 : 180);
const concurrentRuns = Number(process.env.BENCH_CONVERSATIONS_RUNS) || (quick ? 20 : 200);
const outPath = process.env.BENCH_CONVERSATIONS_OUT || undefined;
// `--max-concurrent-activities` of the child worker (unset: the SDK's default of 100), to see whether its slots pace the runs.
const maxActivities = Number(process.env.BENCH_CONVERSATIONS_MAX_ACTIVITIES) || undefined;
const ECHO_KEY = 'bench-conversations-echo-provider-key';
const example = join(root, 'examples', 'triage.yaml');
/** The `wait` of one long poll (client/acs-client.ts MAX_WAIT_SECONDS): 3,600 / 30 = 120 polls an hour. */
const LONG_POLL_SECONDS = 30;
const REQUESTS_GOAL = 120;
const EVENTS_GOAL = 6;
/** Goal of part 4: a step of a loop or a map, with its expression work. */
const DECIDE_EVENTS_GOAL = 8;
/** The parts to run (1–4; default all). */
const parts = new Set((process.env.BENCH_CONVERSATIONS_PARTS ?? '1,2,3,4,5').split(',').map((p) => Number(p.trim())));
/** Runs of part 5 waiting at once, and the seconds they wait before dana answers. */
const waitRuns = Number(process.env.BENCH_CONVERSATIONS_WAIT_RUNS) || (quick ? 200 : 2_000);
const waitWindow = Number(process.env.BENCH_CONVERSATIONS_WAIT_WINDOW) || (quick ? 30 : 120);
/** Items of part 4's big map. */
const mapItems = Number(process.env.BENCH_CONVERSATIONS_MAP_ITEMS) || (quick ? 100 : 1_000);
/** Iterations and items of part 4's small loop and map. */
const LOOP_ITERATIONS = 5;
const SMALL_MAP_ITEMS = 20;
/** Items of the big map in flight at once. */
const MAP_CONCURRENCY = 20;

if (!process.env.TEMPORAL_ADDRESS) {
  log('bench:conversations: TEMPORAL_ADDRESS is not set; run it through `bash scripts/with-temporal.sh --install -- npm run bench:conversations`');
  process.exit(2);
}

// ---------------------------------------------------------------------------------------------
// Counting the requests of the activities (in-process worker and local engine), by API key: each
// part has an organization of its own, so a key's requests are one run's.

interface RecordedRequest {
  /** performance.now() when the request was sent. */
  at: number;
  method: string;
  path: string;
  /** A long poll (`GET /threads/{id}?wait=…`). */
  longPoll: boolean;
}

const requestsByKey = new Map<string, RecordedRequest[]>();
const countingFetch: typeof fetch = async (input, init) => {
  const headers = new Headers(init?.headers);
  const url = new URL(String(input));
  const key = headers.get('x-api-key') ?? '';
  const list = requestsByKey.get(key) ?? [];
  requestsByKey.set(key, list);
  list.push({ at: performance.now(), method: (init?.method ?? 'GET').toUpperCase(), path: url.pathname.replace(/^\/api\/v1/, ''), longPoll: url.searchParams.has('wait') });
  return fetch(input, init);
};

// The activities read each organization's key from here (one variable per organization).
const activityEnv: NodeJS.ProcessEnv = {};

// ---------------------------------------------------------------------------------------------
// Organizations with the example applied.

interface BenchOrg {
  name: string;
  apiKey: string;
  /** The variable of `activityEnv` that holds the key. */
  keyEnv: string;
  client: AcsClient;
  pipelines: PipelineDefinition[];
  /** Participant ids of the `intake` team by name. */
  ids: Record<string, string>;
  edgeIds: string[];
}

type Server = Awaited<ReturnType<typeof startServer>>;

/**
 * Provisions an organization and applies examples/triage.yaml to it with `teamctl apply` (the
 * `schedules:` part left out: a schedule would start runs of its own).
 */
async function organization(server: Server, work: string, label: string): Promise<BenchOrg> {
  const name = `bench-conversations-${label}-${randomUUID().slice(0, 8)}`;
  const { api_key: apiKey } = await server.provisionOrganization(name);
  const text = (await readFile(example, 'utf8')).split('\nschedules:')[0]!.replace('name: acme-support', `name: ${name}`);
  const file = join(work, `${label}.yaml`);
  await writeFile(file, text);
  const out: string[] = [];
  const env = { ...process.env, ACS_API_KEY: apiKey, ECHO_PROVIDER_KEY: ECHO_KEY, ACS_BASE_URL: server.url };
  const code = await runCli(['apply', '-f', file], { env, isTTY: false, stdout: (t) => void out.push(t), stderr: (t) => void out.push(t) });
  if (code !== 0) throw new Error(`apply of ${label} failed (${code}):\n${out.join('\n')}`);
  const client = new AcsClient({ baseUrl: server.url, apiKey });
  const org = (await client.listOrganizations()).find((o) => o.org_name === name)!;
  const team = (await client.listTeams(org.org_id)).find((t) => t.team_name === 'intake')!;
  const graph = await client.getTeam(team.team_id);
  const ids = Object.fromEntries([...graph.agents.map((a) => [a.name, a.agent_id]), ...graph.humans.map((h) => [h.name, h.human_id])]);
  const keyEnv = `BENCH_KEY_${label.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
  activityEnv[keyEnv] = apiKey;
  return { name, apiKey, keyEnv, client, pipelines: (await loadDefinitionFile(file)).pipelines, ids, edgeIds: graph.edges.map((e) => e.edge_id) };
}

function runInput(server: Server, org: BenchOrg, pipeline: 'triage' | 'approval', keyEnv = org.keyEnv): PipelineRunInput {
  return {
    connection: { baseUrl: server.url, apiKeyEnv: keyEnv },
    organization: org.name,
    pipeline: org.pipelines.find((p) => p.name === pipeline)!,
    inputs: pipeline === 'triage' ? { ticket: 'T-1' } : { change: 'v2' },
  };
}

// ---------------------------------------------------------------------------------------------
// 2. History events per awaited reply.

type HistoryEvent = NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']>[number];

/** A protobuf int64 (a Long, or a number) as a number. */
function num(value: unknown): number {
  if (typeof value === 'number') return value;
  if (value && typeof (value as { toNumber?: unknown }).toNumber === 'function') return (value as { toNumber(): number }).toNumber();
  return Number(value);
}

/** One run's history, attributed. */
export interface HistoryAttribution {
  total: number;
  /** Events of no step: the start, the first workflow task, the team lookup and its workflow task, the close. */
  fixed: number;
  /** Events of each `converse` step by step id, in the order the steps were scheduled. */
  steps: Array<{ id: string; awaited: boolean; own: number; span: number }>;
  /** (total − fixed − events of steps that await no reply) ÷ awaited replies. */
  perAwaited: number;
  /** (total − fixed) ÷ awaited replies: the sends that await nothing charged to the replies too. */
  perAwaitedAllSteps: number;
}

/**
 * Attributes every event of a pipeline run's history, once: an activity's events to its step
 * (the `converse` activity's step id, from its input; `resolveTeam` to the fixed overhead); a
 * workflow task's events to the activity whose completion caused it (the last one completed
 * before it), or to the fixed overhead before any step; anything else (started, completed) to
 * the fixed overhead. A step's `own` count is its activity's events plus the workflow task its
 * completion caused. `span` is the count the bench's brief asked for: events from the step's
 * ActivityTaskScheduled to the first WorkflowTaskCompleted after its ActivityTaskCompleted,
 * inclusive (for a step of a parallel group it includes its sibling's events).
 */
export function attributeHistory(events: HistoryEvent[], pipeline: PipelineDefinition): HistoryAttribution {
  const awaited = new Map<string, boolean>();
  for (const step of flatSteps(pipeline)) awaited.set(step.id, step.awaitReply !== false);
  const ownerOf = new Map<number, string>();
  const counts = new Map<string, number>();
  const scheduledAt = new Map<string, number>();
  const completedAt = new Map<string, number>();
  const FIXED = '';
  let lastCompleted = FIXED;
  const add = (owner: string) => counts.set(owner, (counts.get(owner) ?? 0) + 1);
  events.forEach((event, index) => {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled) {
      let owner = FIXED;
      if (scheduled.activityType?.name === 'converse') {
        const data = scheduled.input?.payloads?.[0]?.data;
        owner = (JSON.parse(Buffer.from(data ?? new Uint8Array()).toString('utf8')) as { stepId: string }).stepId;
        scheduledAt.set(owner, index);
      }
      ownerOf.set(num(event.eventId), owner);
      add(owner);
      return;
    }
    const activity =
      event.activityTaskStartedEventAttributes ??
      event.activityTaskCompletedEventAttributes ??
      event.activityTaskFailedEventAttributes ??
      event.activityTaskTimedOutEventAttributes ??
      event.activityTaskCancelRequestedEventAttributes ??
      event.activityTaskCanceledEventAttributes;
    if (activity) {
      const owner = ownerOf.get(num(activity.scheduledEventId)) ?? FIXED;
      add(owner);
      if (event.activityTaskCompletedEventAttributes || event.activityTaskFailedEventAttributes || event.activityTaskTimedOutEventAttributes) {
        lastCompleted = owner;
        if (owner !== FIXED) completedAt.set(owner, index);
      }
      return;
    }
    const workflowTask =
      event.workflowTaskScheduledEventAttributes ??
      event.workflowTaskStartedEventAttributes ??
      event.workflowTaskCompletedEventAttributes ??
      event.workflowTaskFailedEventAttributes ??
      event.workflowTaskTimedOutEventAttributes;
    add(workflowTask ? lastCompleted : FIXED);
  });
  const steps = [...scheduledAt.keys()].map((id) => {
    const from = scheduledAt.get(id)!;
    const done = completedAt.get(id) ?? events.length - 1;
    let to = events.findIndex((e, i) => i > done && e.workflowTaskCompletedEventAttributes);
    if (to < 0) to = events.length - 1;
    return { id, awaited: awaited.get(id) ?? true, own: counts.get(id) ?? 0, span: to - from + 1 };
  });
  const fixed = counts.get(FIXED) ?? 0;
  const replies = steps.filter((s) => s.awaited).length;
  const notAwaited = steps.filter((s) => !s.awaited).reduce((sum, s) => sum + s.own, 0);
  return {
    total: events.length,
    fixed,
    steps,
    perAwaited: (events.length - fixed - notAwaited) / replies,
    perAwaitedAllSteps: (events.length - fixed) / replies,
  };
}

// ---------------------------------------------------------------------------------------------
// 1. Requests per conversation-hour of waiting.

/** What one engine's approval run sent while its `ask` step waited. */
export interface WaitResult {
  engine: 'temporal' | 'local';
  /** Seconds from the first long poll to dana's answer. */
  seconds: number;
  /** Requests sent in that window (the long polls, nothing else is expected). */
  inWindow: number;
  perHour: number;
  /** Mean seconds between the starts of consecutive long polls; 3,600 ÷ it is the steady rate. */
  pollInterval: number;
  /** Every request of the run, by kind. */
  run: { total: number; lookups: number; sends: number; polls: number };
  output: string | null;
  history?: HistoryAttribution;
}

/**
 * Runs `approval` on one engine, waits until its `ask` step sends its first long poll, lets it
 * wait `waitSeconds`, answers as dana over REST and waits for the run's end. The window is
 * timed from the first long poll, so the question's send is outside it (reported with the run).
 */
async function measureWait(engine: WaitResult['engine'], org: BenchOrg, start: () => Promise<() => Promise<{ result: PipelineResult; history?: HistoryEvent[] }>>): Promise<WaitResult> {
  const finish = await start();
  let first: RecordedRequest | undefined;
  while (!(first = requestsByKey.get(org.apiKey)?.find((r) => r.longPoll))) await sleep(20);
  const threadId = first.path.split('/')[2]!;
  const answerAt = first.at + waitSeconds * 1000;
  // A timer may fire a fraction of a millisecond early: the window must be W s, not a hair less.
  while (performance.now() < answerAt) await sleep(Math.max(1, answerAt - performance.now()));
  const answered = performance.now();
  await org.client.appendMessage(threadId, { sender_agent_id: org.ids['dana']!, content: 'approve' });
  const { result, history } = await finish();
  const requests = requestsByKey.get(org.apiKey) ?? [];
  const window = requests.filter((r) => r.at >= first.at && r.at < answered);
  const polls = requests.filter((r) => r.longPoll);
  const starts = polls.map((p) => p.at);
  const pollInterval = starts.length > 1 ? (starts.at(-1)! - starts[0]!) / (starts.length - 1) / 1000 : NaN;
  const seconds = (answered - first.at) / 1000;
  const lookups = requests.filter((r) => r.method === 'GET' && !r.longPoll && !/^\/threads\//.test(r.path)).length;
  const sends = requests.length - lookups - polls.length;
  const out: WaitResult = {
    engine,
    seconds,
    inWindow: window.length,
    perHour: (window.length / seconds) * 3600,
    pollInterval,
    run: { total: requests.length, lookups, sends, polls: polls.length },
    output: result.output,
  };
  if (history) out.history = attributeHistory(history, org.pipelines.find((p) => p.name === 'approval')!);
  log(
    `  ${engine}: ${window.length} requests in ${seconds.toFixed(1)} s of waiting = ${out.perHour.toFixed(1)}/h (long poll every ${pollInterval.toFixed(2)} s); ` +
      `run: ${requests.length} requests (${lookups} team lookup, ${sends} sends, ${polls.length} long polls); output ${JSON.stringify(result.output)}` +
      (out.history ? `; history ${out.history.total} events, ${out.history.perAwaited} per awaited reply` : ''),
  );
  return out;
}

// ---------------------------------------------------------------------------------------------
// 3. Concurrent runs on a child `teamctl worker`.

/** VmRSS and VmHWM of a process in bytes (Linux /proc; NaN elsewhere or once it is gone). */
function memoryOf(pid: number): { rss: number; hwm: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
    return { rss: kib('VmRSS'), hwm: kib('VmHWM') };
  } catch {
    return { rss: NaN, hwm: NaN };
  }
}

const ticksPerSecond = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

/** utime + stime of a process in seconds (Linux /proc; NaN elsewhere). */
function cpuOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
    return (f[11]! + f[12]!) / ticksPerSecond;
  } catch {
    return NaN;
  }
}

interface WorkerChild {
  child: ChildProcess;
  pid: number;
  ready: Promise<void>;
  output(): string;
  stop(): Promise<void>;
}

/**
 * Spawns `teamctl worker --task-queue Q` as users run it (this Node, the repository's bin), with
 * the organization's key as ACS_API_KEY; `ready` resolves once it says it is polling (bundling
 * the workflows takes a while, so it is started early and awaited late).
 */
function spawnWorkerChild(taskQueue: string, apiKey: string): WorkerChild {
  const args = ['bin/teamctl.ts', 'worker', '--task-queue', taskQueue, ...(maxActivities ? ['--max-concurrent-activities', String(maxActivities)] : [])];
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: { ...process.env, ACS_API_KEY: apiKey },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<void>((done) => child.on('exit', () => done()));
  const ready = new Promise<void>((resolve, reject) => {
    const check = () => output.includes('polling task queue') && resolve();
    child.stderr!.on('data', check);
    void exited.then(() => reject(new Error(`teamctl worker exited before polling:\n${output}`)));
  });
  ready.catch(() => undefined);
  return {
    child,
    pid: child.pid!,
    ready,
    output: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Runs `fn` over `items`, at most `limit` at once, keeping the order. */
async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

/** The concurrent runs' figures. */
export interface ConcurrentResult {
  runs: number;
  completed: number;
  failures: string[];
  wallSeconds: number;
  latencyP50: number;
  latencyMax: number;
  /** Bytes: after start-up and before the runs; the highest sample during them; the kernel's high-water mark (start-up included). */
  rssIdle: number;
  rssPeak: number;
  hwm: number;
  /** Bytes, once the runs' histories have been read (a few seconds after the last run ended). */
  rssAfter: number;
  workerCpuSeconds: number;
  /** CPU seconds of this process (acs-server, its agent loop, the client) during the runs. */
  benchCpuSeconds: number;
  danaMessages: number;
  threads: number;
  /** Runs whose own threads hold other than 2 + 1 + 1 messages from dana. */
  runsOff: number;
  events: { min: number; max: number; perAwaitedMin: number; perAwaitedMax: number };
}

/**
 * Starts `concurrentRuns` triage runs at once on the child worker's task queue (one client
 * connection, not one per run), waits for all, samples the worker's RSS every 100 ms, then counts
 * dana's messages on the service and reads every run's history.
 */
async function concurrentPipelines(client: Client, server: Server, org: BenchOrg, worker: WorkerChild, taskQueue: string): Promise<ConcurrentResult> {
  const input = runInput(server, org, 'triage', 'ACS_API_KEY');
  const rssIdle = memoryOf(worker.pid).rss;
  let rssPeak = rssIdle;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, memoryOf(worker.pid).rss || 0)), 100);
  const cpuBefore = cpuOf(worker.pid);
  const benchBefore = process.cpuUsage();
  const started = performance.now();
  const runs = await Promise.all(
    Array.from({ length: concurrentRuns }, async (_, i) => {
      const workflowId = newRunId(org.name, 'triage');
      const at = performance.now();
      const handle = await client.workflow.start(pipelineWorkflow, { taskQueue, workflowId, args: [{ ...input, inputs: { ticket: `T-${i}` } }] });
      return { handle, at };
    }),
  );
  const outcomes = await Promise.all(
    runs.map(async ({ handle, at }) => {
      try {
        const result = await handle.result();
        return { ok: true as const, result, seconds: (performance.now() - at) / 1000, handle };
      } catch (error) {
        return { ok: false as const, error: String((error as Error)?.message ?? error), seconds: (performance.now() - at) / 1000, handle };
      }
    }),
  );
  const wallSeconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  rssPeak = Math.max(rssPeak, memoryOf(worker.pid).rss || 0);
  const { hwm } = memoryOf(worker.pid);
  const workerCpuSeconds = cpuOf(worker.pid) - cpuBefore;
  const benchUsage = process.cpuUsage(benchBefore);
  const benchCpuSeconds = (benchUsage.user + benchUsage.system) / 1e6;
  const latencies = outcomes.map((o) => o.seconds).sort((a, b) => a - b);
  log(`  ${outcomes.filter((o) => o.ok).length} of ${concurrentRuns} completed in ${wallSeconds.toFixed(1)} s; worker RSS ${mib(rssIdle)} idle, ${mib(rssPeak)} peak, VmHWM ${mib(hwm)}; CPU worker ${workerCpuSeconds.toFixed(1)} s, bench ${benchCpuSeconds.toFixed(1)} s`);

  // Every thread of the team, every message of each: dana's must be exactly 4 per run.
  const dana = org.ids['dana']!;
  const threads = (await Promise.all(org.edgeIds.map((e) => org.client.listThreads(e)))).flat();
  const fromDana = new Map<string, number>();
  await mapLimit(threads, 16, async (t) => {
    const page = await org.client.getThread(t.thread_id, { limit: 200 });
    fromDana.set(t.thread_id, page.messages.filter((m) => m.sender_id === dana).length);
  });
  const danaMessages = [...fromDana.values()].reduce((a, b) => a + b, 0);
  let runsOff = 0;
  for (const o of outcomes) {
    if (!o.ok) continue;
    const thread = (id: string) => fromDana.get(o.result.steps.find((s) => s.id === id)?.thread_id ?? '') ?? 0;
    if (thread('classify') !== 2 || thread('summary') !== 1 || thread('notify') !== 1) runsOff++;
  }
  const pipeline = org.pipelines.find((p) => p.name === 'triage')!;
  const histories = await mapLimit(outcomes, 16, async (o) => attributeHistory((await o.handle.fetchHistory()).events ?? [], pipeline));
  return {
    runs: concurrentRuns,
    completed: outcomes.filter((o) => o.ok).length,
    failures: outcomes.flatMap((o) => (o.ok ? [] : [o.error])),
    wallSeconds,
    latencyP50: latencies[Math.floor(latencies.length / 2)] ?? NaN,
    latencyMax: latencies.at(-1) ?? NaN,
    rssIdle,
    rssPeak,
    hwm,
    rssAfter: memoryOf(worker.pid).rss,
    workerCpuSeconds,
    benchCpuSeconds,
    danaMessages,
    threads: threads.length,
    runsOff,
    events: {
      min: Math.min(...histories.map((h) => h.total)),
      max: Math.max(...histories.map((h) => h.total)),
      perAwaitedMin: Math.min(...histories.map((h) => h.perAwaited)),
      perAwaitedMax: Math.max(...histories.map((h) => h.perAwaited)),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// 4. Pipelines that decide.

/** The team and pipelines of part 4: dana (human), the echo triager, the external planner. */
function decideDefinition(name: string): string {
  const items = JSON.stringify(Array.from({ length: SMALL_MAP_ITEMS }, (_, i) => i + 1));
  return `apiVersion: teamctl/v1
organization:
  name: ${name}
  providerKeys:
    echo: \${env:ECHO_PROVIDER_KEY}
teams:
  - name: desk
    agents:
      - { name: triager, provider: echo }
      - { name: planner }
    humans:
      - { name: dana }
    edges: [[dana, triager], [dana, planner]]
pipelines:
  - name: loop
    team: desk
    steps:
      - loop:
          id: rounds
          maxIterations: ${LOOP_ITERATIONS + 5}
          until: "iteration == ${LOOP_ITERATIONS - 1} && steps.ask.status == 'completed'"
          steps:
            - id: ask
              when: "iteration >= 0"
              from: dana
              to: triager
              content: "Round {{ iteration }}"
              reply: { schema: { type: string, pattern: "^echo: Round" } }
    output: "{{ steps.rounds.iterations }}"
  - name: map
    team: desk
    steps:
      - map:
          id: each
          items: "${items}"
          maxConcurrency: 4
          steps:
            - id: ask
              when: "item > 0"
              from: dana
              to: triager
              content: "Item {{ item }}"
              reply: { schema: { type: string, pattern: "^echo: Item" } }
    output: "{{ steps.each.status }}"
  - name: big-map
    team: desk
    steps:
      - id: plan
        from: dana
        to: planner
        content: "List the tickets to handle, as a JSON list."
        timeout: 1h
        reply: { schema: { type: array, minItems: 1, maxItems: 1000, items: { type: string } } }
      - map:
          id: each
          items: "steps.plan.value"
          as: ticket
          maxConcurrency: ${MAP_CONCURRENCY}
          steps:
            - id: handle
              from: dana
              to: triager
              content: "Handle {{ ticket }}"
    output: "{{ steps.each.status }}"
`;
}

/** Part 4's figures. */
export interface DecideResult {
  loop: HistoryAttribution & { iterations: number };
  map: HistoryAttribution & { items: number };
  big: {
    items: number;
    completed: boolean;
    failure: string | null;
    wallSeconds: number;
    /** Seconds from the list's arrival to the run's end. */
    mapSeconds: number;
    runs: number;
    events: number;
    historyBytes: number;
    /** The chain's events ÷ items. */
    eventsPerItem: number;
    rssIdle: number;
    rssPeak: number;
    hwm: number;
    workerCpuSeconds: number;
    danaMessages: number;
    threads: number;
  };
}

/** Applies part 4's definition to an organization of its own (key in `activityEnv`). */
async function decideOrg(server: Server, work: string): Promise<BenchOrg> {
  const name = `bench-decide-${randomUUID().slice(0, 8)}`;
  const { api_key: apiKey } = await server.provisionOrganization(name);
  const file = join(work, 'decide.yaml');
  await writeFile(file, decideDefinition(name));
  const out: string[] = [];
  const env = { ...process.env, ACS_API_KEY: apiKey, ECHO_PROVIDER_KEY: ECHO_KEY, ACS_BASE_URL: server.url };
  const code = await runCli(['apply', '-f', file], { env, isTTY: false, stdout: (t) => void out.push(t), stderr: (t) => void out.push(t) });
  if (code !== 0) throw new Error(`apply of the decide definition failed (${code}):\n${out.join('\n')}`);
  const client = new AcsClient({ baseUrl: server.url, apiKey });
  const org = (await client.listOrganizations()).find((o) => o.org_name === name)!;
  const team = (await client.listTeams(org.org_id)).find((t) => t.team_name === 'desk')!;
  const graph = await client.getTeam(team.team_id);
  const ids = Object.fromEntries([...graph.agents.map((a) => [a.name, a.agent_id]), ...graph.humans.map((h) => [h.name, h.human_id])]);
  const keyEnv = 'BENCH_KEY_DECIDE';
  activityEnv[keyEnv] = apiKey;
  return { name, apiKey, keyEnv, client, pipelines: (await loadDefinitionFile(file)).pipelines, ids, edgeIds: graph.edges.map((e) => e.edge_id) };
}

/**
 * Part 4: a loop of {@link LOOP_ITERATIONS} and a map of {@link SMALL_MAP_ITEMS} on the
 * in-process worker, their histories attributed as part 2's; then the big map on a child worker.
 */
async function decideParts(client: Client, server: Server, org: BenchOrg, target: { settings: ReturnType<typeof loadTemporalSettings>; taskQueue: string }, worker: WorkerChild, childQueue: string): Promise<DecideResult> {
  const input = (pipeline: string, keyEnv = org.keyEnv): PipelineRunInput => ({
    connection: { baseUrl: server.url, apiKeyEnv: keyEnv },
    organization: org.name,
    pipeline: org.pipelines.find((p) => p.name === pipeline)!,
    inputs: {},
  });
  const history = async (pipeline: string) => {
    const runId = newRunId(org.name, pipeline);
    await startPipelineRun(input(pipeline), runId, target);
    await client.workflow.getHandle<typeof pipelineWorkflow>(runId).result();
    return attributeHistory((await client.workflow.getHandle(runId).fetchHistory()).events ?? [], org.pipelines.find((p) => p.name === pipeline)!);
  };
  log(`4a. history of a loop of ${LOOP_ITERATIONS} and a map of ${SMALL_MAP_ITEMS} (typed replies, when)`);
  const loop = { ...(await history('loop')), iterations: LOOP_ITERATIONS };
  const map = { ...(await history('map')), items: SMALL_MAP_ITEMS };
  log(`  loop: ${loop.total} events, ${loop.fixed} fixed, ${n(loop.perAwaited, 2)} per iteration; map: ${map.total} events, ${map.fixed} fixed, ${n(map.perAwaited, 2)} per item`);

  log(`4b. a map of ${mapItems} items on a child teamctl worker`);
  await worker.ready;
  await sleep(2000);
  const rssIdle = memoryOf(worker.pid).rss;
  let rssPeak = rssIdle;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, memoryOf(worker.pid).rss || 0)), 100);
  const cpuBefore = cpuOf(worker.pid);
  const runId = newRunId(org.name, 'big-map');
  const started = performance.now();
  await client.workflow.start(pipelineWorkflow, { taskQueue: childQueue, workflowId: runId, args: [input('big-map', 'ACS_API_KEY')] });
  // The planner answers the list once dana has asked for it.
  const planner = org.ids['planner']!;
  const planThread = await (async () => {
    for (;;) {
      for (const edge of org.edgeIds) {
        for (const t of await org.client.listThreads(edge)) {
          const page = await org.client.getThread(t.thread_id, { limit: 5 });
          if (page.messages.some((m) => m.content.startsWith('List the tickets'))) return t.thread_id;
        }
      }
      await sleep(100);
    }
  })();
  const listed = performance.now();
  const tickets = Array.from({ length: mapItems }, (_, i) => `T-${String(i + 1).padStart(4, '0')}`);
  await org.client.appendMessage(planThread, { sender_agent_id: planner, content: `\`\`\`json\n${JSON.stringify(tickets)}\n\`\`\`` });
  let completed = false;
  let failure: string | null = null;
  try {
    await client.workflow.getHandle<typeof pipelineWorkflow>(runId).result();
    completed = true;
  } catch (error) {
    failure = String((error as Error)?.message ?? error);
  }
  const ended = performance.now();
  clearInterval(sampler);
  rssPeak = Math.max(rssPeak, memoryOf(worker.pid).rss || 0);
  const { hwm } = memoryOf(worker.pid);
  const workerCpuSeconds = cpuOf(worker.pid) - cpuBefore;
  let runs = 0;
  let events = 0;
  let historyBytes = 0;
  for await (const info of client.workflow.list({ query: `WorkflowId = '${runId}'` })) {
    runs += 1;
    events += info.historyLength ?? 0;
    historyBytes += info.historySize ?? 0;
  }
  // dana's messages of this run: the question to the planner, and one per ticket, each in a thread of its own.
  const dana = org.ids['dana']!;
  const all = (await Promise.all(org.edgeIds.map((e) => org.client.listThreads(e)))).flat();
  let danaMessages = 0;
  let ownThreads = 0;
  await mapLimit(all, 16, async (t) => {
    const page = await org.client.getThread(t.thread_id, { limit: 200 });
    if (!/^(Handle T-|List the tickets)/.test(page.messages[0]?.content ?? '')) return;
    ownThreads += 1;
    danaMessages += page.messages.filter((m) => m.sender_id === dana).length;
  });
  const threads = { length: ownThreads };
  const big = {
    items: mapItems,
    completed,
    failure,
    wallSeconds: (ended - started) / 1000,
    mapSeconds: (ended - listed) / 1000,
    runs,
    events,
    historyBytes,
    eventsPerItem: events / mapItems,
    rssIdle,
    rssPeak,
    hwm,
    workerCpuSeconds,
    danaMessages,
    threads: threads.length,
  };
  log(
    `  ${completed ? 'completed' : `failed: ${failure}`} in ${n(big.wallSeconds, 1)} s (${n(big.mapSeconds, 1)} s after the list); ${runs} runs in the chain, ${events} events, ${mib(historyBytes)}; ` +
      `worker RSS ${mib(rssIdle)} idle, ${mib(rssPeak)} peak; dana's messages ${danaMessages} in ${threads.length} threads`,
  );
  return { loop, map, big };
}

/** The markdown of part 4 (its own section of docs/performance.md). */
export function renderDecideReport(facts: { date: string; load: number[] }, d: DecideResult): string {
  const b = d.big;
  const lines = [
    '## Pipelines that decide: history per loop iteration and per map item, a map of 1,000 items',
    '',
    `Measured ${facts.date} (code ${revision()}) on ${cpuModel()}, ${os.availableParallelism()} cores, ${n(os.totalmem() / 2 ** 30, 1)} GiB RAM, Node ${process.version}, Temporal dev server ${temporalVersion()}; load average ${facts.load.map((l) => n(l, 2)).join(' / ')} at the start (everything below shares the machine's cores). acs-server (in memory, agent loop tick 100 ms, rate limit off) runs in the bench process with an in-process worker for the histories; the big map goes to a child \`teamctl worker\` (SDK defaults).`,
    '',
    `Method. A loop of ${d.loop.iterations} iterations and a map of ${d.map.items} items (4 at once), each iteration or item one step to the echo triager with a \`when\` and a typed reply (\`{type: string, pattern: …}\`, checked by ajv in the workflow), the loop's \`until\` a CEL expression; their histories are attributed as above (per awaited reply = (total − fixed) ÷ replies). Then \`big-map\`: dana asks the external planner for the list (a typed reply: a JSON array of up to 1,000 strings), the bench answers as the planner with ${n(b.items)} ticket ids in a \`\`\`json block, and a map over them (${MAP_CONCURRENCY} at once) sends each to the echo triager in a thread of its own and awaits the reply; the whole chain of the run (continue-as-new included) is read from Temporal's visibility (history length and size per run), the worker's RSS from /proc every 100 ms, and dana's messages counted on every thread of the team.`,
    '',
    '| measurement | goal | result | |',
    '|---|---|---|---|',
    `| history events per loop iteration (typed reply, \`when\`, \`until\`) | ≤ ${DECIDE_EVENTS_GOAL} | **${n(d.loop.perAwaited, 2)}** = (${d.loop.total} events − ${d.loop.fixed} fixed) ÷ ${d.loop.iterations} | ${verdict(d.loop.perAwaited, DECIDE_EVENTS_GOAL)} |`,
    `| history events per map item (typed reply, \`when\`, 4 at once) | ≤ ${DECIDE_EVENTS_GOAL} | **${n(d.map.perAwaited, 2)}** = (${d.map.total} events − ${d.map.fixed} fixed) ÷ ${d.map.items} (items whose completions one workflow task takes together share its 3 events) | ${verdict(d.map.perAwaited, DECIDE_EVENTS_GOAL)} |`,
    `| a map of ${n(b.items)} items on one worker: completed | yes | **${b.completed ? 'yes' : `no: ${b.failure}`}** | ${b.completed ? 'met' : '**missed**'} |`,
    `| … wall time | – | ${n(b.wallSeconds, 1)} s from the start, ${n(b.mapSeconds, 1)} s from the list's arrival (${n(b.items / b.mapSeconds, 1)} items/s) | |`,
    `| … history | – | ${n(b.events)} events in ${b.runs} run${b.runs === 1 ? '' : 's'} of the chain (${b.runs - 1} continue-as-new), ${mib(b.historyBytes)}; ${n(b.eventsPerItem, 2)} events per item | |`,
    `| … worker RSS | – | ${mib(b.rssIdle)} idle after start-up, **${mib(b.rssPeak)}** peak during the run (VmHWM ${mib(b.hwm)}); CPU ${n(b.workerCpuSeconds, 1)} s | |`,
    `| … messages from dana on the service | ${n(b.items + 1)} (the question, one per item) | **${n(b.danaMessages)}** in ${n(b.threads)} threads | ${b.danaMessages === b.items + 1 && b.threads === b.items + 1 ? 'met' : '**missed**'} |`,
  ];
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------
// Report.

const n = (value: number, digits = 0) =>
  Number.isFinite(value) ? value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : '–';
function mib(bytes: number): string {
  return `${n(bytes / 2 ** 20, 1)} MiB`;
}
const verdict = (value: number, goal: number) => (Number.isFinite(value) ? (value <= goal ? 'met' : '**missed**') : 'not measured');

/** The commit measured, and whether the code of a pipeline differs from it (others may be editing it). */
function revision(): string {
  const git = (...args: string[]) => spawnSync('git', ['-C', root, ...args], { encoding: 'utf8' }).stdout?.trim() ?? '';
  const commit = git('rev-parse', '--short', 'HEAD') || 'unknown';
  const dirty = git('status', '--porcelain', '--', 'workflows', 'activities', 'engine', 'worker', 'client', 'service');
  return dirty ? `${commit} + uncommitted changes` : commit;
}

function temporalVersion(): string {
  const cli = process.env.TEMPORAL_CLI;
  const version = cli ? (spawnSync(cli, ['--version'], { encoding: 'utf8' }).stdout ?? '') : '';
  // "temporal version 1.9.1 (Server 1.32.0, UI 2.54.1)" -> "1.32.0 (CLI 1.9.1)"
  const m = /version (\S+) \(Server (\S+?),/.exec(version);
  return m ? `${m[2]} (CLI ${m[1]})` : 'unknown version';
}

function stepSpans(h: HistoryAttribution): string {
  return h.steps.map((s) => `${s.id} ${s.span}${s.awaited ? '' : ' (no reply)'}`).join(' · ');
}

function historyCell(h: HistoryAttribution | undefined): string {
  if (!h) return '–';
  const notAwaited = h.steps.filter((s) => !s.awaited);
  return (
    `**${n(h.perAwaited, 2)}** = (${h.total} events − ${h.fixed} fixed − ${notAwaited.reduce((a, s) => a + s.own, 0)} of ${notAwaited.map((s) => s.id).join(', ')}) ÷ ${h.steps.length - notAwaited.length}; ` +
    `own events per step ${h.steps.map((s) => `${s.id} ${s.own}`).join(' · ')}; span per step ${stepSpans(h)}; all steps charged to the replies: ${n(h.perAwaitedAllSteps, 2)}`
  );
}

/**
 * The goal's verdict on a wait. A window that is not a multiple of the poll's 30 s counts the
 * last poll whole although it covers waiting past the window (65 s: 3 polls cover 90 s), so a
 * miss says whether the steady rate, one poll per interval, meets the goal.
 */
function waitVerdict(w: WaitResult): string {
  const v = verdict(w.perHour, REQUESTS_GOAL);
  if (v !== '**missed**') return v;
  const steady = 3600 / w.pollInterval;
  return steady <= REQUESTS_GOAL
    ? `${v} over this window: ${w.inWindow} polls of ${LONG_POLL_SECONDS} s cover ${w.inWindow * LONG_POLL_SECONDS} s of waiting, more than the ${n(w.seconds, 0)} s window; the steady rate (${n(steady, 1)}/h) meets it`
    : `${v}, also at the steady rate (${n(steady, 1)}/h)`;
}

/** The markdown of a run (between the markers). */
export function renderReport(facts: { date: string; load: number[]; startSeconds: number }, waits: WaitResult[], triage: HistoryAttribution, concurrent: ConcurrentResult): string {
  const temporal = waits.find((w) => w.engine === 'temporal')!;
  const local = waits.find((w) => w.engine === 'local');
  const waitRow = (w: WaitResult) =>
    `| requests to acs-server during a ${n(w.seconds, 1)} s wait for a human, ${w.engine === 'temporal' ? 'Temporal worker' : 'local engine'} | ≤ ${REQUESTS_GOAL}/h | **${n(w.perHour, 1)}/h** (${w.inWindow} long polls; one every ${n(w.pollInterval, 2)} s = ${n(3600 / w.pollInterval, 1)}/h steady); ` +
    `whole run ${w.run.total} requests: ${w.run.lookups} team lookup, ${w.run.sends} for its 2 messages (open thread + read the first message's id, then append), ${w.run.polls} long polls | ${waitVerdict(w)} |`;
  const c = concurrent;
  const messagesOk = c.danaMessages === 4 * c.completed && c.runsOff === 0 && c.completed === c.runs;
  const lines = [
    `## Durable conversations: waiting, history, ${n(c.runs)} concurrent pipelines`,
    '',
    `Measured ${facts.date} (code ${revision()}) on ${cpuModel()}, ${os.availableParallelism()} cores, ${n(os.totalmem() / 2 ** 30, 1)} GiB RAM, Node ${process.version}, ` +
      `Temporal dev server ${temporalVersion()}; load average ${facts.load.map((l) => l.toFixed(2)).join(' / ')} at the start. acs-server (in memory, agent loop tick 100 ms, rate limit off) ` +
      `and an in-process worker (started in ${n(facts.startSeconds, 1)} s) run in the bench process; the ${n(c.runs)} runs go to a child \`teamctl worker\` (${maxActivities ? `${maxActivities} activities` : 'SDK defaults: 100 activities'}, 40 workflow tasks at once); everything shares the machine.`,
    '',
    `Method. The \`approval\` pipeline of examples/triage.yaml waits in its \`ask\` step for the human dana; from the step's first long poll the bench waits W = ${waitSeconds} s, counting every request the worker (or the local engine) sends to acs-server with a counting \`fetch\`, then answers as dana over REST (requests/hour = count ÷ W × 3,600; polling once a second would be 3,600). ` +
      'Each event of a completed history is attributed once: an activity\'s events to its step, a workflow task\'s to the activity whose completion caused it, the rest (start, first workflow task, team lookup, close) to the fixed overhead; ' +
      'per awaited reply = (total − fixed − the events of steps that await no reply) ÷ awaited replies, and "span" counts from a step\'s ActivityTaskScheduled to the WorkflowTaskCompleted after its ActivityTaskCompleted (a step of a parallel group spans its sibling\'s events too). ' +
      `Last, ${n(c.runs)} \`triage\` runs (3 awaited replies from echo agents, 4 messages from dana each) start at once on one worker, whose RSS is read from /proc every 100 ms; dana's messages are then counted on every thread of the team.`,
    '',
    '| measurement | goal | result | |',
    '|---|---|---|---|',
    waitRow(temporal),
    ...(local ? [waitRow(local)] : []),
    `| history events per awaited reply, \`triage\` (4 steps, 3 awaited) | ≤ ${EVENTS_GOAL} | ${historyCell(triage)} | ${verdict(triage.perAwaited, EVENTS_GOAL)} |`,
    `| history events per awaited reply, \`approval\` after its ${n(temporal.seconds, 0)} s wait (2 steps, 1 awaited) | ≤ ${EVENTS_GOAL} | ${historyCell(temporal.history)} | ${verdict(temporal.history?.perAwaited ?? NaN, EVENTS_GOAL)} |`,
    `| history of the ${n(c.runs)} concurrent \`triage\` runs | ≤ ${EVENTS_GOAL} per awaited reply | ${n(c.events.perAwaitedMin, 2)}–${n(c.events.perAwaitedMax, 2)} per awaited reply; ${c.events.min}–${c.events.max} events per run (fewer than 35 when both completions of the parallel group are taken by one workflow task, whose 3 events then go to one of the two steps) | ${verdict(c.events.perAwaitedMax, EVENTS_GOAL)} |`,
    `| ${n(c.runs)} concurrent \`triage\` runs on one worker: completed | all | **${n(c.completed)} / ${n(c.runs)}**${c.failures.length ? ` (first failure: ${c.failures[0]})` : ''} | ${c.completed === c.runs ? 'met' : '**missed**'} |`,
    `| … wall time, first start → last result | – | ${n(c.wallSeconds, 1)} s (${n(c.runs / c.wallSeconds, 1)} runs/s; per run p50 ${n(c.latencyP50, 1)} s, max ${n(c.latencyMax, 1)} s) | |`,
    `| … worker RSS | – | ${mib(c.rssIdle)} idle after start-up, **${mib(c.rssPeak)}** peak during the runs (VmHWM ${mib(c.hwm)}, start-up's bundling included), ${mib(c.rssAfter)} a few seconds after the last run | |`,
    `| … CPU during the runs | – | worker ${n(c.workerCpuSeconds, 1)} s; bench process (acs-server, its agent loop, the Temporal client) ${n(c.benchCpuSeconds, 1)} s; over ${n(c.wallSeconds, 1)} s on ${os.availableParallelism()} cores | |`,
    `| … messages from dana on the service | 4 per run = ${n(4 * c.runs)} | **${n(c.danaMessages)}** in ${n(c.threads)} threads; runs whose threads differ from 2 + 1 + 1: ${c.runsOff} | ${messagesOk ? 'met' : '**missed**'} |`,
  ];
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------
// Main.

const startedAt = performance.now();
const load = os.loadavg();
log(`bench:conversations: wait ${waitSeconds} s, ${concurrentRuns} concurrent runs${quick ? ' (quick)' : ''}`);
Runtime.install({ logger: new DefaultLogger('WARN') });
const work = await mkdtemp(join(os.tmpdir(), 'acs-bench-conversations-'));
const server = await startServer({ inMemory: true, port: 0, tickMs: 100, logger: false, rateLimit: false, connectionLimits: { maxConnectionsPerClient: 0 } });
const settings = loadTemporalSettings(process.env);
const connection = await Connection.connect(settings.connectionOptions as Parameters<typeof Connection.connect>[0]);
const client = new Client({ connection, namespace: settings.namespace });
let childWorker: WorkerChild | undefined;
let inProcess: { shutdown(): void; running: Promise<void> } | undefined;
let report = '';
let decideReport = '';
let decideWorker: WorkerChild | undefined;
let waitsReport = '';
try {
  const [waitTemporal, waitLocal, triageOrg, concurrentOrg] = parts.has(1) || parts.has(2) || parts.has(3)
    ? await Promise.all(['wait-temporal', 'wait-local', 'triage', 'concurrent'].map((label) => organization(server, work, label)))
    : [];
  const decide = parts.has(4) ? await decideOrg(server, work) : undefined;
  // Started first: their bundling overlaps the other parts.
  const concurrentQueue = `bench-conversations-child-${randomUUID()}`;
  if (parts.has(3)) childWorker = spawnWorkerChild(concurrentQueue, concurrentOrg!.apiKey);
  const decideQueue = `bench-conversations-decide-${randomUUID()}`;
  if (decide) decideWorker = spawnWorkerChild(decideQueue, decide.apiKey);

  const taskQueue = `bench-conversations-${randomUUID()}`;
  const workerStarted = performance.now();
  const worker = await createWorker(settings, { taskQueue, activityDeps: { env: activityEnv, fetch: countingFetch } });
  inProcess = { shutdown: () => worker.worker.shutdown(), running: worker.run() };
  const startSeconds = (performance.now() - workerStarted) / 1000;
  log(`bench:conversations: in-process worker started in ${startSeconds.toFixed(1)} s`);
  const target = { settings, taskQueue };

  if (parts.has(1) && parts.has(2) && parts.has(3)) {
    // 2. A triage run alone, for a history without load.
    log('2. history of a triage run');
    const triageRun = newRunId(triageOrg!.name, 'triage');
    await startPipelineRun(runInput(server, triageOrg!, 'triage'), triageRun, target);
    await client.workflow.getHandle<typeof pipelineWorkflow>(triageRun).result();
    const triage = attributeHistory((await client.workflow.getHandle(triageRun).fetchHistory()).events ?? [], triageOrg!.pipelines.find((p) => p.name === 'triage')!);
    log(`  ${triage.total} events, ${triage.fixed} fixed, ${triage.perAwaited} per awaited reply; own ${triage.steps.map((s) => `${s.id} ${s.own}`).join(', ')}; span ${stepSpans(triage)}`);

    // 1. Both engines wait at once: the counts are told apart by key.
    log(`1. requests while waiting ${waitSeconds} s for dana (Temporal and local engine at once)`);
    const waits = await Promise.all([
      measureWait('temporal', waitTemporal!, async () => {
        const runId = newRunId(waitTemporal!.name, 'approval');
        await startPipelineRun(runInput(server, waitTemporal!, 'approval'), runId, target);
        return async () => {
          const handle = client.workflow.getHandle<typeof pipelineWorkflow>(runId);
          const result = await handle.result();
          return { result, history: (await handle.fetchHistory()).events ?? [] };
        };
      }),
      measureWait('local', waitLocal!, async () => {
        const running = runPipelineLocally(
          { ...runInput(server, waitLocal!, 'approval'), runKey: `local/${waitLocal!.name}/approval/${randomUUID()}` },
          createConversationActivities({ env: activityEnv, fetch: countingFetch }),
        );
        running.catch(() => undefined);
        return async () => ({ result: await running });
      }),
    ]);

    // 3. Concurrent runs on the child worker.
    log(`3. ${concurrentRuns} concurrent triage runs on a child teamctl worker`);
    await childWorker!.ready;
    // Let the worker settle after start-up before its idle RSS is read.
    await sleep(2000);
    const concurrent = await concurrentPipelines(client, server, concurrentOrg!, childWorker!, concurrentQueue);
    log(`  dana's messages ${concurrent.danaMessages} (expected ${4 * concurrent.runs}) in ${concurrent.threads} threads; runs off ${concurrent.runsOff}; events ${concurrent.events.min}–${concurrent.events.max}`);
    await childWorker!.stop();

    report = renderReport({ date: new Date().toISOString().slice(0, 10), load, startSeconds }, waits, triage, concurrent);
  }
  if (decide) {
    const result = await decideParts(client, server, decide, target, decideWorker!, decideQueue);
    decideReport = renderDecideReport({ date: new Date().toISOString().slice(0, 10), load }, result);
  }
  if (parts.has(5)) {
    const results = await waitModes(client, { runs: waitRuns, windowSeconds: waitWindow });
    const machine = `${cpuModel()}, ${os.availableParallelism()} cores, ${n(os.totalmem() / 2 ** 30, 1)} GiB RAM, Node ${process.version}, Temporal dev server ${temporalVersion()}`;
    waitsReport = renderWaitModes({ date: new Date().toISOString().slice(0, 10), load, machine, revision: revision() }, results);
  }
} finally {
  await childWorker?.stop();
  await decideWorker?.stop();
  if (inProcess) {
    inProcess.shutdown();
    await inProcess.running;
  }
  await connection.close();
  await server.close();
  await rm(work, { recursive: true, force: true });
}

const BEGIN = '<!-- bench-conversations:start -->';
const END = '<!-- bench-conversations:end -->';
const DECIDE_BEGIN = '<!-- bench-conversations-decide:start -->';
const DECIDE_END = '<!-- bench-conversations-decide:end -->';
const WAITS_BEGIN = '<!-- bench-conversations-waits:start -->';
const WAITS_END = '<!-- bench-conversations-waits:end -->';
const written: string[] = [];
if (outPath) {
  await writeFile(outPath, `${[report, decideReport, waitsReport].filter(Boolean).join('\n\n')}\n`);
  written.push(`written to ${outPath}`);
} else if (!quick) {
  const performance = join(root, 'docs', 'performance.md');
  if (report) {
    await writeMarkedSection(
      performance,
      BEGIN,
      END,
      report,
      '\n# Durable conversations (teamctl pipelines)\n\nWhat a pipeline step that waits for a reply costs. Produced by `npm run bench:conversations` (run it through `scripts/with-temporal.sh --install --`).',
    );
    written.push('parts 1–3 written to docs/performance.md');
  }
  if (decideReport) {
    await writeMarkedSection(performance, DECIDE_BEGIN, DECIDE_END, decideReport, '\n# Pipelines that decide\n\nWhat loops, maps and typed replies cost. Produced by `npm run bench:conversations` (part 4; `BENCH_CONVERSATIONS_PARTS=4` runs it alone).');
    written.push('part 4 written to docs/performance.md');
  }
  if (waitsReport) {
    await writeMarkedSection(
      performance,
      WAITS_BEGIN,
      WAITS_END,
      waitsReport,
      '\n# Waits that hold nothing\n\nWhat a pipeline step waiting for a person costs by push and by poll. Produced by `npm run bench:conversations` (part 5; `BENCH_CONVERSATIONS_PARTS=5` runs it alone).',
    );
    written.push('part 5 written to docs/performance.md');
  }
} else {
  written.push('printed only (quick run)');
}
log('');
if (report) log(report);
if (decideReport) log(decideReport);
if (waitsReport) log(waitsReport);
log('');
log(`bench:conversations: done in ${((performance.now() - startedAt) / 60_000).toFixed(1)} min; ${written.join('; ')}`);

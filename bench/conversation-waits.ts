/**
 * Part 5 of `npm run bench:conversations`: the two ways a pipeline step waits for a person,
 * side by side (docs/pipelines.md, "Sizing a worker"), with N `approval` runs of
 * examples/triage.yaml waiting at once on one child `teamctl worker`:
 *
 * - **push**: the organization's webhook points at the worker's `--events-listen`; the worker runs
 *   with `--max-concurrent-activities 10`.
 * - **poll**: no webhook; the worker gets N + 20 activity slots, else only its slots' worth of
 *   runs could even send their question.
 *
 * For each: the time until all N questions are sent; the requests the worker sends to acs-server
 * while they wait (through a counting proxy), as requests per waiting run-hour; the worker's RSS
 * with N waiting runs; the worker SIGKILLed and another started (the runs carry on); then dana
 * answers each over REST (20 at a time) and the latency from her message to the step's
 * completion is read on the event stream (the `go` step's message follows the completion at
 * once); history events per awaited reply from one run; every run's result and every thread's
 * messages checked (question, answer, go-ahead: 3 each).
 *
 * `BENCH_CONVERSATIONS_WAIT_RUNS` sets N (default 2,000; quick 200), `BENCH_CONVERSATIONS_WAIT_WINDOW`
 * the seconds of the waiting window (default 120; quick 30).
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { AcsClient } from '../client/acs-client.ts';
import { runCli } from '../cli/program.ts';
import { DEFAULT_RECONCILE_EVERY } from '../definitions/pipeline-limits.ts';
import { parseDuration } from '../definitions/durations.ts';
import { loadDefinitionFile } from '../definitions/load.ts';
import { startServer } from '../service/index.ts';
import { startFaultProxy } from '../test/support/fault-proxy.ts';
import { mapBounded } from '../workflows/bounded.ts';
import type { PipelineResult, PipelineRunInput } from '../workflows/pipeline-orchestration.ts';
import { pipelineWorkflow } from '../workflows/pipeline-workflow.ts';

const root = join(import.meta.dirname, '..');
const log = (line: string) => process.stdout.write(`${line}\n`);
const SECRET = `whsec_${Buffer.alloc(32, 0x42).toString('base64')}`;
/** Runs answered one at a time, 500 ms apart, for the latency of an answer while the rest wait. */
const SAMPLE = 50;

/** One mode's figures. */
export interface WaitModeResult {
  mode: 'push' | 'poll';
  runs: number;
  activitySlots: number;
  /** Seconds from the first start to the last question on the service. */
  sentSeconds: number;
  windowSeconds: number;
  windowRequests: number;
  /** windowRequests ÷ runs ÷ window hours. */
  perRunHour: number;
  rssIdle: number;
  rssWaiting: number;
  hwm: number;
  /** Seconds from the SIGKILL to the new worker polling. */
  restartSeconds: number;
  completed: number;
  threadsOk: number;
  /** A sample of runs answered one every 500 ms while the worker is up. */
  latency: { p50: number; p99: number; max: number; measured: number };
  /** The rest of the first half, answered at once (20 at a time). */
  latencyBurst: { p50: number; p99: number; max: number; measured: number };
  burstPerSecond: number;
  /** Runs answered after the SIGKILL and the new worker's start (each replayed first). */
  latencyAfterKill: { p50: number; p99: number; max: number; measured: number };
  historyPerReply: number;
  historyTotal: number;
  answerSeconds: number;
}

function memoryOf(pid: number): { rss: number; hwm: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
    return { rss: kib('VmRSS'), hwm: kib('VmHWM') };
  } catch {
    return { rss: NaN, hwm: NaN };
  }
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** `teamctl worker` as users run it; resolves once it polls. */
async function spawnWorker(args: string[], env: Record<string, string>): Promise<{ pid: number; kill(signal: NodeJS.Signals): Promise<void> }> {
  const child = spawn(process.execPath, ['bin/teamctl.ts', 'worker', ...args], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<void>((done) => child.on('exit', () => done()));
  await new Promise<void>((resolve, reject) => {
    child.stderr.on('data', () => output.includes('polling task queue') && resolve());
    void exited.then(() => reject(new Error(`teamctl worker exited before polling:\n${output}`)));
  });
  return {
    pid: child.pid!,
    async kill(signal) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      await exited;
    },
  };
}

/** The p-th percentile (0–100) of sorted values. */
function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

type HistoryEvents = NonNullable<Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['fetchHistory']>>['events']>;

/**
 * Events of the `ask` step's exchange in an approval history: push, from its send's marker to the
 * wait's timer cancelled (or, woken by a reconcile read, to the workflow task after it); poll,
 * from its `converse` ActivityTaskScheduled to the workflow task completed after the activity.
 */
export function askEvents(events: HistoryEvents): number {
  const resolved = events.findIndex((e) => e.activityTaskCompletedEventAttributes);
  const converse = events.findIndex((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'converse');
  if (converse >= 0) {
    const done = events.findIndex((e, i) => i > converse && e.activityTaskCompletedEventAttributes);
    const task = events.findIndex((e, i) => i > done && e.workflowTaskCompletedEventAttributes);
    return task - converse + 1;
  }
  const sent = events.findIndex((e, i) => i > resolved && e.markerRecordedEventAttributes);
  const cancelled = events.findIndex((e, i) => i > sent && e.timerCanceledEventAttributes);
  const next = events.findIndex((e, i) => i > sent && e.markerRecordedEventAttributes);
  return (cancelled >= 0 ? cancelled : next - 1) - sent + 1;
}

/** Runs one mode (see the module comment). */
async function measureMode(mode: 'push' | 'poll', client: Client, runs: number, windowSeconds: number, text: string): Promise<WaitModeResult> {
  log(`5. ${mode}: ${runs} approval runs waiting at once`);
  const server = await startServer({
    inMemory: true,
    port: 0,
    tickMs: 1_000,
    logger: false,
    rateLimit: false,
    // Every run's requests come from the worker's one address: no cap per client.
    connectionLimits: { maxConnectionsPerClient: 0 },
    heldWaits: { perKey: runs + 1_000, perOrg: runs + 1_000, perProcess: runs + 2_000 },
    webhooks: { allowPrivate: true, retrySchedule: [1000, 2000, 4000, 8000, 8000, 8000, 8000], pollMs: 200, concurrency: 32 },
  });
  const proxy = await startFaultProxy({ target: server.url });
  const workers: Array<Awaited<ReturnType<typeof spawnWorker>>> = [];
  try {
    const port = await freePort();
    const name = `bench-waits-${mode}-${randomUUID().slice(0, 8)}`;
    const { api_key: apiKey } = await server.provisionOrganization(name);
    let definition = text.replace('name: acme-support', `name: ${name}`);
    if (mode === 'push') definition = definition.replace('  providerKeys:', `  webhooks:\n    - name: teamctl-waits\n      url: http://127.0.0.1:${port}/\n      events: [message.created]\n      secret: \${env:TEAMCTL_EVENTS_SECRET}\n  providerKeys:`);
    const file = join(os.tmpdir(), `${name}.yaml`);
    await writeFile(file, definition);
    const env = { ACS_API_KEY: apiKey, ECHO_PROVIDER_KEY: 'bench-waits-echo-key', TEAMCTL_EVENTS_SECRET: SECRET, ACS_BASE_URL: server.url };
    const out: string[] = [];
    if ((await runCli(['apply', '-f', file], { env: { ...process.env, ...env }, isTTY: false, stdout: (t) => void out.push(t), stderr: (t) => void out.push(t) })) !== 0) throw new Error(out.join('\n'));
    const acs = new AcsClient({ baseUrl: server.url, apiKey });
    const org = (await acs.listOrganizations()).find((o) => o.org_name === name)!;
    const team = (await acs.listTeams(org.org_id))[0]!;
    const graph = await acs.getTeam(team.team_id);
    const dana = graph.humans[0]!.human_id;
    const triager = graph.agents.find((a) => a.name === 'triager')!.agent_id;
    const edge = graph.edges.find((e) => e.participants.includes(dana) && e.participants.includes(triager))!.edge_id;

    const taskQueue = `bench-waits-${mode}-${randomUUID()}`;
    const activitySlots = mode === 'push' ? 10 : runs + 20;
    const args = ['--task-queue', taskQueue, '--max-concurrent-activities', String(activitySlots), ...(mode === 'push' ? ['--events-listen', `127.0.0.1:${port}`] : [])];
    workers.push(await spawnWorker(args, env));
    await sleep(2_000);
    const rssIdle = memoryOf(workers[0]!.pid).rss;

    const input: PipelineRunInput = {
      connection: { baseUrl: proxy.url, apiKeyEnv: 'ACS_API_KEY' },
      organization: name,
      pipeline: (await loadDefinitionFile(file)).pipelines.find((p) => p.name === 'approval')!,
      inputs: { change: 'v2' },
    };
    const runIds = Array.from({ length: runs }, (_, i) => `teamctl-run/${name}/approval/${String(i).padStart(5, '0')}`);
    const started = performance.now();
    await mapBounded(runIds, 20, (workflowId) => client.workflow.start(pipelineWorkflow, { taskQueue, workflowId, args: [input] }));
    let threads = await acs.listThreads(edge);
    while (threads.filter((t) => t.awaiting_reply_from === dana).length < runs) {
      if (performance.now() - started > 1_800_000) throw new Error(`${mode}: only ${threads.length} of ${runs} questions sent in 30 min`);
      await sleep(1_000);
      threads = await acs.listThreads(edge);
    }
    const sentSeconds = (performance.now() - started) / 1000;
    log(`  all ${runs} questions sent in ${sentSeconds.toFixed(1)} s`);

    // The waiting window: what the worker asks acs-server while nobody answers.
    await sleep(5_000);
    const before = proxy.forwarded.length;
    await sleep(windowSeconds * 1000);
    const windowRequests = proxy.forwarded.length - before;
    const memory = memoryOf(workers[0]!.pid);
    log(`  ${windowRequests} requests in ${windowSeconds} s of waiting; worker RSS ${(memory.rss / 2 ** 20).toFixed(0)} MiB`);

    // Latency: from dana's message to the go-ahead that the step's completion sends, both as the
    // service stamped them (created_at of their message.created events), so a slow client does not count.
    const answeredAt = new Map<string, number>();
    const goAt = new Map<string, number>();
    const stop = new AbortController();
    const following = (async () => {
      try {
        for await (const event of acs.streamEvents(org.org_id, { types: ['message.created'], signal: stop.signal })) {
          if (event.type !== 'message.created') continue;
          if (event.data.sender_id === dana) answeredAt.set(event.data.thread_id, Date.parse(event.created_at));
          else if (event.data.sender_id === triager && event.data.content.startsWith('Approved')) goAt.set(event.data.thread_id, Date.parse(event.created_at));
        }
      } catch {
        // Ended by the abort.
      }
    })();
    await sleep(500);
    const latencyOf = (some: typeof threads) => {
      const values = some.flatMap((t) => (answeredAt.has(t.thread_id) && goAt.has(t.thread_id) ? [(goAt.get(t.thread_id)! - answeredAt.get(t.thread_id)!) / 1000] : [])).sort((a, b) => a - b);
      return { p50: percentile(values, 50), p99: percentile(values, 99), max: values.at(-1) ?? NaN, measured: values.length };
    };
    const outcome = (runId: string) => client.workflow.getHandle<(i: PipelineRunInput) => Promise<PipelineResult>>(runId).result().then((r) => r.output, (e: unknown) => `failed: ${(e as Error).message}`);
    const answer = (t: (typeof threads)[number]) => acs.appendMessage(t.thread_id, { sender_agent_id: dana, content: 'approve' });
    const half = Math.floor(runs / 2);
    const sample = threads.slice(0, SAMPLE);
    const burst = threads.slice(SAMPLE, half);
    const secondHalf = threads.slice(half);

    // While the worker is up: a sample answered one every 500 ms (as people answer: the latency of
    // one answer while the rest wait), then the rest of the first half at once (20 at a time).
    for (const t of sample) {
      await answer(t);
      await sleep(500);
    }
    for (let deadline = Date.now() + 120_000; sample.some((t) => !goAt.has(t.thread_id)) && Date.now() < deadline; ) await sleep(200);
    const latency = latencyOf(sample);
    const answering = performance.now();
    await mapBounded(burst, 20, answer);
    const answerSeconds = (performance.now() - answering) / 1000;
    for (let deadline = Date.now() + 600_000; burst.some((t) => !goAt.has(t.thread_id)) && Date.now() < deadline; ) await sleep(200);
    const latencyBurst = latencyOf(burst);

    // The worker dies while the rest wait; another one takes over; then they are answered.
    await workers[0]!.kill('SIGKILL');
    const restart = performance.now();
    workers.push(await spawnWorker(args, env));
    const restartSeconds = (performance.now() - restart) / 1000;
    await mapBounded(secondHalf, 20, answer);
    const results = await mapBounded(runIds, 50, outcome);
    for (let deadline = Date.now() + 60_000; secondHalf.some((t) => !goAt.has(t.thread_id)) && Date.now() < deadline; ) await sleep(200);
    const afterKill = latencyOf(secondHalf);
    stop.abort();
    await following;
    const counts = await mapBounded(threads, 20, async (t) => (await acs.getThread(t.thread_id, { limit: 10 })).messages.length);
    // The history of a run answered before the SIGKILL (after it, a first workflow task times out on the dead worker's sticky queue).
    const answeredFirst = await (async () => {
      for (const runId of runIds) {
        const events = (await client.workflow.getHandle(runId).fetchHistory()).events ?? [];
        if (!events.some((e) => e.workflowTaskTimedOutEventAttributes || e.workflowTaskFailedEventAttributes || e.activityTaskTimedOutEventAttributes)) return events;
      }
      return (await client.workflow.getHandle(runIds[0]!).fetchHistory()).events ?? [];
    })();
    const events = answeredFirst;
    const result: WaitModeResult = {
      mode,
      runs,
      activitySlots,
      sentSeconds,
      windowSeconds,
      windowRequests,
      perRunHour: windowRequests / runs / (windowSeconds / 3600),
      rssIdle,
      rssWaiting: memory.rss,
      hwm: memory.hwm,
      restartSeconds,
      completed: results.filter((r) => r === 'approve').length,
      threadsOk: counts.filter((n) => n === 3).length,
      latency,
      latencyBurst,
      burstPerSecond: burst.length / answerSeconds,
      latencyAfterKill: afterKill,
      historyPerReply: askEvents(events),
      historyTotal: events.length,
      answerSeconds,
    };
    log(
      `  ${result.completed}/${runs} completed; latency p50 ${result.latency.p50.toFixed(3)} s, p99 ${result.latency.p99.toFixed(3)} s (after the SIGKILL: p50 ${result.latencyAfterKill.p50.toFixed(3)} s, p99 ${result.latencyAfterKill.p99.toFixed(3)} s); ` +
        `${result.historyPerReply} history events for the awaited reply (${result.historyTotal} in the run)`,
    );
    return result;
  } finally {
    for (const w of workers) await w.kill('SIGKILL');
    await proxy.close();
    await server.close();
  }
}

/** Part 5: both modes, one after the other. */
export async function waitModes(client: Client, options: { runs: number; windowSeconds: number }): Promise<WaitModeResult[]> {
  const text = (await readFile(join(root, 'examples', 'triage.yaml'), 'utf8')).split('\nschedules:')[0]!;
  const push = await measureMode('push', client, options.runs, options.windowSeconds, text);
  const poll = await measureMode('poll', client, options.runs, options.windowSeconds, text);
  return [push, poll];
}

const n = (value: number, digits = 0) => (Number.isFinite(value) ? value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : '–');
const mib = (bytes: number) => `${n(bytes / 2 ** 20, 0)} MiB`;

/** The markdown of part 5 (its own section of docs/performance.md). */
export function renderWaitModes(facts: { date: string; load: number[]; machine: string; revision: string }, results: WaitModeResult[]): string {
  const push = results.find((r) => r.mode === 'push')!;
  const poll = results.find((r) => r.mode === 'poll')!;
  const reconcileHours = parseDuration(DEFAULT_RECONCILE_EVERY)! / 3_600_000;
  const row = (label: string, goal: string, cell: (r: WaitModeResult) => string, verdict = '') => `| ${label} | ${goal} | ${cell(push)} | ${cell(poll)} | ${verdict} |`;
  return [
    `## Waiting for people: push and poll side by side, ${n(push.runs)} waiting runs`,
    '',
    `Measured ${facts.date} (code ${facts.revision}) on ${facts.machine}; load average ${facts.load.map((l) => n(l, 2)).join(' / ')} at the start (everything below shares the machine's cores). ` +
      `acs-server (in memory, agent loop tick 1 s, rate limit off, held waits raised to ${n(push.runs + 1_000)} per key) runs in the bench process; the runs go to a child \`teamctl worker\`, which reaches acs-server through a counting proxy. ` +
      `Push: the organization's webhook points at the worker's \`--events-listen\`, the worker has 10 activity slots. Poll: no webhook, the worker has ${n(poll.activitySlots)} slots (with fewer, only that many runs could send their question).`,
    '',
    `Method. ${n(push.runs)} \`approval\` runs of examples/triage.yaml start (20 at a time); once every question is on the service they wait ${push.windowSeconds} s while the proxy counts the worker's requests (requests per waiting run-hour = count ÷ runs ÷ window); the worker's RSS is read from /proc; dana answers ${SAMPLE} runs over REST one every 500 ms, then the rest of the first half 20 at a time; the worker is then SIGKILLed, another started, and she answers the other half; the latency runs from her message to the \`go\` step's message (sent as soon as the step completes), both as the service stamped them (\`created_at\` of their \`message.created\` events, read on the event stream); history events of the \`ask\` exchange are read from one run answered before the SIGKILL (push: from its send's marker to the wait's timer cancelled; poll: from its \`converse\` activity scheduled to the workflow task after it).`,
    '',
    '| measurement | goal | push | poll | |',
    '|---|---|---|---|---|',
    row('all questions sent (worker slots)', 'nothing waits for a slot', (r) => `${n(r.sentSeconds, 1)} s (${n(r.activitySlots)} slots)`),
    row(
      'requests to acs-server per waiting run-hour',
      '≤ 4 (push)',
      (r) =>
        r.mode === 'push'
          ? `**${n(r.perRunHour, 2)}** measured (${n(r.windowRequests)} in ${r.windowSeconds} s: no reconcile read falls due in the window); **${n(1 / reconcileHours, 0)}** in steady state (one reconcile read per \`reconcileEvery\` = ${DEFAULT_RECONCILE_EVERY})`
          : `**${n(r.perRunHour, 1)}** (${n(r.windowRequests)} long polls in ${r.windowSeconds} s)`,
      1 / reconcileHours <= 4 && push.perRunHour <= 4 ? 'met (push)' : '**missed**',
    ),
    row('history events per awaited reply', '≤ 8 (push)', (r) => `**${r.historyPerReply}** (${r.historyTotal} in the run)`, push.historyPerReply <= 8 ? 'met (push)' : '**missed**'),
    row(`worker RSS with ${n(push.runs)} waiting runs`, '–', (r) => `**${mib(r.rssWaiting)}** (${mib(r.rssIdle)} idle; VmHWM ${mib(r.hwm)})`),
    row('worker SIGKILLed while they wait, another started', 'nothing lost', (r) => `**${n(r.completed)} / ${n(r.runs)}** completed; ${n(r.threadsOk)} threads with exactly question, answer, go-ahead`, push.completed === push.runs && poll.completed === poll.runs ? 'met' : '**missed**'),
    row(
      `latency, dana's message → the step's completion (${SAMPLE} runs answered 500 ms apart, the rest waiting)`,
      'p99 ≤ 1 s (push)',
      (r) => `p50 ${n(r.latency.p50, 3)} s, **p99 ${n(r.latency.p99, 3)} s**, max ${n(r.latency.max, 3)} s (${n(r.latency.measured)} runs)`,
      push.latency.p99 <= 1 ? 'met (push)' : '**missed**',
    ),
    row(
      '… the rest of the first half answered at once (20 at a time)',
      '–',
      (r) => `p50 ${n(r.latencyBurst.p50, 3)} s, p99 ${n(r.latencyBurst.p99, 3)} s (${n(r.latencyBurst.measured)} runs answered at ${n(r.burstPerSecond, 1)}/s)`,
    ),
    row(
      '… the other half, answered after the SIGKILL (each run replayed by the new worker first)',
      '–',
      (r) => `p50 ${n(r.latencyAfterKill.p50, 3)} s, p99 ${n(r.latencyAfterKill.p99, 3)} s, max ${n(r.latencyAfterKill.max, 3)} s (${n(r.latencyAfterKill.measured)} runs)`,
    ),
  ].join('\n');
}

/** The commit measured. */
export function gitRevision(): string {
  return spawnSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout?.trim() || 'unknown';
}

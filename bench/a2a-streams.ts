/**
 * `npm run bench:a2a-streams`: 200 concurrent A2A streams on one acs-server process (issue 38,
 * contract §12) — 200 `SendStreamingMessage` calls (JSON-RPC, `@a2a-js/sdk`'s client, one MCP
 * key) at once, each a new task asked of a provider agent whose turn takes a while, so that the
 * streams stay open; then the turns finish and every stream ends with its task completed.
 *
 * The provider agent's model is a loopback OpenAI-compatible stand-in in this process
 * (bench/openai-stand-in.ts) that holds every chat completion request until the benchmark lets
 * them go; acs-server runs alone in a child process (bench/server.ts: PGlite on a data dir, no
 * rate limit, held waits and connections per client uncapped) with `ACS_AGENT_CONCURRENCY` at the
 * number of streams (default 8: the other turns would wait for a place instead of being held at
 * the model) and `ACS_MAX_QUEUED_PER_CLIENT` at 4,096 (default 256).
 *
 * Per round of N streams: each stream's time to first event (the call made → the first event, the
 * task as submitted, out of the SDK's stream); once every stream has had its first event and
 * every turn waits at the stand-in, the server's RSS and JS heap (after two full collections),
 * less the same before the round, ÷ N; then the turns are let go and the time until the last
 * stream ended is taken. The same is done once for N held turns asked with `SendMessage` that
 * returns at once (no stream), to tell the stream's share from its turn's. One round of 10 first,
 * unmeasured (the A2A server loads at the first request); 5 streams opened one at a time for the
 * time to first event of a stream alone. `BENCH_QUICK=1`: 50 streams, printed only; otherwise
 * the report replaces the part of docs/performance.md between the `bench-a2a-streams` markers.
 * Not part of the tests: the figures depend on the machine.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { Role, TaskState, type SendMessageRequest, type StreamResponse, type Task } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import { agentCardUrl } from '../api/a2a.ts';
import { createClient, expectStatus, type BenchClient } from './client.ts';
import { cpuModel, writeMarkedSection } from './host.ts';
import { startOpenAiStandIn } from './openai-stand-in.ts';
import { startServerProcess, type ServerProcess } from './scenarios.ts';
import { percentile } from './streams-scenarios.ts';

const root = join(import.meta.dirname, '..');
const log = (line: string) => process.stdout.write(`${line}\n`);
const quick = process.env.BENCH_QUICK === '1';
const streams = quick ? 50 : 200;
const rounds = quick ? 1 : 3;
const aloneOpens = 5;

/** A JSON-RPC client of `@a2a-js/sdk` for the agent whose card is at `cardUrl`, sending `key` as `x-api-key`. */
async function a2aClient(cardUrl: string, key: string): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('x-api-key', key);
    return fetch(input, { ...init, headers });
  };
  return new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
    }),
  ).createFromUrl(cardUrl, '');
}

/** A `SendMessage` request of one text part, a new task; `returnImmediately` for a send that does not wait. */
function sendRequest(text: string, returnImmediately = false): SendMessageRequest {
  return {
    tenant: '',
    message: {
      messageId: crypto.randomUUID(),
      contextId: '',
      taskId: '',
      role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: undefined }],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, historyLength: undefined, returnImmediately },
    metadata: undefined,
  };
}

/**
 * The stand-in's hold on turns: every request that arrives waits until {@link Gate.release};
 * `arrived(n)` resolves once `n` requests wait.
 */
class Gate {
  #waiting = 0;
  #open: () => void = () => {};
  #held = this.#newHold();
  #watchers: Array<{ n: number; resolve: () => void }> = [];

  #newHold(): Promise<void> {
    return new Promise<void>((resolve) => (this.#open = resolve));
  }

  /** What the stand-in calls at each request: counts it and returns the hold it waits for. */
  hold = (): Promise<void> => {
    this.#waiting += 1;
    this.#watchers = this.#watchers.filter((w) => (this.#waiting >= w.n ? (w.resolve(), false) : true));
    return this.#held;
  };

  /** Resolves once `n` requests wait at the hold. */
  arrived(n: number): Promise<void> {
    return this.#waiting >= n ? Promise.resolve() : new Promise((resolve) => this.#watchers.push({ n, resolve }));
  }

  /** Lets every waiting request be answered; those that arrive later wait for the next release. */
  release(): void {
    const open = this.#open;
    this.#held = this.#newHold();
    this.#waiting = 0;
    open();
  }
}

/** One stream as the client saw it; times are `performance.now()` in ms. */
interface StreamSeen {
  sentAt: number;
  firstAt: number;
  endAt: number;
  completed: boolean;
}

/** Opens a stream to the agent (a new task); `first` resolves at its first event, `done` once it ended. Errors: `done` rejects with the stream's. */
function openStream(client: Client, text: string, signal: AbortSignal): { first: Promise<void>; done: Promise<StreamSeen> } {
  const seen: StreamSeen = { sentAt: performance.now(), firstAt: NaN, endAt: NaN, completed: false };
  let onFirst!: () => void;
  const first = new Promise<void>((resolve) => (onFirst = resolve));
  const done = (async () => {
    let last: StreamResponse | undefined;
    for await (const event of client.sendMessageStream(sendRequest(text), { signal })) {
      if (Number.isNaN(seen.firstAt)) {
        seen.firstAt = performance.now();
        onFirst();
      }
      last = event;
    }
    seen.endAt = performance.now();
    seen.completed = last?.payload?.$case === 'statusUpdate' && last.payload.value.status?.state === TaskState.TASK_STATE_COMPLETED;
    return seen;
  })();
  // A stream that fails before its first event must not leave the round waiting for it.
  done.catch(() => onFirst());
  return { first, done };
}

/** The server's memory after full collections, bytes. */
async function memory(server: ServerProcess): Promise<{ rss: number; heapUsed: number }> {
  return server.send({ type: 'memory' });
}

/** What one round of streams measured. */
interface RoundFigures {
  /** Time to first event of each stream, ms. */
  firstMs: number[];
  /** Memory with the streams open less before, bytes. */
  rss: number;
  heap: number;
  /** The turns let go → the last stream ended, ms; and the median stream's end. */
  allEndedMs: number;
  medianEndMs: number;
  completed: number;
}

/** Opens `n` streams at once, holds them open until every turn waits at the stand-in, measures, lets the turns go. Errors: a stream that fails. */
async function round(client: Client, server: ServerProcess, gate: Gate, n: number, label: string): Promise<RoundFigures> {
  const before = await memory(server);
  const abort = new AbortController();
  const opened = Array.from({ length: n }, (_, i) => openStream(client, `${label} ${i}`, abort.signal));
  try {
    await Promise.all(opened.map((s) => s.first));
    await gate.arrived(n);
    const open = await memory(server);
    const releasedAt = performance.now();
    gate.release();
    const seen = await Promise.all(opened.map((s) => s.done));
    const ends = seen.map((s) => s.endAt - releasedAt);
    return {
      firstMs: seen.map((s) => s.firstAt - s.sentAt),
      rss: open.rss - before.rss,
      heap: open.heapUsed - before.heapUsed,
      allEndedMs: Math.max(...ends),
      medianEndMs: percentile(ends, 50),
      completed: seen.filter((s) => s.completed).length,
    };
  } finally {
    abort.abort();
    gate.release();
  }
}

/** `n` turns held with no stream: `SendMessage` that returns at once; the memory they add, bytes; waits until their tasks completed. */
async function heldTurns(client: Client, rest: BenchClient, server: ServerProcess, gate: Gate, n: number): Promise<{ rss: number; heap: number }> {
  const before = await memory(server);
  const tasks = await Promise.all(Array.from({ length: n }, (_, i) => client.sendMessage(sendRequest(`held ${i}`, true)) as Promise<Task>));
  await gate.arrived(n);
  const held = await memory(server);
  gate.release();
  for (const task of tasks) {
    for (;;) {
      const stored = expectStatus(await rest.call('GET', `/tasks/${task.id}`), 200, 'GET task');
      if (stored.body.state === 'completed') break;
      if (stored.body.state !== 'submitted' && stored.body.state !== 'working') throw new Error(`held turn: task ${task.id} is ${stored.body.state}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return { rss: held.rss - before.rss, heap: held.heapUsed - before.heapUsed };
}

const loadAtStart = os.loadavg()[0]!;
const gate = new Gate();
const standIn = await startOpenAiStandIn('whoami', gate.hold);
const work = await mkdtemp(join(os.tmpdir(), 'bench-a2a-streams-'));
let server: ServerProcess | undefined;
try {
  server = await startServerProcess({
    BENCH_BACKEND: 'pglite',
    BENCH_DATA_DIR: join(work, 'pglite'),
    OPENAI_BASE_URL: `${standIn.origin}/v1`,
    ACS_AGENT_CONCURRENCY: String(streams),
    ACS_MAX_QUEUED_PER_CLIENT: '4096',
  });
  const rest = createClient(server.url, server.apiKey);
  expectStatus(await rest.call('PUT', `/organizations/${server.orgId}/api-keys/openai`, { api_key: 'stand-in' }), 200, 'provider key');
  const team = expectStatus(await rest.call('POST', `/organizations/${server.orgId}/teams`, { team_name: 'a2a-streams' }), 201, 'team').body;
  const agent = expectStatus(await rest.call('POST', `/teams/${team.team_id}/agents`, { name: 'slow', provider: 'openai', model: 'stand-in' }), 201, 'agent').body;
  const caller = expectStatus(await rest.call('POST', `/teams/${team.team_id}/agents`, { name: 'caller' }), 201, 'caller').body;
  expectStatus(await rest.call('POST', `/teams/${team.team_id}/edges`, { participants: [caller.agent_id, agent.agent_id] }), 201, 'edge');
  const key = expectStatus(await rest.call('POST', `/agents/${caller.agent_id}/mcp-keys`, {}), 201, 'MCP key').body.mcp_key as string;
  const client = await a2aClient(agentCardUrl(server.url, agent.agent_id), key);

  await round(client, server, gate, 10, 'warm-up');
  const alone: number[] = [];
  for (let i = 0; i < aloneOpens; i++) alone.push(...(await round(client, server, gate, 1, `alone ${i}`)).firstMs);
  const measured: RoundFigures[] = [];
  for (let r = 0; r < rounds; r++) {
    measured.push(await round(client, server, gate, streams, `round ${r}`));
    log(`round ${r + 1}/${rounds}: ${JSON.stringify({ ...measured.at(-1)!, firstMs: undefined })}`);
  }
  const turnsOnly = await heldTurns(client, rest, server, gate, streams);
  rest.destroy();

  const loadAtEnd = os.loadavg()[0]!;
  const first = measured.flatMap((m) => m.firstMs);
  const kib = (bytes: number) => `${Math.round(bytes / streams / 1024).toLocaleString('en-US')} KiB`;
  const each = (pick: (m: RoundFigures) => string) => measured.map(pick).join(' / ');
  const ms = (v: number) => v.toFixed(1);
  const report = [
    `Measured ${new Date().toISOString().slice(0, 10)} on ${cpuModel()}, ${os.cpus().length} cores, Node ${process.version}, load average ${loadAtStart.toFixed(1)} at start and ${loadAtEnd.toFixed(1)} at the end (the machine is shared), PGlite on a data dir. acs-server alone in a child process (bench/server.ts: rate limit off, held waits and connections per client uncapped), \`ACS_AGENT_CONCURRENCY=${streams}\` so that every turn is at the model at once, \`ACS_MAX_QUEUED_PER_CLIENT=4096\`; the model a loopback stand-in holding every request until let go. ${rounds} round${rounds === 1 ? '' : 's'} of ${streams} \`SendStreamingMessage\` calls (JSON-RPC, \`@a2a-js/sdk\` client, one MCP key) made at once, each a new task asked of the provider agent, after a round of 10 unmeasured; memory after two full collections, with every stream open and every turn held at the model, less before the round.`,
    '',
    '| measure | figure |',
    '|---|---:|',
    `| time to first event (the task as submitted), ${streams} streams opened at once, ${first.length} samples | median ${ms(percentile(first, 50))} ms, p99 ${ms(percentile(first, 99))} ms |`,
    `| time to first event, a stream opened alone (${alone.length} samples) | median ${ms(percentile(alone, 50))} ms, max ${ms(Math.max(...alone))} ms |`,
    `| server RSS per open stream (its turn held at the model included), each round | ${each((m) => kib(m.rss))} |`,
    `| server JS heap per open stream (its turn included), each round | ${each((m) => kib(m.heap))} |`,
    `| … of which a held turn without a stream (${streams} \`SendMessage\` returning at once): RSS / heap | ${kib(turnsOnly.rss)} / ${kib(turnsOnly.heap)} |`,
    `| turns let go → every stream ended, each round | ${each((m) => `${ms(m.allEndedMs)} ms`)} |`,
    `| turns let go → the median stream ended, each round | ${each((m) => `${ms(m.medianEndMs)} ms`)} |`,
    `| streams ending with their task completed | ${measured.reduce((a, m) => a + m.completed, 0)} / ${streams * rounds} |`,
  ].join('\n');
  log(report);
  if (!quick) {
    await writeMarkedSection(
      join(root, 'docs', 'performance.md'),
      '<!-- bench-a2a-streams:begin (generated by `npm run bench:a2a-streams`; edit outside the markers) -->',
      '<!-- bench-a2a-streams:end -->',
      report,
      '### 200 concurrent A2A streams on one process',
    );
  }
} finally {
  gate.release();
  await server?.stop();
  await standIn.close();
  await rm(work, { recursive: true, force: true });
}

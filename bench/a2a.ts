/**
 * `npm run bench:a2a`: the round trip of a task asked of an echo agent over A2A (contract §12) —
 * `SendMessage` through `@a2a-js/sdk`'s client (JSON-RPC, blocking) until the completed task comes
 * back with the echo as its artifact — against the same exchange through the REST API:
 * `POST /edges/{edge_id}/tasks`, then the thread's long poll (`GET /threads/{id}?after&wait`) until
 * the echo is there (the reply completes the task in the same transaction), then
 * `GET /tasks/{task_id}`, which is `completed` with its artifact. The same client process, one
 * exchange at a time, PGlite on a data dir.
 *
 * acs-server runs in this process (rate limit off), with its agent loop ticking every 5 ms: the
 * loop looks for work on its ticks (default 1 s, `--tick-ms`), and at the default the tick alone
 * made both exchanges take a second, which says nothing about A2A. Each exchange gets a fresh
 * task; samples are taken one after the other after a warm-up, and their median and 99th
 * percentile reported in milliseconds. `BENCH_QUICK=1`: fewer samples, printed only. Otherwise
 * the report replaces the part of docs/performance.md between the `bench-a2a` markers. Not part
 * of the tests.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { Role, TaskState, type Task } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { agentCardUrl } from '../api/a2a.ts';
import { startServer } from '../service/index.ts';
import { cpuModel, writeMarkedSection } from './host.ts';

const root = join(import.meta.dirname, '..');
const log = (line: string) => process.stdout.write(`${line}\n`);
const quick = process.env.BENCH_QUICK === '1';
const warmup = quick ? 10 : 50;
const samples = quick ? 50 : 500;

/** The server as the exchanges call it: its URL, organization and key. */
interface Target {
  url: string;
  orgId: string;
  apiKey: string;
}

const tickMs = 5;

async function rest(server: Target, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(`${server.url}/api/v1${path}`, {
    method,
    headers: { 'x-api-key': server.apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const parsed = await response.json();
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(parsed)}`);
  return parsed;
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** Runs `exchange` `warmup` times unmeasured, then `samples` times; output: the sorted durations in ms. */
async function measure(exchange: (n: number) => Promise<void>): Promise<number[]> {
  for (let n = 0; n < warmup; n++) await exchange(n);
  const durations: number[] = [];
  for (let n = 0; n < samples; n++) {
    const start = performance.now();
    await exchange(warmup + n);
    durations.push(performance.now() - start);
  }
  return durations.sort((a, b) => a - b);
}

const loadAtStart = os.loadavg()[0]!;
const dataDir = await mkdtemp(join(os.tmpdir(), 'bench-a2a-'));
const running = await startServer({ dataDir, port: 0, tickMs, rateLimit: false, logger: false });
const { org_id, api_key } = await running.provisionOrganization('bench-a2a');
const server: Target = { url: running.url, orgId: org_id, apiKey: api_key };
try {
  await rest(server, 'PUT', `/organizations/${server.orgId}/api-keys/echo`, { api_key: 'echo' });
  const team = await rest(server, 'POST', `/organizations/${server.orgId}/teams`, { team_name: 'a2a-bench' });
  const echo = await rest(server, 'POST', `/teams/${team.team_id}/agents`, { name: 'echo', provider: 'echo' });
  const caller = await rest(server, 'POST', `/teams/${team.team_id}/agents`, { name: 'caller' });
  const edge = await rest(server, 'POST', `/teams/${team.team_id}/edges`, { participants: [caller.agent_id, echo.agent_id] });
  const key = (await rest(server, 'POST', `/agents/${caller.agent_id}/mcp-keys`, {})).mcp_key as string;

  const withKey: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('x-api-key', key);
    return fetch(input, { ...init, headers });
  };
  const client = await new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      cardResolver: new DefaultAgentCardResolver({ fetchImpl: withKey }),
      transports: [new JsonRpcTransportFactory({ fetchImpl: withKey })],
    }),
  ).createFromUrl(agentCardUrl(server.url, echo.agent_id), '');

  const a2a = await measure(async (n) => {
    const task = (await client.sendMessage({
      tenant: '',
      message: {
        messageId: crypto.randomUUID(),
        contextId: '',
        taskId: '',
        role: Role.ROLE_USER,
        parts: [{ content: { $case: 'text', value: `a2a ${n}` }, mediaType: 'text/plain', filename: '', metadata: undefined }],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      },
      configuration: undefined,
      metadata: undefined,
    })) as Task;
    if (task.status?.state !== TaskState.TASK_STATE_COMPLETED || task.artifacts.length !== 1) throw new Error(`A2A: task ${task.id} is not completed with its echo`);
  });

  const viaRest = await measure(async (n) => {
    const task = await rest(server, 'POST', `/edges/${edge.edge_id}/tasks`, { requester_id: caller.agent_id, parts: [{ text: `rest ${n}` }] });
    const first = await rest(server, 'GET', `/threads/${task.thread_id}?limit=1`);
    let after = first.messages[0].message_id as string;
    for (;;) {
      const page = await rest(server, 'GET', `/threads/${task.thread_id}?after=${after}&wait=30`);
      if (page.messages.some((m: { sender_id: string }) => m.sender_id === echo.agent_id)) break;
      after = page.next_after ?? after;
    }
    const done = await rest(server, 'GET', `/tasks/${task.task_id}`);
    if (done.state !== 'completed' || done.artifacts.length !== 1) throw new Error(`REST: task ${task.task_id} is not completed with its echo`);
  });

  const row = (name: string, d: number[]) => `| ${name} | ${quantile(d, 0.5).toFixed(1)} | ${quantile(d, 0.99).toFixed(1)} |`;
  const report = [
    `Measured ${new Date().toISOString().slice(0, 10)} on ${cpuModel()}, ${os.cpus().length} cores, Node ${process.version}, load average at start ${loadAtStart.toFixed(1)} (the machine is shared), PGlite on a data dir; acs-server and the client in one process, the agent loop ticking every ${tickMs} ms. ${samples} exchanges one after the other after ${warmup} unmeasured, each a new task asked of an echo agent and waited for until completed.`,
    '',
    '| exchange | median, ms | p99, ms |',
    '|---|---:|---:|',
    row('A2A `SendMessage` (JSON-RPC, `@a2a-js/sdk` client, blocking) → completed task', a2a),
    row('REST: `POST /edges/{id}/tasks` + first page + long poll for the echo + `GET /tasks/{id}`', viaRest),
  ].join('\n');
  log(report);
  if (!quick) {
    await writeMarkedSection(
      join(root, 'docs', 'performance.md'),
      '<!-- bench-a2a:begin (generated by `npm run bench:a2a`; edit outside the markers) -->',
      '<!-- bench-a2a:end -->',
      report,
      '## A2A: a task asked of an echo agent, round trip',
    );
  }
} finally {
  await running.close();
  await rm(dataDir, { recursive: true, force: true });
}

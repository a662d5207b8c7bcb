/**
 * `npm run bench:mcp`: round trips per second of the MCP endpoint (contract §7), through the
 * official SDK's Client over Streamable HTTP as external agents use it, on PGlite and PostgreSQL.
 *
 *   npm run bench:mcp                                              PGlite only
 *   bash scripts/with-postgres.sh --install -- npm run bench:mcp    PGlite and PostgreSQL
 *
 * acs-server runs in a child process (bench/server.ts: PGlite on a data dir, or a scratch
 * database on the PostgreSQL of `ACS_BENCH_DATABASE_URL` / `ACS_POSTGRES_URL`; rate limit off).
 * Each of 16 agents has its own MCP key, SDK client (tools listed once, so the client checks
 * every result against its output schema, as real clients do) and a thread with a human. Each
 * measurement runs for S seconds after a warm-up, with 1, 4 or 16 clients calling one after the
 * other as fast as answers come back:
 *
 * - `whoami`: the lightest tool (key lookup, agent, team and organization names);
 * - `send_message` then `read_thread` of what follows the last message read (one message per
 *   page, its read mark moved): a write and a read, each counted as one tool call;
 * - REST for comparison, with `fetch` as the SDK uses it: `GET /agents/{id}` and
 *   `POST /threads/{id}/messages` + `GET /threads/{id}?after=…`;
 * - the wake-up of `wait_for_messages`: a client waits on its thread, a human appends over REST
 *   50 ms later; the time from sending the append to the wait's answer (samples one at a time).
 *
 * `BENCH_QUICK=1`: S = 2 s and fewer wake samples (printed only). Otherwise the report replaces
 * the part of docs/performance.md between the `bench-mcp` markers. Not part of the tests.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { adminQuery, cpuModel, writeMarkedSection } from './host.ts';
import { startServerProcess, type ServerProcess } from './scenarios.ts';

const root = join(import.meta.dirname, '..');
const log = (line: string) => process.stdout.write(`${line}\n`);
const quick = process.env.BENCH_QUICK === '1';
const seconds = quick ? 2 : 10;
const warmupSeconds = quick ? 1 : 2;
const wakeSamples = quick ? 20 : 100;
const agents = 16;
const concurrencies = [1, 4, 16];
const adminUrl = process.env.ACS_BENCH_DATABASE_URL || process.env.ACS_POSTGRES_URL || undefined;

/** One agent of the fixture: its MCP client, its thread with the human, and REST as the organization. */
interface Seat {
  client: Client;
  agentId: string;
  humanId: string;
  threadId: string;
  /** The last message `read_thread` returned (its `next_after`). */
  cursor: string;
}

/** Figures of one measurement: calls per second and per-call latency in milliseconds. */
interface Figure {
  perSecond: number;
  p50: number;
  p99: number;
  calls: number;
}

function quantile(sorted: number[], q: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

async function rest(server: ServerProcess, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(`${server.url}/api/v1${path}`, {
    method,
    headers: { 'x-api-key': server.apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const parsed = await response.json();
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(parsed)}`);
  return parsed;
}

async function tool(client: Client, name: string, args: Record<string, unknown>): Promise<any> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  if (result.isError) throw new Error(`${name}: ${JSON.stringify(result.content)}`);
  return result.structuredContent;
}

async function seats(server: ServerProcess): Promise<Seat[]> {
  const team = await rest(server, 'POST', `/organizations/${server.orgId}/teams`, { team_name: `mcp-bench-${randomBytes(3).toString('hex')}` });
  const made: Seat[] = [];
  for (let i = 0; i < agents; i += 1) {
    const agent = await rest(server, 'POST', `/teams/${team.team_id}/agents`, { name: `agent-${i}` });
    const human = await rest(server, 'POST', `/teams/${team.team_id}/humans`, { name: `human-${i}` });
    const edge = await rest(server, 'POST', `/teams/${team.team_id}/edges`, { participants: [human.human_id, agent.agent_id] });
    const thread = await rest(server, 'POST', `/edges/${edge.edge_id}/threads`, { sender_agent_id: human.human_id, content: 'hello' });
    const key = await rest(server, 'POST', `/agents/${agent.agent_id}/mcp-keys`);
    const client = new Client({ name: 'bench-mcp', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/api/v1/mcp`), { requestInit: { headers: { 'x-api-key': key.mcp_key } } }));
    await client.listTools();
    const page = await tool(client, 'read_thread', { thread_id: thread.thread_id });
    made.push({ client, agentId: agent.agent_id, humanId: human.human_id, threadId: thread.thread_id, cursor: page.next_after });
  }
  return made;
}

/**
 * Runs `step` on `clients` seats at once, each one call after the other, for `duration` seconds
 * (after a warm-up that is not counted). `step` returns the latencies of the calls it made.
 */
async function measure(all: Seat[], clients: number, step: (seat: Seat) => Promise<number[]>): Promise<Figure> {
  const run = async (duration: number) => {
    const latencies: number[] = [];
    const deadline = performance.now() + duration * 1000;
    const started = performance.now();
    await Promise.all(
      all.slice(0, clients).map(async (seat) => {
        while (performance.now() < deadline) latencies.push(...(await step(seat)));
      }),
    );
    return { latencies, elapsed: (performance.now() - started) / 1000 };
  };
  await run(warmupSeconds);
  const { latencies, elapsed } = await run(seconds);
  latencies.sort((a, b) => a - b);
  return { perSecond: latencies.length / elapsed, p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), calls: latencies.length };
}

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t = performance.now();
  const value = await fn();
  return [value, performance.now() - t];
}

type Row = { operation: string; clients: number; figure: Figure };

async function runBackend(backend: 'pglite' | 'postgres', env: Record<string, string>): Promise<{ rows: Row[]; wake: Figure }> {
  const server = await startServerProcess({ BENCH_BACKEND: backend, ...env });
  const all = await seats(server);
  const rows: Row[] = [];
  try {
    for (const clients of concurrencies) {
      log(`bench:mcp: ${backend}: whoami ×${clients}`);
      rows.push({
        operation: 'MCP `whoami`',
        clients,
        figure: await measure(all, clients, async (seat) => [(await timed(() => tool(seat.client, 'whoami', {})))[1]]),
      });
    }
    for (const clients of concurrencies) {
      log(`bench:mcp: ${backend}: send_message + read_thread ×${clients}`);
      rows.push({
        operation: 'MCP `send_message`, then `read_thread` (each a call)',
        clients,
        figure: await measure(all, clients, async (seat) => {
          const [, send] = await timed(() => tool(seat.client, 'send_message', { thread_id: seat.threadId, content: 'bench message' }));
          const [page, read] = await timed(() => tool(seat.client, 'read_thread', { thread_id: seat.threadId, after: seat.cursor }));
          seat.cursor = page.next_after;
          return [send, read];
        }),
      });
    }
    for (const clients of [1, 16]) {
      log(`bench:mcp: ${backend}: REST GET agent ×${clients}`);
      rows.push({
        operation: 'REST `GET /agents/{id}` (compare `whoami`)',
        clients,
        figure: await measure(all, clients, async (seat) => [(await timed(() => rest(server, 'GET', `/agents/${seat.agentId}`)))[1]]),
      });
      log(`bench:mcp: ${backend}: REST append + page ×${clients}`);
      rows.push({
        operation: 'REST append, then page after it (each a request; compare the pair above)',
        clients,
        figure: await measure(all, clients, async (seat) => {
          const [message, send] = await timed(() => rest(server, 'POST', `/threads/${seat.threadId}/messages`, { sender_agent_id: seat.agentId, content: 'bench message' }));
          const [, read] = await timed(() => rest(server, 'GET', `/threads/${seat.threadId}?after=${message.message_id}`));
          return [send, read];
        }),
      });
    }
    // REST appended messages the agents' MCP cursors have not seen: move them to the end.
    for (const seat of all) seat.cursor = (await rest(server, 'GET', `/threads/${seat.threadId}?limit=1`)).next_after;
    await Promise.all(all.map((seat) => tool(seat.client, 'wait_for_messages', { timeout_seconds: 0, limit: 200 })));

    log(`bench:mcp: ${backend}: wait_for_messages wake-up, ${wakeSamples} samples`);
    const seat = all[0]!;
    const wakes: number[] = [];
    for (let i = 0; i < wakeSamples; i += 1) {
      const waiting = tool(seat.client, 'wait_for_messages', { timeout_seconds: 30, thread_id: seat.threadId });
      await sleep(50);
      const sent = performance.now();
      await rest(server, 'POST', `/threads/${seat.threadId}/messages`, { sender_agent_id: seat.humanId, content: `wake ${i}` });
      const got = await waiting;
      if (got.messages.length !== 1) throw new Error(`wake ${i}: ${got.messages.length} messages`);
      wakes.push(performance.now() - sent);
    }
    wakes.sort((a, b) => a - b);
    return { rows, wake: { perSecond: NaN, p50: quantile(wakes, 0.5), p99: quantile(wakes, 0.99), calls: wakes.length } };
  } finally {
    await Promise.all(all.map((seat) => seat.client.close().catch(() => undefined)));
    await server.stop();
  }
}

const n = (value: number, digits = 0) =>
  Number.isFinite(value) ? value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : '–';

function revision(): string {
  const git = (...args: string[]) => spawnSync('git', ['-C', root, ...args], { encoding: 'utf8' }).stdout?.trim() ?? '';
  const commit = git('rev-parse', '--short', 'HEAD') || 'unknown';
  return git('status', '--porcelain', '--', 'service', 'api', 'bench') ? `${commit} + uncommitted changes` : commit;
}

const startedAt = performance.now();
const load = os.loadavg().map((x) => x.toFixed(2)).join(' / ');
const results: Record<string, { rows: Row[]; wake: Figure }> = {};
const dir = await mkdtemp(join(os.tmpdir(), 'bench-mcp-'));
let postgresVersion = '';
try {
  results.pglite = await runBackend('pglite', { BENCH_DATA_DIR: dir });
  if (adminUrl) {
    const name = `acs_bench_mcp_${randomBytes(4).toString('hex')}`;
    postgresVersion = String((await adminQuery(adminUrl, 'SHOW server_version')).rows[0]?.server_version ?? '').split(' ')[0] ?? '';
    await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    try {
      results.postgres = await runBackend('postgres', { BENCH_DATABASE_URL: url.toString() });
    } finally {
      await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
  } else {
    log('bench:mcp: PostgreSQL skipped (no ACS_BENCH_DATABASE_URL or ACS_POSTGRES_URL); run it through `bash scripts/with-postgres.sh --install -- npm run bench:mcp`');
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}

const backends = Object.keys(results) as Array<'pglite' | 'postgres'>;
const title = { pglite: 'PGlite (data dir)', postgres: `PostgreSQL ${postgresVersion}` };
const header = `| operation | clients | ${backends.map((b) => `${title[b]}: calls/s | p50 / p99 ms`).join(' | ')} |`;
const lines = [header, `|---|---:|${backends.map(() => '---:|---:|').join('')}`];
for (const [index, row] of results[backends[0]!]!.rows.entries()) {
  const cells = backends.map((b) => {
    const f = results[b]!.rows[index]!.figure;
    return `${n(f.perSecond)} | ${n(f.p50, 1)} / ${n(f.p99, 1)}`;
  });
  lines.push(`| ${row.operation} | ${row.clients} | ${cells.join(' | ')} |`);
}
lines.push(`| \`wait_for_messages\` woken by a REST append: append sent → answer | 1 | ${backends.map((b) => `– | ${n(results[b]!.wake.p50, 1)} / ${n(results[b]!.wake.p99, 1)}`).join(' | ')} |`);

const report = [
  '## MCP endpoint: tools/call round trips',
  '',
  `Measured ${new Date().toISOString().slice(0, 10)} (code ${revision()}) on ${cpuModel()}, ${os.cpus().length} cores, ${n(os.totalmem() / 2 ** 30, 1)} GiB RAM, Node ${process.version}${postgresVersion ? `, PostgreSQL ${postgresVersion}` : ''}; load average ${load} at the start. The machine was shared with other engineers' builds and tests while this ran, and the clients share its 2 cores with the server: read the figures as lower bounds and compare rows of one run rather than runs.`,
  '',
  `Method. acs-server in a child process (PGlite on a data dir, or PostgreSQL; rate limit off), ${agents} agents, each with its own MCP key, SDK \`Client\` (Streamable HTTP, tools listed once so every result is checked against its output schema) and thread with a human. Each row runs ${seconds} s after a ${warmupSeconds} s warm-up, the given number of clients each calling one after the other; calls/s counts tool calls (or REST requests) answered, latencies are per call. The REST rows use \`fetch\`, as the SDK does. The wake-up row: a client waits on its thread (\`timeout_seconds\` 30), a human appends over REST 50 ms later; ${wakeSamples} samples, one at a time.`,
  '',
  ...lines,
].join('\n');

const BEGIN = '<!-- bench-mcp:begin (generated by `npm run bench:mcp`; edit outside the markers) -->';
const END = '<!-- bench-mcp:end -->';
let written = 'printed only (quick run)';
if (!quick) {
  await writeMarkedSection(
    join(root, 'docs', 'performance.md'),
    BEGIN,
    END,
    report,
    '\n# MCP endpoint (acs-server)\n\nWhat a tool call of an external agent costs. Produced by `npm run bench:mcp` (through `scripts/with-postgres.sh --install --` for the PostgreSQL columns).',
  );
  written = 'written to docs/performance.md';
}
log('');
log(report);
log('');
log(`bench:mcp: done in ${((performance.now() - startedAt) / 60_000).toFixed(1)} min; ${written}`);

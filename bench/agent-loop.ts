/**
 * `npm run bench:agent-loop`: what the agent loop (service/agent-loop) costs, on PGlite (data dir)
 * and PostgreSQL.
 *
 * 1. Replies per second with the `echo` provider at 1,000 active threads: 1,000 threads of one
 *    echo agent, each holding M unanswered messages (seeded with SQL while the agent is paused),
 *    then the agent is made active over REST and the bench times the loop until every message has
 *    its reply (counted in the database; each exactly once is checked).
 * 2. The cost of a tick with idle threads: 100, 1,000 and 10,000 threads whose every message is
 *    answered. With nothing due, a tick is one statement (`claimWork`); it is timed many times at
 *    each size, and so is, for comparison, the candidate query the loop ran before migration 0009
 *    (it rescanned every thread's peer messages on every tick).
 *
 * PostgreSQL: `ACS_BENCH_DATABASE_URL` or `ACS_POSTGRES_URL` (a superuser URL; scratch databases
 * are created and dropped), else a throwaway cluster through scripts/with-postgres.sh when
 * PostgreSQL binaries are installed, else PGlite only (said so). `BENCH_QUICK=1`: smaller runs,
 * printed only. A full run replaces the part of docs/performance.md between the
 * `bench-agent-loop` markers. Not part of the tests: the figures depend on the machine.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { claimWork } from '../service/agent-loop/work.ts';
import { startServer } from '../service/index.ts';
import type { Db } from '../service/storage/db.ts';
import { openDb } from '../service/storage/open-db.ts';
import { adminQuery, cpuModel } from './host.ts';

const root = join(import.meta.dirname, '..');
const log = (line: string) => process.stdout.write(`${line}\n`);
const quick = process.env.BENCH_QUICK === '1';

// No URL given but PostgreSQL is installed: run this script again next to a throwaway cluster.
const hasPostgres = spawnSync('sh', ['-c', 'ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null']).status === 0;
if (!process.env.ACS_BENCH_DATABASE_URL && !process.env.ACS_POSTGRES_URL && hasPostgres) {
  const child = spawnSync('bash', [join(root, 'scripts/with-postgres.sh'), '--', process.execPath, ...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit', cwd: root });
  process.exit(child.status ?? 1);
}
const adminUrl = process.env.ACS_BENCH_DATABASE_URL || process.env.ACS_POSTGRES_URL || undefined;

const activeThreads = 1_000;
const messagesPerThread = quick ? 1 : 5;
const idleSizes = quick ? [100, 1_000] : [100, 1_000, 10_000];
const tickSamples = quick ? 50 : 300;
const oldQuerySamples = quick ? 5 : 20;
/** The loop's default parallelism (service/index.ts: ACS_AGENT_CONCURRENCY). */
const concurrency = 8;

/** The candidate query of the loop before migration 0009, for comparison (it ran on every tick). */
const oldCandidatesSql = `
  SELECT a.id AS agent_id, a.provider, a.model, a.instructions, pk.ciphertext, th.id AS thread_id,
         m.id AS message_id, m.seq AS message_seq
  FROM participants a
  JOIN teams t ON t.id = a.team_id
  JOIN provider_keys pk ON pk.org_id = t.org_id AND pk.provider = a.provider
  JOIN edges e ON e.participant_a = a.id OR e.participant_b = a.id
  JOIN threads th ON th.edge_id = e.id
  JOIN LATERAL (
    SELECT m.id, m.seq FROM messages m
    WHERE m.thread_id = th.id AND m.sender_id <> a.id
      AND NOT EXISTS (SELECT 1 FROM messages r WHERE r.sender_id = a.id AND r.reply_to = m.id)
      AND (m.reply_to IS NULL OR m.seq - COALESCE((SELECT max(q.seq) FROM messages q
        WHERE q.thread_id = th.id AND q.seq <= m.seq AND q.reply_to IS NULL), 0) < $1)
    ORDER BY m.seq LIMIT 1
  ) m ON true
  WHERE a.kind = 'agent' AND a.status = 'active'
  ORDER BY th.seq`;

interface Backend {
  name: string;
  /** Opens a fresh, migrated database; `databaseUrl` is set for PostgreSQL (the server's notifier needs it). */
  open(): Promise<{ db: Db; databaseUrl?: string; drop(): Promise<void> }>;
}

interface RepliesResult {
  replies: number;
  seconds: number;
  perSecond: number;
  duplicates: number;
}

interface TickResult {
  idle: number;
  medianMs: number;
  p95Ms: number;
  oldMedianMs: number;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

async function call(url: string, apiKey: string, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(`${url}/api/v1${path}`, {
    method,
    headers: { 'x-api-key': apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

/** Adds `count` threads on the edge, each with `messages` messages from the human (and, when `answered`, the agent's reply to each). */
async function seedThreads(db: Db, ids: { team: string; edge: string; human: string; agent: string }, count: number, messages: number, answered: boolean): Promise<void> {
  // One statement per batch keeps the trigger's work (agent_work rows) inside the seeding.
  const batch = 1_000;
  for (let done = 0; done < count; done += batch) {
    const n = Math.min(batch, count - done);
    const perThread = answered ? messages * 2 : messages;
    await db.query(
      `WITH t AS (
         INSERT INTO threads (id, edge_id, team_id, opener_id, message_count)
         SELECT gen_random_uuid(), $1, $2, $3, $5 FROM generate_series(1, $4) RETURNING id
       ), m AS (
         INSERT INTO messages (id, thread_id, seq, sender_id, content)
         SELECT gen_random_uuid(), t.id, CASE WHEN $6 THEN 2 * s - 1 ELSE s END, $3, 'question ' || s
           FROM t, generate_series(1, $7) s RETURNING id, thread_id, seq
       )
       INSERT INTO messages (id, thread_id, seq, sender_id, content, reply_to)
       SELECT gen_random_uuid(), m.thread_id, m.seq + 1, $8, 'echo: answer', m.id FROM m WHERE $6`,
      [ids.edge, ids.team, ids.human, n, perThread, answered, messages, ids.agent],
    );
  }
  if (answered) await db.query(`UPDATE agent_work SET handled_seq = latest_seq WHERE agent_id = $1`, [ids.agent]);
}

/** Part 1: a server on `db`, one echo agent paused while 1,000 threads fill, then made active. */
async function measureReplies(db: Db, databaseUrl: string | undefined): Promise<RepliesResult> {
  const server = await startServer({ db, ...(databaseUrl ? { databaseUrl } : {}), port: 0, tickMs: 100, rateLimit: false, connectionLimits: { maxConnectionsPerClient: 0 }, logger: false, env: {} });
  try {
    const org = await server.provisionOrganization('bench-agent-loop');
    const api = (method: string, path: string, body?: unknown) => call(server.url, org.api_key, method, path, body);
    await api('PUT', `/organizations/${org.org_id}/api-keys/echo`, { api_key: 'bench' });
    const team = await api('POST', `/organizations/${org.org_id}/teams`, { team_name: 'busy' });
    const agent = await api('POST', `/teams/${team.team_id}/agents`, { name: 'echo', provider: 'echo', status: 'paused' });
    const human = await api('POST', `/teams/${team.team_id}/humans`, { name: 'ann' });
    const edge = await api('POST', `/teams/${team.team_id}/edges`, { participants: [human.human_id, agent.agent_id] });
    const ids = { team: team.team_id, edge: edge.edge_id, human: human.human_id, agent: agent.agent_id };
    await seedThreads(db, ids, activeThreads, messagesPerThread, false);
    const total = activeThreads * messagesPerThread;
    const count = async () => Number((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM messages WHERE sender_id = $1`, [ids.agent]))[0]!.n);
    const started = performance.now();
    await api('PATCH', `/agents/${ids.agent}`, { status: 'active' });
    while ((await count()) < total) await sleep(50);
    const seconds = (performance.now() - started) / 1000;
    const distinct = Number((await db.query<{ n: number }>(`SELECT count(DISTINCT reply_to)::int AS n FROM messages WHERE sender_id = $1`, [ids.agent]))[0]!.n);
    return { replies: total, seconds, perSecond: total / seconds, duplicates: (await count()) - distinct };
  } finally {
    await server.close();
  }
}

/** Part 2: no server; an agent with every thread answered; a tick's statement timed at each size. */
async function measureTicks(db: Db): Promise<TickResult[]> {
  const ids = { team: randomUUID(), edge: randomUUID(), human: randomUUID(), agent: randomUUID() };
  const org = randomUUID();
  await db.query(`INSERT INTO organizations (id, name) VALUES ($1, 'bench-idle')`, [org]);
  await db.query(`INSERT INTO teams (id, org_id, name, engine_id) VALUES ($1, $2, 'idle', gen_random_uuid())`, [ids.team, org]);
  await db.query(`INSERT INTO participants (id, team_id, kind, name, provider) VALUES ($1, $2, 'agent', 'echo', 'echo'), ($3, $2, 'human', 'ann', NULL)`, [ids.agent, ids.team, ids.human]);
  await db.query(`INSERT INTO edges (id, team_id, participant_a, participant_b) VALUES ($1, $2, $3, $4)`, [ids.edge, ids.team, ids.human, ids.agent]);
  await db.query(`INSERT INTO provider_keys (org_id, provider, ciphertext, key_hint) VALUES ($1, 'echo', 'x', 'x')`, [org]);
  const results: TickResult[] = [];
  let seeded = 0;
  for (const size of idleSizes) {
    await seedThreads(db, ids, size - seeded, 1, true);
    seeded = size;
    await db.query('ANALYZE');
    const ticks: number[] = [];
    for (let i = 0; i < tickSamples; i += 1) {
      const started = performance.now();
      const claimed = await claimWork(db, concurrency, 150, randomUUID());
      ticks.push(performance.now() - started);
      if (claimed.length > 0) throw new Error('an idle thread was claimed');
    }
    const old: number[] = [];
    for (let i = 0; i < oldQuerySamples; i += 1) {
      const started = performance.now();
      const rows = await db.query(oldCandidatesSql, [10]);
      old.push(performance.now() - started);
      if (rows.length > 0) throw new Error('the old query found work in an idle thread');
    }
    results.push({ idle: size, medianMs: percentile(ticks, 50), p95Ms: percentile(ticks, 95), oldMedianMs: percentile(old, 50) });
    log(`  ${size} idle threads: tick ${percentile(ticks, 50).toFixed(3)} ms (p95 ${percentile(ticks, 95).toFixed(3)}); before 0009 ${percentile(old, 50).toFixed(1)} ms`);
  }
  return results;
}

const backends: Backend[] = [
  {
    name: 'PGlite (data dir)',
    async open() {
      const dir = await mkdtemp(join(os.tmpdir(), 'acs-bench-loop-'));
      const db = await openDb({ dataDir: dir });
      return { db, drop: () => rm(dir, { recursive: true, force: true }) };
    },
  },
  ...(adminUrl
    ? [
        {
          name: 'PostgreSQL',
          async open() {
            const name = `acs_bench_loop_${process.pid}_${Math.floor(Math.random() * 1e6)}`;
            await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
            const url = new URL(adminUrl);
            url.pathname = `/${name}`;
            const db = await openDb({ databaseUrl: url.toString() });
            return { db, databaseUrl: url.toString(), drop: async () => void (await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)) };
          },
        } satisfies Backend,
      ]
    : []),
];

const startLoad = os.loadavg();
const started = performance.now();
const postgresVersion = adminUrl ? String((await adminQuery(adminUrl, 'SHOW server_version')).rows[0].server_version) : undefined;
const results: Array<{ backend: string; replies: RepliesResult; ticks: TickResult[] }> = [];
for (const backend of backends) {
  log(`bench:agent-loop: ${backend.name}`);
  const first = await backend.open();
  let replies: RepliesResult;
  try {
    replies = await measureReplies(first.db, first.databaseUrl);
  } finally {
    await first.drop();
  }
  log(`  ${replies.replies} echo replies in ${replies.seconds.toFixed(1)} s: ${replies.perSecond.toFixed(0)}/s (${replies.duplicates} duplicates)`);
  const second = await backend.open();
  try {
    results.push({ backend: backend.name, replies, ticks: await measureTicks(second.db) });
  } finally {
    await second.db.close();
    await second.drop();
  }
}
if (!adminUrl) log('bench:agent-loop: PostgreSQL skipped: no ACS_BENCH_DATABASE_URL and no local PostgreSQL binaries');

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const header = `| measurement | ${results.map((r) => r.backend).join(' | ')} |\n|---|${results.map(() => '---:').join('|')}|`;
const rows = [
  `| echo replies/s, ${fmt(activeThreads)} active threads × ${messagesPerThread} unanswered messages (${concurrency} calls in flight) | ${results.map((r) => `**${fmt(r.replies.perSecond)}** (${fmt(r.replies.replies)} in ${fmt(r.replies.seconds, 1)} s)`).join(' | ')} |`,
  `| … replies posted twice | ${results.map((r) => String(r.replies.duplicates)).join(' | ')} |`,
  ...idleSizes.map(
    (size, i) =>
      `| idle tick, ${fmt(size)} idle threads: median (p95), ms | ${results.map((r) => `**${fmt(r.ticks[i]!.medianMs, 3)}** (${fmt(r.ticks[i]!.p95Ms, 3)})`).join(' | ')} |`,
  ),
  ...idleSizes.map(
    (size, i) => `| before migration 0009, ${fmt(size)} idle threads: the candidate query, median ms | ${results.map((r) => fmt(r.ticks[i]!.oldMedianMs, 1)).join(' | ')} |`,
  ),
];
const report = [
  '## Agent loop: echo replies per second, the cost of an idle tick',
  '',
  `Measured ${new Date().toISOString().slice(0, 10)} on ${cpuModel()}, ${os.availableParallelism()} cores, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Node ${process.version}${postgresVersion ? `, PostgreSQL ${postgresVersion}` : ''}; load average ${startLoad.map((l) => l.toFixed(2)).join(' / ')} at the start, the machine shared with other work. acs-server runs in the bench process (rate limit off, tick 100 ms, ${concurrency} provider calls in flight: the default).`,
  '',
  'Method. Replies: one echo agent on 1,000 threads, each seeded (SQL, agent paused) with unanswered messages from a human; the agent is made active over REST and the clock runs until the database holds one reply per message. Idle ticks: an agent whose threads are all answered (the high-water marks at the last message, as the loop leaves them); with nothing due, a tick of the loop is one statement, `claimWork`, timed ' +
    `${tickSamples} times at each size after ANALYZE; the query the loop ran on every tick before migration 0009 is timed ${oldQuerySamples} times beside it.`,
  '',
  header,
  ...rows,
].join('\n');

const BEGIN = '<!-- bench-agent-loop:start -->';
const END = '<!-- bench-agent-loop:end -->';
if (quick) log(`\n${report}\n\nbench:agent-loop: quick run, docs/performance.md left alone`);
else {
  const doc = join(root, 'docs', 'performance.md');
  const current = existsSync(doc) ? readFileSync(doc, 'utf8') : '# Performance\n';
  const start = current.indexOf(BEGIN);
  const end = current.indexOf(END);
  const block = `${BEGIN}\n\n${report}\n\n${END}`;
  await writeFile(
    doc,
    start >= 0 && end > start
      ? current.slice(0, start) + block + current.slice(end + END.length)
      : `${current.trimEnd()}\n\n\n# Agent loop (acs-server)\n\nWhat provider-backed agents cost the service. Produced by \`npm run bench:agent-loop\`.\n\n${block}\n`,
  );
  log(`\n${report}\n\nbench:agent-loop: done in ${((performance.now() - started) / 60_000).toFixed(1)} min; written to docs/performance.md`);
}

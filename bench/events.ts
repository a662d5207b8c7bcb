/**
 * `npm run bench:events`: the event log's figures (docs/events.md) on PGlite and PostgreSQL.
 *
 * - **Long-poll wake**: append sent → held thread poll answered (as `npm run bench` measures it),
 *   and the same for an event long poll (`GET …/events?wait`), one sample at a time.
 * - **SSE fan-out**: 1,000 subscribers of one organization's stream, one event at a time: from
 *   the append sent to each subscriber's receipt of the event (p50, p99, the last subscriber).
 * - **Webhook throughput**: 32 writers append messages to 32 threads; a loopback receiver answers
 *   204: deliveries per second from the first append to the last delivery received.
 * - **The cost of the log on appends** (PostgreSQL): pgbench of the append function
 *   (`acs_append_message`) with the events trigger on (and a connection numbering the events
 *   meanwhile, as a server does) and off, at 1 and 32 clients, the 32 clients on 32 threads of one
 *   organization and of 32.
 *
 * PostgreSQL: `ACS_BENCH_DATABASE_URL`, else a throwaway cluster through scripts/with-postgres.sh
 * when PostgreSQL binaries are installed, else PGlite only. `BENCH_QUICK=1` shortens every step
 * and prints the figures without writing docs/performance.md.
 */
import { execFile } from 'node:child_process';
import pg from 'pg';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import { join } from 'node:path';
import { createClient, expectStatus } from './client.ts';
import { adminQuery, cpuModel, pgbenchPath, rerunNextToPostgres, writeMarkedSection } from './host.ts';
import { startServerProcess, type ServerProcess } from './scenarios.ts';
import { startReceiver } from '../test/support/webhook-receiver.ts';

const root = join(import.meta.dirname, '..');
const log = (line: string) => process.stdout.write(`${line}\n`);
const quick = process.env.BENCH_QUICK === '1';

// No URL given but PostgreSQL is installed: run this script again next to a throwaway cluster.
rerunNextToPostgres(root);
const adminUrl = process.env.ACS_BENCH_DATABASE_URL || process.env.ACS_POSTGRES_URL || undefined;

const plan = {
  // A p99 of 300 samples is the 3rd slowest, moved by one scavenge or one stall of the host; of
  // 1,000 it is the 10th (~20 s more of one-at-a-time samples).
  wakeSamples: quick ? 30 : 1_000,
  subscribers: quick ? 200 : 1_000,
  fanoutRounds: quick ? 3 : 10,
  webhookEvents: quick ? 300 : 2_000,
  writers: 32,
  pgbenchSeconds: quick ? 3 : 10,
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN;
const n = (x: number, digits = 0) => (Number.isFinite(x) ? x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '–');

interface Figures {
  backend: 'pglite' | 'postgres';
  threadWake: number[];
  eventWake: number[];
  fanout: number[];
  fanoutLast: number[];
  subscribers: number;
  webhookPerSecond: number;
  webhookAppendsPerSecond: number;
  webhookDelivered: number;
}

/** One SSE connection read with node:http: records when each event id first arrives. */
function subscribe(url: string, apiKey: string, seen: (seq: number, at: number) => void): Promise<() => void> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers: { 'x-api-key': apiKey, accept: 'text/event-stream' }, agent: false }, (response) => {
      if (response.statusCode !== 200) {
        reject(new Error(`stream: HTTP ${response.statusCode}`));
        return;
      }
      response.setEncoding('utf8');
      let buffer = '';
      let connected = false;
      response.on('data', (chunk: string) => {
        const at = performance.now();
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (!connected && frame.includes(': connected')) {
            connected = true;
            resolve(() => request.destroy());
          }
          const id = /^id: (\d+)$/m.exec(frame);
          if (id) seen(Number(id[1]), at);
        }
      });
    });
    request.on('error', reject);
  });
}

async function measure(backend: Figures['backend'], server: ServerProcess): Promise<Figures> {
  const client = createClient(server.url, server.apiKey);
  const org = server.orgId;
  const team = expectStatus(await client.call('POST', `/organizations/${org}/teams`, { team_name: 'events-bench' }), 201, 'team').body.team_id as string;
  const ann = expectStatus(await client.call('POST', `/teams/${team}/humans`, { name: 'ann' }), 201, 'human').body.human_id as string;
  const bob = expectStatus(await client.call('POST', `/teams/${team}/humans`, { name: 'bob' }), 201, 'human').body.human_id as string;
  const edge = expectStatus(await client.call('POST', `/teams/${team}/edges`, { participants: [ann, bob] }), 201, 'edge').body.edge_id as string;
  const open = async () => {
    const thread = expectStatus(await client.call('POST', `/edges/${edge}/threads`, { sender_agent_id: ann, content: 'start' }), 201, 'thread').body.thread_id as string;
    const first = (await client.call('GET', `/threads/${thread}`)).body.messages[0].message_id as string;
    return { thread, first };
  };
  const append = async (thread: string, content: string) => expectStatus(await client.call('POST', `/threads/${thread}/messages`, { sender_agent_id: bob, content }), 201, 'append');
  // Warm-up, as `npm run bench` warms up: 2 s of appends from 8 clients at once. V8 optimises
  // the embedded database's hot WebAssembly functions in the background once they are hot; 50
  // appends (the warm-up before) left that work to the first wake samples.
  const warm = await open();
  const warmUntil = performance.now() + 2_000;
  await Promise.all(
    Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; performance.now() < warmUntil; i += 1) await append(warm.thread, `warm ${w}.${i}`);
    }),
  );

  // Long-poll wake, one at a time: the poll is held (15 ms head start), then the append is sent.
  const threadWake: number[] = [];
  const waked = await open();
  let after = waked.first;
  for (let i = 0; i < plan.wakeSamples; i += 1) {
    let answeredAt = 0;
    const held = client.call('GET', `/threads/${waked.thread}?after=${after}&wait=30`).then((r) => ((answeredAt = performance.now()), r));
    await sleep(15);
    const sentAt = performance.now();
    await append(waked.thread, `wake ${i}`);
    const reply = await held;
    if (reply.body.messages.length !== 1) throw new Error('thread wake: the held poll did not answer with the message');
    after = reply.body.next_after;
    threadWake.push(answeredAt - sentAt);
  }
  log(`${backend}: thread long-poll wake p50 ${n(quantile([...threadWake].sort((a, b) => a - b), 0.5), 2)} ms, p99 ${n(quantile([...threadWake].sort((a, b) => a - b), 0.99), 2)} ms`);

  const eventWake: number[] = [];
  let seq = (await client.call('GET', `/organizations/${org}/events?types=team.created`)).body.next_after as number;
  for (let i = 0; i < plan.wakeSamples; i += 1) {
    let answeredAt = 0;
    const held = client.call('GET', `/organizations/${org}/events?after=${seq}&wait=30&types=message.created`).then((r) => ((answeredAt = performance.now()), r));
    await sleep(15);
    const sentAt = performance.now();
    await append(waked.thread, `event wake ${i}`);
    const reply = await held;
    if (reply.body.events.length !== 1) throw new Error('event wake: the held poll did not answer with the event');
    seq = reply.body.next_after;
    eventWake.push(answeredAt - sentAt);
  }
  log(`${backend}: event long-poll wake p50 ${n(quantile([...eventWake].sort((a, b) => a - b), 0.5), 2)} ms, p99 ${n(quantile([...eventWake].sort((a, b) => a - b), 0.99), 2)} ms`);

  // SSE fan-out: the subscribers connect in batches, then one append at a time.
  const arrivals = new Map<number, number[]>();
  const closers: Array<() => void> = [];
  const streamUrl = `${server.url}/api/v1/organizations/${org}/events/stream?types=message.created`;
  for (let i = 0; i < plan.subscribers; i += 50) {
    closers.push(
      ...(await Promise.all(
        Array.from({ length: Math.min(50, plan.subscribers - i) }, () =>
          subscribe(streamUrl, server.apiKey, (id, at) => {
            const list = arrivals.get(id);
            if (list) list.push(at);
            else arrivals.set(id, [at]);
          }),
        ),
      )),
    );
  }
  const fanout: number[] = [];
  const fanoutLast: number[] = [];
  const fan = await open();
  await sleep(500);
  arrivals.clear();
  for (let round = 0; round < plan.fanoutRounds; round += 1) {
    const sentAt = performance.now();
    await append(fan.thread, `fan-out ${round}`);
    const id = (await client.call('GET', `/organizations/${org}/events?types=message.created&after=${seq}`)).body.events.at(-1).seq as number;
    seq = id;
    const deadline = performance.now() + 30_000;
    while ((arrivals.get(id)?.length ?? 0) < plan.subscribers && performance.now() < deadline) await sleep(5);
    const got = (arrivals.get(id) ?? []).map((at) => at - sentAt).sort((a, b) => a - b);
    if (got.length < plan.subscribers) log(`${backend}: fan-out round ${round}: ${got.length} of ${plan.subscribers} subscribers got the event`);
    fanout.push(...got);
    fanoutLast.push(got.at(-1) ?? NaN);
    await sleep(200);
  }
  for (const close of closers) close();
  fanout.sort((a, b) => a - b);
  log(`${backend}: SSE fan-out to ${plan.subscribers}: p50 ${n(quantile(fanout, 0.5), 1)} ms, p99 ${n(quantile(fanout, 0.99), 1)} ms, last ${n(Math.max(...fanoutLast), 1)} ms`);

  // Webhook throughput.
  const receiver = await startReceiver();
  receiver.answer(() => ({ status: 204 }));
  const hook = expectStatus(await client.call('POST', `/organizations/${org}/webhooks`, { url: receiver.url, events: ['message.created'] }), 201, 'webhook');
  const started = performance.now();
  const threads = await Promise.all(Array.from({ length: plan.writers }, () => open()));
  let written = 0;
  await Promise.all(
    threads.map(async (t) => {
      while (written < plan.webhookEvents) {
        written += 1;
        await append(t.thread, `hook ${written}`);
      }
    }),
  );
  const appendsDone = performance.now();
  // The opening messages of the 32 threads are message.created events too.
  const expected = written + plan.writers;
  await receiver.waitFor(expected, () => true, 300_000).catch(() => undefined);
  const finished = performance.now();
  const delivered = receiver.received.length;
  const webhookPerSecond = delivered / ((finished - started) / 1000);
  log(`${backend}: webhooks: ${delivered} of ${expected} delivered at ${n(webhookPerSecond)}/s (appends ${n(written / ((appendsDone - started) / 1000))}/s meanwhile)`);
  await client.call('DELETE', `/webhooks/${hook.body.webhook_id}`);
  await receiver.close();
  client.destroy();
  return {
    backend,
    threadWake: threadWake.sort((a, b) => a - b),
    eventWake: eventWake.sort((a, b) => a - b),
    fanout,
    fanoutLast,
    subscribers: plan.subscribers,
    webhookPerSecond,
    webhookAppendsPerSecond: written / ((appendsDone - started) / 1000),
    webhookDelivered: delivered / expected,
  };
}


interface AppendCost {
  clients: number;
  organizations: number;
  withEvents: number;
  withoutEvents: number;
}

/**
 * pgbench of `acs_append_message`, client i on thread i % 32, those threads in one organization
 * or in 32; with the `messages_event` and `threads_event` triggers enabled, then disabled.
 */
async function appendCost(url: string, dir: string): Promise<AppendCost[]> {
  const binary = pgbenchPath();
  if (!binary) {
    log('bench:events: pgbench not found; no append cost figures');
    return [];
  }
  await adminQuery(
    url,
    `DO $$
     DECLARE o uuid; t uuid; a uuid; b uuid; e uuid;
     BEGIN
       CREATE TABLE bench_event_threads (n int, orgs int, thread_id uuid, sender uuid);
       FOR orgs IN 1..2 LOOP
         FOR i IN 0..31 LOOP
           IF i = 0 OR orgs = 2 THEN
             o := gen_random_uuid(); t := gen_random_uuid(); a := gen_random_uuid(); b := gen_random_uuid(); e := gen_random_uuid();
             INSERT INTO organizations (id, name) VALUES (o, 'pgbench-events-' || orgs || '-' || i);
             INSERT INTO teams (id, org_id, name, engine_id) VALUES (t, o, 'pgbench', gen_random_uuid());
             INSERT INTO participants (id, team_id, kind, name) VALUES (a, t, 'human', 'ann'), (b, t, 'human', 'bob');
             INSERT INTO edges (id, team_id, participant_a, participant_b) VALUES (e, t, a, b);
           END IF;
           INSERT INTO threads (id, edge_id, team_id, opener_id) VALUES (gen_random_uuid(), e, t, a);
           INSERT INTO bench_event_threads SELECT i, CASE orgs WHEN 1 THEN 1 ELSE 32 END, th.id, b FROM threads th WHERE th.edge_id = e ORDER BY th.seq DESC LIMIT 1;
         END LOOP;
       END LOOP;
     END $$`,
  );
  const results: AppendCost[] = [];
  for (const organizations of [1, 32]) {
    const script = join(dir, `append-${organizations}.sql`);
    await writeFile(
      script,
      `SELECT acs_append_message(gen_random_uuid(), t.thread_id, t.sender, 'message', '[]'::jsonb, NULL, NULL, NULL, false) FROM bench_event_threads t WHERE t.orgs = ${organizations} AND t.n = :client_id % 32;\n`,
    );
    const orgIds = (await adminQuery(url, `SELECT DISTINCT th.team_id, t.org_id FROM bench_event_threads b JOIN threads th ON th.id = b.thread_id JOIN teams t ON t.id = th.team_id WHERE b.orgs = ${organizations}`)).rows.map(
      (r: { org_id: string }) => r.org_id,
    );
    for (const clients of organizations === 1 ? [1, 32] : [32]) {
      const tps = async (numbering: boolean) => {
        // While pgbench appends, a connection numbers the new events as a server would.
        let running = true;
        const numberer = (async () => {
          if (!numbering) return;
          const client = new pg.Client({ connectionString: url });
          await client.connect();
          try {
            while (running) {
              let numbered = 0;
              for (const org of orgIds) numbered += (await client.query(`SELECT seq FROM acs_sequence_events($1, 500)`, [org])).rows.length;
              if (numbered === 0) await sleep(1);
            }
          } finally {
            await client.end();
          }
        })();
        const out = await new Promise<string>((resolve, reject) =>
          execFile(binary, ['-n', '-f', script, '-T', String(plan.pgbenchSeconds), '-c', String(clients), '-j', String(Math.min(clients, 2)), url], { encoding: 'utf8' }, (error, stdout) =>
            error ? reject(error) : resolve(stdout),
          ),
        );
        running = false;
        await numberer;
        return Number(/tps = ([\d.]+)/.exec(out)?.[1] ?? NaN);
      };
      const withEvents = await tps(true);
      await adminQuery(url, `ALTER TABLE messages DISABLE TRIGGER messages_event`);
      const withoutEvents = await tps(false);
      await adminQuery(url, `ALTER TABLE messages ENABLE TRIGGER messages_event`);
      log(`postgres: pgbench append function, ${clients} client(s) on ${organizations} organization(s): ${n(withEvents)}/s with the event (numbered meanwhile), ${n(withoutEvents)}/s without`);
      results.push({ clients, organizations, withEvents, withoutEvents });
    }
  }
  return results;
}

function render(results: Figures[], costs: AppendCost[], postgres: string | undefined, load: number): string {
  const col = (f: (r: Figures) => string) => results.map(f).join(' | ');
  const p = (list: number[], q: number, digits = 1) => n(quantile(list, q), digits);
  const lines = [
    `Measured ${new Date().toISOString().slice(0, 10)} on ${cpuModel()}, ${os.availableParallelism()} cores, Node ${process.version}` +
      `${postgres ? `, PostgreSQL ${postgres}` : ' (no PostgreSQL: PGlite only)'}; load average at start ${n(load, 1)}. ` +
      'The load generator (and its 1,000 stream parsers) shares the 2 cores with the server and the database.',
    '',
    `| measurement | ${results.map((r) => (r.backend === 'pglite' ? 'PGlite (data dir)' : 'PostgreSQL')).join(' | ')} |`,
    `|---|${results.map(() => '---:').join('|')}|`,
    `| thread long-poll wake p50 / p99, ms (append sent → held poll answered; ${plan.wakeSamples} samples) | ${col((r) => `${p(r.threadWake, 0.5, 2)} / ${p(r.threadWake, 0.99, 2)}`)} |`,
    `| event long-poll wake p50 / p99, ms (same, \`GET …/events?wait\`) | ${col((r) => `${p(r.eventWake, 0.5, 2)} / ${p(r.eventWake, 0.99, 2)}`)} |`,
    `| SSE fan-out to ${n(plan.subscribers)} subscribers, p50 / p99 delivery, ms (append sent → event received; ${plan.fanoutRounds} events) | ${col((r) => `${p(r.fanout, 0.5)} / ${p(r.fanout, 0.99)}`)} |`,
    `| SSE fan-out: the last subscriber, worst event, ms | ${col((r) => n(Math.max(...r.fanoutLast), 1))} |`,
    `| webhook deliveries/s (${n(plan.webhookEvents)} messages by ${plan.writers} writers; loopback receiver answering 204) | ${col((r) => n(r.webhookPerSecond))} |`,
    `| appends/s meanwhile | ${col((r) => n(r.webhookAppendsPerSecond))} |`,
    `| deliveries received | ${col((r) => `${n(r.webhookDelivered * 100)}%`)} |`,
  ];
  if (costs.length > 0) {
    lines.push(
      '',
      '| pgbench: `acs_append_message` calls/s | with its `message.created` event (numbered meanwhile by a sequencer) | without (trigger disabled) | the event costs |',
      '|---|---:|---:|---:|',
      ...costs.map(
        (c) =>
          `| ${c.clients} client${c.clients > 1 ? 's' : ''}, ${c.clients > 1 ? `${c.clients} threads of ` : 'one thread of '}${c.organizations === 1 ? 'one organization' : `${c.organizations} organizations`} | ${n(c.withEvents)} | ${n(c.withoutEvents)} | ${n((1 - c.withEvents / c.withoutEvents) * 100)}% |`,
      ),
    );
  }
  return lines.join('\n');
}

const load = os.loadavg()[0]!;
const work = await mkdtemp(join(os.tmpdir(), 'acs-bench-events-'));
const results: Figures[] = [];
let costs: AppendCost[] = [];
let postgres: string | undefined;
try {
  log('bench:events: PGlite (data dir on disk, one process)');
  const pglite = await startServerProcess({ BENCH_BACKEND: 'pglite', BENCH_DATA_DIR: join(work, 'pglite') });
  try {
    results.push(await measure('pglite', pglite));
  } finally {
    await pglite.stop();
  }
  if (adminUrl) {
    postgres = (await adminQuery(adminUrl, 'SHOW server_version')).rows[0].server_version;
    const name = `acs_bench_events_${process.pid}`;
    await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    try {
      log(`bench:events: PostgreSQL ${postgres}`);
      const server = await startServerProcess({ BENCH_BACKEND: 'postgres', BENCH_DATABASE_URL: url.toString() });
      try {
        results.push(await measure('postgres', server));
      } finally {
        await server.stop();
      }
      costs = await appendCost(url.toString(), work);
    } finally {
      await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
  } else {
    log('bench:events: PostgreSQL skipped: no ACS_BENCH_DATABASE_URL and no local PostgreSQL binaries');
  }
} finally {
  await rm(work, { recursive: true, force: true });
}

const report = render(results, costs, postgres, load);
if (quick) log(report);
else {
  await writeMarkedSection(
    join(root, 'docs/performance.md'),
    '<!-- bench-events:begin (generated by `npm run bench:events`; edit outside the markers) -->',
    '<!-- bench-events:end -->',
    report,
    '# Events',
  );
  log('bench:events: figures written to docs/performance.md');
}

/**
 * The server side of the benchmarks: one acs-server in its own process (so its memory can be
 * measured alone), started by bench/run.ts with `fork()` and `--expose-gc`, driven over IPC.
 *
 * Environment: `BENCH_BACKEND` (`pglite` | `postgres`), `BENCH_DATABASE_URL` (postgres),
 * `BENCH_DATA_DIR` (pglite: an empty directory); `BENCH_METRICS=1` runs the server with its
 * metrics (`metricsListen` on a loopback port) and scrapes them every 5 s, as a Prometheus
 * scraping three times more often than the usual 15 s would (the cost of metrics:
 * docs/performance.md, "Metrics").
 * IPC in: {@link Command}. IPC out: `{type: 'ready', url, orgId, apiKey}` once, then one
 * `{type: 'done', id, result}` or `{type: 'failed', id, error}` per command.
 */
import type { Db } from '../service/storage/db.ts';
import { openDb } from '../service/storage/open-db.ts';
import { startServer } from '../service/index.ts';

/** A request from bench/run.ts; `id` pairs it with its answer. */
export type Command =
  | { id: number; type: 'seed'; threadId: string; senders: [string, string]; count: number }
  | { id: number; type: 'sample-ids'; threadId: string; count: number }
  | { id: number; type: 'memory' }
  | { id: number; type: 'close' };

const backend = process.env.BENCH_BACKEND;
const databaseUrl = process.env.BENCH_DATABASE_URL;
const dataDir = process.env.BENCH_DATA_DIR;

// The bench seeds through the storage layer: PGlite allows one handle per data dir, so the
// server gets the handle the bench opened; PostgreSQL gets a second pool of its own.
let db: Db;
let server: Awaited<ReturnType<typeof startServer>>;
// No rate limit and no bound on held waits or connections per client that a measurement reaches
// (10,000 held polls on one key of one organization, from one address); webhook receivers of the events benchmark
// listen on loopback.
const options = {
  port: 0,
  rateLimit: false as const,
  heldWaits: { perProcess: 100_000, perOrg: 100_000, perKey: 100_000 },
  webhooks: { allowPrivate: true },
  connectionLimits: { maxConnectionsPerClient: 0 },
  ...(process.env.BENCH_METRICS === '1' ? { metricsListen: { host: '127.0.0.1', port: 0 } } : {}),
};
if (backend === 'postgres' && databaseUrl) {
  server = await startServer({ databaseUrl, ...options });
  db = await openDb({ databaseUrl });
} else if (backend === 'pglite' && dataDir) {
  db = await openDb({ dataDir });
  server = await startServer({ db, dataDir, ...options });
} else {
  throw new Error('bench/server.ts: set BENCH_BACKEND=postgres with BENCH_DATABASE_URL, or pglite with BENCH_DATA_DIR');
}
const { org_id, api_key } = await server.provisionOrganization('bench');
const metricsUrl = server.metricsUrl;
if (metricsUrl) setInterval(() => void fetch(metricsUrl).then((r) => r.text(), () => ''), 5_000).unref();

function collect(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) {
    gc();
    gc();
  }
}

async function handle(command: Command): Promise<unknown> {
  switch (command.type) {
    case 'seed': {
      // One INSERT … SELECT generate_series instead of `count` HTTP calls; sequence numbers
      // continue after the thread's current messages, as appends would number them.
      await db.transaction(async (tx) => {
        const [thread] = await tx.query<{ message_count: number }>(`SELECT message_count FROM threads WHERE id = $1 FOR UPDATE`, [command.threadId]);
        await tx.query(
          `INSERT INTO messages (id, thread_id, seq, sender_id, content)
           SELECT gen_random_uuid(), $1, $2::int + g, (CASE WHEN g % 2 = 0 THEN $3 ELSE $4 END)::uuid, 'seeded message ' || g
           FROM generate_series(1, $5::int) AS g`,
          [command.threadId, thread!.message_count, command.senders[0], command.senders[1], command.count],
        );
        await tx.query(`UPDATE threads SET message_count = message_count + $2 WHERE id = $1`, [command.threadId, command.count]);
      });
      await db.query(`ANALYZE messages`);
      return null;
    }
    case 'sample-ids': {
      const rows = await db.query<{ id: string }>(`SELECT id FROM messages WHERE thread_id = $1 ORDER BY random() LIMIT $2`, [
        command.threadId,
        command.count,
      ]);
      return rows.map((r) => r.id);
    }
    case 'memory':
      collect();
      return process.memoryUsage();
    case 'close':
      await server.close();
      if (backend === 'postgres') await db.close();
      setImmediate(() => process.exit(0));
      return null;
  }
}

process.on('message', (command: Command) => {
  handle(command).then(
    (result) => process.send!({ type: 'done', id: command.id, result }),
    (error: unknown) => process.send!({ type: 'failed', id: command.id, error: String((error as Error)?.stack ?? error) }),
  );
});
process.send!({ type: 'ready', url: server.url, orgId: org_id, apiKey: api_key });

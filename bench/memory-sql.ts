/**
 * One run of `npm run bench:memory`'s SQL part, in a fresh process (bench/memory.ts forks it once
 * per compiler and round): an in-memory acs-server in this process, with V8's optimising compiler
 * kept off PGlite (`BENCH_COMPILER=baseline`), kept off its five largest functions only (`mixed`,
 * as `acs-server start` does by default: service/storage/pglite-split.ts) or not (`optimizing`).
 * It measures, by wall time and by this thread's CPU time (PGlite runs on the main thread; the CPU
 * time leaves out other processes' load on a shared machine):
 * - bulk SQL: 100,000 messages seeded into one thread with one `INSERT … SELECT` (as bench/run.ts
 *   seeds), after a warm-up of 10,000;
 * - the service's requests: 1,000 agents created one by one over HTTP, then 1,000 page reads
 *   (limit 50, random cursor) of the seeded thread.
 * Prints one JSON line with the figures and this process's peak memory (VmHWM, MiB).
 */
import { readFileSync } from 'node:fs';
import { PgliteCompilers, usePgliteCompiler } from '../service/storage/wasm-tiering.ts';
import { createClient, expectStatus } from './client.ts';

const compiler = Object.values(PgliteCompilers).find((c) => c === process.env.BENCH_COMPILER) ?? PgliteCompilers.baseline;
if ((await usePgliteCompiler(compiler)) !== compiler) throw new Error('bench/memory-sql.ts: the split modules could not be made');
const { openDb } = await import('../service/storage/open-db.ts');
const { startServer } = await import('../service/index.ts');

const threadMs = () => {
  const u = process.threadCpuUsage();
  return (u.user + u.system) / 1000;
};
const peakMiB = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? NaN) / 1024;

/** Runs `fn`, returning its wall and main-thread CPU time in ms. */
async function timed(fn: () => Promise<unknown>): Promise<{ wallMs: number; cpuMs: number }> {
  const cpu = threadMs();
  const wall = performance.now();
  await fn();
  return { wallMs: performance.now() - wall, cpuMs: threadMs() - cpu };
}

const db = await openDb({ inMemory: true });
const server = await startServer({ db, port: 0, logger: false, rateLimit: false, tickMs: 3_600_000 });
const { org_id, api_key } = await server.provisionOrganization('bench-memory');
const client = createClient(server.url, api_key);
const team = expectStatus(await client.call('POST', `/organizations/${org_id}/teams`, { team_name: 'sql' }), 201, 'team').body.team_id as string;
const ann = expectStatus(await client.call('POST', `/teams/${team}/humans`, { name: 'ann' }), 201, 'human').body.human_id as string;
const bob = expectStatus(await client.call('POST', `/teams/${team}/humans`, { name: 'bob' }), 201, 'human').body.human_id as string;
const edge = expectStatus(await client.call('POST', `/teams/${team}/edges`, { participants: [ann, bob] }), 201, 'edge').body.edge_id as string;
const thread = expectStatus(await client.call('POST', `/edges/${edge}/threads`, { sender_agent_id: ann, content: 'hello' }), 201, 'thread').body.thread_id as string;

/** Seeds `count` messages into the thread with one statement (bench/server.ts's seeding). */
async function seed(count: number): Promise<void> {
  await db.transaction(async (tx) => {
    const [row] = await tx.query<{ message_count: number }>('SELECT message_count FROM threads WHERE id = $1 FOR UPDATE', [thread]);
    await tx.query(
      `INSERT INTO messages (id, thread_id, seq, sender_id, content)
       SELECT gen_random_uuid(), $1, $2::int + g, (CASE WHEN g % 2 = 0 THEN $3 ELSE $4 END)::uuid, 'seeded message ' || g
       FROM generate_series(1, $5::int) AS g`,
      [thread, row!.message_count, ann, bob, count],
    );
    await tx.query('UPDATE threads SET message_count = message_count + $2 WHERE id = $1', [thread, count]);
  });
}

await seed(10_000);
const bulk = await timed(() => seed(100_000));
await db.query('ANALYZE messages');
const creates = await timed(async () => {
  for (let i = 0; i < 1_000; i++) expectStatus(await client.call('POST', `/teams/${team}/agents`, { name: `agent-${i}` }), 201, 'agent');
});
const ids = (await db.query<{ id: string }>('SELECT id FROM messages WHERE thread_id = $1 ORDER BY random() LIMIT 1000', [thread])).map((r) => r.id);
const reads = await timed(async () => {
  for (const id of ids) expectStatus(await client.call('GET', `/threads/${thread}?after=${id}&limit=50`), 200, 'page');
});
client.destroy();
await server.close();
process.stdout.write(`${JSON.stringify({ compiler, bulk, creates, reads, peakMiB: peakMiB() })}\n`);

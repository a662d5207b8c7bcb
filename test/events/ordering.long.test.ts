import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../service/index.ts';
import { openDb } from '../../service/storage/open-db.ts';
import { createTestDatabase, testDatabaseUrl, type TestDatabase } from '../support/postgres.ts';
import { openStream } from '../support/sse.ts';
import { request } from '../service/helpers.ts';

// Contract §9: "a reader walking `after` never misses an event and never sees one twice, whatever
// the concurrency". Proved on PostgreSQL (PGlite runs one transaction at a time) with 32 writers:
// first on 32 connections of their own (one in ten rolling back after writing its event) with
// three sequencers numbering at once, as three processes would; then through two acs-server
// processes sharing the database, read by page, by long poll and by stream.
const title = testDatabaseUrl ? 'event ordering' : 'event ordering (skipped: ACS_TEST_DATABASE_URL is not set; these tests need a PostgreSQL server)';

/** Walks the log of `orgId` from seq 0 with pages of `limit` until `stop()` and the log is drained; returns every seq seen, in order. */
async function walkUntil(read: (after: number) => Promise<number[]>, stop: () => boolean): Promise<number[]> {
  const seen: number[] = [];
  let after = 0;
  for (;;) {
    const stopping = stop();
    const page = await read(after);
    seen.push(...page);
    if (page.length > 0) after = page.at(-1)!;
    else if (stopping) return seen;
  }
}

describe.skipIf(!testDatabaseUrl)(title, () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(testDatabaseUrl!);
    // Migrated once here; the servers below find it up to date.
    await (await openDb({ databaseUrl: database.url })).close();
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('ordering: 32 writers on connections of their own (one in ten rolling back after writing its event), 3 sequencers at once, 4 readers walking after: each reader sees 1..N once each, N = the commits, every committed message has its one event', async () => {
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    // One organization, one team, two humans on an edge, 32 threads: one per writer.
    const fixture = (
      await admin.query(`
        WITH o AS (INSERT INTO organizations (id, name) VALUES (gen_random_uuid(), 'ordering') RETURNING id),
             t AS (INSERT INTO teams (id, org_id, name, engine_id) SELECT gen_random_uuid(), o.id, 't', gen_random_uuid() FROM o RETURNING id, org_id),
             a AS (INSERT INTO participants (id, team_id, kind, name) SELECT gen_random_uuid(), t.id, 'human', 'ann' FROM t RETURNING id, team_id),
             b AS (INSERT INTO participants (id, team_id, kind, name) SELECT gen_random_uuid(), t.id, 'human', 'bob' FROM t RETURNING id),
             e AS (INSERT INTO edges (id, team_id, participant_a, participant_b) SELECT gen_random_uuid(), a.team_id, a.id, b.id FROM a, b RETURNING id, team_id, participant_a)
        SELECT t.org_id, e.id AS edge_id, e.team_id, e.participant_a AS sender FROM t, e`)
    ).rows[0] as { org_id: string; edge_id: string; team_id: string; sender: string };
    const threads = (
      await admin.query(
        `INSERT INTO threads (id, edge_id, team_id, opener_id) SELECT gen_random_uuid(), $1, $2, $3 FROM generate_series(1, 32) RETURNING id`,
        [fixture.edge_id, fixture.team_id, fixture.sender],
      )
    ).rows.map((r: { id: string }) => r.id);
    // The fixture's own events (32 thread.opened) numbered first: the log starts after them.
    await admin.query(`SELECT count(*) FROM acs_sequence_events($1, 1000)`, [fixture.org_id]);
    const base = Number((await admin.query(`SELECT last_seq FROM event_counters WHERE org_id = $1`, [fixture.org_id])).rows[0].last_seq);

    const committed: string[] = [];
    let rolledBack = 0;
    let writing = true;
    const perWriter = 60;
    const writers = threads.map(async (threadId, w) => {
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      try {
        for (let i = 0; i < perWriter; i += 1) {
          const id = crypto.randomUUID();
          await client.query('BEGIN');
          const [row] = (
            await client.query(`SELECT outcome FROM acs_append_message($1, $2, $3, $4, '[]'::jsonb, NULL, NULL, NULL, false)`, [id, threadId, fixture.sender, `w${w} m${i}`])
          ).rows;
          expect(row.outcome).toBe('ok');
          if (i % 10 === 7) {
            // Write the event (the deferred trigger runs now), then roll it all back.
            await client.query('SET CONSTRAINTS ALL IMMEDIATE');
            await client.query('ROLLBACK');
            rolledBack += 1;
          } else {
            await client.query('COMMIT');
            committed.push(id);
          }
        }
      } finally {
        await client.end();
      }
    });
    let numbering = true;
    const sequencers = Array.from({ length: 3 }, async () => {
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      try {
        while (numbering) {
          const rows = (await client.query(`SELECT seq FROM acs_sequence_events($1, 37)`, [fixture.org_id])).rows;
          if (rows.length === 0) await new Promise((resolve) => setTimeout(resolve, 2));
        }
      } finally {
        await client.end();
      }
    });
    const readers = Array.from({ length: 4 }, async (_, r) => {
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      try {
        return await walkUntil(
          async (after) =>
            (await client.query(`SELECT seq FROM events WHERE org_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, [fixture.org_id, Math.max(after, base), 3 + r * 7])).rows.map((x: { seq: string }) =>
              Number(x.seq),
            ),
          () => !writing,
        );
      } finally {
        await client.end();
      }
    });
    let seen: number[][];
    try {
      await Promise.all(writers);
      // Every committed event numbered: then the readers may stop once they read to the end.
      for (;;) {
        const left = (await admin.query(`SELECT count(*)::int AS n FROM events WHERE org_id = $1 AND seq IS NULL`, [fixture.org_id])).rows[0].n;
        if (left === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      writing = false;
      seen = await Promise.all(readers);
      numbering = false;
      await Promise.all(sequencers);
    }
    const n = committed.length;
    expect(rolledBack).toBe(32 * 6);
    for (const one of seen) expect(one).toEqual(Array.from({ length: n }, (_, i) => base + i + 1));
    const events = (await admin.query(`SELECT data->>'message_id' AS id FROM events WHERE org_id = $1 AND type = 'message.created'`, [fixture.org_id])).rows.map(
      (r: { id: string }) => r.id,
    );
    expect(events.sort()).toEqual([...committed].sort());
    await admin.end();
  });

  it('ordering: 32 HTTP writers through two acs-server processes on one database; page walkers, long pollers and a stream on each process see every acknowledged write once, in seq order', async () => {
    const servers: RunningServer[] = [];
    try {
      for (let i = 0; i < 2; i += 1) servers.push(await startServer({ databaseUrl: database.url, port: 0, rateLimit: false, tickMs: 1000 }));
      const [a, b] = servers as [RunningServer, RunningServer];
      const { org_id: orgId, api_key: apiKey } = await a.provisionOrganization('http-ordering');
      const h = { 'x-api-key': apiKey };
      const head = (await request(`${a.url}/api/v1/organizations/${orgId}/events`, 'GET', undefined, h)).body.next_after as number;
      const streams = await Promise.all(servers.map((s) => openStream(`${s.url}/api/v1/organizations/${orgId}/events/stream?after=${head}`, h)));

      const acknowledged = new Set<string>();
      let writing = true;
      const writers = Array.from({ length: 32 }, async (_, w) => {
        const via = w % 2 ? a : b;
        const team = await request(`${via.url}/api/v1/organizations/${orgId}/teams`, 'POST', { team_name: `team-${w}` }, h);
        acknowledged.add(`team.created ${team.body.team_id}`);
        const ann = await request(`${via.url}/api/v1/teams/${team.body.team_id}/humans`, 'POST', { name: 'ann' }, h);
        acknowledged.add(`human.created ${ann.body.human_id}`);
        const bob = await request(`${via.url}/api/v1/teams/${team.body.team_id}/humans`, 'POST', { name: 'bob' }, h);
        acknowledged.add(`human.created ${bob.body.human_id}`);
        const edge = await request(`${via.url}/api/v1/teams/${team.body.team_id}/edges`, 'POST', { participants: [ann.body.human_id, bob.body.human_id] }, h);
        acknowledged.add(`edge.created ${edge.body.edge_id}`);
        const thread = await request(`${via.url}/api/v1/edges/${edge.body.edge_id}/threads`, 'POST', { sender_agent_id: ann.body.human_id, content: 'first' }, h);
        acknowledged.add(`thread.opened ${thread.body.thread_id}`);
        const first = (await request(`${via.url}/api/v1/threads/${thread.body.thread_id}`, 'GET', undefined, h)).body.messages[0];
        acknowledged.add(`message.created ${first.message_id}`);
        for (let i = 0; i < 20; i += 1) {
          const other = i % 3 === 0 ? (via === a ? b : a) : via;
          const sent = await request(`${other.url}/api/v1/threads/${thread.body.thread_id}/messages`, 'POST', { sender_agent_id: i % 2 ? ann.body.human_id : bob.body.human_id, content: `m${i}` }, h);
          expect(sent.status).toBe(201);
          acknowledged.add(`message.created ${sent.body.message_id}`);
        }
      });
      const keyOf: Record<string, string> = {
        'team.created': 'team_id',
        'human.created': 'human_id',
        'edge.created': 'edge_id',
        'thread.opened': 'thread_id',
        'message.created': 'message_id',
      };
      const idOf = (event: any) => `${event.type} ${event.data[keyOf[event.type]!]}`;
      const pageWalker = (server: RunningServer, limit: number) =>
        walkUntil(
          async (after) => {
            const page = await request(`${server.url}/api/v1/organizations/${orgId}/events?after=${Math.max(after, head)}&limit=${limit}`, 'GET', undefined, h);
            return page.body.events.map((e: any) => e.seq);
          },
          () => !writing,
        );
      const longPoller = async (server: RunningServer) => {
        const events: any[] = [];
        let after = head;
        while (writing || events.length < acknowledged.size) {
          const page = await request(`${server.url}/api/v1/organizations/${orgId}/events?after=${after}&limit=13&wait=2`, 'GET', undefined, h);
          events.push(...page.body.events);
          after = page.body.next_after;
          if (!writing && page.body.events.length === 0) break;
        }
        return events;
      };
      const walkers = [pageWalker(a, 5), pageWalker(b, 11)];
      const pollers = [longPoller(a), longPoller(b)];
      await Promise.all(writers);
      writing = false;
      const n = acknowledged.size;
      const expected = Array.from({ length: n }, (_, i) => head + i + 1);
      for (const walked of await Promise.all(walkers)) expect(walked).toEqual(expected);
      for (const polled of await Promise.all(pollers)) {
        expect(polled.map((e) => e.seq)).toEqual(expected);
        expect(new Set(polled.map(idOf))).toEqual(acknowledged);
        // A writer's requests, one after the other, are numbered in that order (each thread's
        // messages in their order, whichever process took them).
        const byThread = new Map<string, string[]>();
        for (const e of polled.filter((x) => x.type === 'message.created')) byThread.set(e.data.thread_id, [...(byThread.get(e.data.thread_id) ?? []), e.data.content]);
        for (const contents of byThread.values()) expect(contents).toEqual(['first', ...Array.from({ length: 20 }, (_, i) => `m${i}`)]);
      }
      for (const stream of streams) {
        const got = await stream.waitForEvents(n, 60_000);
        expect(got.map((e) => Number(e.id))).toEqual(expected);
        expect(new Set(got.map((e) => idOf(JSON.parse(e.data))))).toEqual(acknowledged);
        stream.close();
      }
    } finally {
      for (const server of servers) await server.close();
    }
  });
});

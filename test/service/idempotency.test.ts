import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Fastify from 'fastify';
import { createLocalNotifier } from '../../service/domain/notifier.ts';
import { createEventHub } from '../../service/events/hub.ts';
import { createWakeOneQueues } from '../../service/events/wake-one.ts';
import { createSecretBox } from '../../service/domain/secret-box.ts';
import { installIdempotency } from '../../service/http/idempotency.ts';
import { startServer, type RunningServer } from '../../service/index.ts';
import { openDb } from '../../service/storage/open-db.ts';
import { createTestDatabase, testDatabaseUrl, type TestDatabase } from '../support/postgres.ts';
import { hashRequestBody } from '../../service/domain/idempotency.ts';
import type { Db } from '../../service/storage/db.ts';
import { request, startHarness, startHarnessWithDb, type Harness } from './helpers.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.server.close();
});

const key = () => ({ 'idempotency-key': randomUUID() });
const teamsPath = () => `/api/v1/organizations/${h.orgId}/teams`;
async function teamNames(): Promise<string[]> {
  return (await h.call('GET', teamsPath())).body.teams.map((t: { team_name: string }) => t.team_name);
}

describe('idempotency', () => {
  it('idempotency: a repeat with the same key and body replays the first response and creates nothing', async () => {
    const headers = key();
    const first = await h.call('POST', teamsPath(), { team_name: 'once', description: 'd' }, headers);
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    // Same JSON with other key order and spacing is the same request.
    const again = await h.call('POST', teamsPath(), '{ "description": "d",  "team_name": "once" }', headers);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    // Through the /v1 alias the route is the same.
    const alias = await h.call('POST', `/v1/organizations/${h.orgId}/teams`, { team_name: 'once', description: 'd' }, headers);
    expect(alias.body).toEqual(first.body);
    expect((await teamNames()).filter((n) => n === 'once')).toHaveLength(1);
  });

  it('idempotency: the same key with a different body is 422 idempotency_key_mismatch', async () => {
    const headers = key();
    expect((await h.call('POST', teamsPath(), { team_name: 'first-body' }, headers)).status).toBe(201);
    const other = await h.call('POST', teamsPath(), { team_name: 'second-body' }, headers);
    expect(other.status).toBe(422);
    expect(other.body.code).toBe('idempotency_key_mismatch');
    expect(await teamNames()).not.toContain('second-body');
  });

  it('idempotency: identical requests sent in parallel create exactly one resource', async () => {
    const headers = key();
    const replies = await Promise.all(Array.from({ length: 8 }, () => h.call('POST', teamsPath(), { team_name: 'parallel' }, headers)));
    const created = replies.filter((r) => r.status === 201);
    const inUse = replies.filter((r) => r.status === 409);
    expect(created.length + inUse.length).toBe(8);
    for (const reply of inUse) expect(reply.body.code).toBe('idempotency_key_in_use');
    // Every 201 is the one team: the first response or its replay.
    expect(new Set(created.map((r) => r.body.team_id)).size).toBe(1);
    expect(created.filter((r) => r.headers.get('idempotent-replayed') !== 'true')).toHaveLength(1);
    expect((await teamNames()).filter((n) => n === 'parallel')).toHaveLength(1);
  });

  it('idempotency: a 4xx response is stored and replayed like a success', async () => {
    const headers = key();
    const taken = await h.call('POST', teamsPath(), { team_name: 'taken' });
    expect(taken.status).toBe(201);
    const conflict = await h.call('POST', teamsPath(), { team_name: 'taken' }, headers);
    expect(conflict.status).toBe(409);
    expect(conflict.body.code).toBe('conflict');
    // Even after the name is free again, the key answers with what it answered first.
    await h.call('DELETE', `/api/v1/teams/${taken.body.team_id}`);
    const replay = await h.call('POST', teamsPath(), { team_name: 'taken' }, headers);
    expect(replay.status).toBe(409);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(replay.body).toEqual(conflict.body);
  });

  it('idempotency: one key on different routes or different path parameters is independent', async () => {
    const headers = key();
    const one = await h.call('POST', teamsPath(), { team_name: 'route-a' }, headers);
    const two = await h.call('POST', '/api/v1/organizations', { org_name: 'route-b' }, headers);
    expect(one.status).toBe(201);
    expect(two.status).toBe(201);
    const agentA = await h.call('POST', `/api/v1/teams/${one.body.team_id}/agents`, { name: 'same' }, headers);
    const otherTeam = await h.call('POST', teamsPath(), { team_name: 'route-c' });
    const agentB = await h.call('POST', `/api/v1/teams/${otherTeam.body.team_id}/agents`, { name: 'same' }, headers);
    expect(agentA.status).toBe(201);
    expect(agentB.status).toBe(201);
    expect(agentB.body.agent_id).not.toBe(agentA.body.agent_id);
  });

  it("idempotency: one key used by two organizations is two independent requests", async () => {
    const other = await h.server.provisionOrganization('idem-other');
    const headers = key();
    const mine = await h.call('POST', '/api/v1/attachments', { filename: 'a', content_type: 'text/plain', data_base64: 'YQ==' }, headers);
    const theirs = await request(`${h.server.url}/api/v1/attachments`, 'POST', { filename: 'a', content_type: 'text/plain', data_base64: 'YQ==' }, {
      'x-api-key': other.api_key,
      ...headers,
    });
    expect(theirs.status).toBe(201);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect(theirs.body.attachment_id).not.toBe(mine.body.attachment_id);
  });

  it('idempotency: a key secret in a creation response is replayed, so a retried key creation makes one key', async () => {
    const headers = key();
    const first = await h.call('POST', `/api/v1/organizations/${h.orgId}/keys`, { name: 'ci' }, headers);
    expect(first.status).toBe(201);
    const again = await h.call('POST', `/api/v1/organizations/${h.orgId}/keys`, { name: 'ci' }, headers);
    expect(again.body.api_key).toBe(first.body.api_key);
    const keys = (await h.call('GET', `/api/v1/organizations/${h.orgId}/keys`)).body.keys;
    expect(keys.filter((k: { name: string }) => k.name === 'ci')).toHaveLength(1);
  });

  it('idempotency: a key of 0 or more than 255 characters is 400 invalid_request and runs nothing', async () => {
    for (const value of ['', 'k'.repeat(256)]) {
      const response = await h.call('POST', teamsPath(), { team_name: `bad-key-${value.length}` }, { 'idempotency-key': value });
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({ code: 'invalid_request', errors: [{ path: 'Idempotency-Key' }] });
    }
    expect(await teamNames()).not.toContain('bad-key-0');
    const longest = await h.call('POST', teamsPath(), { team_name: 'key-255' }, { 'idempotency-key': 'k'.repeat(255) });
    expect(longest.status).toBe(201);
  });

  it('idempotency: POST /access-requests without an API key is idempotent by the key alone', async () => {
    const headers = key();
    const body = { email: 'ann@example.com', org_name: 'Ann Co', intended_use: 'research' };
    const first = await request(`${h.server.url}/api/v1/access-requests`, 'POST', body, headers);
    expect(first.status).toBe(202);
    const again = await request(`${h.server.url}/api/v1/access-requests`, 'POST', body, headers);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.request_id).toBe(first.body.request_id);
  });
});

// No route of the service fails on purpose: a small app with the same hooks and a route that
// fails once shows what a 5xx does to the key.
describe('idempotency after a server error', () => {
  it('idempotency: a 5xx releases the key, so the retry runs the handler again and its answer is kept', async () => {
    const db = await openDb({ inMemory: true });
    const app = Fastify();
    const events = createEventHub({ db, notifier: createLocalNotifier() });
    installIdempotency(app, { db, events, inboxes: createWakeOneQueues(events), secrets: createSecretBox(randomBytes(32)) });
    let calls = 0;
    app.post('/flaky', async () => {
      calls += 1;
      if (calls === 1) throw new Error('boom');
      return { call: calls };
    });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const headers = key();
      expect((await request(`${url}/flaky`, 'POST', { a: 1 }, headers)).status).toBe(500);
      const retry = await request(`${url}/flaky`, 'POST', { a: 1 }, headers);
      expect(retry.status).toBe(200);
      expect(retry.body).toEqual({ call: 2 });
      const replay = await request(`${url}/flaky`, 'POST', { a: 1 }, headers);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.body).toEqual({ call: 2 });
      expect(calls).toBe(2);
    } finally {
      await app.close();
      await events.close();
      await db.close();
    }
  });
});

// Two servers on one PostgreSQL database stand for two processes: nothing in memory is shared.
describe.skipIf(!testDatabaseUrl)('idempotency across processes', () => {
  let database: TestDatabase;
  let servers: RunningServer[] = [];
  beforeAll(async () => {
    database = await createTestDatabase(testDatabaseUrl!);
    // One encryption key for both, as a deployment of several processes has.
    const env = { ACS_ENCRYPTION_KEY: randomBytes(32).toString('hex') };
    servers = await Promise.all([0, 1].map(() => startServer({ databaseUrl: database.url, port: 0, tickMs: 60_000, env })));
  });
  afterAll(async () => {
    for (const server of servers) await server.close();
    await database?.drop();
  });

  it('idempotency: identical requests to two processes on one database create exactly one resource', async () => {
    const { org_id, api_key } = await servers[0]!.provisionOrganization('cross');
    const auth = { 'x-api-key': api_key };
    const at = (i: number, method: string, path: string, body?: unknown, extra: Record<string, string> = {}) =>
      request(`${servers[i % 2]!.url}/api/v1${path}`, method, body, { ...auth, ...extra });
    const team = await at(0, 'POST', `/organizations/${org_id}/teams`, { team_name: 't' });
    const bot = await at(0, 'POST', `/teams/${team.body.team_id}/agents`, { name: 'bot' });
    const ann = await at(0, 'POST', `/teams/${team.body.team_id}/humans`, { name: 'ann' });
    const edge = await at(0, 'POST', `/teams/${team.body.team_id}/edges`, { participants: [ann.body.human_id, bot.body.agent_id] });
    const thread = await at(0, 'POST', `/edges/${edge.body.edge_id}/threads`, { sender_agent_id: ann.body.human_id, content: 'hi' });
    // Messages have no uniqueness of their own: only the Idempotency-Key keeps them to one.
    const headers = key();
    const path = `/threads/${thread.body.thread_id}/messages`;
    const body = { sender_agent_id: ann.body.human_id, content: 'once' };
    const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => at(i, 'POST', path, body, headers)));
    for (const reply of replies) {
      if (reply.status !== 201) expect(reply.body.code).toBe('idempotency_key_in_use');
    }
    expect(replies.filter((r) => r.status === 201 && r.headers.get('idempotent-replayed') !== 'true')).toHaveLength(1);
    const replay = await at(1, 'POST', path, body, headers);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect((await at(0, 'GET', `/threads/${thread.body.thread_id}`)).body.message_count).toBe(2);
  });
});

describe('idempotency claims of processes that are gone', () => {
  // A request whose process died (kill -9) after claiming its Idempotency-Key left a claim with no
  // response. The client sends it again, with the same key and body, to another process.
  async function leaveClaim(db: Db, orgId: string, body: unknown, heartbeatSecondsAgo: number, committed = false) {
    const instance = randomUUID();
    const idemKey = randomUUID();
    await db.query(`INSERT INTO server_instances (id, heartbeat_at) VALUES ($1, now() - make_interval(secs => $2))`, [instance, heartbeatSecondsAgo]);
    await db.query(
      `INSERT INTO idempotency_keys (scope, route, idem_key, request_hash, claim_id, expires_at, claimed_by, committed)
       VALUES ($1, $2, $3, $4, $5, now() + interval '1 day', $6, $7)`,
      [orgId, `POST /organizations/:org_id/teams ${JSON.stringify([['org_id', orgId]])}`, idemKey, hashRequestBody(body), randomUUID(), instance, committed],
    );
    return idemKey;
  }

  let hd: Harness & { db: Db };
  beforeAll(async () => {
    hd = await startHarnessWithDb('claims');
  });
  afterAll(async () => {
    await hd.server.close();
  });

  it('idempotency: a retry takes over at once the claim of a process whose heartbeat stopped, instead of 409 for five minutes', async () => {
    const body = { team_name: 'after-a-crash' };
    const idemKey = await leaveClaim(hd.db, hd.orgId, body, 60);
    const retry = await hd.call('POST', `/api/v1/organizations/${hd.orgId}/teams`, body, { 'idempotency-key': idemKey });
    expect(retry.status).toBe(201);
    const again = await hd.call('POST', `/api/v1/organizations/${hd.orgId}/teams`, body, { 'idempotency-key': idemKey });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.team_id).toBe(retry.body.team_id);
  });

  it('idempotency: the claim of a process that is alive (fresh heartbeat) is still 409 idempotency_key_in_use', async () => {
    const body = { team_name: 'still-running' };
    const idemKey = await leaveClaim(hd.db, hd.orgId, body, 0);
    const retry = await hd.call('POST', `/api/v1/organizations/${hd.orgId}/teams`, body, { 'idempotency-key': idemKey });
    expect(retry.status).toBe(409);
    expect(retry.body.code).toBe('idempotency_key_in_use');
  });

  it('idempotency: the claim of a dead process whose work committed is never run again: the retry is 409 saying it was applied, and nothing is written twice', async () => {
    const body = { team_name: 'applied-then-killed' };
    const idemKey = await leaveClaim(hd.db, hd.orgId, body, 60, true);
    const before = (await hd.call('GET', `/api/v1/organizations/${hd.orgId}/teams`)).body.teams.length;
    const retry = await hd.call('POST', `/api/v1/organizations/${hd.orgId}/teams`, body, { 'idempotency-key': idemKey });
    expect(retry.status).toBe(409);
    expect(retry.body).toMatchObject({ code: 'idempotency_key_in_use', detail: expect.stringContaining('was applied') });
    expect((await hd.call('GET', `/api/v1/organizations/${hd.orgId}/teams`)).body.teams).toHaveLength(before);
  });

  it('idempotency: a request\'s writes mark its claim committed in their own transaction, its reads do not', async () => {
    const idemKey = randomUUID();
    expect((await hd.call('POST', `/api/v1/organizations/${hd.orgId}/teams`, { team_name: 'marked' }, { 'idempotency-key': idemKey })).status).toBe(201);
    const refused = randomUUID();
    expect((await hd.call('POST', `/api/v1/organizations/${hd.orgId}/teams`, { team_name: 'marked' }, { 'idempotency-key': refused })).status).toBe(409);
    const rows = await hd.db.query<{ idem_key: string; committed: boolean }>(`SELECT idem_key, committed FROM idempotency_keys WHERE idem_key IN ($1, $2)`, [idemKey, refused]);
    expect(Object.fromEntries(rows.map((r) => [r.idem_key, r.committed]))).toEqual({ [idemKey]: true, [refused]: false });
  });

  it('idempotency: marking a claim committed finds the claim by an index, not by reading every key', async () => {
    // The mark runs inside each write's transaction, under the write's locks: a scan of every
    // unexpired key there made appends to one thread wait behind each other as the table grew.
    const plan = await hd.db.transaction(async (tx) => {
      await tx.query(`SET LOCAL enable_seqscan = off`);
      return tx.query<{ 'QUERY PLAN': string }>(`EXPLAIN UPDATE idempotency_keys SET committed = true WHERE claim_id = $1`, [randomUUID()]);
    });
    const text = plan.map((row) => row['QUERY PLAN']).join('\n');
    expect(text).not.toContain('Seq Scan');
    expect(text).toMatch(/Index (Only )?Scan using idempotency_keys_claim|Bitmap Index Scan on idempotency_keys_claim/);
  });
});

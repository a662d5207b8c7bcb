import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, Edge, Human, Message, Organization, Team, TeamGraph, Thread } from '../../api/schemas.ts';
import { randomBytes, randomUUID } from 'node:crypto';
import { createSecretBox } from '../../service/domain/secret-box.ts';
import { migrate } from '../../service/storage/migrations.ts';
import { openDb } from '../../service/storage/open-db.ts';
import { postgresBackend } from '../support/postgres.ts';
import { buildTeam, holdLocks, lockWaitSeen, startHarness, startHarnessWithDb, type Harness } from './helpers.ts';

const isoMs = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.server.close();
});

describe('organizations', () => {
  it('organizations: provisioning a top-level name that exists is a conflict naming the existing one, and creates nothing', async () => {
    await expect(h.server.provisionOrganization('acme')).rejects.toMatchObject({ code: 'conflict', extra: { existing_id: h.orgId } });
    expect((await h.call('GET', '/api/v1/organizations')).body.organizations).toHaveLength(1);
  });

  it('organizations: GET lists the key\'s organization with the interface defaults', async () => {
    const res = await h.call('GET', '/api/v1/organizations');
    expect(res.status).toBe(200);
    expect(res.body.organizations).toHaveLength(1);
    const org = Organization.parse(res.body.organizations[0]);
    expect(org).toMatchObject({ org_id: h.orgId, org_name: 'acme', team_count: 0, human_count: 1, is_personal: false });
    expect(org.created_at).toMatch(isoMs);
  });

  it('organizations: POST provisions an organization the same key then reaches', async () => {
    const created = await h.call('POST', '/api/v1/organizations', { org_name: 'subsidiary' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ org_name: 'subsidiary', team_count: 0, human_count: 1, is_personal: false });
    const fetched = await h.call('GET', `/api/v1/organizations/${created.body.org_id}`);
    expect(fetched.status).toBe(200);
    const list = await h.call('GET', '/v1/organizations');
    expect(list.body.organizations.map((o: { org_name: string }) => o.org_name)).toEqual(['acme', 'subsidiary']);
  });

  it('organizations: team_count and human_count follow the teams and their humans', async () => {
    const ids = await buildTeam(h);
    const org = await h.call('GET', `/api/v1/organizations/${h.orgId}`);
    expect(org.body.team_count).toBeGreaterThanOrEqual(1);
    const teams = await h.call('GET', `/api/v1/organizations/${h.orgId}/teams`);
    const humans = await Promise.all(teams.body.teams.map((t: { team_id: string }) => h.call('GET', `/api/v1/teams/${t.team_id}/humans`)));
    const humanTotal = humans.reduce((n, r) => n + r.body.humans.length, 0);
    expect(org.body.team_count).toBe(teams.body.teams.length);
    expect(org.body.human_count).toBe(1 + humanTotal);
    expect(ids.humanId).toBeTruthy();
  });
});

describe('teams', () => {
  it('teams: POST creates an empty team with description "" and an engine_id', async () => {
    const res = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: '  support  ' });
    expect(res.status).toBe(201);
    const team = Team.parse(res.body);
    expect(team).toMatchObject({ org_id: h.orgId, team_name: 'support', description: '', agent_count: 0, edge_count: 0 });
    expect(team.engine_id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('teams: GET by id returns the graph with agents, humans, edges and active_thread_count', async () => {
    const ids = await buildTeam(h);
    await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'hello' });
    const res = await h.call('GET', `/api/v1/teams/${ids.teamId}`);
    expect(res.status).toBe(200);
    const graph = TeamGraph.parse(res.body);
    expect(graph.agents.map((a) => a.agent_id)).toEqual([ids.agentId]);
    expect(graph.humans.map((x) => x.human_id)).toEqual([ids.humanId]);
    expect(graph.edges.map((e) => e.edge_id)).toEqual([ids.edgeId]);
    expect(graph).toMatchObject({ agent_count: 1, edge_count: 1, active_thread_count: 1 });
  });

  it('teams: PATCH renames and changes the description', async () => {
    const ids = await buildTeam(h);
    const res = await h.call('PATCH', `/api/v1/teams/${ids.teamId}`, { team_name: 'renamed-team', description: 'does things' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ team_id: ids.teamId, team_name: 'renamed-team', description: 'does things' });
  });

  it('teams: deletion-preview counts what DELETE removes and DELETE cascades to everything', async () => {
    const ids = await buildTeam(h);
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'one' });
    await h.call('POST', `/api/v1/threads/${thread.body.thread_id}/messages`, { sender_agent_id: ids.agentId, content: 'two' });
    const preview = await h.call('GET', `/api/v1/teams/${ids.teamId}/deletion-preview`);
    expect(preview.body).toEqual({ team_id: ids.teamId, agents: 1, humans: 1, edges: 1, threads: 1, messages: 2, attachments: 0, protected: [] });
    const deleted = await h.call('DELETE', `/api/v1/teams/${ids.teamId}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ deleted: true, team_id: ids.teamId });
    for (const path of [`/api/v1/teams/${ids.teamId}`, `/api/v1/agents/${ids.agentId}`, `/api/v1/humans/${ids.humanId}`, `/api/v1/edges/${ids.edgeId}`, `/api/v1/threads/${thread.body.thread_id}`]) {
      expect((await h.call('GET', path)).status, path).toBe(404);
    }
  });
});

describe('agents and humans', () => {
  it('agents: POST applies defaults and PATCH changes fields, null clears the provider', async () => {
    const ids = await buildTeam(h);
    const created = await h.call('POST', `/api/v1/teams/${ids.teamId}/agents`, { name: 'planner', provider: 'echo', model: 'm1' });
    expect(created.status).toBe(201);
    expect(Agent.parse(created.body)).toMatchObject({ description: '', instructions: '', status: 'active', provider: 'echo', model: 'm1' });
    const patched = await h.call('PATCH', `/api/v1/agents/${created.body.agent_id}`, { provider: null, status: 'paused', instructions: 'be brief' });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ name: 'planner', provider: null, model: 'm1', status: 'paused', instructions: 'be brief' });
    const list = await h.call('GET', `/api/v1/teams/${ids.teamId}/agents`);
    expect(list.body.agents.map((a: { name: string }) => a.name)).toEqual(['bot', 'planner']);
    const removed = await h.call('DELETE', `/api/v1/agents/${created.body.agent_id}`);
    expect(removed.body).toEqual({ deleted: true, agent_id: created.body.agent_id });
    expect((await h.call('GET', `/api/v1/agents/${created.body.agent_id}`)).status).toBe(404);
  });

  it('humans: POST defaults email to null, PATCH sets it, GET reads it back', async () => {
    const ids = await buildTeam(h);
    const created = await h.call('POST', `/api/v1/teams/${ids.teamId}/humans`, { name: 'bea' });
    expect(Human.parse(created.body).email).toBeNull();
    const patched = await h.call('PATCH', `/api/v1/humans/${created.body.human_id}`, { email: 'bea@example.com' });
    expect(patched.body.email).toBe('bea@example.com');
    expect((await h.call('GET', `/api/v1/humans/${created.body.human_id}`)).body.email).toBe('bea@example.com');
    expect((await h.call('GET', `/api/v1/teams/${ids.teamId}/humans`)).body.humans).toHaveLength(2);
    expect((await h.call('DELETE', `/api/v1/humans/${created.body.human_id}`)).body).toEqual({ deleted: true, human_id: created.body.human_id });
  });
});

describe('edges, threads and messages', () => {
  it('ids: an id spelled in upper case is the same id, in bodies and in paths', async () => {
    const team = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'shouting' });
    const bot = await h.call('POST', `/api/v1/teams/${team.body.team_id.toUpperCase()}/agents`, { name: 'bot' });
    const ann = await h.call('POST', `/api/v1/teams/${team.body.team_id}/humans`, { name: 'ann' });
    expect([bot.status, ann.status]).toEqual([201, 201]);
    const edge = await h.call('POST', `/api/v1/teams/${team.body.team_id}/edges`, {
      participants: [ann.body.human_id.toUpperCase(), bot.body.agent_id.toUpperCase()],
    });
    expect(edge.status).toBe(201);
    expect(edge.body.participants).toEqual([ann.body.human_id, bot.body.agent_id]);
    const thread = await h.call('POST', `/api/v1/edges/${edge.body.edge_id}/threads`, { sender_agent_id: ann.body.human_id.toUpperCase(), content: 'hi' });
    expect(thread.status).toBe(201);
    const deleted = await h.call('DELETE', `/api/v1/edges/${edge.body.edge_id.toUpperCase()}`);
    expect(deleted.body).toEqual({ deleted: true, edge_id: edge.body.edge_id });
  });

  it('edges: POST keeps the participant order and DELETE cascades to threads', async () => {
    const ids = await buildTeam(h);
    const edge = Edge.parse((await h.call('GET', `/api/v1/edges/${ids.edgeId}`)).body);
    expect(edge.participants).toEqual([ids.humanId, ids.agentId]);
    expect((await h.call('GET', `/api/v1/teams/${ids.teamId}/edges`)).body.edges).toHaveLength(1);
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.agentId, content: 'x' });
    expect((await h.call('DELETE', `/api/v1/edges/${ids.edgeId}`)).body).toEqual({ deleted: true, edge_id: ids.edgeId });
    expect((await h.call('GET', `/api/v1/threads/${thread.body.thread_id}`)).status).toBe(404);
    // the participants stay; only the edge and its threads go
    expect((await h.call('DELETE', `/api/v1/agents/${ids.agentId}`)).status).toBe(200);
  });

  it('threads: POST opens a thread with message_count 1, unread_count 0, channel "web", subject ""', async () => {
    const ids = await buildTeam(h);
    const res = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: '**hi**' });
    expect(res.status).toBe(201);
    const thread = Thread.parse(res.body);
    expect(thread).toMatchObject({ edge_id: ids.edgeId, team_id: ids.teamId, subject: '', message_count: 1, unread_count: 0, channel: 'web' });
    expect(thread.created_at).toMatch(isoMs);
    const other = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'b', subject: 'S', channel: 'imessage' });
    expect(other.body).toMatchObject({ subject: 'S', channel: 'imessage' });
    const list = await h.call('GET', `/api/v1/edges/${ids.edgeId}/threads`);
    expect(list.body.threads.map((t: { thread_id: string }) => t.thread_id)).toEqual([other.body.thread_id, thread.thread_id]);
  });

  it('messages: POST appends a Message with sender_id and attachments []; counts follow', async () => {
    const ids = await buildTeam(h);
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'q' });
    const res = await h.call('POST', `/api/v1/threads/${thread.body.thread_id}/messages`, { sender_agent_id: ids.agentId, content: 'a' });
    expect(res.status).toBe(201);
    expect(Message.parse(res.body)).toMatchObject({ thread_id: thread.body.thread_id, sender_id: ids.agentId, content: 'a', attachments: [] });
    expect(res.body.sent_at).toMatch(isoMs);
    const page = await h.call('GET', `/api/v1/threads/${thread.body.thread_id}`);
    // one message from the peer of the opener, not read by the opener
    expect(page.body).toMatchObject({ message_count: 2, unread_count: 1 });
    // the opener's own messages are never unread for the opener, and a human opener's message
    // reads what came before it: only what follows counts
    await h.call('POST', `/api/v1/threads/${thread.body.thread_id}/messages`, { sender_agent_id: ids.humanId, content: 'b' });
    await h.call('POST', `/api/v1/threads/${thread.body.thread_id}/messages`, { sender_agent_id: ids.agentId, content: 'c' });
    await h.call('POST', `/api/v1/threads/${thread.body.thread_id}/messages`, { sender_agent_id: ids.agentId, content: 'd' });
    const listed = await h.call('GET', `/api/v1/edges/${ids.edgeId}/threads`);
    expect(listed.body.threads[0]).toMatchObject({ message_count: 5, unread_count: 2 });
  });
});

describe('provider keys', () => {
  it('provider keys: PUT without prefix stores a key and only its hint comes back', async () => {
    const res = await h.call('PUT', `/organizations/${h.orgId}/api-keys/openai`, { api_key: 'sk-secret-abcd' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ provider: 'openai', key_hint: 'abcd', updated_at: expect.stringMatching(isoMs) });
    const prefixed = await h.call('PUT', `/api/v1/organizations/${h.orgId}/api-keys/anthropic`, { api_key: 'ant-key-wxyz' });
    expect(prefixed.body.key_hint).toBe('wxyz');
    const list = await h.call('GET', `/api/v1/organizations/${h.orgId}/api-keys`);
    expect(list.body.provider_keys.map((k: { provider: string }) => k.provider)).toEqual(['anthropic', 'openai']);
    expect(JSON.stringify(list.body)).not.toContain('sk-secret');
    expect((await h.call('DELETE', `/v1/organizations/${h.orgId}/api-keys/anthropic`)).body).toEqual({ deleted: true, provider: 'anthropic' });
    expect((await h.call('DELETE', `/v1/organizations/${h.orgId}/api-keys/anthropic`)).status).toBe(404);
  });

  it('provider keys: a key under 8 characters is 400 naming api_key for every provider but echo, which takes any non-empty key', async () => {
    for (const provider of ['openai', 'anthropic', 'google', 'mistral', 'groq', 'openrouter']) {
      const short = await h.call('PUT', `/api/v1/organizations/${h.orgId}/api-keys/${provider}`, { api_key: 'abcdefg' });
      expect(short.status, provider).toBe(400);
      expect(short.body).toMatchObject({ code: 'invalid_request', errors: [{ path: 'api_key' }] });
    }
    expect((await h.call('GET', `/api/v1/organizations/${h.orgId}/api-keys`)).body.provider_keys.map((k: { provider: string }) => k.provider)).not.toContain('google');
    expect((await h.call('PUT', `/api/v1/organizations/${h.orgId}/api-keys/echo`, { api_key: 'e' })).status).toBe(200);
    expect((await h.call('PUT', `/api/v1/organizations/${h.orgId}/api-keys/groq`, { api_key: 'abcdefgh' })).status).toBe(200);
  });

  it('provider keys: key_hint shows the last 4 characters of a key of at least 12 and a fixed mask for a shorter one, never the key itself', async () => {
    const hint = async (provider: string, api_key: string) => (await h.call('PUT', `/api/v1/organizations/${h.orgId}/api-keys/${provider}`, { api_key })).body.key_hint;
    expect(await hint('echo', 'abcd')).toBe('****');
    expect(await hint('mistral', 'abcdefgh')).toBe('****');
    expect(await hint('mistral', 'abcdefghijk')).toBe('****');
    expect(await hint('mistral', 'abcdefghijkl')).toBe('ijkl');
    const listed = (await h.call('GET', `/api/v1/organizations/${h.orgId}/api-keys`)).body.provider_keys;
    expect(listed.find((k: { provider: string }) => k.provider === 'echo').key_hint).toBe('****');
    expect(listed.find((k: { provider: string }) => k.provider === 'mistral').key_hint).toBe('ijkl');
  });
});

describe('indexes', () => {
  it('schema: every foreign key has an index on its columns, so deleting the row it refers to does not read the whole referencing table', async () => {
    const db = await openDb({ inMemory: true });
    try {
      const unindexed = await db.query<{ constraint: string }>(`
        SELECT c.conrelid::regclass || '.' || c.conname AS constraint
          FROM pg_constraint c
         WHERE c.contype = 'f'
           AND NOT EXISTS (
             SELECT 1 FROM pg_index i
              WHERE i.indrelid = c.conrelid AND (i.indkey::int2[])[0:array_length(c.conkey, 1) - 1] = c.conkey)
         ORDER BY 1`);
      expect(unindexed.map((row) => row.constraint)).toEqual([]);
    } finally {
      await db.close();
    }
  });

  it('edges: the edges of a team are found by an index, so its edge count (read by every create in the team) does not read every edge of every organization', async () => {
    const db = await openDb({ inMemory: true });
    try {
      const plan = await db.transaction(async (tx) => {
        await tx.query(`SET LOCAL enable_seqscan = off`);
        return tx.query<{ 'QUERY PLAN': string }>(`EXPLAIN SELECT count(*) FROM edges e WHERE e.team_id = $1`, [randomUUID()]);
      });
      const text = plan.map((row) => row['QUERY PLAN']).join('\n');
      expect(text).not.toContain('Seq Scan');
      expect(text).toMatch(/Index (Only )?Scan using edges_team|Bitmap Index Scan on edges_team/);
    } finally {
      await db.close();
    }
  });
});

describe('provider key hints stored before the rule', () => {
  it('provider keys: migration 0014 masks the hint of every stored key that may have under 12 characters and keeps the hint of a longer one', async () => {
    const db = await openDb({ inMemory: true });
    try {
      const box = createSecretBox(randomBytes(32));
      const orgId = randomUUID();
      await db.query(`INSERT INTO organizations (id, name) VALUES ($1, 'old-hints')`, [orgId]);
      const rows: Array<[string, string]> = [['openai', 'abcd'], ['mistral', 'abcdefghijk'], ['anthropic', `sk-ant-${'x'.repeat(60)}-wxyz`]];
      for (const [provider, key] of rows) {
        await db.query(`INSERT INTO provider_keys (org_id, provider, ciphertext, key_hint) VALUES ($1, $2, $3, $4)`, [orgId, provider, box.seal(key), key.slice(-4)]);
      }
      await db.query(`DELETE FROM schema_migrations WHERE id = '0014_provider_key_hints'`);
      await migrate(db);
      const hints = await db.query<{ provider: string; key_hint: string }>(`SELECT provider, key_hint FROM provider_keys ORDER BY provider`);
      expect(hints).toEqual([
        { provider: 'anthropic', key_hint: 'wxyz' },
        { provider: 'mistral', key_hint: '****' },
        { provider: 'openai', key_hint: '****' },
      ]);
    } finally {
      await db.close();
    }
  });
});

describe('operator surface', () => {
  it('health: /healthz and /readyz answer without a key', async () => {
    const base = h.server.url;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
  });

  it('request ids: every response carries X-Request-Id and echoes the client\'s', async () => {
    const own = await h.call('GET', '/api/v1/organizations', undefined, { 'x-request-id': 'trace-42' });
    expect(own.headers.get('x-request-id')).toBe('trace-42');
    const error = await h.call('GET', '/api/v1/nope');
    expect(error.headers.get('x-request-id')).toBe(error.body.request_id);
  });
});

// PGlite runs one transaction at a time, so only PostgreSQL can interleave two changes of one human.
describe.runIf(postgresBackend)('humans: concurrent changes', () => {
  it('humans: a PATCH that waits for a concurrent change of the same human keeps that change (name, email)', async () => {
    const other = await startHarnessWithDb();
    try {
      const ids = await buildTeam(other);
      // Another process's PATCH, not yet committed, renames the human and sets its email.
      const held = await holdLocks(other.db, `UPDATE participants SET name = 'anna', email = 'anna@example.com' WHERE id = $1`, [ids.humanId]);
      const patching = other.call('PATCH', `/api/v1/humans/${ids.humanId}`, { deletion_protection: true });
      try {
        await lockWaitSeen(other.db, 'participants');
      } finally {
        await held.release();
      }
      const patched = await patching;
      expect(patched.status).toBe(200);
      expect(patched.body).toMatchObject({ name: 'anna', email: 'anna@example.com', deletion_protection: true });
      expect((await other.call('GET', `/api/v1/humans/${ids.humanId}`)).body).toMatchObject({ name: 'anna', email: 'anna@example.com', deletion_protection: true });
    } finally {
      await other.server.close();
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTeam, request, startHarness, type Harness } from './helpers.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.server.close();
});

const keyPattern = /^acs_org_[0-9A-Za-z]{40}$/;

/** Calls the API with `key` instead of the harness key. */
function as(key: string, method: string, path: string, body?: unknown) {
  return request(h.server.url + path, method, body, { 'x-api-key': key });
}

/** A fresh top-level organization with its one key, so that key counts start from 1. */
async function freshOrg(name: string) {
  const { org_id, api_key } = await h.server.provisionOrganization(name);
  return { orgId: org_id, apiKey: api_key, call: (method: string, path: string, body?: unknown) => as(api_key, method, path, body) };
}

describe('organization keys', () => {
  it('keys: a created key authenticates, is listed without its secret and records when it was used', async () => {
    const org = await freshOrg('keys-create');
    const created = await org.call('POST', `/api/v1/organizations/${org.orgId}/keys`, { name: 'ci' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      key_id: expect.any(String),
      name: 'ci',
      prefix: created.body.api_key.slice(0, 12),
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      last_used_at: null,
      expires_at: null,
      api_key: expect.stringMatching(keyPattern),
    });

    const orgs = await as(created.body.api_key, 'GET', '/api/v1/organizations');
    expect(orgs.status).toBe(200);
    expect(orgs.body.organizations.map((o: { org_id: string }) => o.org_id)).toEqual([org.orgId]);

    const list = await org.call('GET', `/api/v1/organizations/${org.orgId}/keys`);
    expect(list.status).toBe(200);
    expect(list.body.keys).toHaveLength(2);
    const listed = list.body.keys.find((k: { key_id: string }) => k.key_id === created.body.key_id);
    expect(Object.keys(listed).sort()).toEqual(['created_at', 'expires_at', 'key_id', 'last_used_at', 'name', 'prefix']);
    expect(listed.last_used_at).not.toBeNull();
    expect(JSON.stringify(list.body)).not.toContain(created.body.api_key);
    expect(JSON.stringify(list.body)).not.toContain(org.apiKey);
  });

  it('keys: a key created with expires_at reports it, and expires_at must lie in the future', async () => {
    const expiresAt = new Date(Date.now() + 3600_000).toISOString();
    const created = await h.call('POST', `/api/v1/organizations/${h.orgId}/keys`, { expires_at: expiresAt });
    expect(created.status).toBe(201);
    expect(created.body.expires_at).toBe(expiresAt);
    expect(created.body.name).toBe('');
    expect((await as(created.body.api_key, 'GET', '/api/v1/organizations')).status).toBe(200);

    const past = await h.call('POST', `/api/v1/organizations/${h.orgId}/keys`, { expires_at: '2020-01-01T00:00:00.000Z' });
    expect(past.status).toBe(400);
    expect(past.body.code).toBe('invalid_request');
    expect(past.body.errors).toEqual([{ path: 'expires_at', message: 'must be in the future' }]);

    const malformed = await h.call('POST', `/api/v1/organizations/${h.orgId}/keys`, { expires_at: 'tomorrow', colour: 'red' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['colour', 'expires_at']);
    await h.call('DELETE', `/api/v1/organizations/${h.orgId}/keys/${created.body.key_id}`);
  });

  it('keys: rotating with the default grace keeps the old key working for a day and issues a working new key', async () => {
    const org = await freshOrg('keys-rotate');
    const old = await org.call('POST', `/api/v1/organizations/${org.orgId}/keys`, { name: 'deploy' });
    const before = Date.now();
    const rotated = await org.call('POST', `/api/v1/organizations/${org.orgId}/keys/${old.body.key_id}/rotate`);
    const after = Date.now();
    expect(rotated.status).toBe(201);
    expect(rotated.body.api_key).toMatch(keyPattern);
    expect(rotated.body.key_id).not.toBe(old.body.key_id);
    expect(rotated.body.name).toBe('deploy');

    expect((await as(old.body.api_key, 'GET', '/api/v1/organizations')).status).toBe(200);
    expect((await as(rotated.body.api_key, 'GET', '/api/v1/organizations')).status).toBe(200);
    const list = await org.call('GET', `/api/v1/organizations/${org.orgId}/keys`);
    const oldListed = list.body.keys.find((k: { key_id: string }) => k.key_id === old.body.key_id);
    const expiry = Date.parse(oldListed.expires_at);
    // The server's clock sets the expiry; allow a little skew around this process's clock.
    expect(expiry).toBeGreaterThanOrEqual(before + 86_400_000 - 1000);
    expect(expiry).toBeLessThanOrEqual(after + 86_400_000 + 1000);
  });

  it('keys: an old key gets 401 invalid_api_key once its rotation grace has run out', async () => {
    const org = await freshOrg('keys-grace');
    const rotated = await org.call('POST', `/api/v1/organizations/${org.orgId}/keys/${(await org.call('GET', `/api/v1/organizations/${org.orgId}/keys`)).body.keys[0].key_id}/rotate`, {
      grace_seconds: 1,
    });
    expect(rotated.status).toBe(201);
    // Poll instead of sleeping a fixed time: the key must stop working within a bounded time.
    let last = await org.call('GET', '/api/v1/organizations');
    for (let i = 0; i < 100 && last.status === 200; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      last = await org.call('GET', '/api/v1/organizations');
    }
    expect(last.status).toBe(401);
    expect(last.body.code).toBe('invalid_api_key');
    const list = await as(rotated.body.api_key, 'GET', `/api/v1/organizations/${org.orgId}/keys`);
    expect(list.body.keys.map((k: { key_id: string }) => k.key_id)).toEqual([rotated.body.key_id]);
  });

  it('keys: rotating with grace 0 revokes the old key at once', async () => {
    const org = await freshOrg('keys-grace-0');
    const keyId = (await org.call('GET', `/api/v1/organizations/${org.orgId}/keys`)).body.keys[0].key_id;
    const rotated = await org.call('POST', `/api/v1/organizations/${org.orgId}/keys/${keyId}/rotate`, { grace_seconds: 0 });
    expect(rotated.status).toBe(201);
    const old = await org.call('GET', '/api/v1/organizations');
    expect(old.status).toBe(401);
    expect(old.body.code).toBe('invalid_api_key');
    expect((await as(rotated.body.api_key, 'GET', '/api/v1/organizations')).status).toBe(200);
  });

  it('keys: grace_seconds outside 0..30 days is rejected with 400', async () => {
    const keyId = (await h.call('GET', `/api/v1/organizations/${h.orgId}/keys`)).body.keys[0].key_id;
    for (const grace_seconds of [-1, 30 * 86_400 + 1, 1.5, '60']) {
      const reply = await h.call('POST', `/api/v1/organizations/${h.orgId}/keys/${keyId}/rotate`, { grace_seconds });
      expect(reply.status).toBe(400);
      expect(reply.body.errors[0].path).toBe('grace_seconds');
    }
  });

  it('keys: a revoked key gets 401 invalid_api_key and is no longer listed', async () => {
    const org = await freshOrg('keys-revoke');
    const extra = await org.call('POST', `/api/v1/organizations/${org.orgId}/keys`, { name: 'temp' });
    const revoked = await org.call('DELETE', `/api/v1/organizations/${org.orgId}/keys/${extra.body.key_id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toEqual({ revoked: true, key_id: extra.body.key_id });
    const use = await as(extra.body.api_key, 'GET', '/api/v1/organizations');
    expect(use.status).toBe(401);
    expect(use.body.code).toBe('invalid_api_key');
    const list = await org.call('GET', `/api/v1/organizations/${org.orgId}/keys`);
    expect(list.body.keys.map((k: { key_id: string }) => k.key_id)).not.toContain(extra.body.key_id);
    const again = await org.call('DELETE', `/api/v1/organizations/${org.orgId}/keys/${extra.body.key_id}`);
    expect(again.status).toBe(404);
  });

  it("keys: revoking the organization's last active key is refused with 409 last_key", async () => {
    const org = await freshOrg('keys-last');
    const keyId = (await org.call('GET', `/api/v1/organizations/${org.orgId}/keys`)).body.keys[0].key_id;
    const reply = await org.call('DELETE', `/api/v1/organizations/${org.orgId}/keys/${keyId}`);
    expect(reply.status).toBe(409);
    expect(reply.body.code).toBe('last_key');
    expect((await org.call('GET', '/api/v1/organizations')).status).toBe(200);
  });

  it('keys: an 11th active key is refused with 409 key_limit, also by rotation with grace', async () => {
    const org = await freshOrg('keys-limit');
    for (let i = 0; i < 9; i += 1) {
      expect((await org.call('POST', `/api/v1/organizations/${org.orgId}/keys`, { name: `k${i}` })).status).toBe(201);
    }
    const eleventh = await org.call('POST', `/api/v1/organizations/${org.orgId}/keys`);
    expect(eleventh.status).toBe(409);
    expect(eleventh.body.code).toBe('key_limit');

    const keys = (await org.call('GET', `/api/v1/organizations/${org.orgId}/keys`)).body.keys;
    expect(keys).toHaveLength(10);
    const withGrace = await org.call('POST', `/api/v1/organizations/${org.orgId}/keys/${keys[1].key_id}/rotate`, { grace_seconds: 60 });
    expect(withGrace.status).toBe(409);
    expect(withGrace.body.code).toBe('key_limit');
    // The refused rotation changed nothing: the old key keeps no expiry.
    const after = (await org.call('GET', `/api/v1/organizations/${org.orgId}/keys`)).body.keys;
    expect(after.find((k: { key_id: string }) => k.key_id === keys[1].key_id).expires_at).toBeNull();

    const immediate = await org.call('POST', `/api/v1/organizations/${org.orgId}/keys/${keys[1].key_id}/rotate`, { grace_seconds: 0 });
    expect(immediate.status).toBe(201);
    expect((await org.call('GET', `/api/v1/organizations/${org.orgId}/keys`)).body.keys).toHaveLength(10);
  });

  it("keys: another organization's keys and key ids answer 404", async () => {
    const other = await freshOrg('keys-other');
    const otherKeyId = (await other.call('GET', `/api/v1/organizations/${other.orgId}/keys`)).body.keys[0].key_id;
    expect((await h.call('GET', `/api/v1/organizations/${other.orgId}/keys`)).status).toBe(404);
    expect((await h.call('POST', `/api/v1/organizations/${other.orgId}/keys`)).status).toBe(404);
    for (const [method, path] of [
      ['DELETE', `/api/v1/organizations/${h.orgId}/keys/${otherKeyId}`],
      ['POST', `/api/v1/organizations/${h.orgId}/keys/${otherKeyId}/rotate`],
      ['DELETE', `/api/v1/organizations/${other.orgId}/keys/${otherKeyId}`],
      ['DELETE', `/api/v1/organizations/${h.orgId}/keys/not-a-uuid`],
    ] as const) {
      const reply = await h.call(method, path);
      expect(reply.status, `${method} ${path}`).toBe(404);
      expect(reply.body.code).toBe('not_found');
    }
    expect((await other.call('GET', '/api/v1/organizations')).status).toBe(200);
  });

  it('keys: a key manages the keys of an organization it provisioned', async () => {
    const child = await h.call('POST', '/api/v1/organizations', { org_name: 'keys-child' });
    const created = await h.call('POST', `/api/v1/organizations/${child.body.org_id}/keys`, { name: 'child' });
    expect(created.status).toBe(201);
    const orgs = await as(created.body.api_key, 'GET', '/api/v1/organizations');
    expect(orgs.body.organizations.map((o: { org_id: string }) => o.org_id)).toEqual([child.body.org_id]);
  });
});

describe('MCP keys', () => {
  it('mcp keys: a created MCP key is listed without its secret and gets 403 wrong_key_type on REST routes', async () => {
    const { agentId } = await buildTeam(h);
    const created = await h.call('POST', `/api/v1/agents/${agentId}/mcp-keys`);
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      key_id: expect.any(String),
      agent_id: agentId,
      prefix: created.body.mcp_key.slice(0, 12),
      created_at: expect.any(String),
      last_used_at: null,
      mcp_key: expect.stringMatching(/^acs_mcp_[0-9A-Za-z]{40}$/),
    });
    const list = await h.call('GET', `/api/v1/agents/${agentId}/mcp-keys`);
    expect(list.status).toBe(200);
    expect(list.body.mcp_keys).toEqual([{ key_id: created.body.key_id, agent_id: agentId, prefix: created.body.prefix, created_at: created.body.created_at, last_used_at: null }]);

    const rest = await as(created.body.mcp_key, 'GET', '/api/v1/organizations');
    expect(rest.status).toBe(403);
    expect(rest.body.code).toBe('wrong_key_type');
    expect(JSON.stringify(rest.body)).not.toContain(created.body.mcp_key);
  });

  it('mcp keys: an 11th active MCP key of one agent is refused with 409 mcp_key_limit naming the limit, even when asked for all at once; revoking one makes room', async () => {
    const { agentId } = await buildTeam(h);
    const path = `/api/v1/agents/${agentId}/mcp-keys`;
    const replies = await Promise.all(Array.from({ length: 14 }, () => h.call('POST', path)));
    expect(replies.filter((r) => r.status === 201)).toHaveLength(10);
    const refused = replies.filter((r) => r.status !== 201);
    expect(refused).toHaveLength(4);
    for (const reply of refused) expect(reply.body).toMatchObject({ status: 409, code: 'mcp_key_limit', limit: 10 });
    const keys = (await h.call('GET', path)).body.mcp_keys;
    expect(keys).toHaveLength(10);
    expect((await h.call('DELETE', `${path}/${keys[0].key_id}`)).status).toBe(200);
    expect((await h.call('POST', path)).status).toBe(201);
    expect((await h.call('POST', path)).body.code).toBe('mcp_key_limit');
  });

  it('mcp keys: an unknown or revoked MCP key gets 401 invalid_api_key on REST routes', async () => {
    const { agentId } = await buildTeam(h);
    const unknown = await as(`acs_mcp_${'x'.repeat(40)}`, 'GET', '/api/v1/organizations');
    expect(unknown.status).toBe(401);
    expect(unknown.body.code).toBe('invalid_api_key');

    const created = await h.call('POST', `/api/v1/agents/${agentId}/mcp-keys`);
    const revoked = await h.call('DELETE', `/api/v1/agents/${agentId}/mcp-keys/${created.body.key_id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toEqual({ revoked: true, key_id: created.body.key_id });
    const use = await as(created.body.mcp_key, 'GET', '/api/v1/organizations');
    expect(use.status).toBe(401);
    expect(use.body.code).toBe('invalid_api_key');
    expect((await h.call('GET', `/api/v1/agents/${agentId}/mcp-keys`)).body.mcp_keys).toEqual([]);
    expect((await h.call('DELETE', `/api/v1/agents/${agentId}/mcp-keys/${created.body.key_id}`)).status).toBe(404);
  });

  it("mcp keys: deleting an agent revokes its MCP keys", async () => {
    const { teamId } = await buildTeam(h);
    const loner = await h.call('POST', `/api/v1/teams/${teamId}/agents`, { name: 'loner' });
    const created = await h.call('POST', `/api/v1/agents/${loner.body.agent_id}/mcp-keys`);
    expect((await as(created.body.mcp_key, 'GET', '/api/v1/organizations')).body.code).toBe('wrong_key_type');
    expect((await h.call('DELETE', `/api/v1/agents/${loner.body.agent_id}`)).status).toBe(200);
    const use = await as(created.body.mcp_key, 'GET', '/api/v1/organizations');
    expect(use.status).toBe(401);
    expect(use.body.code).toBe('invalid_api_key');
  });

  it("mcp keys: another organization's agents and humans answer 404, and a body with fields is rejected", async () => {
    const other = await freshOrg('mcp-other');
    const team = await other.call('POST', `/api/v1/organizations/${other.orgId}/teams`, { team_name: 't' });
    const agent = await other.call('POST', `/api/v1/teams/${team.body.team_id}/agents`, { name: 'a' });
    const human = await other.call('POST', `/api/v1/teams/${team.body.team_id}/humans`, { name: 'h' });
    const key = await other.call('POST', `/api/v1/agents/${agent.body.agent_id}/mcp-keys`);
    expect((await h.call('POST', `/api/v1/agents/${agent.body.agent_id}/mcp-keys`)).status).toBe(404);
    expect((await h.call('GET', `/api/v1/agents/${agent.body.agent_id}/mcp-keys`)).status).toBe(404);
    expect((await h.call('DELETE', `/api/v1/agents/${agent.body.agent_id}/mcp-keys/${key.body.key_id}`)).status).toBe(404);
    expect((await other.call('POST', `/api/v1/agents/${human.body.human_id}/mcp-keys`)).status).toBe(404);
    const withBody = await other.call('POST', `/api/v1/agents/${agent.body.agent_id}/mcp-keys`, { name: 'x' });
    expect(withBody.status).toBe(400);
    expect(withBody.body.errors).toEqual([{ path: 'name', message: 'unknown field' }]);
  });
});

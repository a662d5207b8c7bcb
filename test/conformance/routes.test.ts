/**
 * Conformance of every route of the API contract (§5, with the conventions of §1, the errors of
 * §2, the keys of §3 and the defaults of §4 and of the service's interface description; see
 * docs/development.md, "Conformance suites"), written from the contract alone against a server
 * started as a user starts it, with plain `fetch`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTRACT_ROUTES, MCP_ENDPOINT_BUILT, expectProblem, expectStatus, idRoutes, type RouteIds } from './contract.ts';
import { call, freshUuid, ISO_MS_Z, startServer, uniqueName, UUID, type CallOptions, type Reply, type Server } from './server.ts';

let s: Server;
/** Every secret this file saw (organization, MCP and provider keys), for the log check. */
const secrets: string[] = [];

/** A call under /api/v1 with the dev key unless `options.key` says otherwise. */
function api(method: string, path: string, options: CallOptions = {}): Promise<Reply> {
  return call(s.baseUrl, method, `/api/v1${path}`, { key: s.apiKey, ...options });
}

async function created(method: string, path: string, body?: unknown, key?: string): Promise<any> {
  const reply = await api(method, path, { body, ...(key ? { key } : {}) });
  expectStatus(reply, 201);
  return reply.body;
}

const newTeam = (orgId = s.orgId, body: Record<string, unknown> = {}) => created('POST', `/organizations/${orgId}/teams`, { team_name: uniqueName('team'), ...body });
const newAgent = (teamId: string, body: Record<string, unknown> = {}) => created('POST', `/teams/${teamId}/agents`, { name: uniqueName('agent'), ...body });
const newHuman = (teamId: string, body: Record<string, unknown> = {}) => created('POST', `/teams/${teamId}/humans`, { name: uniqueName('human'), ...body });
const newEdge = (teamId: string, a: string, b: string) => created('POST', `/teams/${teamId}/edges`, { participants: [a, b] });
const openThread = (edgeId: string, sender: string, body: Record<string, unknown> = {}) =>
  created('POST', `/edges/${edgeId}/threads`, { sender_agent_id: sender, content: 'first message', ...body });
const postMessage = (threadId: string, sender: string, content: string, extra: Record<string, unknown> = {}) =>
  created('POST', `/threads/${threadId}/messages`, { sender_agent_id: sender, content, ...extra });
const newOrg = () => created('POST', '/organizations', { org_name: uniqueName('org') });

function expectIso(value: unknown): void {
  expect(value).toMatch(ISO_MS_Z);
}

/** A small graph in the dev organization: team, two agents, a human, two edges, a thread. */
let g: { teamId: string; a1: string; a2: string; h1: string; e1: string; e2: string; threadId: string; messageId: string };

beforeAll(async () => {
  s = await startServer();
  secrets.push(s.apiKey);
  const team = await newTeam();
  const a1 = await newAgent(team.team_id);
  const a2 = await newAgent(team.team_id);
  const h1 = await newHuman(team.team_id);
  const e1 = await newEdge(team.team_id, a1.agent_id, h1.human_id);
  const e2 = await newEdge(team.team_id, a1.agent_id, a2.agent_id);
  const thread = await openThread(e1.edge_id, a1.agent_id);
  const page = await api('GET', `/threads/${thread.thread_id}`);
  g = {
    teamId: team.team_id,
    a1: a1.agent_id,
    a2: a2.agent_id,
    h1: h1.human_id,
    e1: e1.edge_id,
    e2: e2.edge_id,
    threadId: thread.thread_id,
    messageId: page.body.messages[0].message_id,
  };
});

afterAll(async () => {
  await s?.stop();
});

describe('conventions', () => {
  it('every response carries an X-Request-Id, successes and errors alike', async () => {
    for (const reply of [
      await api('GET', '/organizations'),
      await api('GET', '/no-such-route'),
      await api('GET', '/organizations', { key: null }),
      await call(s.baseUrl, 'GET', '/healthz'),
    ]) {
      expect(reply.headers.get('x-request-id'), reply.text).toBeTruthy();
    }
  });

  it('a client-sent X-Request-Id is echoed on successes and on errors', async () => {
    const ok = await api('GET', '/organizations', { headers: { 'X-Request-Id': 'conformance-req-1' } });
    expect(ok.headers.get('x-request-id')).toBe('conformance-req-1');
    const err = await api('GET', `/teams/${freshUuid()}`, { headers: { 'X-Request-Id': 'conformance-req-2' } });
    expect(err.headers.get('x-request-id')).toBe('conformance-req-2');
    expect(err.body.request_id).toBe('conformance-req-2');
  });

  it('/v1 is an exact alias of /api/v1 for every GET route', async () => {
    const paths = [
      '/organizations',
      `/organizations/${s.orgId}`,
      `/organizations/${s.orgId}/teams`,
      `/teams/${g.teamId}`,
      `/teams/${g.teamId}/deletion-preview`,
      `/teams/${g.teamId}/agents`,
      `/agents/${g.a1}`,
      `/teams/${g.teamId}/humans`,
      `/humans/${g.h1}`,
      `/teams/${g.teamId}/edges`,
      `/edges/${g.e1}`,
      `/edges/${g.e1}/threads`,
      `/threads/${g.threadId}`,
      `/organizations/${s.orgId}/api-keys`,
      `/organizations/${s.orgId}/keys`,
      `/agents/${g.a1}/mcp-keys`,
    ];
    for (const path of paths) {
      const long = await call(s.baseUrl, 'GET', `/api/v1${path}`, { key: s.apiKey });
      const short = await call(s.baseUrl, 'GET', `/v1${path}`, { key: s.apiKey });
      expect(short.status, `/v1${path}`).toBe(long.status);
      expect(long.status, `/api/v1${path}: ${long.text.slice(0, 200)}`).toBe(200);
      const strip = (b: any) => JSON.parse(JSON.stringify(b, (k, v) => (k === 'last_used_at' ? undefined : v)));
      expect(strip(short.body), `/v1${path}`).toEqual(strip(long.body));
    }
  });

  it('/v1 serves writes as well: POST /v1/organizations/{org_id}/teams gives 201 Team', async () => {
    const reply = await call(s.baseUrl, 'POST', `/v1/organizations/${s.orgId}/teams`, { key: s.apiKey, body: { team_name: uniqueName('v1') } });
    expectStatus(reply, 201);
    expect(reply.body.team_id).toMatch(UUID);
  });

  it('a body with Content-Type text/plain gets 415 unsupported_media_type', async () => {
    const reply = await api('POST', `/organizations/${s.orgId}/teams`, { body: JSON.stringify({ team_name: uniqueName('t') }), headers: { 'content-type': 'text/plain' } });
    expectProblem(reply, 415, 'unsupported_media_type');
  });

  it('a body with Content-Type application/x-www-form-urlencoded gets 415 unsupported_media_type', async () => {
    const reply = await api('POST', `/organizations/${s.orgId}/teams`, { body: 'team_name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expectProblem(reply, 415, 'unsupported_media_type');
  });

  it('Content-Type application/json with a charset parameter is accepted', async () => {
    const reply = await api('POST', `/organizations/${s.orgId}/teams`, {
      body: JSON.stringify({ team_name: uniqueName('charset') }),
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    expectStatus(reply, 201);
  });

  it('a body over 1 MiB gets 413 payload_too_large', async () => {
    const reply = await api('POST', `/organizations/${s.orgId}/teams`, { body: { team_name: 'big', description: 'x'.repeat(1024 * 1024 + 10) } });
    expectProblem(reply, 413, 'payload_too_large');
  });

  it('a body that is not valid JSON gets 400 malformed_json', async () => {
    const reply = await api('POST', `/organizations/${s.orgId}/teams`, { body: '{"team_name": ' });
    expectProblem(reply, 400, 'malformed_json');
  });

  it('an unknown body field gets 400 invalid_request naming the field', async () => {
    const reply = await api('POST', `/organizations/${s.orgId}/teams`, { body: { team_name: uniqueName('t'), colour: 'red' } });
    expectProblem(reply, 400, 'invalid_request');
    expect(reply.body.errors.map((e: any) => e.path)).toContain('colour');
  });

  it('every problem of a body is listed: a wrong type, an out-of-range value and an unknown field give one error each', async () => {
    const reply = await api('POST', `/teams/${g.teamId}/agents`, { body: { name: 42, description: 'x'.repeat(4001), extra_field: true } });
    expectProblem(reply, 400, 'invalid_request');
    const paths = reply.body.errors.map((e: any) => e.path);
    expect(paths).toEqual(expect.arrayContaining(['name', 'description', 'extra_field']));
  });

  it('a missing required field gets 400 invalid_request with an error at its path', async () => {
    const reply = await api('POST', `/organizations/${s.orgId}/teams`, { body: {} });
    expectProblem(reply, 400, 'invalid_request');
    expect(reply.body.errors.map((e: any) => e.path)).toContain('team_name');
  });

  it('an unknown path gets 404 route_not_found under /api/v1, /v1 and the root', async () => {
    expectProblem(await api('GET', '/no-such-thing'), 404, 'route_not_found');
    expectProblem(await call(s.baseUrl, 'GET', '/v1/no-such-thing', { key: s.apiKey }), 404, 'route_not_found');
    expectProblem(await call(s.baseUrl, 'GET', '/no-such-thing', { key: s.apiKey }), 404, 'route_not_found');
  });

  it('a known path with a method it does not serve gets 405 method_not_allowed', async () => {
    expectProblem(await api('PUT', '/organizations', { body: { org_name: 'x' } }), 405, 'method_not_allowed');
    expectProblem(await api('POST', `/threads/${g.threadId}`, { body: {} }), 405, 'method_not_allowed');
    expectProblem(await api('PUT', `/organizations/${s.orgId}`, { body: {} }), 405, 'method_not_allowed');
  });

  it('a path with a malformed percent-escape gets a problem+json error with an X-Request-Id', async () => {
    for (const path of ['/teams/%ZZ', '/threads/%ED%A0%80', '/agents/%']) {
      const reply = await api('GET', path);
      expect([400, 404], `${path}: ${reply.text}`).toContain(reply.status);
      expectProblem(reply, reply.status, reply.status === 400 ? 'invalid_request' : reply.body?.code === 'route_not_found' ? 'route_not_found' : 'not_found');
    }
  });

  it('a path id of 300 characters names nothing: 404 not_found as problem+json', async () => {
    expectProblem(await api('GET', `/teams/${'a'.repeat(300)}`), 404, 'not_found');
  });

  it('a JSON body nested 2,000 levels deep gets 400 invalid_request, with or without an Idempotency-Key', async () => {
    const deep = `${'{"a":'.repeat(2000)}1${'}'.repeat(2000)}`;
    expectProblem(await api('POST', '/organizations', { body: deep }), 400, 'invalid_request');
    expectProblem(await api('POST', '/organizations', { body: deep, headers: { 'Idempotency-Key': crypto.randomUUID() } }), 400, 'invalid_request');
  });

  it('a NUL character in a text field is stored or refused with 400 invalid_request, never a 500', async () => {
    const org = await newOrg();
    const attempts: Array<[string, string, unknown, number]> = [
      ['POST', `/organizations/${s.orgId}/teams`, { team_name: `nul\u0000${crypto.randomUUID().slice(0, 8)}` }, 201],
      ['POST', `/threads/${g.threadId}/messages`, { sender_agent_id: g.a1, content: 'a\u0000b' }, 201],
      ['PUT', `/organizations/${org.org_id}/api-keys/openai`, { api_key: 'sk-\u0000\u0000' }, 200],
    ];
    for (const [method, path, body, success] of attempts) {
      const reply = await api(method, path, { body });
      if (reply.status !== success) expectProblem(reply, 400, 'invalid_request');
    }
  });

  it('names are measured after trimming: a name of only white space is a 400, 100 characters inside white space are fine', async () => {
    expectProblem(await api('POST', `/organizations/${s.orgId}/teams`, { body: { team_name: '   ' } }), 400, 'invalid_request');
    const hundred = `${crypto.randomUUID()}${'n'.repeat(64)}`;
    expect(hundred.length).toBe(100);
    expectStatus(await api('POST', `/organizations/${s.orgId}/teams`, { body: { team_name: `  ${hundred}  ` } }), 201);
    expectProblem(await api('POST', `/organizations/${s.orgId}/teams`, { body: { team_name: `${hundred}x` } }), 400, 'invalid_request');
  });

  it('ids are UUIDs and timestamps are ISO 8601 UTC with milliseconds and Z in every resource', async () => {
    const team = await api('GET', `/teams/${g.teamId}`);
    expect(team.body.team_id).toMatch(UUID);
    expect(team.body.org_id).toMatch(UUID);
    expectIso(team.body.created_at);
    for (const a of team.body.agents) {
      expect(a.agent_id).toMatch(UUID);
      expectIso(a.created_at);
    }
    for (const h of team.body.humans) {
      expect(h.human_id).toMatch(UUID);
      expectIso(h.created_at);
    }
    for (const e of team.body.edges) {
      expect(e.edge_id).toMatch(UUID);
      expectIso(e.created_at);
    }
    const page = await api('GET', `/threads/${g.threadId}`);
    expect(page.body.thread_id).toMatch(UUID);
    expectIso(page.body.created_at);
    for (const m of page.body.messages) {
      expect(m.message_id).toMatch(UUID);
      expectIso(m.sent_at);
    }
    const orgs = await api('GET', '/organizations');
    for (const o of orgs.body.organizations) {
      expect(o.org_id).toMatch(UUID);
      expectIso(o.created_at);
    }
  });
});

describe('authentication', () => {
  it('a request without X-API-Key gets 401 unauthenticated', async () => {
    expectProblem(await api('GET', '/organizations', { key: null }), 401, 'unauthenticated');
  });

  it('an unknown key gets 401 invalid_api_key, whether or not it looks like a key', async () => {
    expectProblem(await api('GET', '/organizations', { key: `acs_org_${'A'.repeat(40)}` }), 401, 'invalid_api_key');
    expectProblem(await api('GET', '/organizations', { key: 'garbage' }), 401, 'invalid_api_key');
  });

  it('the header name is case-insensitive', async () => {
    for (const name of ['X-API-Key', 'x-api-key', 'X-Api-Key', 'X-API-KEY']) {
      expectStatus(await api('GET', '/organizations', { key: null, headers: { [name]: s.apiKey } }), 200);
    }
  });

  it('the dev key looks like acs_org_ followed by at least 32 base62 characters', () => {
    expect(s.apiKey).toMatch(/^acs_org_[0-9A-Za-z]{32,}$/);
  });

  const routes = () =>
    idRoutes({
      orgId: s.orgId,
      teamId: g.teamId,
      agentId: g.a1,
      humanId: g.h1,
      edgeId: g.e1,
      threadId: g.threadId,
      messageId: g.messageId,
      attachmentId: freshUuid(),
      keyId: freshUuid(),
      mcpKeyId: freshUuid(),
    });

  it('every keyed route of §5 answers 401 unauthenticated without X-API-Key and writes nothing', async () => {
    const before = await api('GET', `/teams/${g.teamId}`);
    const failures: string[] = [];
    for (const r of [...routes(), { method: 'GET', template: '/organizations', path: '/api/v1/organizations' }, { method: 'POST', template: '/attachments', path: '/api/v1/attachments', body: { filename: 'a.txt', content_type: 'text/plain', data_base64: 'aGk=' } }]) {
      const reply = await call(s.baseUrl, r.method, r.path, { body: r.body });
      if (reply.status !== 401 || reply.body?.code !== 'unauthenticated') failures.push(`${r.method} ${r.template}: ${reply.status} ${reply.body?.code}`);
    }
    expect(failures).toEqual([]);
    expect((await api('GET', `/teams/${g.teamId}`)).body).toEqual(before.body);
  });
});

describe('unknown ids', () => {
  const ids = (): RouteIds => ({
    orgId: freshUuid(),
    teamId: freshUuid(),
    agentId: freshUuid(),
    humanId: freshUuid(),
    edgeId: freshUuid(),
    threadId: freshUuid(),
    messageId: freshUuid(),
    attachmentId: freshUuid(),
    keyId: freshUuid(),
    mcpKeyId: freshUuid(),
  });

  it('every route of §5 with an id in its path answers 404 not_found when the id names nothing', async () => {
    const failures: string[] = [];
    for (const r of idRoutes(ids())) {
      const reply = await call(s.baseUrl, r.method, r.path, { key: s.apiKey, body: r.body });
      if (reply.status !== 404 || reply.body?.code !== 'not_found') failures.push(`${r.method} ${r.template}: ${reply.status} ${reply.body?.code}`);
    }
    expect(failures).toEqual([]);
  });

  it('a path id that is not a UUID answers 404 not_found (it names nothing)', async () => {
    for (const path of ['/teams/not-a-uuid', '/agents/123', `/organizations/xyz/teams`, '/threads/abc', '/edges/..%2F..']) {
      expectProblem(await api('GET', path), 404, 'not_found');
    }
  });

  it('the id of a known resource of another kind answers 404 not_found', async () => {
    expectProblem(await api('GET', `/agents/${g.h1}`), 404, 'not_found');
    expectProblem(await api('GET', `/humans/${g.a1}`), 404, 'not_found');
    expectProblem(await api('GET', `/teams/${g.e1}`), 404, 'not_found');
  });
});

describe('rate limits', () => {
  function expectRateHeaders(reply: Reply): void {
    for (const h of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) {
      expect(reply.headers.get(h), `${h} on ${reply.status} ${reply.text.slice(0, 100)}`).toMatch(/^\d+/);
    }
  }

  it('every keyed response carries RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset, successes and errors alike', async () => {
    expectRateHeaders(await api('GET', '/organizations'));
    expectRateHeaders(await api('GET', `/teams/${freshUuid()}`));
    expectRateHeaders(await api('POST', `/organizations/${s.orgId}/teams`, { body: {} }));
    expectRateHeaders(await api('GET', '/nowhere'));
  });

  it('responses to requests without a key carry RateLimit headers too (§2: every response)', async () => {
    expectRateHeaders(await api('GET', '/organizations', { key: null }));
    expectRateHeaders(await api('GET', '/organizations', { key: 'garbage' }));
    expectRateHeaders(await call(s.baseUrl, 'GET', '/healthz'));
  });

  it('RateLimit-Limit defaults to 1,200 a minute and RateLimit-Remaining falls with each request of a key', async () => {
    const first = await api('GET', '/organizations');
    const second = await api('GET', '/organizations');
    expect(Number.parseInt(first.headers.get('ratelimit-limit') ?? '', 10)).toBe(1200);
    expect(Number.parseInt(second.headers.get('ratelimit-remaining') ?? '', 10)).toBeLessThan(Number.parseInt(first.headers.get('ratelimit-remaining') ?? '', 10));
    const reset = Number.parseInt(first.headers.get('ratelimit-reset') ?? '', 10);
    expect(reset).toBeGreaterThanOrEqual(0);
    expect(reset).toBeLessThanOrEqual(60);
  });
});

describe('health and OpenAPI', () => {
  it('GET /healthz answers 200 without a key', async () => {
    expectStatus(await call(s.baseUrl, 'GET', '/healthz'), 200);
  });

  it('GET /readyz answers 200 without a key while storage is reachable', async () => {
    expectStatus(await call(s.baseUrl, 'GET', '/readyz'), 200);
  });

  it('GET /api/v1/openapi.json is an OpenAPI 3.1 document listing every route of §5', async () => {
    const reply = await api('GET', '/openapi.json');
    expectStatus(reply, 200);
    expect(String(reply.body.openapi)).toMatch(/^3\.1\./);
    const listed = new Set<string>();
    for (const [path, item] of Object.entries<any>(reply.body.paths ?? {})) {
      const normalized = path.replace(/^\/api\/v1/, '').replace(/\{[^}]+\}/g, '{}');
      for (const method of Object.keys(item)) listed.add(`${method.toUpperCase()} ${normalized}`);
    }
    const missing = CONTRACT_ROUTES.map(([m, p]) => `${m} ${p.replace(/\{[^}]+\}/g, '{}')}`).filter((r) => !listed.has(r));
    expect(missing).toEqual([]);
  });
});

describe('organizations', () => {
  it('organizations: GET lists the dev organization with its fields', async () => {
    const reply = await api('GET', '/organizations');
    expectStatus(reply, 200);
    const dev = reply.body.organizations.find((o: any) => o.org_id === s.orgId);
    expect(dev).toMatchObject({ org_id: s.orgId, org_name: 'dev', is_personal: false });
    expect(Number.isInteger(dev.team_count)).toBe(true);
    expect(dev.human_count).toBeGreaterThanOrEqual(1);
    expectIso(dev.created_at);
  });

  it('organizations: POST gives 201 with team_count 0, human_count 1 and is_personal false', async () => {
    const name = uniqueName('org');
    const reply = await api('POST', '/organizations', { body: { org_name: name } });
    expectStatus(reply, 201);
    expect(reply.body).toMatchObject({ org_name: name, team_count: 0, human_count: 1, is_personal: false });
    expect(reply.body.org_id).toMatch(UUID);
    expectIso(reply.body.created_at);
  });

  it('organizations: the calling key reaches an organization it provisioned (listed, readable, writable)', async () => {
    const org = await newOrg();
    const list = await api('GET', '/organizations');
    expect(list.body.organizations.map((o: any) => o.org_id)).toContain(org.org_id);
    const one = await api('GET', `/organizations/${org.org_id}`);
    expectStatus(one, 200);
    expect(one.body).toMatchObject({ org_id: org.org_id, org_name: org.org_name, team_count: 0, human_count: 1, is_personal: false });
    await newTeam(org.org_id);
  });

  it('organizations: POST without org_name gives 400 invalid_request at org_name', async () => {
    const reply = await api('POST', '/organizations', { body: {} });
    expectProblem(reply, 400, 'invalid_request');
    expect(reply.body.errors.map((e: any) => e.path)).toContain('org_name');
  });

  it('organizations: POST with a blank, a 101-character or a non-string org_name gives 400 invalid_request', async () => {
    for (const org_name of ['  ', 'o'.repeat(101), 12, null]) {
      expectProblem(await api('POST', '/organizations', { body: { org_name } }), 400, 'invalid_request');
    }
  });

  it('organizations: POST with a name already used among reachable organizations gives 409 conflict with existing_id', async () => {
    const reply = await api('POST', '/organizations', { body: { org_name: 'dev' } });
    expectProblem(reply, 409, 'conflict');
    expect(reply.body.existing_id).toBe(s.orgId);
  });

  it('organizations: team_count counts teams and human_count is 1 plus the humans of its teams', async () => {
    const org = await newOrg();
    const t1 = await newTeam(org.org_id);
    const t2 = await newTeam(org.org_id);
    await newHuman(t1.team_id);
    await newHuman(t2.team_id);
    await newHuman(t2.team_id);
    const reply = await api('GET', `/organizations/${org.org_id}`);
    expect(reply.body).toMatchObject({ team_count: 2, human_count: 4 });
  });

  it('organizations: GET of an unknown id gives 404 not_found', async () => {
    expectProblem(await api('GET', `/organizations/${freshUuid()}`), 404, 'not_found');
  });

  it('organizations: deletion_protection is false unless POST sets it, and PATCH sets and clears it (200 Organization)', async () => {
    expect((await newOrg()).deletion_protection).toBe(false);
    const org = await created('POST', '/organizations', { org_name: uniqueName('guarded'), deletion_protection: true });
    expect(org.deletion_protection).toBe(true);
    expect((await api('GET', `/organizations/${org.org_id}`)).body.deletion_protection).toBe(true);
    const cleared = await api('PATCH', `/organizations/${org.org_id}`, { body: { deletion_protection: false } });
    expectStatus(cleared, 200);
    expect(cleared.body).toMatchObject({ org_id: org.org_id, org_name: org.org_name, deletion_protection: false });
    expectProblem(await api('PATCH', `/organizations/${org.org_id}`, { body: { org_name: 'renamed' } }), 400, 'invalid_request');
    expectProblem(await api('PATCH', `/organizations/${org.org_id}`, { body: { deletion_protection: 'no' } }), 400, 'invalid_request');
  });

  it('organizations: deletion-preview counts what a DELETE would remove', async () => {
    const org = await newOrg();
    const team = await newTeam(org.org_id);
    const a = await newAgent(team.team_id);
    const h = await newHuman(team.team_id);
    const e = await newEdge(team.team_id, a.agent_id, h.human_id);
    const t = await openThread(e.edge_id, a.agent_id);
    await postMessage(t.thread_id, h.human_id, 'reply');
    await newTeam(org.org_id);
    const reply = await api('GET', `/organizations/${org.org_id}/deletion-preview`);
    expectStatus(reply, 200);
    expect(reply.body).toEqual(expect.objectContaining({ org_id: org.org_id, teams: 2, agents: 1, humans: 1, edges: 1, threads: 1, messages: 2, attachments: 0 }));
  });

  it('organizations: DELETE gives {deleted: true, org_id}; the organization, its teams and their threads are 404 afterwards', async () => {
    const org = await newOrg();
    const team = await newTeam(org.org_id);
    const a = await newAgent(team.team_id);
    const h = await newHuman(team.team_id);
    const t = await openThread((await newEdge(team.team_id, a.agent_id, h.human_id)).edge_id, a.agent_id);
    const reply = await api('DELETE', `/organizations/${org.org_id}`);
    expectStatus(reply, 200);
    expect(reply.body).toEqual(expect.objectContaining({ deleted: true, org_id: org.org_id }));
    for (const path of [`/organizations/${org.org_id}`, `/teams/${team.team_id}`, `/agents/${a.agent_id}`, `/threads/${t.thread_id}`]) {
      expectProblem(await api('GET', path), 404, 'not_found');
    }
    expect((await api('GET', '/organizations')).body.organizations.map((o: any) => o.org_id)).not.toContain(org.org_id);
    expectProblem(await api('DELETE', `/organizations/${org.org_id}`), 404, 'not_found');
  });

  it('organizations: DELETE of the calling key’s own organization gives 403 forbidden and deletes nothing', async () => {
    const before = await api('GET', `/organizations/${s.orgId}`);
    expectProblem(await api('DELETE', `/organizations/${s.orgId}`), 403, 'forbidden');
    expect((await api('GET', `/organizations/${s.orgId}`)).body).toEqual(before.body);
  });

  it('organizations: DELETE of a protected organization, or of one whose team is protected, gives 409 deletion_protected and deletes nothing', async () => {
    const guarded = await created('POST', '/organizations', { org_name: uniqueName('guarded'), deletion_protection: true });
    const reply = await api('DELETE', `/organizations/${guarded.org_id}`);
    expectProblem(reply, 409, 'deletion_protected');
    expectStatus(await api('GET', `/organizations/${guarded.org_id}`), 200);
    const org = await newOrg();
    const team = await newTeam(org.org_id, { deletion_protection: true });
    expectProblem(await api('DELETE', `/organizations/${org.org_id}`), 409, 'deletion_protected');
    expect((await api('GET', `/teams/${team.team_id}`)).body).toMatchObject({ team_id: team.team_id, deletion_protection: true });
  });
});

describe('teams', () => {
  it('teams: POST without a description gives 201 with description "", agent_count 0, edge_count 0 and an engine_id', async () => {
    const name = uniqueName('team');
    const reply = await api('POST', `/organizations/${s.orgId}/teams`, { body: { team_name: name } });
    expectStatus(reply, 201);
    expect(reply.body).toMatchObject({ team_name: name, org_id: s.orgId, description: '', agent_count: 0, edge_count: 0 });
    expect(reply.body.team_id).toMatch(UUID);
    expect(typeof reply.body.engine_id).toBe('string');
    expect(reply.body.engine_id.length).toBeGreaterThan(0);
    expectIso(reply.body.created_at);
  });

  it('teams: POST with a description keeps it; 4,000 characters are fine and 4,001 are a 400', async () => {
    const team = await newTeam(s.orgId, { description: 'd'.repeat(4000) });
    expect(team.description).toBe('d'.repeat(4000));
    expectProblem(await api('POST', `/organizations/${s.orgId}/teams`, { body: { team_name: uniqueName('t'), description: 'd'.repeat(4001) } }), 400, 'invalid_request');
  });

  it('teams: POST with a name used in the organization gives 409 conflict with existing_id; another organization may reuse it', async () => {
    const team = await newTeam();
    const reply = await api('POST', `/organizations/${s.orgId}/teams`, { body: { team_name: team.team_name } });
    expectProblem(reply, 409, 'conflict');
    expect(reply.body.existing_id).toBe(team.team_id);
    const org = await newOrg();
    expectStatus(await api('POST', `/organizations/${org.org_id}/teams`, { body: { team_name: team.team_name } }), 201);
  });

  it('teams: GET list gives {teams} with every team of the organization', async () => {
    const team = await newTeam();
    const reply = await api('GET', `/organizations/${s.orgId}/teams`);
    expectStatus(reply, 200);
    expect(reply.body.teams.find((t: any) => t.team_id === team.team_id)).toMatchObject({ team_name: team.team_name, description: '', agent_count: 0, edge_count: 0 });
  });

  it('teams: GET one gives the team with its agents, humans, edges and active_thread_count', async () => {
    const reply = await api('GET', `/teams/${g.teamId}`);
    expectStatus(reply, 200);
    expect(reply.body).toMatchObject({ team_id: g.teamId, org_id: s.orgId, agent_count: 2, edge_count: 2, active_thread_count: 1 });
    expect(reply.body.agents.map((a: any) => a.agent_id).sort()).toEqual([g.a1, g.a2].sort());
    expect(reply.body.humans.map((h: any) => h.human_id)).toEqual([g.h1]);
    expect(reply.body.edges.map((e: any) => e.edge_id).sort()).toEqual([g.e1, g.e2].sort());
  });

  it('teams: PATCH changes team_name and description and gives 200 Team', async () => {
    const team = await newTeam();
    const name = uniqueName('renamed');
    const reply = await api('PATCH', `/teams/${team.team_id}`, { body: { team_name: name, description: 'now described' } });
    expectStatus(reply, 200);
    expect(reply.body).toMatchObject({ team_id: team.team_id, team_name: name, description: 'now described' });
    expect((await api('GET', `/teams/${team.team_id}`)).body).toMatchObject({ team_name: name, description: 'now described' });
  });

  it('teams: PATCH to a name used by another team gives 409 conflict with existing_id', async () => {
    const a = await newTeam();
    const b = await newTeam();
    const reply = await api('PATCH', `/teams/${b.team_id}`, { body: { team_name: a.team_name } });
    expectProblem(reply, 409, 'conflict');
    expect(reply.body.existing_id).toBe(a.team_id);
  });

  it('teams: PATCH with an unknown field or a wrong type gives 400 invalid_request', async () => {
    expectProblem(await api('PATCH', `/teams/${g.teamId}`, { body: { team_id: freshUuid() } }), 400, 'invalid_request');
    expectProblem(await api('PATCH', `/teams/${g.teamId}`, { body: { description: 5 } }), 400, 'invalid_request');
  });

  it('teams: deletion-preview counts what a DELETE would remove', async () => {
    const team = await newTeam();
    const a = await newAgent(team.team_id);
    const b = await newAgent(team.team_id);
    const h = await newHuman(team.team_id);
    const e1 = await newEdge(team.team_id, a.agent_id, h.human_id);
    const e2 = await newEdge(team.team_id, a.agent_id, b.agent_id);
    const t1 = await openThread(e1.edge_id, a.agent_id);
    await openThread(e2.edge_id, b.agent_id);
    await postMessage(t1.thread_id, h.human_id, 'reply');
    const reply = await api('GET', `/teams/${team.team_id}/deletion-preview`);
    expectStatus(reply, 200);
    expect(reply.body).toEqual(expect.objectContaining({ team_id: team.team_id, agents: 2, humans: 1, edges: 2, threads: 2, messages: 3, attachments: 0 }));
  });

  it('teams: deletion-preview counts the attachments of the team’s messages', async () => {
    const team = await newTeam();
    const a = await newAgent(team.team_id);
    const h = await newHuman(team.team_id);
    const e = await newEdge(team.team_id, a.agent_id, h.human_id);
    const t = await openThread(e.edge_id, a.agent_id);
    const att = await created('POST', '/attachments', { filename: 'n.txt', content_type: 'text/plain', data_base64: Buffer.from('note').toString('base64') });
    await postMessage(t.thread_id, h.human_id, 'see attached', { attachments: [att.attachment_id] });
    const reply = await api('GET', `/teams/${team.team_id}/deletion-preview`);
    expect(reply.body).toMatchObject({ messages: 2, attachments: 1 });
  });

  it('teams: DELETE removes the attachments of the team’s messages, as its preview announced', async () => {
    const team = await newTeam();
    const a = await newAgent(team.team_id);
    const h = await newHuman(team.team_id);
    const e = await newEdge(team.team_id, a.agent_id, h.human_id);
    const t = await openThread(e.edge_id, a.agent_id);
    const att = await created('POST', '/attachments', { filename: 'n.txt', content_type: 'text/plain', data_base64: Buffer.from('note').toString('base64') });
    await postMessage(t.thread_id, h.human_id, 'see attached', { attachments: [att.attachment_id] });
    expectStatus(await api('DELETE', `/teams/${team.team_id}`), 200);
    expectProblem(await api('GET', `/attachments/${att.attachment_id}`), 404, 'not_found');
  });

  it('teams: DELETE of a protected team, or of one with a protected agent, gives 409 deletion_protected until PATCH clears the flag', async () => {
    const guarded = await newTeam(s.orgId, { deletion_protection: true });
    expect(guarded.deletion_protection).toBe(true);
    expectProblem(await api('DELETE', `/teams/${guarded.team_id}`), 409, 'deletion_protected');
    expectStatus(await api('GET', `/teams/${guarded.team_id}`), 200);
    const team = await newTeam();
    const agent = await newAgent(team.team_id, { deletion_protection: true });
    expectProblem(await api('DELETE', `/teams/${team.team_id}`), 409, 'deletion_protected');
    expect((await api('GET', `/teams/${team.team_id}`)).body.agents.map((a: any) => a.agent_id)).toEqual([agent.agent_id]);
    expectStatus(await api('PATCH', `/agents/${agent.agent_id}`, { body: { deletion_protection: false } }), 200);
    expectStatus(await api('DELETE', `/teams/${team.team_id}`), 200);
    const patched = await api('PATCH', `/teams/${guarded.team_id}`, { body: { deletion_protection: false } });
    expect(patched.body.deletion_protection).toBe(false);
    expectStatus(await api('DELETE', `/teams/${guarded.team_id}`), 200);
  });

  it('teams: DELETE gives {deleted: true, team_id} and cascades to agents, humans, edges, threads and messages', async () => {
    const team = await newTeam();
    const a = await newAgent(team.team_id);
    const h = await newHuman(team.team_id);
    const e = await newEdge(team.team_id, a.agent_id, h.human_id);
    const t = await openThread(e.edge_id, a.agent_id);
    const before = (await api('GET', `/organizations/${s.orgId}`)).body;
    const reply = await api('DELETE', `/teams/${team.team_id}`);
    expectStatus(reply, 200);
    expect(reply.body).toEqual(expect.objectContaining({ deleted: true, team_id: team.team_id }));
    for (const path of [`/teams/${team.team_id}`, `/agents/${a.agent_id}`, `/humans/${h.human_id}`, `/edges/${e.edge_id}`, `/threads/${t.thread_id}`]) {
      expectProblem(await api('GET', path), 404, 'not_found');
    }
    const after = (await api('GET', `/organizations/${s.orgId}`)).body;
    expect(after.team_count).toBe(before.team_count - 1);
    expect(after.human_count).toBe(before.human_count - 1);
    expectProblem(await api('DELETE', `/teams/${team.team_id}`), 404, 'not_found');
  });
});

describe('agents', () => {
  it('agents: POST with only a name gives 201 with provider null, model null, status "active", description "" and instructions ""', async () => {
    const reply = await api('POST', `/teams/${g.teamId}/agents`, { body: { name: uniqueName('bare') } });
    expectStatus(reply, 201);
    expect(reply.body).toMatchObject({ team_id: g.teamId, provider: null, model: null, status: 'active', description: '', instructions: '' });
    expect(reply.body.agent_id).toMatch(UUID);
    expectIso(reply.body.created_at);
  });

  it('agents: POST with every field keeps them', async () => {
    const body = { name: uniqueName('full'), description: 'does things', provider: 'anthropic', model: 'claude-x', instructions: 'be brief', status: 'paused' };
    const reply = await api('POST', `/teams/${g.teamId}/agents`, { body });
    expectStatus(reply, 201);
    expect(reply.body).toMatchObject(body);
  });

  it('agents: POST with a status other than active or paused gives 400 invalid_request', async () => {
    expectProblem(await api('POST', `/teams/${g.teamId}/agents`, { body: { name: uniqueName('a'), status: 'sleeping' } }), 400, 'invalid_request');
  });

  it('agents: POST with a provider outside the provider list gives 400 invalid_request', async () => {
    expectProblem(await api('POST', `/teams/${g.teamId}/agents`, { body: { name: uniqueName('a'), provider: 'no-such-vendor' } }), 400, 'invalid_request');
  });

  it('agents: the team counts them', async () => {
    const team = await newTeam();
    await newAgent(team.team_id);
    expect((await api('GET', `/teams/${team.team_id}`)).body.agent_count).toBe(1);
  });

  it('agents: PATCH changes any field but the ids', async () => {
    const agent = await newAgent(g.teamId);
    const change = { name: uniqueName('patched'), description: 'new', provider: 'openai', model: 'gpt-x', instructions: 'new rules', status: 'paused' };
    const reply = await api('PATCH', `/agents/${agent.agent_id}`, { body: change });
    expectStatus(reply, 200);
    expect(reply.body).toMatchObject({ ...change, agent_id: agent.agent_id });
    const back = await api('PATCH', `/agents/${agent.agent_id}`, { body: { provider: null, model: null } });
    expect(back.body).toMatchObject({ provider: null, model: null });
    expectProblem(await api('PATCH', `/agents/${agent.agent_id}`, { body: { agent_id: freshUuid() } }), 400, 'invalid_request');
    expectProblem(await api('PATCH', `/agents/${agent.agent_id}`, { body: { team_id: freshUuid() } }), 400, 'invalid_request');
  });
});

describe('deletion protection of agents and humans', () => {
  it('agents and humans: deletion_protection is false unless set, and a protected one gives 409 deletion_protected on DELETE until PATCH clears it', async () => {
    const team = await newTeam();
    expect((await newAgent(team.team_id)).deletion_protection).toBe(false);
    expect((await newHuman(team.team_id)).deletion_protection).toBe(false);
    const agent = await newAgent(team.team_id, { deletion_protection: true });
    const human = await newHuman(team.team_id, { deletion_protection: true });
    for (const [path, id] of [[`/agents/${agent.agent_id}`, agent.agent_id], [`/humans/${human.human_id}`, human.human_id]] as const) {
      expectProblem(await api('DELETE', path), 409, 'deletion_protected');
      expect((await api('GET', path)).body.deletion_protection, path).toBe(true);
      const cleared = await api('PATCH', path, { body: { deletion_protection: false } });
      expectStatus(cleared, 200);
      expect(cleared.body.deletion_protection).toBe(false);
      const reply = await api('DELETE', path);
      expectStatus(reply, 200);
      expect(Object.values(reply.body)).toContain(id);
    }
  });
});

describe('humans', () => {
  it('humans: POST with only a name gives 201 with email null', async () => {
    const reply = await api('POST', `/teams/${g.teamId}/humans`, { body: { name: uniqueName('ann') } });
    expectStatus(reply, 201);
    expect(reply.body).toMatchObject({ team_id: g.teamId, email: null });
    expect(reply.body.human_id).toMatch(UUID);
    expectIso(reply.body.created_at);
  });

  it('humans: POST with an email keeps it', async () => {
    const human = await newHuman(g.teamId, { email: 'ann@example.com' });
    expect(human.email).toBe('ann@example.com');
  });

  it('humans: POST without a name gives 400 invalid_request at name', async () => {
    const reply = await api('POST', `/teams/${g.teamId}/humans`, { body: { email: 'x@example.com' } });
    expectProblem(reply, 400, 'invalid_request');
    expect(reply.body.errors.map((e: any) => e.path)).toContain('name');
  });

  it('humans: PATCH changes name and email, and refuses an agent field', async () => {
    const human = await newHuman(g.teamId, { email: 'bo@example.com' });
    const name = uniqueName('bob');
    const patched = await api('PATCH', `/humans/${human.human_id}`, { body: { name, email: null } });
    expectStatus(patched, 200);
    expect(patched.body).toMatchObject({ human_id: human.human_id, name, email: null });
    expectProblem(await api('PATCH', `/humans/${human.human_id}`, { body: { status: 'active' } }), 400, 'invalid_request');
  });
});

/** Agents and humans share one name space, the list, get and delete rules, and `in_use` (contract §2, §5). */
const participantKinds = [
  { kind: 'agent', plural: 'agents', idField: 'agent_id', create: newAgent, otherKind: newHuman, onEdge: () => g.a2 },
  { kind: 'human', plural: 'humans', idField: 'human_id', create: newHuman, otherKind: newAgent, onEdge: () => g.h1 },
] as const;

describe.each(participantKinds)('$plural', ({ kind, plural, idField, create, otherKind, onEdge }) => {
  it(`${plural}: POST with a name used by an agent or a human of the team gives 409 conflict with existing_id; another team may use it`, async () => {
    for (const holder of [await create(g.teamId), await otherKind(g.teamId)]) {
      const reply = await api('POST', `/teams/${g.teamId}/${plural}`, { body: { name: holder.name } });
      expectProblem(reply, 409, 'conflict');
      expect(reply.body.existing_id).toBe(holder.agent_id ?? holder.human_id);
    }
    const taken = await create(g.teamId);
    expectStatus(await api('POST', `/teams/${(await newTeam()).team_id}/${plural}`, { body: { name: taken.name } }), 201);
  });

  it(`${plural}: GET list gives {${plural}} and GET one the ${kind}`, async () => {
    const team = await newTeam();
    const participant = await create(team.team_id);
    const list = await api('GET', `/teams/${team.team_id}/${plural}`);
    expectStatus(list, 200);
    expect(list.body[plural]).toEqual([expect.objectContaining({ [idField]: participant[idField], name: participant.name })]);
    const one = await api('GET', `/${plural}/${participant[idField]}`);
    expectStatus(one, 200);
    expect(one.body).toEqual(participant);
  });

  it(`${plural}: PATCH to a name of another participant gives 409 conflict with existing_id`, async () => {
    const other = await otherKind(g.teamId);
    const participant = await create(g.teamId);
    const reply = await api('PATCH', `/${plural}/${participant[idField]}`, { body: { name: other.name } });
    expectProblem(reply, 409, 'conflict');
    expect(reply.body.existing_id).toBe(other.agent_id ?? other.human_id);
  });

  it(`${plural}: DELETE of a ${kind} on an edge gives 409 in_use; without edges it gives {deleted: true, ${idField}}`, async () => {
    expectProblem(await api('DELETE', `/${plural}/${onEdge()}`), 409, 'in_use');
    const free = await create(g.teamId);
    const reply = await api('DELETE', `/${plural}/${free[idField]}`);
    expectStatus(reply, 200);
    expect(reply.body).toEqual(expect.objectContaining({ deleted: true, [idField]: free[idField] }));
    expectProblem(await api('GET', `/${plural}/${free[idField]}`), 404, 'not_found');
  });
});

describe('edges', () => {
  it('edges: POST gives 201 with the participants in the order given, and the team counts it', async () => {
    const team = await newTeam();
    const a = await newAgent(team.team_id);
    const h = await newHuman(team.team_id);
    const reply = await api('POST', `/teams/${team.team_id}/edges`, { body: { participants: [h.human_id, a.agent_id] } });
    expectStatus(reply, 201);
    expect(reply.body).toMatchObject({ team_id: team.team_id, participants: [h.human_id, a.agent_id] });
    expect(reply.body.edge_id).toMatch(UUID);
    expectIso(reply.body.created_at);
    expect((await api('GET', `/teams/${team.team_id}`)).body.edge_count).toBe(1);
  });

  it('edges: POST joining a pair already joined, in either order, gives 409 conflict with existing_id', async () => {
    for (const participants of [[g.a1, g.a2], [g.a2, g.a1]]) {
      const reply = await api('POST', `/teams/${g.teamId}/edges`, { body: { participants } });
      expectProblem(reply, 409, 'conflict');
      expect(reply.body.existing_id).toBe(g.e2);
    }
  });

  it('edges: POST with a participant that does not exist gives 422 unknown_reference', async () => {
    expectProblem(await api('POST', `/teams/${g.teamId}/edges`, { body: { participants: [g.a1, freshUuid()] } }), 422, 'unknown_reference');
  });

  it('edges: POST with a participant of another team gives 422 unknown_reference (teams are isolated)', async () => {
    const other = await newTeam();
    const stranger = await newAgent(other.team_id);
    expectProblem(await api('POST', `/teams/${g.teamId}/edges`, { body: { participants: [g.a1, stranger.agent_id] } }), 422, 'unknown_reference');
  });

  it('edges: POST with one, three or twice the same participant gives 400 invalid_request', async () => {
    for (const participants of [[g.a1], [g.a1, g.a2, g.h1], [g.a1, g.a1]]) {
      expectProblem(await api('POST', `/teams/${g.teamId}/edges`, { body: { participants } }), 400, 'invalid_request');
    }
  });

  it('edges: GET list gives {edges} and GET one the edge', async () => {
    const list = await api('GET', `/teams/${g.teamId}/edges`);
    expectStatus(list, 200);
    expect(list.body.edges.map((e: any) => e.edge_id).sort()).toEqual([g.e1, g.e2].sort());
    const one = await api('GET', `/edges/${g.e1}`);
    expectStatus(one, 200);
    expect(one.body).toMatchObject({ edge_id: g.e1, team_id: g.teamId, participants: [g.a1, g.h1] });
  });

  it('edges: DELETE gives {deleted: true, edge_id} and cascades to its threads and messages', async () => {
    const team = await newTeam();
    const a = await newAgent(team.team_id);
    const h = await newHuman(team.team_id);
    const e = await newEdge(team.team_id, a.agent_id, h.human_id);
    const t = await openThread(e.edge_id, a.agent_id);
    const reply = await api('DELETE', `/edges/${e.edge_id}`);
    expectStatus(reply, 200);
    expect(reply.body).toEqual(expect.objectContaining({ deleted: true, edge_id: e.edge_id }));
    expectProblem(await api('GET', `/edges/${e.edge_id}`), 404, 'not_found');
    expectProblem(await api('GET', `/threads/${t.thread_id}`), 404, 'not_found');
    expect((await api('GET', `/teams/${team.team_id}/deletion-preview`)).body).toMatchObject({ edges: 0, threads: 0, messages: 0 });
    // with the edge gone, its participants are free to go
    expectStatus(await api('DELETE', `/agents/${a.agent_id}`), 200);
  });
});

describe('threads', () => {
  it('threads: POST gives 201 with message_count 1, unread_count 0, channel "web" and the team_id', async () => {
    const reply = await api('POST', `/edges/${g.e1}/threads`, { body: { sender_agent_id: g.a1, subject: 'Plans', content: 'hello' } });
    expectStatus(reply, 201);
    expect(reply.body).toMatchObject({ edge_id: g.e1, team_id: g.teamId, subject: 'Plans', message_count: 1, unread_count: 0, channel: 'web' });
    expect(reply.body.thread_id).toMatch(UUID);
    expectIso(reply.body.created_at);
  });

  it('threads: POST without a subject gives a string subject', async () => {
    const thread = await openThread(g.e1, g.h1);
    expect(typeof thread.subject).toBe('string');
  });

  it('threads: POST keeps a channel that matches ^[a-z][a-z0-9_-]{0,31}$ and rejects others with 400', async () => {
    expect((await openThread(g.e1, g.a1, { channel: 'imessage' })).channel).toBe('imessage');
    expect((await openThread(g.e1, g.a1, { channel: `a${'b'.repeat(31)}` })).channel).toBe(`a${'b'.repeat(31)}`);
    for (const channel of ['Web', '1abc', `a${'b'.repeat(32)}`, '', 'we b']) {
      expectProblem(await api('POST', `/edges/${g.e1}/threads`, { body: { sender_agent_id: g.a1, content: 'x', channel } }), 400, 'invalid_request');
    }
  });

  it('threads: POST with a subject over 200 characters or content empty or over 32,768 characters gives 400', async () => {
    expectStatus(await api('POST', `/edges/${g.e1}/threads`, { body: { sender_agent_id: g.a1, content: 'x', subject: 's'.repeat(200) } }), 201);
    expectProblem(await api('POST', `/edges/${g.e1}/threads`, { body: { sender_agent_id: g.a1, content: 'x', subject: 's'.repeat(201) } }), 400, 'invalid_request');
    expectProblem(await api('POST', `/edges/${g.e1}/threads`, { body: { sender_agent_id: g.a1, content: '' } }), 400, 'invalid_request');
    expectProblem(await api('POST', `/edges/${g.e1}/threads`, { body: { sender_agent_id: g.a1, content: '   ' } }), 400, 'invalid_request');
    expectProblem(await api('POST', `/edges/${g.e1}/threads`, { body: { sender_agent_id: g.a1, content: 'c'.repeat(32769) } }), 400, 'invalid_request');
    expectStatus(await api('POST', `/edges/${g.e1}/threads`, { body: { sender_agent_id: g.a1, content: 'c'.repeat(32768) } }), 201);
  });

  it('threads: POST by a sender who is not one of the edge’s participants gives 403 not_a_participant and opens nothing', async () => {
    const before = (await api('GET', `/edges/${g.e1}/threads`)).body.threads.length;
    expectProblem(await api('POST', `/edges/${g.e1}/threads`, { body: { sender_agent_id: g.a2, content: 'sneaky' } }), 403, 'not_a_participant');
    expect((await api('GET', `/edges/${g.e1}/threads`)).body.threads.length).toBe(before);
  });

  it('threads: POST without sender_agent_id or content gives 400 invalid_request listing both', async () => {
    const reply = await api('POST', `/edges/${g.e1}/threads`, { body: {} });
    expectProblem(reply, 400, 'invalid_request');
    expect(reply.body.errors.map((e: any) => e.path)).toEqual(expect.arrayContaining(['sender_agent_id', 'content']));
  });

  it('threads: GET list gives {threads}, newest first', async () => {
    const team = await newTeam();
    const a = await newAgent(team.team_id);
    const h = await newHuman(team.team_id);
    const e = await newEdge(team.team_id, a.agent_id, h.human_id);
    const opened = [];
    for (const subject of ['one', 'two', 'three']) opened.push(await openThread(e.edge_id, a.agent_id, { subject }));
    const reply = await api('GET', `/edges/${e.edge_id}/threads`);
    expectStatus(reply, 200);
    expect(reply.body.threads.map((t: any) => t.thread_id)).toEqual(opened.map((t) => t.thread_id).reverse());
    expect(reply.body.threads[0]).toMatchObject({ message_count: 1, unread_count: 0, team_id: team.team_id, edge_id: e.edge_id });
  });
});

describe('thread page', () => {
  let thread: any;
  let ids: string[];

  beforeAll(async () => {
    thread = await openThread(g.e1, g.a1, { content: 'm0', subject: 'paging' });
    for (let i = 1; i < 5; i++) await postMessage(thread.thread_id, i % 2 ? g.h1 : g.a1, `m${i}`);
    const all = await api('GET', `/threads/${thread.thread_id}`);
    ids = all.body.messages.map((m: any) => m.message_id);
  });

  it('thread page: GET gives the thread fields plus every message oldest first, has_more false and next_after the last id', async () => {
    const reply = await api('GET', `/threads/${thread.thread_id}`);
    expectStatus(reply, 200);
    expect(reply.body).toMatchObject({ thread_id: thread.thread_id, edge_id: g.e1, team_id: g.teamId, subject: 'paging', message_count: 5, channel: 'web' });
    expect(reply.body.messages.map((m: any) => m.content)).toEqual(['m0', 'm1', 'm2', 'm3', 'm4']);
    expect(reply.body.has_more).toBe(false);
    expect(reply.body.next_after).toBe(ids[4]);
  });

  it('thread page: limit and after walk forward with has_more and next_after', async () => {
    const p1 = await api('GET', `/threads/${thread.thread_id}?limit=2`);
    expect(p1.body.messages.map((m: any) => m.content)).toEqual(['m0', 'm1']);
    expect(p1.body).toMatchObject({ has_more: true, next_after: ids[1] });
    const p2 = await api('GET', `/threads/${thread.thread_id}?limit=2&after=${p1.body.next_after}`);
    expect(p2.body.messages.map((m: any) => m.content)).toEqual(['m2', 'm3']);
    expect(p2.body).toMatchObject({ has_more: true, next_after: ids[3] });
    const p3 = await api('GET', `/threads/${thread.thread_id}?limit=2&after=${p2.body.next_after}`);
    expect(p3.body.messages.map((m: any) => m.content)).toEqual(['m4']);
    expect(p3.body).toMatchObject({ has_more: false, next_after: ids[4] });
  });

  it('thread page: an empty page after the last message keeps next_after at the request’s after', async () => {
    const reply = await api('GET', `/threads/${thread.thread_id}?after=${ids[4]}`);
    expectStatus(reply, 200);
    expect(reply.body).toMatchObject({ messages: [], has_more: false, next_after: ids[4] });
  });

  it('thread page: /v1/threads/{thread_id} serves the same page', async () => {
    const long = await api('GET', `/threads/${thread.thread_id}?limit=3`);
    const short = await call(s.baseUrl, 'GET', `/v1/threads/${thread.thread_id}?limit=3`, { key: s.apiKey });
    expect(short.body).toEqual(long.body);
  });

  it('thread page: limit defaults to 50 and accepts 1 to 200', async () => {
    const t = await openThread(g.e2, g.a1, { content: 'c0' });
    for (let i = 1; i < 52; i++) await postMessage(t.thread_id, i % 2 ? g.a2 : g.a1, `c${i}`);
    const reply = await api('GET', `/threads/${t.thread_id}`);
    expect(reply.body.messages.length).toBe(50);
    expect(reply.body.has_more).toBe(true);
    expect((await api('GET', `/threads/${t.thread_id}?limit=200`)).body.messages.length).toBe(52);
    expect((await api('GET', `/threads/${t.thread_id}?limit=1`)).body.messages.length).toBe(1);
  });

  it('thread page: limit 0, 201 or not a number and wait outside 0–30 give 400 invalid_request', async () => {
    for (const q of ['limit=0', 'limit=201', 'limit=abc', 'limit=-1', 'wait=31', 'wait=-1', 'wait=soon']) {
      expectProblem(await api('GET', `/threads/${thread.thread_id}?${q}`), 400, 'invalid_request');
    }
  });

  it('thread page: an after that names no message of this thread gives 400 invalid_cursor', async () => {
    expectProblem(await api('GET', `/threads/${thread.thread_id}?after=${freshUuid()}`), 400, 'invalid_cursor');
    expectProblem(await api('GET', `/threads/${thread.thread_id}?after=${g.messageId}`), 400, 'invalid_cursor');
  });

  it('thread page: wait holds the request until a message is appended and then returns it', async () => {
    const t = await openThread(g.e1, g.a1, { content: 'before' });
    const first = (await api('GET', `/threads/${t.thread_id}`)).body.next_after;
    const polled = api('GET', `/threads/${t.thread_id}?after=${first}&wait=20`);
    await new Promise((r) => setTimeout(r, 300));
    await postMessage(t.thread_id, g.h1, 'arrived');
    const reply = await polled;
    expectStatus(reply, 200);
    expect(reply.body.messages.map((m: any) => m.content)).toEqual(['arrived']);
  });

  it('thread page: wait that runs out gives an empty page with next_after equal to after', async () => {
    const reply = await api('GET', `/threads/${thread.thread_id}?after=${ids[4]}&wait=1`);
    expectStatus(reply, 200);
    expect(reply.body).toMatchObject({ messages: [], has_more: false, next_after: ids[4] });
  });
});

describe('messages', () => {
  it('messages: POST gives 201 Message with sender_id, attachments [] and the content as given (Markdown kept)', async () => {
    const thread = await openThread(g.e1, g.a1);
    const content = '# Title\n\n- *one*\n- `two`\n\n```js\nx()\n```';
    const reply = await api('POST', `/threads/${thread.thread_id}/messages`, { body: { sender_agent_id: g.h1, content } });
    expectStatus(reply, 201);
    expect(reply.body).toMatchObject({ thread_id: thread.thread_id, sender_id: g.h1, content, attachments: [] });
    expect(reply.body.message_id).toMatch(UUID);
    expectIso(reply.body.sent_at);
    expect(reply.body.sender_agent_id).toBeUndefined();
    const page = await api('GET', `/threads/${thread.thread_id}`);
    expect(page.body.message_count).toBe(2);
    expect(page.body.messages[1]).toMatchObject({ message_id: reply.body.message_id, content, sender_id: g.h1 });
  });

  it('messages: POST by a sender not on the edge gives 403 not_a_participant and appends nothing', async () => {
    const thread = await openThread(g.e1, g.a1);
    expectProblem(await api('POST', `/threads/${thread.thread_id}/messages`, { body: { sender_agent_id: g.a2, content: 'hi' } }), 403, 'not_a_participant');
    expect((await api('GET', `/threads/${thread.thread_id}`)).body.message_count).toBe(1);
  });

  it('messages: POST naming an attachment that does not exist gives 422 unknown_reference', async () => {
    expectProblem(await api('POST', `/threads/${g.threadId}/messages`, { body: { sender_agent_id: g.a1, content: 'x', attachments: [freshUuid()] } }), 422, 'unknown_reference');
  });

  it('messages: POST with empty content, content over 32,768 characters, or attachments not an array of strings gives 400', async () => {
    for (const body of [
      { sender_agent_id: g.a1, content: '' },
      { sender_agent_id: g.a1, content: 'c'.repeat(32769) },
      { sender_agent_id: g.a1, content: 'x', attachments: 'nope' },
      { sender_agent_id: g.a1, content: 'x', attachments: [1] },
    ]) {
      expectProblem(await api('POST', `/threads/${g.threadId}/messages`, { body }), 400, 'invalid_request');
    }
  });
});

describe('attachments', () => {
  const bytes = Buffer.from([0, 1, 2, 250, 251, 252, 253, 254, 255, 10, 13]);

  it('attachments: POST gives 201 Attachment with size_bytes of the decoded data', async () => {
    const reply = await api('POST', '/attachments', { body: { filename: 'blob.bin', content_type: 'application/octet-stream', data_base64: bytes.toString('base64') } });
    expectStatus(reply, 201);
    expect(reply.body).toMatchObject({ filename: 'blob.bin', content_type: 'application/octet-stream', size_bytes: bytes.length });
    expect(reply.body.attachment_id).toMatch(UUID);
    expectIso(reply.body.created_at);
  });

  it('attachments: GET gives the metadata and GET content the bytes with their Content-Type', async () => {
    const att = await created('POST', '/attachments', { filename: 'pic.png', content_type: 'image/png', data_base64: bytes.toString('base64') });
    const meta = await api('GET', `/attachments/${att.attachment_id}`);
    expectStatus(meta, 200);
    expect(meta.body).toEqual(att);
    const response = await fetch(`${s.baseUrl}/api/v1/attachments/${att.attachment_id}/content`, { headers: { 'x-api-key': s.apiKey } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^image\/png/);
    expect(Buffer.from(await response.arrayBuffer())).toEqual(bytes);
  });

  it('attachments: a message may name uploaded attachments and lists their ids', async () => {
    const att = await created('POST', '/attachments', { filename: 'a.txt', content_type: 'text/plain', data_base64: Buffer.from('hello').toString('base64') });
    const message = await postMessage(g.threadId, g.a1, 'with file', { attachments: [att.attachment_id] });
    expect(message.attachments).toEqual([att.attachment_id]);
    const page = await api('GET', `/threads/${g.threadId}?after=${g.messageId}&limit=200`);
    expect(page.body.messages.find((m: any) => m.message_id === message.message_id).attachments).toEqual([att.attachment_id]);
  });

  it('attachments: POST with data that is not base64 or without a required field gives 400 invalid_request', async () => {
    expectProblem(await api('POST', '/attachments', { body: { filename: 'a', content_type: 'text/plain', data_base64: '***not base64***' } }), 400, 'invalid_request');
    const reply = await api('POST', '/attachments', { body: { filename: 'a' } });
    expectProblem(reply, 400, 'invalid_request');
    expect(reply.body.errors.map((e: any) => e.path)).toEqual(expect.arrayContaining(['content_type', 'data_base64']));
  });

  it('attachments: a 2 MiB file is accepted (this route’s body limit is 8 MiB, not 1 MiB)', async () => {
    const data = Buffer.alloc(2 * 1024 * 1024, 7);
    const reply = await api('POST', '/attachments', { body: { filename: 'big.bin', content_type: 'application/octet-stream', data_base64: data.toString('base64') } });
    expectStatus(reply, 201);
    expect(reply.body.size_bytes).toBe(data.length);
  });

  it('attachments: data over 5 MiB decoded is refused with 400 invalid_request or 413 payload_too_large', async () => {
    const data = Buffer.alloc(5 * 1024 * 1024 + 1, 1);
    const reply = await api('POST', '/attachments', { body: { filename: 'huge.bin', content_type: 'application/octet-stream', data_base64: data.toString('base64') } });
    expect([400, 413]).toContain(reply.status);
    expectProblem(reply, reply.status, reply.status === 400 ? 'invalid_request' : 'payload_too_large');
  });

  it('attachments: a body over 8 MiB gets 413 payload_too_large', async () => {
    const data = Buffer.alloc(6 * 1024 * 1024 + 512 * 1024, 1);
    const reply = await api('POST', '/attachments', { body: { filename: 'huge.bin', content_type: 'application/octet-stream', data_base64: data.toString('base64') } });
    expectProblem(reply, 413, 'payload_too_large');
  });
});

describe('provider keys', () => {
  let orgId: string;
  beforeAll(async () => {
    orgId = (await newOrg()).org_id;
  });

  it('provider keys: PUT gives 200 {provider, key_hint, updated_at} with the last 4 characters and never the key', async () => {
    const secret = `sk-conformance-${crypto.randomUUID()}-WXYZ`;
    secrets.push(secret);
    const reply = await api('PUT', `/organizations/${orgId}/api-keys/openai`, { body: { api_key: secret } });
    expectStatus(reply, 200);
    expect(reply.body).toMatchObject({ provider: 'openai', key_hint: 'WXYZ' });
    expectIso(reply.body.updated_at);
    expect(reply.text).not.toContain(secret);
    expect(reply.body.api_key).toBeUndefined();
  });

  it('provider keys: the unprefixed PUT /organizations/{org_id}/api-keys/{provider} works the same', async () => {
    const secret = `anthropic-secret-${crypto.randomUUID()}-abcd`;
    secrets.push(secret);
    const reply = await call(s.baseUrl, 'PUT', `/organizations/${orgId}/api-keys/anthropic`, { key: s.apiKey, body: { api_key: secret } });
    expectStatus(reply, 200);
    expect(reply.body).toMatchObject({ provider: 'anthropic', key_hint: 'abcd' });
    expect(reply.text).not.toContain(secret);
  });

  it('provider keys: every provider of the list is accepted, under /api/v1 and /v1', async () => {
    for (const provider of ['openai', 'anthropic', 'google', 'mistral', 'groq', 'openrouter', 'echo']) {
      const secret = `key-${provider}-${crypto.randomUUID()}`;
      secrets.push(secret);
      expectStatus(await call(s.baseUrl, 'PUT', `/v1/organizations/${orgId}/api-keys/${provider}`, { key: s.apiKey, body: { api_key: secret } }), 200);
    }
  });

  it('provider keys: GET gives {provider_keys} with hints and no key values', async () => {
    const reply = await api('GET', `/organizations/${orgId}/api-keys`);
    expectStatus(reply, 200);
    expect(reply.body.provider_keys.map((k: any) => k.provider).sort()).toEqual(['anthropic', 'echo', 'google', 'groq', 'mistral', 'openai', 'openrouter']);
    for (const k of reply.body.provider_keys) {
      expect(k.key_hint).toHaveLength(4);
      expect(k.api_key).toBeUndefined();
      expectIso(k.updated_at);
    }
    for (const secret of secrets) expect(reply.text).not.toContain(secret);
  });

  it('provider keys: PUT again replaces the key and its hint', async () => {
    const secret = `replaced-${crypto.randomUUID()}-9876`;
    secrets.push(secret);
    await api('PUT', `/organizations/${orgId}/api-keys/groq`, { body: { api_key: secret } });
    const list = await api('GET', `/organizations/${orgId}/api-keys`);
    expect(list.body.provider_keys.filter((k: any) => k.provider === 'groq')).toEqual([expect.objectContaining({ key_hint: '9876' })]);
  });

  it('provider keys: an unknown provider gets 400 on PUT and DELETE', async () => {
    expectProblem(await api('PUT', `/organizations/${orgId}/api-keys/acme-llm`, { body: { api_key: 'whatever-key' } }), 400, 'invalid_request');
    expectProblem(await call(s.baseUrl, 'PUT', `/organizations/${orgId}/api-keys/acme-llm`, { key: s.apiKey, body: { api_key: 'whatever-key' } }), 400, 'invalid_request');
    expectProblem(await api('DELETE', `/organizations/${orgId}/api-keys/acme-llm`), 400, 'invalid_request');
  });

  it('provider keys: PUT with an empty, missing or non-string api_key gives 400 invalid_request', async () => {
    for (const body of [{ api_key: '' }, {}, { api_key: 42 }, { api_key: 'k', extra: 1 }]) {
      expectProblem(await api('PUT', `/organizations/${orgId}/api-keys/openai`, { body }), 400, 'invalid_request');
    }
  });

  it('provider keys: DELETE gives {deleted: true, provider}; the key is gone from the list and a second DELETE is 404', async () => {
    const reply = await api('DELETE', `/organizations/${orgId}/api-keys/mistral`);
    expectStatus(reply, 200);
    expect(reply.body).toEqual(expect.objectContaining({ deleted: true, provider: 'mistral' }));
    const list = await api('GET', `/organizations/${orgId}/api-keys`);
    expect(list.body.provider_keys.map((k: any) => k.provider)).not.toContain('mistral');
    expectProblem(await api('DELETE', `/organizations/${orgId}/api-keys/mistral`), 404, 'not_found');
  });
});

describe('organization keys', () => {
  it('organization keys: POST gives 201 with key_id, prefix (first 12 characters), expires_at null and api_key once', async () => {
    const reply = await api('POST', `/organizations/${s.orgId}/keys`, { body: { name: 'ci' } });
    expectStatus(reply, 201);
    secrets.push(reply.body.api_key);
    expect(reply.body).toMatchObject({ name: 'ci', expires_at: null });
    expect(reply.body.key_id).toMatch(UUID);
    expect(reply.body.api_key).toMatch(/^acs_org_[0-9A-Za-z]{32,}$/);
    expect(reply.body.prefix).toBe(reply.body.api_key.slice(0, 12));
    expectIso(reply.body.created_at);
    expect(reply.body.last_used_at === null || ISO_MS_Z.test(reply.body.last_used_at)).toBe(true);
    expectStatus(await api('GET', '/organizations', { key: reply.body.api_key }), 200);
  });

  it('organization keys: POST with no body fields and with an expires_at keeps them', async () => {
    const bare = await api('POST', `/organizations/${s.orgId}/keys`, { body: {} });
    expectStatus(bare, 201);
    secrets.push(bare.body.api_key);
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const dated = await api('POST', `/organizations/${s.orgId}/keys`, { body: { name: 'dated', expires_at: expiresAt } });
    expectStatus(dated, 201);
    secrets.push(dated.body.api_key);
    expect(dated.body.expires_at).toBe(expiresAt);
    expectProblem(await api('POST', `/organizations/${s.orgId}/keys`, { body: { expires_at: 'tomorrow' } }), 400, 'invalid_request');
  });

  it('organization keys: GET gives {keys} with prefixes and never a secret; last_used_at is set once a key is used', async () => {
    const made = await created('POST', `/organizations/${s.orgId}/keys`, { name: 'listed' });
    secrets.push(made.api_key);
    await api('GET', '/organizations', { key: made.api_key });
    const reply = await api('GET', `/organizations/${s.orgId}/keys`);
    expectStatus(reply, 200);
    const mine = reply.body.keys.find((k: any) => k.key_id === made.key_id);
    expect(mine).toMatchObject({ name: 'listed', prefix: made.prefix });
    expect(mine.last_used_at).toMatch(ISO_MS_Z);
    for (const k of reply.body.keys) expect(k.api_key).toBeUndefined();
    for (const secret of secrets) expect(reply.text).not.toContain(secret);
  });

  it('organization keys: rotate gives 201 with a new api_key and sets the old key’s expires_at a day ahead by default; both work meanwhile', async () => {
    const old = await created('POST', `/organizations/${s.orgId}/keys`, { name: 'to-rotate' });
    secrets.push(old.api_key);
    const startedAt = Date.now();
    const reply = await api('POST', `/organizations/${s.orgId}/keys/${old.key_id}/rotate`, { body: {} });
    expectStatus(reply, 201);
    secrets.push(reply.body.api_key);
    expect(reply.body.api_key).toMatch(/^acs_org_[0-9A-Za-z]{32,}$/);
    expect(reply.body.key_id).not.toBe(old.key_id);
    const list = await api('GET', `/organizations/${s.orgId}/keys`);
    const oldNow = list.body.keys.find((k: any) => k.key_id === old.key_id);
    expect(oldNow.expires_at).toMatch(ISO_MS_Z);
    const expires = Date.parse(oldNow.expires_at);
    expect(expires).toBeGreaterThanOrEqual(startedAt + 86_400_000 - 60_000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 86_400_000 + 60_000);
    expectStatus(await api('GET', '/organizations', { key: old.api_key }), 200);
    expectStatus(await api('GET', '/organizations', { key: reply.body.api_key }), 200);
  });

  it('organization keys: rotate with grace_seconds 0 revokes the old key at once', async () => {
    const old = await created('POST', `/organizations/${s.orgId}/keys`, { name: 'rotate-now' });
    secrets.push(old.api_key);
    const reply = await api('POST', `/organizations/${s.orgId}/keys/${old.key_id}/rotate`, { body: { grace_seconds: 0 } });
    expectStatus(reply, 201);
    secrets.push(reply.body.api_key);
    expectProblem(await api('GET', '/organizations', { key: old.api_key }), 401, 'invalid_api_key');
    expectStatus(await api('GET', '/organizations', { key: reply.body.api_key }), 200);
    // leave room under key_limit for the tests that follow
    expectStatus(await api('DELETE', `/organizations/${s.orgId}/keys/${reply.body.key_id}`), 200);
  });

  it('organization keys: rotate with a negative or non-integer grace_seconds gives 400 invalid_request', async () => {
    const k = await created('POST', `/organizations/${s.orgId}/keys`, { name: 'bad-grace' });
    secrets.push(k.api_key);
    for (const grace_seconds of [-1, 'soon', 1.5]) {
      expectProblem(await api('POST', `/organizations/${s.orgId}/keys/${k.key_id}/rotate`, { body: { grace_seconds } }), 400, 'invalid_request');
    }
    expectStatus(await api('DELETE', `/organizations/${s.orgId}/keys/${k.key_id}`), 200);
  });

  it('organization keys: DELETE gives {revoked: true, key_id} and the key then gets 401 invalid_api_key', async () => {
    const k = await created('POST', `/organizations/${s.orgId}/keys`, { name: 'doomed' });
    secrets.push(k.api_key);
    const reply = await api('DELETE', `/organizations/${s.orgId}/keys/${k.key_id}`);
    expectStatus(reply, 200);
    expect(reply.body).toEqual(expect.objectContaining({ revoked: true, key_id: k.key_id }));
    expectProblem(await api('GET', '/organizations', { key: k.api_key }), 401, 'invalid_api_key');
  });

  it('organization keys: revoking the organization’s last active key gives 409 last_key', async () => {
    const org = await newOrg();
    const first = await created('POST', `/organizations/${org.org_id}/keys`, { name: 'only' });
    secrets.push(first.api_key);
    const listed = (await api('GET', `/organizations/${org.org_id}/keys`)).body.keys.filter((k: any) => k.expires_at === null || Date.parse(k.expires_at) > Date.now());
    for (const k of listed.slice(1)) expectStatus(await api('DELETE', `/organizations/${org.org_id}/keys/${k.key_id}`), 200);
    expectProblem(await api('DELETE', `/organizations/${org.org_id}/keys/${listed[0].key_id}`), 409, 'last_key');
  });

  it('organization keys: an 11th active key gives 409 key_limit', async () => {
    const org = await newOrg();
    let active = (await api('GET', `/organizations/${org.org_id}/keys`)).body.keys?.length ?? 0;
    while (active < 10) {
      const k = await created('POST', `/organizations/${org.org_id}/keys`, { name: `k${active}` });
      secrets.push(k.api_key);
      active++;
    }
    expectProblem(await api('POST', `/organizations/${org.org_id}/keys`, { body: { name: 'one-too-many' } }), 409, 'key_limit');
  });

  it('organization keys: rotate or DELETE of a key id that names nothing gives 404 not_found', async () => {
    expectProblem(await api('POST', `/organizations/${s.orgId}/keys/${freshUuid()}/rotate`, { body: {} }), 404, 'not_found');
    expectProblem(await api('DELETE', `/organizations/${s.orgId}/keys/${freshUuid()}`), 404, 'not_found');
  });
});

describe('MCP keys', () => {
  let mcp: any;
  beforeAll(async () => {
    const reply = await api('POST', `/agents/${g.a1}/mcp-keys`);
    mcp = reply.status === 201 ? reply.body : undefined;
    if (mcp?.mcp_key) secrets.push(mcp.mcp_key);
  });

  it('MCP keys: POST gives 201 with key_id, agent_id, prefix and mcp_key once', () => {
    expect(mcp, 'POST /agents/{agent_id}/mcp-keys did not give 201').toBeDefined();
    expect(mcp).toMatchObject({ agent_id: g.a1 });
    expect(mcp.key_id).toMatch(UUID);
    expect(mcp.mcp_key).toMatch(/^acs_mcp_/);
    expect(mcp.prefix).toBe(mcp.mcp_key.slice(0, 12));
    expectIso(mcp.created_at);
  });

  it('MCP keys: GET gives {mcp_keys} without secrets', async () => {
    const reply = await api('GET', `/agents/${g.a1}/mcp-keys`);
    expectStatus(reply, 200);
    expect(reply.body.mcp_keys.map((k: any) => k.key_id)).toContain(mcp?.key_id);
    for (const k of reply.body.mcp_keys) expect(k.mcp_key).toBeUndefined();
    for (const secret of secrets) expect(reply.text).not.toContain(secret);
  });

  it('MCP keys: an MCP key on a REST route gets 403 wrong_key_type', async () => {
    expectProblem(await api('GET', '/organizations', { key: mcp?.mcp_key ?? 'acs_mcp_missing' }), 403, 'wrong_key_type');
  });

  it.skipIf(!MCP_ENDPOINT_BUILT)('MCP keys: an organization key on the MCP endpoint gets 403 wrong_key_type, and no key gets 401', async () => {
    const rpc = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    const headers = { accept: 'application/json, text/event-stream' };
    expectProblem(await api('POST', '/mcp', { body: rpc, headers }), 403, 'wrong_key_type');
    expectProblem(await api('POST', '/mcp', { key: null, body: rpc, headers }), 401, 'unauthenticated');
    expectProblem(await api('POST', '/mcp', { key: 'acs_mcp_nope', body: rpc, headers }), 401, 'invalid_api_key');
  });

  it.skipIf(!MCP_ENDPOINT_BUILT)('MCP keys: DELETE gives {revoked: true, key_id} and the key then gets 401 invalid_api_key on the MCP endpoint', async () => {
    const k = await created('POST', `/agents/${g.a2}/mcp-keys`);
    secrets.push(k.mcp_key);
    const reply = await api('DELETE', `/agents/${g.a2}/mcp-keys/${k.key_id}`);
    expectStatus(reply, 200);
    expect(reply.body).toEqual(expect.objectContaining({ revoked: true, key_id: k.key_id }));
    const rpc = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    expectProblem(await api('POST', '/mcp', { key: k.mcp_key, body: rpc, headers: { accept: 'application/json, text/event-stream' } }), 401, 'invalid_api_key');
  });

  it('MCP keys: DELETE of a key of another agent gives 404 not_found', async () => {
    expectProblem(await api('DELETE', `/agents/${g.a2}/mcp-keys/${mcp?.key_id ?? freshUuid()}`), 404, 'not_found');
  });
});

describe('MCP endpoint', () => {
  it.skipIf(!MCP_ENDPOINT_BUILT)('MCP endpoint: with an MCP key, initialize answers a JSON-RPC result and tools/list offers the seven tools of §7 and the four task tools of §12', async () => {
    const k = await created('POST', `/agents/${g.a1}/mcp-keys`);
    secrets.push(k.mcp_key);
    const headers = { accept: 'application/json, text/event-stream' };
    const init = await api('POST', '/mcp', {
      key: k.mcp_key,
      headers,
      body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'conformance', version: '1' } } },
    });
    expectStatus(init, 200);
    expect(init.body).toMatchObject({ jsonrpc: '2.0', id: 1, result: expect.objectContaining({ serverInfo: expect.any(Object) }) });
    const session = init.headers.get('mcp-session-id');
    const extra = { ...headers, ...(session ? { 'mcp-session-id': session } : {}), 'mcp-protocol-version': init.body.result.protocolVersion };
    await api('POST', '/mcp', { key: k.mcp_key, headers: extra, body: { jsonrpc: '2.0', method: 'notifications/initialized' } });
    const list = await api('POST', '/mcp', { key: k.mcp_key, headers: extra, body: { jsonrpc: '2.0', id: 2, method: 'tools/list' } });
    expectStatus(list, 200);
    expect(list.body.result.tools.map((t: any) => t.name).sort()).toEqual(
      ['add_artifact', 'get_task', 'list_edges', 'list_tasks', 'list_threads', 'open_thread', 'read_thread', 'send_message', 'update_task', 'wait_for_messages', 'whoami'],
    );
  });
});

describe('access requests', () => {
  it('access requests: POST without a key gives 202 {request_id, status: "pending"}', async () => {
    const reply = await api('POST', '/access-requests', { key: null, body: { email: 'new@example.com', org_name: 'Newco', intended_use: 'We want our agents to talk.' } });
    expectStatus(reply, 202);
    expect(reply.body).toMatchObject({ status: 'pending' });
    expect(reply.body.request_id).toMatch(UUID);
  });

  it('access requests: POST without email, org_name or intended_use gives 400 invalid_request listing each', async () => {
    const reply = await api('POST', '/access-requests', { key: null, body: {} });
    expectProblem(reply, 400, 'invalid_request');
    expect(reply.body.errors.map((e: any) => e.path)).toEqual(expect.arrayContaining(['email', 'org_name', 'intended_use']));
  });
});

describe('idempotency', () => {
  it('idempotency: a repeated POST with the same Idempotency-Key and body replays the first response with Idempotent-Replayed: true and creates nothing', async () => {
    const key = `idem-${crypto.randomUUID()}`;
    const body = { team_name: uniqueName('idem') };
    const first = await api('POST', `/organizations/${s.orgId}/teams`, { body, headers: { 'Idempotency-Key': key } });
    expectStatus(first, 201);
    expect(first.headers.get('idempotent-replayed')).not.toBe('true');
    const again = await api('POST', `/organizations/${s.orgId}/teams`, { body, headers: { 'Idempotency-Key': key } });
    expectStatus(again, 201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    const teams = (await api('GET', `/organizations/${s.orgId}/teams`)).body.teams.filter((t: any) => t.team_name === body.team_name);
    expect(teams).toHaveLength(1);
  });

  it('idempotency: a repeated Idempotency-Key with a different body gets 422 idempotency_key_mismatch', async () => {
    const key = `idem-${crypto.randomUUID()}`;
    expectStatus(await api('POST', `/organizations/${s.orgId}/teams`, { body: { team_name: uniqueName('a') }, headers: { 'Idempotency-Key': key } }), 201);
    expectProblem(await api('POST', `/organizations/${s.orgId}/teams`, { body: { team_name: uniqueName('b') }, headers: { 'Idempotency-Key': key } }), 422, 'idempotency_key_mismatch');
  });

  it('idempotency: the same Idempotency-Key on another route is a different request', async () => {
    const key = `idem-${crypto.randomUUID()}`;
    expectStatus(await api('POST', `/organizations/${s.orgId}/teams`, { body: { team_name: uniqueName('r1') }, headers: { 'Idempotency-Key': key } }), 201);
    const other = await api('POST', '/organizations', { body: { org_name: uniqueName('r2') }, headers: { 'Idempotency-Key': key } });
    expectStatus(other, 201);
    expect(other.headers.get('idempotent-replayed')).not.toBe('true');
  });

  it('idempotency: a replayed thread opening and message post create one thread and one message', async () => {
    const key = `idem-${crypto.randomUUID()}`;
    const body = { sender_agent_id: g.a1, content: 'once only' };
    const first = await api('POST', `/edges/${g.e2}/threads`, { body, headers: { 'Idempotency-Key': key } });
    const again = await api('POST', `/edges/${g.e2}/threads`, { body, headers: { 'Idempotency-Key': key } });
    expectStatus(again, 201);
    expect(again.body.thread_id).toBe(first.body.thread_id);
    const mkey = `idem-${crypto.randomUUID()}`;
    const m1 = await api('POST', `/threads/${first.body.thread_id}/messages`, { body: { sender_agent_id: g.a2, content: 'reply once' }, headers: { 'Idempotency-Key': mkey } });
    const m2 = await api('POST', `/threads/${first.body.thread_id}/messages`, { body: { sender_agent_id: g.a2, content: 'reply once' }, headers: { 'Idempotency-Key': mkey } });
    expect(m2.headers.get('idempotent-replayed')).toBe('true');
    expect(m2.body).toEqual(m1.body);
    expect((await api('GET', `/threads/${first.body.thread_id}`)).body.message_count).toBe(2);
  });

  it('idempotency: an Idempotency-Key of 256 characters or an empty one gets 400 invalid_request', async () => {
    expectProblem(await api('POST', `/organizations/${s.orgId}/teams`, { body: { team_name: uniqueName('k') }, headers: { 'Idempotency-Key': 'k'.repeat(256) } }), 400, 'invalid_request');
    expectStatus(await api('POST', `/organizations/${s.orgId}/teams`, { body: { team_name: uniqueName('k') }, headers: { 'Idempotency-Key': 'k'.repeat(255) } }), 201);
  });
});

describe('secrets', () => {
  it('secrets: the server output never contains an organization, MCP or provider key', () => {
    const output = s.output();
    for (const secret of secrets) expect(output.includes(secret), `server output contains a secret starting ${secret.slice(0, 10)}`).toBe(false);
  });
});

// Last: it spends one key's whole budget.
describe('rate limiting', () => {
  it('rate limiting: the 1,201st request of a key within a minute gets 429 rate_limited with Retry-After', async () => {
    const k = await created('POST', `/organizations/${s.orgId}/keys`, { name: 'burst' });
    secrets.push(k.api_key);
    let limited: Reply | undefined;
    for (let sent = 0; sent < 1300 && !limited; sent += 50) {
      const batch = await Promise.all(Array.from({ length: 50 }, () => api('GET', `/organizations/${s.orgId}`, { key: k.api_key })));
      limited = batch.find((r) => r.status === 429);
      if (!limited) expect(batch.every((r) => r.status === 200)).toBe(true);
      if (sent + 50 < 1200) expect(limited, `429 after only ${sent + 50} requests`).toBeUndefined();
    }
    expect(limited, 'no 429 after 1,300 requests').toBeDefined();
    expectProblem(limited!, 429, 'rate_limited');
    expect(limited!.headers.get('retry-after')).toMatch(/^\d+$/);
    // another key is not affected
    expectStatus(await api('GET', '/organizations'), 200);
  });
});

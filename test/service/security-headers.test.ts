/**
 * Contract §14's headers: with an https public URL every response carries
 * `Strict-Transport-Security`; every answer that carries a secret (organization and MCP keys,
 * webhook secrets, sign-in links, keys an operator issues) or a session's CSRF token carries
 * `Cache-Control: no-store`, its Idempotency-Key replay included, and the OpenAPI document says
 * so for each of those operations.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startHarness, type Harness, type Reply } from './helpers.ts';
import { signInWithLink } from '../support/sign-in-link.ts';

const adminToken = `admin-${crypto.randomUUID()}`;
const hsts = 'max-age=31536000';

let secure: Harness;
let plain: Harness;
beforeAll(async () => {
  secure = await startHarness({ inMemory: true, publicUrl: 'https://console.example.test', adminToken, webhooks: { allowPrivate: true }, rateLimit: { max: 40, windowMs: 60_000 } });
  plain = await startHarness({ inMemory: true, adminToken, webhooks: { allowPrivate: true } });
});
afterAll(async () => {
  await secure?.server.close();
  await plain?.server.close();
});

/** A team with dana (a human) and scout (an external agent) on an edge; `dana`'s session on `h`. */
async function world(h: Harness): Promise<{ teamId: string; dana: string; scout: string; session: { cookie: string; csrf: string } }> {
  const teamId = (await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: `t-${crypto.randomUUID().slice(0, 8)}` })).body.team_id;
  const dana = (await h.call('POST', `/api/v1/teams/${teamId}/humans`, { name: 'dana' })).body.human_id;
  const scout = (await h.call('POST', `/api/v1/teams/${teamId}/agents`, { name: 'scout' })).body.agent_id;
  await h.call('POST', `/api/v1/teams/${teamId}/edges`, { participants: [dana, scout] });
  const link = (await h.call('POST', `/api/v1/humans/${dana}/sign-in-links`, {})).body.url;
  const { cookie } = await signInWithLink(link, { base: h.server.url });
  const me = await request(`${h.server.url}/api/v1/me`, 'GET', undefined, { cookie: cookie! });
  return { teamId, dana, scout, session: { cookie: cookie!, csrf: me.body.csrf_token } };
}

describe('Strict-Transport-Security', () => {
  it('headers: with an https public URL every response carries Strict-Transport-Security: max-age=31536000 — routed, refused, unrouted, malformed, pages, streams', async () => {
    const h = secure;
    const url = h.server.url;
    const { session } = await world(h);
    const checked: Array<[string, Response | Reply]> = [
      ['health', await fetch(`${url}/healthz`)],
      ['a keyed route', await h.call('GET', '/api/v1/organizations')],
      ['no key (401)', await request(`${url}/api/v1/organizations`, 'GET')],
      ['bad JSON (400)', await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, '{oops')],
      ['no route (404)', await request(`${url}/api/v1/nothing-here`, 'GET')],
      ['wrong method (405)', await request(`${url}/healthz`, 'DELETE')],
      ['a malformed URL (400, before routing)', await fetch(`${url}/api/v1/teams/%E0%A4%A`)],
      ['a console page', await fetch(`${url}/inbox`)],
      ['a sign-in redirect', await fetch(`${url}/sign-in/link?token=acs_signin_x`, { redirect: 'manual' })],
      ['a session route', await request(`${url}/api/v1/me`, 'GET', undefined, { cookie: session.cookie })],
      ['the OpenAPI document', await fetch(`${url}/api/v1/openapi.json`)],
    ];
    for (const [what, response] of checked) expect(response.headers.get('strict-transport-security'), what).toBe(hsts);
    // A held event stream (its headers are written by hand).
    const controller = new AbortController();
    const stream = await fetch(`${url}/api/v1/organizations/${h.orgId}/events/stream`, { headers: { 'x-api-key': h.apiKey }, signal: controller.signal });
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(stream.headers.get('strict-transport-security')).toBe(hsts);
    controller.abort();
    // A rate-limit refusal (429) of a key of its own.
    const limited = await h.server.provisionOrganization(`limited-${crypto.randomUUID().slice(0, 8)}`);
    let refusal: Reply | undefined;
    for (let i = 0; i < 60 && !refusal; i += 1) {
      const reply = await request(`${url}/api/v1/organizations`, 'GET', undefined, { 'x-api-key': limited.api_key });
      if (reply.status === 429) refusal = reply;
    }
    expect(refusal?.headers.get('strict-transport-security')).toBe(hsts);
  });

  it('headers: with an http public URL (the listen address) no response carries Strict-Transport-Security', async () => {
    for (const response of [await fetch(`${plain.server.url}/healthz`), await plain.call('GET', '/api/v1/organizations'), await fetch(`${plain.server.url}/inbox`)]) {
      expect(response.headers.get('strict-transport-security')).toBeNull();
    }
  });
});

describe('Cache-Control: no-store', () => {
  it('headers: every answer that carries a secret or a CSRF token is Cache-Control: no-store, an Idempotency-Key replay too', async () => {
    const h = plain;
    const url = h.server.url;
    const { dana, scout, session } = await world(h);
    const asPerson = (method: string, path: string, body?: unknown) => request(`${url}${path}`, method, body, { cookie: session.cookie, 'x-csrf-token': session.csrf });
    const asAdmin = (method: string, path: string, body?: unknown) => request(`${url}${path}`, method, body, { authorization: `Bearer ${adminToken}` });
    const orgKey = await h.call('POST', `/api/v1/organizations/${h.orgId}/keys`, { name: 'extra' }, { 'idempotency-key': 'key-once' });
    const webhook = await h.call('POST', `/api/v1/organizations/${h.orgId}/webhooks`, { url: 'http://127.0.0.1:9/hook', events: ['team.*'] });
    const accessRequest = await request(`${url}/api/v1/access-requests`, 'POST', { email: 'new@example.com', org_name: `req-${crypto.randomUUID().slice(0, 8)}`, intended_use: 'testing' });
    const link = await h.call('POST', `/api/v1/humans/${dana}/sign-in-links`, {});
    const secrets: Array<[string, Reply | Response, RegExp]> = [
      ['organization key created', orgKey, /acs_org_/],
      ['the same creation replayed', await h.call('POST', `/api/v1/organizations/${h.orgId}/keys`, { name: 'extra' }, { 'idempotency-key': 'key-once' }), /acs_org_/],
      ['organization key rotated', await h.call('POST', `/api/v1/organizations/${h.orgId}/keys/${orgKey.body.key_id}/rotate`, { grace_seconds: 0 }), /acs_org_/],
      ['MCP key created', await h.call('POST', `/api/v1/agents/${scout}/mcp-keys`), /acs_mcp_/],
      ['MCP key created through /v1', await request(`${url}/v1/agents/${scout}/mcp-keys`, 'POST', undefined, { 'x-api-key': h.apiKey }), /acs_mcp_/],
      ['MCP key created in the console', await asPerson('POST', `/api/v1/me/agents/${scout}/mcp-keys`, {}), /acs_mcp_/],
      ['webhook created', webhook, /whsec_/],
      ['webhook secret rotated', await h.call('POST', `/api/v1/webhooks/${webhook.body.webhook_id}/rotate-secret`, {}), /whsec_/],
      ['sign-in link created', link, /acs_signin_/],
      ["the link's page", await fetch(link.body.url, { redirect: 'manual' }), /acs_signin_/],
      ['the CSRF token of GET /me', await request(`${url}/api/v1/me`, 'GET', undefined, { cookie: session.cookie }), /csrf_token/],
      ['operator sign-in', await asAdmin('POST', '/admin/v1/sign-in', {}), /csrf_token/],
      ['access request approved', await asAdmin('POST', `/admin/v1/access-requests/${accessRequest.body.request_id}/approve`), /acs_org_/],
      ['key issued by an operator', await asAdmin('POST', `/admin/v1/organizations/${h.orgId}/keys`, {}), /acs_org_/],
    ];
    const operator = secrets.find(([what]) => what === 'operator sign-in')![1] as Reply;
    const operatorCookie = operator.headers.getSetCookie().map((line) => line.split(';')[0]!).find((pair) => pair.startsWith('acs_session='))!;
    secrets.push(["the operator session's CSRF token", await request(`${url}/admin/v1/session`, 'GET', undefined, { cookie: operatorCookie }), /csrf_token/]);
    for (const [what, response, secret] of secrets) {
      const body = 'body' in response && !(response instanceof Response) ? JSON.stringify(response.body) : await (response as Response).text();
      expect(response.status, `${what}: ${body}`).toBeLessThan(300);
      expect(body, what).toMatch(secret);
      expect(response.headers.get('cache-control'), what).toBe('no-store');
    }
    // What carries no secret is left to caches' own rules: the list of keys, a webhook read back.
    expect((await h.call('GET', `/api/v1/organizations/${h.orgId}/keys`)).headers.get('cache-control')).toBeNull();
    expect((await h.call('GET', `/api/v1/webhooks/${webhook.body.webhook_id}`)).headers.get('cache-control')).toBeNull();
  });

  it('headers: the OpenAPI document gives the operations that answer secrets a Cache-Control: no-store response header', async () => {
    const doc = (await request(`${plain.server.url}/api/v1/openapi.json`, 'GET')).body;
    const header = (path: string, method: string) => {
      const responses = doc.paths[path][method].responses as Record<string, { headers?: Record<string, unknown> }>;
      const success = Object.entries(responses).find(([status]) => status.startsWith('2'))![1];
      return success.headers?.['Cache-Control'];
    };
    for (const [path, method] of [
      ['/organizations/{org_id}/keys', 'post'],
      ['/organizations/{org_id}/keys/{key_id}/rotate', 'post'],
      ['/agents/{agent_id}/mcp-keys', 'post'],
      ['/me/agents/{agent_id}/mcp-keys', 'post'],
      ['/organizations/{org_id}/webhooks', 'post'],
      ['/webhooks/{webhook_id}/rotate-secret', 'post'],
      ['/humans/{human_id}/sign-in-links', 'post'],
      ['/me', 'get'],
      ['/admin/v1/sign-in', 'post'],
      ['/admin/v1/session', 'get'],
      ['/admin/v1/access-requests/{request_id}/approve', 'post'],
      ['/admin/v1/organizations/{org_id}/keys', 'post'],
    ] as const) {
      expect(header(path, method), `${method} ${path}`).toEqual({ $ref: '#/components/headers/Cache-Control' });
    }
    expect(header('/organizations/{org_id}/keys', 'get')).toBeUndefined();
    expect(doc.components.headers['Cache-Control'].schema).toEqual({ type: 'string', enum: ['no-store'] });
  });
});

/**
 * Conformance of contract §10 (people sign in: the console), over the wire only: sign-in links
 * (absolute, single use, bounds; opening one shows a page and spends nothing, only its form's
 * POST — same origin, with the page's CSRF field and cookie — signs in, ending the browser's
 * session), the session cookie's attributes, what a session reaches (its human's teams and
 * threads, nothing else: 404 as to another tenant; the team graph as a member sees it; an event
 * stream that names no place in the organization's log), CSRF on every change,
 * sign-out, deleting the human ending its sessions, the MCP keys of external agents, and the
 * operator's session. Link and session expiry are proven in test/service/sessions.test.ts, which
 * can move the clock of stored rows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, expectStatus } from './contract.ts';
import { call, freshUuid, startServer, uniqueName, type Reply, type Server } from './server.ts';
import { openStream } from '../support/sse.ts';
import { openLinkPage, setCookies, signInWithLink, submitLinkPage } from '../support/sign-in-link.ts';

const adminToken = `admin-${crypto.randomUUID()}`;

let server: Server;
let base: string;
let key: string;

/** What a test's fixtures are: two teams of one organization, dana in team A. */
interface World {
  teamA: string;
  teamB: string;
  dana: string;
  erin: string;
  triager: string;
  scout: string;
  outsider: string;
  bob: string;
  danaEdge: string;
  erinEdge: string;
  bEdge: string;
  danaThread: string;
  erinThread: string;
  bThread: string;
}

async function post(path: string, body: unknown): Promise<Reply> {
  const reply = await call(base, 'POST', path, { key, body });
  expect(reply.status, `${path}: ${reply.text}`).toBeLessThan(300);
  return reply;
}

/** Team A: dana–triager (echo), erin–triager, scout (external); team B: bob–outsider. A thread on each edge. */
async function buildWorld(): Promise<World> {
  const teamA = (await post(`/api/v1/organizations/${server.orgId}/teams`, { team_name: uniqueName('a') })).body.team_id;
  const teamB = (await post(`/api/v1/organizations/${server.orgId}/teams`, { team_name: uniqueName('b') })).body.team_id;
  const dana = (await post(`/api/v1/teams/${teamA}/humans`, { name: 'dana', email: 'dana@example.com' })).body.human_id;
  const erin = (await post(`/api/v1/teams/${teamA}/humans`, { name: 'erin' })).body.human_id;
  const triager = (await post(`/api/v1/teams/${teamA}/agents`, { name: 'triager' })).body.agent_id;
  const scout = (await post(`/api/v1/teams/${teamA}/agents`, { name: 'scout' })).body.agent_id;
  const bob = (await post(`/api/v1/teams/${teamB}/humans`, { name: 'bob' })).body.human_id;
  const outsider = (await post(`/api/v1/teams/${teamB}/agents`, { name: 'outsider' })).body.agent_id;
  const danaEdge = (await post(`/api/v1/teams/${teamA}/edges`, { participants: [dana, triager] })).body.edge_id;
  const erinEdge = (await post(`/api/v1/teams/${teamA}/edges`, { participants: [erin, triager] })).body.edge_id;
  const bEdge = (await post(`/api/v1/teams/${teamB}/edges`, { participants: [bob, outsider] })).body.edge_id;
  const open = async (edge: string, from: string, subject: string) =>
    (await post(`/api/v1/edges/${edge}/threads`, { sender_agent_id: from, subject, content: `about ${subject}` })).body.thread_id;
  return {
    teamA,
    teamB,
    dana,
    erin,
    triager,
    scout,
    outsider,
    bob,
    danaEdge,
    erinEdge,
    bEdge,
    danaThread: await open(danaEdge, triager, 'for dana'),
    erinThread: await open(erinEdge, triager, 'for erin'),
    bThread: await open(bEdge, outsider, 'for bob'),
  };
}

/** Opens a URL as a browser would (no redirect followed). */
async function open(url: string): Promise<Response> {
  return fetch(url, { redirect: 'manual' });
}

/** The cookie a response sets, as `name=value`, with its attributes as written. */
function setCookie(reply: { headers: Headers }, name: string): { pair: string; attributes: string[] } | undefined {
  for (const line of reply.headers.getSetCookie()) {
    const [pair, ...attributes] = line.split(';').map((part) => part.trim());
    if (pair?.startsWith(`${name}=`)) return { pair, attributes };
  }
  return undefined;
}

/** A person's session: its cookie and CSRF token, from a fresh sign-in link of `humanId` (its page, then its button). */
async function signIn(humanId: string): Promise<{ cookie: string; csrf: string }> {
  const link = (await post(`/api/v1/humans/${humanId}/sign-in-links`, {})).body;
  const { cookie } = await signInWithLink(link.url);
  expect(cookie).toBeDefined();
  const me = await call(base, 'GET', '/api/v1/me', { headers: { cookie: cookie! } });
  expectStatus(me, 200);
  return { cookie: cookie!, csrf: me.body.csrf_token };
}

/** A request with a session's cookie (and its CSRF token unless `csrf` is null). */
function as(session: { cookie: string; csrf: string }, method: string, path: string, body?: unknown, csrf: string | null = session.csrf): Promise<Reply> {
  return call(base, method, path, { body, headers: { cookie: session.cookie, ...(csrf === null ? {} : { 'x-csrf-token': csrf }) } });
}

beforeAll(async () => {
  server = await startServer({ env: { ACS_ADMIN_TOKEN: adminToken } });
  base = server.baseUrl;
  key = server.apiKey;
});
afterAll(async () => {
  await server?.stop();
});

describe('§10 sign-in links', () => {
  let world: World;
  beforeAll(async () => {
    world = await buildWorld();
  });

  it('sign-in link: an organization key gets an absolute URL of this server that works for 900 s by default', async () => {
    const before = Date.now();
    const reply = await call(base, 'POST', `/api/v1/humans/${world.dana}/sign-in-links`, { key, body: {} });
    expectStatus(reply, 201);
    expect(reply.body.url.startsWith(`${base}/`)).toBe(true);
    expect(new URL(reply.body.url).searchParams.get('token')).toMatch(/^acs_signin_[0-9A-Za-z]{40}$/);
    const expires = Date.parse(reply.body.expires_at);
    expect(expires).toBeGreaterThanOrEqual(before + 899_000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 901_000);
    // Without a body too, and ttl_seconds within 60–604800.
    expectStatus(await call(base, 'POST', `/api/v1/humans/${world.dana}/sign-in-links`, { key }), 201);
    const week = await call(base, 'POST', `/api/v1/humans/${world.dana}/sign-in-links`, { key, body: { ttl_seconds: 604_800 } });
    expectStatus(week, 201);
    expect(Date.parse(week.body.expires_at)).toBeGreaterThan(Date.now() + 604_000_000);
  });

  it('sign-in link: a lifetime outside 60–604800 s, an unknown field, an unknown or foreign human are refused', async () => {
    expectProblem(await call(base, 'POST', `/api/v1/humans/${world.dana}/sign-in-links`, { key, body: { ttl_seconds: 59 } }), 400, 'invalid_request');
    expectProblem(await call(base, 'POST', `/api/v1/humans/${world.dana}/sign-in-links`, { key, body: { ttl_seconds: 604_801 } }), 400, 'invalid_request');
    expectProblem(await call(base, 'POST', `/api/v1/humans/${world.dana}/sign-in-links`, { key, body: { human: 'x' } }), 400, 'invalid_request');
    expectProblem(await call(base, 'POST', `/api/v1/humans/${freshUuid()}/sign-in-links`, { key, body: {} }), 404, 'not_found');
    // An agent is no human; and without a key nothing is made.
    expectProblem(await call(base, 'POST', `/api/v1/humans/${world.triager}/sign-in-links`, { key, body: {} }), 404, 'not_found');
    expectProblem(await call(base, 'POST', `/api/v1/humans/${world.dana}/sign-in-links`, { key: null, body: {} }), 401, 'unauthenticated');
    // Another organization's key does not reach dana.
    const other = await call(base, 'POST', '/api/v1/organizations', { key, body: { org_name: uniqueName('other') } });
    const otherKey = (await call(base, 'POST', `/api/v1/organizations/${other.body.org_id}/keys`, { key, body: {} })).body.api_key;
    expectProblem(await call(base, 'POST', `/api/v1/humans/${world.dana}/sign-in-links`, { key: otherKey, body: {} }), 404, 'not_found');
  });

  it("sign-in link: opening it (GET) answers a page without script naming the human, the team and the organization, with one POST form and its button; it spends nothing and sets no session", async () => {
    const link = (await post(`/api/v1/humans/${world.dana}/sign-in-links`, {})).body;
    const page = await openLinkPage(link.url);
    expect(page.response.status).toBe(200);
    expect(page.response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.response.headers.get('cache-control')).toBe('no-store');
    const csp = page.response.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("form-action 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toMatch(/script-src|unsafe-inline/);
    expect(page.html).not.toMatch(/<script\b|\son[a-z]+=/i);
    expect(page.html).toContain('<h1 id="title">Sign in as dana?</h1>');
    const org = (await call(base, 'GET', `/api/v1/organizations/${server.orgId}`, { key })).body.org_name;
    const team = (await call(base, 'GET', `/api/v1/teams/${world.teamA}`, { key })).body.team_name;
    expect(page.html).toContain(`as <strong>dana</strong> of team <strong>${team}</strong>, in the organization <strong>${org}</strong>`);
    expect(page.html.match(/<form\b/g)).toHaveLength(1);
    expect(page.html).toContain('<form method="post" action="/sign-in/link">');
    expect(page.html.match(/<button\b[^>]*>Sign in as dana<\/button>/g)).toHaveLength(1);
    expect(page.fields).toEqual({ token: new URL(link.url).searchParams.get('token'), csrf: expect.stringMatching(/\S{20,}/) });
    // The form's CSRF cookie only: no session yet, nothing spent — the page opens again.
    expect(page.cookies.map((c) => c.split('=')[0])).toEqual(['acs_signin_csrf']);
    const csrfCookie = setCookie(page.response, 'acs_signin_csrf')!;
    expect(csrfCookie.attributes.map((a) => a.toLowerCase())).toEqual(expect.arrayContaining(['httponly', 'samesite=strict', 'path=/sign-in/link']));
    expect(csrfCookie.attributes.map((a) => a.toLowerCase())).not.toContain('secure');
    const again = await openLinkPage(link.url);
    expect(again.response.status).toBe(200);
    expect(again.fields.token).toBe(page.fields.token);
  });

  it('sign-in link: its button (the form\'s POST) signs in with an HttpOnly, SameSite=Lax cookie on path / (not Secure on http) and goes to the inbox; afterwards the link signs nobody in', async () => {
    const link = (await post(`/api/v1/humans/${world.dana}/sign-in-links`, {})).body;
    const page = await openLinkPage(link.url);
    const first = await submitLinkPage(link.url, page);
    expect(first.status).toBe(303);
    expect(first.headers.get('location')).toBe('/inbox');
    expect(first.headers.get('cache-control')).toBe('no-store');
    const cookie = setCookie(first, 'acs_session');
    expect(cookie?.pair).toMatch(/^acs_session=acs_session_[0-9A-Za-z]{40}$/);
    const attributes = cookie!.attributes.map((a) => a.toLowerCase());
    expect(attributes).toContain('httponly');
    expect(attributes).toContain('samesite=lax');
    expect(attributes).toContain('path=/');
    expect(attributes).not.toContain('secure');
    // The form's CSRF cookie is done with.
    expect(setCookie(first, 'acs_signin_csrf')?.pair).toBe('acs_signin_csrf=');
    const me = await call(base, 'GET', '/api/v1/me', { headers: { cookie: cookie!.pair } });
    expectStatus(me, 200);
    expect(me.body.humans.map((h: { human_id: string }) => h.human_id)).toEqual([world.dana]);
    expect(me.body.humans[0]).toMatchObject({ name: 'dana', email: 'dana@example.com', team_id: world.teamA, org_id: server.orgId });
    expect(me.body.csrf_token).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    expect(me.body.method).toBe('link');
    expect(Date.parse(me.body.expires_at) - Date.parse(me.body.created_at)).toBe(7 * 24 * 3600 * 1000);

    // Used: its page goes to the sign-in page's explanation, and its form signs nobody in.
    const reopened = await open(link.url);
    expect(reopened.status).toBe(303);
    expect(reopened.headers.get('location')).toBe('/sign-in?error=link_invalid');
    const second = await submitLinkPage(link.url, page);
    expect(second.status).toBe(303);
    expect(second.headers.get('location')).toBe('/sign-in?error=link_invalid');
    expect(setCookie(second, 'acs_session')).toBeUndefined();
  });

  it("sign-in link: a scanner's fetches (GET and HEAD, with or without its cookies) spend nothing: the person's button still signs in", async () => {
    const link = (await post(`/api/v1/humans/${world.dana}/sign-in-links`, {})).body;
    for (let i = 0; i < 3; i += 1) expect((await fetch(link.url, { redirect: 'manual' })).status).toBe(200);
    expect((await fetch(link.url, { method: 'HEAD', redirect: 'manual' })).status).toBe(200);
    const scanner = await openLinkPage(link.url);
    await openLinkPage(link.url, { cookie: scanner.cookies.join('; ') });
    const { cookie } = await signInWithLink(link.url);
    expect(cookie).toMatch(/^acs_session=/);
  });

  it('sign-in link: a POST without the page\'s CSRF cookie or token, from another origin, cross-site, or without Origin is refused and spends nothing', async () => {
    const link = (await post(`/api/v1/humans/${world.dana}/sign-in-links`, {})).body;
    const page = await openLinkPage(link.url);
    const other = await openLinkPage(link.url);
    const refusals: Array<[string, () => Promise<Response>]> = [
      ['no CSRF cookie', () => submitLinkPage(link.url, { ...page, cookies: [] })],
      ['another browser\'s CSRF cookie', () => submitLinkPage(link.url, { ...page, cookies: other.cookies })],
      ['no CSRF field', () => submitLinkPage(link.url, page, { fields: { token: page.fields.token! } })],
      ['a made-up CSRF field', () => submitLinkPage(link.url, page, { fields: { ...page.fields, csrf: 'abc-def' } })],
      ['another origin', () => submitLinkPage(link.url, page, { origin: 'https://attacker.example' })],
      ['Origin null', () => submitLinkPage(link.url, page, { origin: 'null' })],
      ['no Origin', () => submitLinkPage(link.url, page, { origin: null })],
      [
        'Sec-Fetch-Site: cross-site',
        () =>
          fetch(`${base}/sign-in/link`, {
            method: 'POST',
            redirect: 'manual',
            headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: page.cookies.join('; '), origin: new URL(link.url).origin, 'sec-fetch-site': 'cross-site' },
            body: new URLSearchParams(page.fields).toString(),
          }),
      ],
    ];
    for (const [what, attempt] of refusals) {
      const refused = await attempt();
      expect(refused.status, what).toBe(303);
      expect(refused.headers.get('location'), what).toBe('/sign-in?error=link_not_confirmed');
      expect(setCookie(refused, 'acs_session'), what).toBeUndefined();
    }
    // A body that is no form is not taken either.
    const plain = await fetch(`${base}/sign-in/link`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'text/plain', cookie: page.cookies.join('; '), origin: new URL(link.url).origin },
      body: new URLSearchParams(page.fields).toString(),
    });
    expect(plain.status).toBe(415);
    // The link still works, from its page.
    expect((await signInWithLink(link.url)).cookie).toMatch(/^acs_session=/);
  });

  it("sign-in link: a tenant cannot sign someone else's browser in with a link of a human the tenant controls (login CSRF)", async () => {
    // The tenant makes a link of its own human and reads its page: token and CSRF field.
    const link = (await post(`/api/v1/humans/${world.erin}/sign-in-links`, {})).body;
    const tenant = await openLinkPage(link.url);
    // The victim's browser, sent to the tenant's page, posts the tenant's form there: its own
    // cookies (a session of its own, and the CSRF cookie of the page it saw), the tenant's fields.
    const victim = await signIn(world.dana);
    const victimPage = await openLinkPage(link.url, { cookie: victim.cookie });
    const forged = await submitLinkPage(link.url, { ...victimPage, fields: tenant.fields }, { cookie: victim.cookie, origin: 'https://tenant.example' });
    expect(forged.headers.get('location')).toBe('/sign-in?error=link_not_confirmed');
    const sameOriginForged = await submitLinkPage(link.url, { ...tenant, cookies: [] }, { cookie: victim.cookie });
    expect(sameOriginForged.headers.get('location')).toBe('/sign-in?error=link_not_confirmed');
    // The victim is still dana, and the tenant's link is unspent.
    expect((await as(victim, 'GET', '/api/v1/me')).body.humans.map((h: { name: string }) => h.name)).toEqual(['dana']);
    expect((await openLinkPage(link.url)).response.status).toBe(200);
  });

  it('sign-in link: signing in ends the session the browser had; a refused sign-in leaves it', async () => {
    const before = await signIn(world.dana);
    const used = (await post(`/api/v1/humans/${world.erin}/sign-in-links`, {})).body;
    await signInWithLink(used.url);
    // A used link's form changes nothing, the browser's session included.
    const stale = await openLinkPage(used.url);
    expect(stale.response.headers.get('location')).toBe('/sign-in?error=link_invalid');
    expectStatus(await as(before, 'GET', '/api/v1/me'), 200);
    const link = (await post(`/api/v1/humans/${world.erin}/sign-in-links`, {})).body;
    const { cookie, response } = await signInWithLink(link.url, { cookie: before.cookie });
    expect(response.headers.get('location')).toBe('/inbox');
    expectProblem(await as(before, 'GET', '/api/v1/me'), 401, 'unauthenticated');
    const after = await call(base, 'GET', '/api/v1/me', { headers: { cookie: cookie! } });
    expect(after.body.humans.map((h: { human_id: string }) => h.human_id)).toEqual([world.erin]);
  });

  it('sign-in link: a link redeemed twice at once signs in exactly one browser', async () => {
    const link = (await post(`/api/v1/humans/${world.dana}/sign-in-links`, {})).body;
    const pages = await Promise.all([openLinkPage(link.url), openLinkPage(link.url), openLinkPage(link.url)]);
    const presses = await Promise.all(pages.map((page) => submitLinkPage(link.url, page)));
    const signedIn = presses.filter((r) => setCookie(r, 'acs_session') !== undefined);
    expect(signedIn).toHaveLength(1);
  });

  it('sign-in link: a made-up, truncated or missing token signs nobody in', async () => {
    for (const query of ['?token=acs_signin_0000000000000000000000000000000000000000', '?token=acs_signin_', '', '?token=']) {
      const reply = await open(`${base}/sign-in/link${query}`);
      expect(reply.status).toBe(303);
      expect(reply.headers.get('location')).toBe('/sign-in?error=link_invalid');
      expect(setCookie(reply, 'acs_session')).toBeUndefined();
    }
    // Nor does its form, whatever token it posts.
    const page = await openLinkPage((await post(`/api/v1/humans/${world.dana}/sign-in-links`, {})).body.url);
    for (const token of ['acs_signin_0000000000000000000000000000000000000000', '', 'x']) {
      const reply = await submitLinkPage(`${base}/sign-in/link`, page, { fields: { ...page.fields, token } });
      expect(reply.headers.get('location')).toBe('/sign-in?error=link_invalid');
      expect(setCookies(reply).some((c) => c.startsWith('acs_session='))).toBe(false);
    }
  });
});

describe('§10 what a session reaches', () => {
  let world: World;
  let dana: { cookie: string; csrf: string };
  beforeAll(async () => {
    world = await buildWorld();
    dana = await signIn(world.dana);
  });

  it("reach: the inbox lists the threads on the person's edges only, with the human's unread count and the peer", async () => {
    const reply = await as(dana, 'GET', '/api/v1/me/threads');
    expectStatus(reply, 200);
    expect(reply.body.threads.map((t: { thread_id: string }) => t.thread_id)).toEqual([world.danaThread]);
    expect(reply.body.threads[0]).toMatchObject({
      thread_id: world.danaThread,
      subject: 'for dana',
      human_id: world.dana,
      unread_count: 1,
      peer: { participant_id: world.triager, kind: 'agent', name: 'triager' },
      last_message: { sender_id: world.triager, content: 'about for dana' },
    });
  });

  it("reach: another team's thread, another human's thread of the same team and unknown ids are 404, worded alike", async () => {
    const details = new Set<string>();
    for (const id of [world.bThread, world.erinThread, freshUuid(), 'not-a-uuid']) {
      const read = await as(dana, 'GET', `/api/v1/me/threads/${id}`);
      expectProblem(read, 404, 'not_found');
      details.add(read.body.detail);
      expectProblem(await as(dana, 'POST', `/api/v1/me/threads/${id}/messages`, { content: 'hello?' }), 404, 'not_found');
      expectProblem(await as(dana, 'POST', `/api/v1/me/threads/${id}/read`, {}), 404, 'not_found');
    }
    expect(details.size).toBe(1);
    // Nothing was written to those threads.
    const page = await call(base, 'GET', `/api/v1/threads/${world.bThread}`, { key });
    expect(page.body.message_count).toBe(1);
  });

  it("reach: the person's team graph is readable, another team's is 404; edges of others cannot be opened on", async () => {
    const team = await as(dana, 'GET', `/api/v1/me/teams/${world.teamA}`);
    expectStatus(team, 200);
    expect(team.body.humans.map((h: { name: string }) => h.name).sort()).toEqual(['dana', 'erin']);
    expect(team.body.edges).toHaveLength(2);
    expect(team.body.agents.map((a: { name: string }) => a.name).sort()).toEqual(['scout', 'triager']);
    expectProblem(await as(dana, 'GET', `/api/v1/me/teams/${world.teamB}`), 404, 'not_found');
    const edges = await as(dana, 'GET', '/api/v1/me/edges');
    expect(edges.body.edges).toEqual([expect.objectContaining({ edge_id: world.danaEdge, human_id: world.dana, peer: { participant_id: world.triager, kind: 'agent', name: 'triager' } })]);
    expectProblem(await as(dana, 'POST', `/api/v1/me/edges/${world.erinEdge}/threads`, { content: 'hi' }), 404, 'not_found');
    expectProblem(await as(dana, 'POST', `/api/v1/me/edges/${world.bEdge}/threads`, { content: 'hi' }), 404, 'not_found');
  });

  it("reach: the team graph shows a member who is who, not how the team is configured: no agent's instructions or tools, no teammate's email, no count of others' threads", async () => {
    await call(base, 'PATCH', `/api/v1/agents/${world.scout}`, { key, body: { instructions: 'Internal runbook: escalate to ops-pager-7731.' } });
    await call(base, 'PATCH', `/api/v1/humans/${world.erin}`, { key, body: { email: 'erin@example.com' } });
    const team = await as(dana, 'GET', `/api/v1/me/teams/${world.teamA}`);
    expectStatus(team, 200);
    const text = JSON.stringify(team.body);
    expect(text).not.toContain('ops-pager-7731');
    expect(text).not.toContain('erin@example.com');
    for (const agent of team.body.agents) {
      expect(Object.keys(agent).sort()).toEqual(['agent_id', 'created_at', 'description', 'model', 'name', 'provider', 'status', 'team_id']);
    }
    for (const human of team.body.humans) expect(Object.keys(human).sort()).toEqual(['created_at', 'human_id', 'name', 'team_id']);
    expect(team.body).not.toHaveProperty('active_thread_count');
    // Her own email is hers to see, in GET /me.
    expect((await as(dana, 'GET', '/api/v1/me')).body.humans[0].email).toBe('dana@example.com');
    // The organization key still reads the whole graph.
    const full = await call(base, 'GET', `/api/v1/teams/${world.teamA}`, { key });
    expect(JSON.stringify(full.body)).toContain('ops-pager-7731');
    expect(JSON.stringify(full.body)).toContain('erin@example.com');
  });

  it('reach: a session reaches no organization route: each is 404 to it, as to another tenant', async () => {
    for (const path of [`/api/v1/teams/${world.teamA}`, `/api/v1/threads/${world.danaThread}`, '/api/v1/organizations', `/v1/humans/${world.dana}`]) {
      expectProblem(await as(dana, 'GET', path), 404, 'not_found');
    }
    expectProblem(await as(dana, 'POST', `/api/v1/threads/${world.danaThread}/messages`, { sender_agent_id: world.dana, content: 'x' }), 404, 'not_found');
    expectProblem(await as(dana, 'POST', `/api/v1/humans/${world.dana}/sign-in-links`, {}), 404, 'not_found');
  });

  it("reach: reading a thread pages its messages and moves no mark; marking it read zeroes the human's unread count", async () => {
    const page = await as(dana, 'GET', `/api/v1/me/threads/${world.danaThread}`);
    expectStatus(page, 200);
    expect(page.body.messages.map((m: { content: string }) => m.content)).toEqual(['about for dana']);
    expect(page.body.unread_count).toBe(1);
    const marked = await as(dana, 'POST', `/api/v1/me/threads/${world.danaThread}/read`, {});
    expectStatus(marked, 200);
    expect(marked.body).toEqual({ thread_id: world.danaThread, unread_count: 0 });
    const listed = await as(dana, 'GET', '/api/v1/me/threads?unread_only=true');
    expect(listed.body).toEqual({ threads: [], has_more: false });
  });

  it("reach: a thread whose latest message expects dana's reply awaits her answer until she writes", async () => {
    const asked = await post(`/api/v1/edges/${world.danaEdge}/threads`, { sender_agent_id: world.triager, subject: 'Approve?', content: 'May we?', expects_reply: true });
    const awaiting = async () =>
      (await as(dana, 'GET', '/api/v1/me/threads')).body.threads.find((t: { thread_id: string }) => t.thread_id === asked.body.thread_id);
    expect(await awaiting()).toMatchObject({ awaiting_reply: true, awaiting_reply_from: world.dana });
    expect((await as(dana, 'GET', `/api/v1/me/threads/${asked.body.thread_id}`)).body.awaiting_reply).toBe(true);
    // A message that expects no reply leaves the other threads as they were.
    expect((await awaiting()).awaiting_reply).toBe(true);
    expectStatus(await as(dana, 'POST', `/api/v1/me/threads/${asked.body.thread_id}/messages`, { content: 'yes' }), 201);
    expect(await awaiting()).toMatchObject({ awaiting_reply: false, awaiting_reply_from: null });
    // And the other way: dana asks, the triager's answer is awaited, not hers.
    expectStatus(await as(dana, 'POST', `/api/v1/me/threads/${asked.body.thread_id}/messages`, { content: 'Did it work?', expects_reply: true }), 201);
    expect(await awaiting()).toMatchObject({ awaiting_reply: false, awaiting_reply_from: world.triager });
  });

  it("reach: a human's own message moves the human's read mark past what it answers, however it was written: a thread answered through the organization's API (teamctl thread send) is no longer unread; an agent's own message moves no mark of its", async () => {
    const mine = async (threadId: string) => (await as(dana, 'GET', `/api/v1/me/threads/${threadId}`)).body;
    // The triager asks dana; she answers through the organization key, as `teamctl thread send --from dana` does.
    const asked = (await post(`/api/v1/edges/${world.danaEdge}/threads`, { sender_agent_id: world.triager, subject: 'Answered elsewhere', content: 'Ready?', expects_reply: true })).body.thread_id;
    await post(`/api/v1/threads/${asked}/messages`, { sender_agent_id: world.triager, content: 'Please say.' });
    expect(await mine(asked)).toMatchObject({ unread_count: 2, awaiting_reply: true });
    await post(`/api/v1/threads/${asked}/messages`, { sender_agent_id: world.dana, content: 'ready' });
    expect(await mine(asked)).toMatchObject({ unread_count: 0, awaiting_reply: false });
    expect((await as(dana, 'GET', '/api/v1/me/threads?unread_only=true')).body.threads.map((t: { thread_id: string }) => t.thread_id)).not.toContain(asked);
    // Dana opened this one: her counter (the thread's unread_count) is read up to her message too, and counts what follows it.
    const opened = (await post(`/api/v1/edges/${world.danaEdge}/threads`, { sender_agent_id: world.dana, subject: 'Her own', content: 'Status?' })).body.thread_id;
    await post(`/api/v1/threads/${opened}/messages`, { sender_agent_id: world.triager, content: 'one' });
    await post(`/api/v1/threads/${opened}/messages`, { sender_agent_id: world.triager, content: 'two' });
    expect((await call(base, 'GET', `/api/v1/threads/${opened}`, { key })).body.unread_count).toBe(2);
    await post(`/api/v1/threads/${opened}/messages`, { sender_agent_id: world.dana, content: 'thanks' });
    expect((await call(base, 'GET', `/api/v1/threads/${opened}`, { key })).body.unread_count).toBe(0);
    await post(`/api/v1/threads/${opened}/messages`, { sender_agent_id: world.triager, content: 'three' });
    expect(await mine(opened)).toMatchObject({ unread_count: 1 });
    // An agent's mark is the cursor of its MCP wait_for_messages: its own message leaves it where it was.
    const agentOpened = (await post(`/api/v1/edges/${world.danaEdge}/threads`, { sender_agent_id: world.triager, subject: 'Agent opened', content: 'Hi dana' })).body.thread_id;
    expectStatus(await as(dana, 'POST', `/api/v1/me/threads/${agentOpened}/messages`, { content: 'Hi triager' }), 201);
    await post(`/api/v1/threads/${agentOpened}/messages`, { sender_agent_id: world.triager, content: 'Still there?' });
    expect((await call(base, 'GET', `/api/v1/threads/${agentOpened}`, { key })).body.unread_count).toBe(1);
  });

  it("reach: a thread whose latest message of dana was written in her name through an organization key, asking the peer (a pipeline step whose from is dana), is sent on her behalf; one she asks from the console, a plain message, or a thread that awaits her is not", async () => {
    const listed = async (threadId: string) => (await as(dana, 'GET', '/api/v1/me/threads')).body.threads.find((t: { thread_id: string }) => t.thread_id === threadId);
    const byPipeline = (await post(`/api/v1/edges/${world.danaEdge}/threads`, { sender_agent_id: world.dana, subject: 'Classify T-1', content: 'Classify: T-1', expects_reply: true })).body.thread_id;
    expect(await listed(byPipeline)).toMatchObject({ sent_on_behalf: true, awaiting_reply: false, awaiting_reply_from: world.triager });
    await post(`/api/v1/threads/${byPipeline}/messages`, { sender_agent_id: world.triager, content: 'bug' });
    // The answer is unread for dana, but it was the pipeline's to take: the thread says so.
    expect(await listed(byPipeline)).toMatchObject({ sent_on_behalf: true, unread_count: 1, awaiting_reply: false });
    expect((await as(dana, 'GET', `/api/v1/me/threads/${byPipeline}`)).body.sent_on_behalf).toBe(true);
    // The triager asks dana back: now the thread awaits her.
    await post(`/api/v1/threads/${byPipeline}/messages`, { sender_agent_id: world.triager, content: 'Which version?', expects_reply: true });
    expect(await listed(byPipeline)).toMatchObject({ sent_on_behalf: false, awaiting_reply: true });

    const fromConsole = await as(dana, 'POST', `/api/v1/me/edges/${world.danaEdge}/threads`, { subject: 'Her question', content: 'Did it ship?', expects_reply: true });
    expectStatus(fromConsole, 201);
    expect(fromConsole.body).toMatchObject({ sent_on_behalf: false, awaiting_reply_from: world.triager });
    const consoleThread = fromConsole.body.thread_id;
    await post(`/api/v1/threads/${consoleThread}/messages`, { sender_agent_id: world.triager, content: 'It did.' });
    expectStatus(await as(dana, 'POST', `/api/v1/me/threads/${consoleThread}/messages`, { content: 'And the notes?', expects_reply: true }), 201);
    expect(await listed(consoleThread)).toMatchObject({ sent_on_behalf: false, awaiting_reply_from: world.triager });

    const plain = (await post(`/api/v1/edges/${world.danaEdge}/threads`, { sender_agent_id: world.dana, subject: 'FYI', content: 'FYI: T-1 is in' })).body.thread_id;
    expect(await listed(plain)).toMatchObject({ sent_on_behalf: false });
  });

  it('reach: the inbox lists the most recently active first, at most `limit`, saying whether more follow', async () => {
    const second = await post(`/api/v1/edges/${world.danaEdge}/threads`, { sender_agent_id: world.triager, subject: 'newer', content: 'newer one' });
    const page = await as(dana, 'GET', '/api/v1/me/threads?limit=1');
    expectStatus(page, 200);
    expect(page.body.threads.map((t: { thread_id: string }) => t.thread_id)).toEqual([second.body.thread_id]);
    expect(page.body.has_more).toBe(true);
    // A message makes an older thread the most recent again.
    await post(`/api/v1/threads/${world.danaThread}/messages`, { sender_agent_id: world.triager, content: 'bump' });
    expect((await as(dana, 'GET', '/api/v1/me/threads?limit=1')).body.threads[0].thread_id).toBe(world.danaThread);
    expectProblem(await as(dana, 'GET', '/api/v1/me/threads?limit=0'), 400, 'invalid_request');
    expectProblem(await as(dana, 'GET', '/api/v1/me/threads?limt=5'), 400, 'invalid_request');
  });

  it('reach: a reply is posted as the human of the session, whatever the body says; opening a thread is on channel web', async () => {
    const sent = await as(dana, 'POST', `/api/v1/me/threads/${world.danaThread}/messages`, { content: 'Looks **good**' });
    expectStatus(sent, 201);
    expect(sent.body).toMatchObject({ sender_id: world.dana, content: 'Looks **good**', thread_id: world.danaThread });
    // The sender is fixed by the route: naming one is an unknown field.
    expectProblem(await as(dana, 'POST', `/api/v1/me/threads/${world.danaThread}/messages`, { content: 'x', sender_agent_id: world.erin }), 400, 'invalid_request');
    const opened = await as(dana, 'POST', `/api/v1/me/edges/${world.danaEdge}/threads`, { subject: 'From the console', content: 'Hello triager' });
    expectStatus(opened, 201);
    expect(opened.body).toMatchObject({ subject: 'From the console', channel: 'web', human_id: world.dana, message_count: 1 });
    const viaKey = await call(base, 'GET', `/api/v1/threads/${opened.body.thread_id}`, { key });
    expect(viaKey.body.messages[0]).toMatchObject({ sender_id: world.dana, content: 'Hello triager' });
  });
});

describe('§10 CSRF and the session cookie', () => {
  let world: World;
  let dana: { cookie: string; csrf: string };
  beforeAll(async () => {
    world = await buildWorld();
    dana = await signIn(world.dana);
  });

  it('csrf: every change without X-CSRF-Token, or with another, is 403 csrf_failed and writes nothing', async () => {
    const changes: Array<[string, string, unknown]> = [
      ['POST', `/api/v1/me/threads/${world.danaThread}/messages`, { content: 'forged' }],
      ['POST', `/api/v1/me/threads/${world.danaThread}/read`, {}],
      ['POST', `/api/v1/me/edges/${world.danaEdge}/threads`, { content: 'forged' }],
      ['POST', `/api/v1/me/agents/${world.scout}/mcp-keys`, {}],
      ['DELETE', `/api/v1/me/agents/${world.scout}/mcp-keys/${freshUuid()}`, undefined],
      ['POST', '/api/v1/me/sign-out', {}],
    ];
    for (const [method, path, body] of changes) {
      expectProblem(await as(dana, method, path, body, null), 403, 'csrf_failed');
      expectProblem(await as(dana, method, path, body, 'not-the-token'), 403, 'csrf_failed');
    }
    const page = await call(base, 'GET', `/api/v1/threads/${world.danaThread}`, { key });
    expect(page.body.message_count).toBe(1);
    expect((await as(dana, 'GET', '/api/v1/me/threads')).body.threads).toHaveLength(1);
    expectStatus(await as(dana, 'GET', '/api/v1/me'), 200);
  });

  it('csrf: another session\'s token does not pass', async () => {
    const other = await signIn(world.dana);
    expect(other.csrf).not.toBe(dana.csrf);
    expectProblem(await as(dana, 'POST', `/api/v1/me/threads/${world.danaThread}/messages`, { content: 'x' }, other.csrf), 403, 'csrf_failed');
  });

  it('session: without a cookie, or with a made-up one, the person routes are 401 unauthenticated', async () => {
    expectProblem(await call(base, 'GET', '/api/v1/me'), 401, 'unauthenticated');
    expectProblem(await call(base, 'GET', '/api/v1/me', { headers: { cookie: 'acs_session=acs_session_0000000000000000000000000000000000000000' } }), 401, 'unauthenticated');
    // An organization key is no session.
    expectProblem(await call(base, 'GET', '/api/v1/me/threads', { key }), 401, 'unauthenticated');
  });

  it('sign-out: ends the session at once and clears the cookie; the cookie then opens nothing', async () => {
    const session = await signIn(world.dana);
    const out = await as(session, 'POST', '/api/v1/me/sign-out', {});
    expectStatus(out, 200);
    expect(out.body).toEqual({ signed_out: true });
    const cleared = setCookie(out, 'acs_session');
    expect(cleared?.pair).toBe('acs_session=');
    expectProblem(await as(session, 'GET', '/api/v1/me'), 401, 'unauthenticated');
    // The other session of the same human goes on.
    expectStatus(await as(dana, 'GET', '/api/v1/me'), 200);
  });

  it("session: deleting the human ends every session of it (the human's edges go first)", async () => {
    const one = await signIn(world.erin);
    const two = await signIn(world.erin);
    expectStatus(await call(base, 'DELETE', `/api/v1/edges/${world.erinEdge}`, { key }), 200);
    // Still a member without edges: the sessions live.
    expectStatus(await as(one, 'GET', '/api/v1/me'), 200);
    expectStatus(await call(base, 'DELETE', `/api/v1/humans/${world.erin}`, { key }), 200);
    expectProblem(await as(one, 'GET', '/api/v1/me'), 401, 'unauthenticated');
    expectProblem(await as(two, 'GET', '/api/v1/me/threads'), 401, 'unauthenticated');
  });
});

describe("§10 the event stream of a person's threads", () => {
  let world: World;
  let dana: { cookie: string; csrf: string };
  beforeAll(async () => {
    world = await buildWorld();
    dana = await signIn(world.dana);
  });

  it("stream: only the events of the person's threads arrive: their threads opened, messages from and to them", async () => {
    const stream = await openStream(`${base}/api/v1/me/events/stream`, { cookie: dana.cookie });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    try {
      // Others' traffic first (erin's thread, another team's), then dana's.
      await post(`/api/v1/threads/${world.erinThread}/messages`, { sender_agent_id: world.triager, content: 'for erin only' });
      await post(`/api/v1/threads/${world.bThread}/messages`, { sender_agent_id: world.outsider, content: 'for bob only' });
      await post(`/api/v1/edges/${world.erinEdge}/threads`, { sender_agent_id: world.erin, content: 'erin opens' });
      await post(`/api/v1/threads/${world.danaThread}/messages`, { sender_agent_id: world.triager, content: 'for dana' });
      const opened = await post(`/api/v1/edges/${world.danaEdge}/threads`, { sender_agent_id: world.triager, subject: 'new one', content: 'opened for dana' });
      expectStatus(await as(dana, 'POST', `/api/v1/me/threads/${world.danaThread}/messages`, { content: 'from dana' }), 201);
      const events = await stream.waitForEvents(4);
      const seen = events.map((e) => [e.event, JSON.parse(e.data).data.content ?? JSON.parse(e.data).data.thread_id]);
      expect(seen).toEqual([
        ['message.created', 'for dana'],
        ['thread.opened', opened.body.thread_id],
        ['message.created', 'opened for dana'],
        ['message.created', 'from dana'],
      ]);
      // Ids are opaque cursors, and the data names no seq: nothing shows where the person's events
      // stand in the organization's log, nor how many of others' came between them.
      for (const e of events) {
        expect(e.id).toMatch(/^[A-Za-z0-9_-]{22}$/);
        expect(JSON.parse(e.data)).not.toHaveProperty('seq');
      }
      expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
      expect(stream.comments.join(' ')).not.toMatch(/\d/);
      // Resuming after the first event gives the rest, and nothing of the others' threads.
      const resumed = await openStream(`${base}/api/v1/me/events/stream`, { cookie: dana.cookie, 'last-event-id': events[0]!.id! });
      try {
        expect((await resumed.waitForEvents(3)).map((e) => e.id)).toEqual(events.slice(1).map((e) => e.id));
      } finally {
        resumed.close();
      }
    } finally {
      stream.close();
    }
  });

  it("stream: `after` or Last-Event-ID that is not an id of the stream — a seq below the log's newest, beyond it, made up — is 400 invalid_cursor, worded alike and naming no number", async () => {
    // Events of others first, so the organization's log is well past 1.
    for (let i = 0; i < 3; i += 1) await post(`/api/v1/threads/${world.bThread}/messages`, { sender_agent_id: world.outsider, content: `noise ${i}` });
    const details = new Set<string>();
    const attempts: Array<[string, Record<string, string>]> = [
      ['?after=0', {}],
      ['?after=1', {}],
      ['?after=999999999', {}],
      ['?after=not-a-cursor', {}],
      ['?after=AAAAAAAAAAAAAAAAAAAAAA', {}],
      ['', { 'last-event-id': '1' }],
      ['', { 'last-event-id': '999999999' }],
    ];
    for (const [query, headers] of attempts) {
      const reply = await call(base, 'GET', `/api/v1/me/events/stream${query}`, { headers: { cookie: dana.cookie, ...headers } });
      expectProblem(reply, 400, 'invalid_cursor');
      details.add(reply.body.detail);
    }
    expect(details.size).toBe(1);
    expect([...details][0]).not.toMatch(/\d/);
  });

  it("stream: without a session it is 401; an organization that is not the person's is 404", async () => {
    expectProblem(await call(base, 'GET', '/api/v1/me/events/stream'), 401, 'unauthenticated');
    expectProblem(await as(dana, 'GET', `/api/v1/me/events/stream?org_id=${freshUuid()}`), 404, 'not_found');
  });

  it("stream: it ends at once when the session's human is deleted", async () => {
    const team = (await post(`/api/v1/organizations/${server.orgId}/teams`, { team_name: uniqueName('s') })).body.team_id;
    const gus = (await post(`/api/v1/teams/${team}/humans`, { name: 'gus' })).body.human_id;
    const session = await signIn(gus);
    const stream = await openStream(`${base}/api/v1/me/events/stream`, { cookie: session.cookie });
    expect(stream.status).toBe(200);
    await call(base, 'DELETE', `/api/v1/humans/${gus}`, { key });
    await stream.ended;
    stream.close();
  });
});

describe('§10 MCP keys of external agents', () => {
  let world: World;
  let dana: { cookie: string; csrf: string };
  beforeAll(async () => {
    world = await buildWorld();
    dana = await signIn(world.dana);
  });

  it('connect: an external agent of the team gets a key shown once, listed without its secret, revoked at once', async () => {
    const created = await as(dana, 'POST', `/api/v1/me/agents/${world.scout}/mcp-keys`, {});
    expectStatus(created, 201);
    expect(created.body.mcp_key).toMatch(/^acs_mcp_/);
    const listed = await as(dana, 'GET', `/api/v1/me/agents/${world.scout}/mcp-keys`);
    expect(listed.body.mcp_keys).toEqual([expect.objectContaining({ key_id: created.body.key_id, agent_id: world.scout, prefix: created.body.mcp_key.slice(0, 12) })]);
    expect(JSON.stringify(listed.body)).not.toContain(created.body.mcp_key);
    // The key works on the MCP endpoint, until it is revoked.
    const whoami = () =>
      call(base, 'POST', '/api/v1/mcp', {
        key: created.body.mcp_key,
        headers: { accept: 'application/json, text/event-stream' },
        body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } },
      });
    expect((await whoami()).body.result.structuredContent.agent.agent_id).toBe(world.scout);
    const revoked = await as(dana, 'DELETE', `/api/v1/me/agents/${world.scout}/mcp-keys/${created.body.key_id}`);
    expectStatus(revoked, 200);
    expect(revoked.body).toEqual({ revoked: true, key_id: created.body.key_id });
    expect((await whoami()).status).toBe(401);
    expect((await as(dana, 'GET', `/api/v1/me/agents/${world.scout}/mcp-keys`)).body.mcp_keys).toEqual([]);
  });

  it("connect: an agent with a provider, another team's agent, a human and an unknown id are 404", async () => {
    await call(base, 'PATCH', `/api/v1/agents/${world.triager}`, { key, body: { provider: 'echo' } });
    for (const id of [world.triager, world.outsider, world.dana, freshUuid()]) {
      expectProblem(await as(dana, 'POST', `/api/v1/me/agents/${id}/mcp-keys`, {}), 404, 'not_found');
      expectProblem(await as(dana, 'GET', `/api/v1/me/agents/${id}/mcp-keys`), 404, 'not_found');
    }
    expectProblem(await as(dana, 'DELETE', `/api/v1/me/agents/${world.scout}/mcp-keys/${freshUuid()}`), 404, 'not_found');
  });
});

describe('§10 the console at an address that is none of its pages', () => {
  // What a browser sends when a person opens an address.
  const browserAccept = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

  it("unknown path: a browser's page request gets the console's page with 404, whose app shows Not found; an API client, an API path or another method get problem+json", async () => {
    const console = await (await fetch(`${base}/inbox`, { headers: { accept: browserAccept } })).text();
    for (const path of ['/no-such-page', '/inbox/typo', '/threads', '/teams/a/b', '/sign-in/nothing?x=1']) {
      const page = await fetch(`${base}${path}`, { headers: { accept: browserAccept } });
      expect(page.status, path).toBe(404);
      expect(page.headers.get('content-type'), path).toBe('text/html; charset=utf-8');
      expect(page.headers.get('content-security-policy'), path).toContain("script-src 'self'");
      expect(page.headers.get('cache-control'), path).toBe('no-cache');
      expect(await page.text(), path).toBe(console);
    }
    const problems: Array<[string, string, string]> = [
      ['GET', '/no-such-page', '*/*'],
      ['GET', '/no-such-page', 'application/json'],
      ['GET', '/api/v1/no-such-route', browserAccept],
      ['GET', '/API/V1/no-such-route', browserAccept],
      ['GET', '/v1/no-such-route', browserAccept],
      ['GET', '/admin/v1/no-such-route', browserAccept],
      ['GET', '/assets/no-such-file.js', browserAccept],
      ['POST', '/no-such-page', browserAccept],
      ['DELETE', '/no-such-page', browserAccept],
    ];
    for (const [method, path, accept] of problems) {
      const reply = await call(base, method, path, { headers: { accept } });
      expectProblem(reply, 404, 'route_not_found');
    }
  });
});

describe('§10 operators', () => {
  it('operator: the admin token starts a session that reaches /admin/v1 only, with CSRF on changes', async () => {
    expectProblem(await call(base, 'POST', '/admin/v1/sign-in', { body: {}, headers: { authorization: 'Bearer wrong' } }), 401, 'unauthenticated');
    const signedIn = await call(base, 'POST', '/admin/v1/sign-in', { body: {}, headers: { authorization: `Bearer ${adminToken}` } });
    expectStatus(signedIn, 200);
    const cookie = setCookie(signedIn, 'acs_session')!;
    expect(cookie.attributes.map((a) => a.toLowerCase())).toEqual(expect.arrayContaining(['httponly', 'samesite=lax', 'path=/']));
    const operator = { cookie: cookie.pair, csrf: signedIn.body.csrf_token as string };

    const request = await call(base, 'POST', '/api/v1/access-requests', { body: { email: 'new@example.com', org_name: uniqueName('req'), intended_use: 'testing' } });
    expectStatus(request, 202);
    const listed = await as(operator, 'GET', '/admin/v1/access-requests?status=pending');
    expectStatus(listed, 200);
    expect(listed.body.access_requests.map((r: { request_id: string }) => r.request_id)).toContain(request.body.request_id);
    expectProblem(await as(operator, 'POST', `/admin/v1/access-requests/${request.body.request_id}/reject`, {}, null), 403, 'csrf_failed');
    const rejected = await as(operator, 'POST', `/admin/v1/access-requests/${request.body.request_id}/reject`, { reason: 'test' });
    expectStatus(rejected, 200);
    expect(rejected.body.status).toBe('rejected');

    // An operator session is no person's session, and reaches no organization route.
    expectProblem(await as(operator, 'GET', '/api/v1/me'), 401, 'unauthenticated');
    expectProblem(await as(operator, 'GET', '/api/v1/organizations'), 404, 'not_found');
    // A person's session is no operator's.
    const world = await buildWorld();
    const dana = await signIn(world.dana);
    expectProblem(await as(dana, 'GET', '/admin/v1/access-requests'), 401, 'unauthenticated');

    expectStatus(await as(operator, 'POST', '/admin/v1/sign-out', {}), 200);
    expectProblem(await as(operator, 'GET', '/admin/v1/access-requests'), 401, 'unauthenticated');
  });
});

describe('§10 behind a public https URL', () => {
  let secure: Server;
  beforeAll(async () => {
    secure = await startServer({ args: ['--public-url', 'https://console.example.test/'] });
  });
  afterAll(async () => {
    await secure?.stop();
  });

  it('public URL: links name it, and the session cookie is Secure', async () => {
    const team = await call(secure.baseUrl, 'POST', `/api/v1/organizations/${secure.orgId}/teams`, { key: secure.apiKey, body: { team_name: 'ops' } });
    const human = await call(secure.baseUrl, 'POST', `/api/v1/teams/${team.body.team_id}/humans`, { key: secure.apiKey, body: { name: 'dana' } });
    const link = await call(secure.baseUrl, 'POST', `/api/v1/humans/${human.body.human_id}/sign-in-links`, { key: secure.apiKey, body: { ttl_seconds: 60 } });
    expectStatus(link, 201);
    const url = new URL(link.body.url);
    expect(`${url.origin}${url.pathname}`).toBe('https://console.example.test/sign-in/link');
    // Opened through the server's own address (as a TLS-terminating proxy would forward it); the
    // browser's form posts from the public URL's origin.
    const page = await openLinkPage(link.body.url, { base: secure.baseUrl });
    expect(setCookie(page.response, 'acs_signin_csrf')!.attributes.map((a) => a.toLowerCase())).toContain('secure');
    const opened = await submitLinkPage(link.body.url, page, { base: secure.baseUrl });
    expect(opened.status).toBe(303);
    expect(opened.headers.get('location')).toBe('/inbox');
    const cookie = setCookie({ headers: opened.headers }, 'acs_session')!;
    expect(cookie.attributes.map((a) => a.toLowerCase())).toEqual(expect.arrayContaining(['httponly', 'samesite=lax', 'path=/', 'secure']));

  });
});

/**
 * Console sessions and sign-in links over time (contract §10): what the conformance suite cannot
 * wait for. The test shares the server's storage and moves stored times back (a link's
 * `expires_at`, a session's `last_used_at` and `expires_at`), as hours and days passing would.
 * Also: the console's pages and assets are served with the strict Content-Security-Policy, and
 * secrets in URLs never reach a log line.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loggedUrl } from '../../service/http/app.ts';
import { consoleCsp } from '../../service/http/console-assets.ts';
import { request, startHarnessWithDb, type Harness } from './helpers.ts';
import type { Db } from '../../service/storage/db.ts';

let h: Harness & { db: Db };
let humanId: string;

beforeAll(async () => {
  h = await startHarnessWithDb();
  const team = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'ops' });
  humanId = (await h.call('POST', `/api/v1/teams/${team.body.team_id}/humans`, { name: 'dana' })).body.human_id;
});
afterAll(async () => {
  await h.server.close();
});

async function link(ttl?: number): Promise<string> {
  const reply = await h.call('POST', `/api/v1/humans/${humanId}/sign-in-links`, ttl === undefined ? {} : { ttl_seconds: ttl });
  expect(reply.status).toBe(201);
  return reply.body.url;
}

/** Opens a link; output: the session cookie (`acs_session=…`) or undefined. */
async function openLink(url: string): Promise<string | undefined> {
  const response = await fetch(url.replace(/^https?:\/\/[^/]+/, h.server.url), { redirect: 'manual' });
  return response.headers.getSetCookie().map((line) => line.split(';')[0]!).find((pair) => pair.startsWith('acs_session=') && pair.length > 'acs_session='.length);
}

const me = (cookie: string) => request(`${h.server.url}/api/v1/me`, 'GET', undefined, { cookie });

describe('sign-in links over time', () => {
  it('sign-in link: once its lifetime has passed it signs nobody in', async () => {
    const url = await link(60);
    const token = new URL(url).searchParams.get('token')!;
    await h.db.query(`UPDATE sign_in_links SET expires_at = now() - interval '1 second' WHERE human_id = $1 AND used_at IS NULL`, [humanId]);
    expect(await openLink(url)).toBeUndefined();
    expect(token.startsWith('acs_signin_')).toBe(true);
  });

  it('sign-in link: only its hash is stored', async () => {
    const url = await link();
    const token = new URL(url).searchParams.get('token')!;
    const rows = await h.db.query<Record<string, unknown>>(`SELECT * FROM sign_in_links WHERE human_id = $1`, [humanId]);
    expect(JSON.stringify(rows)).not.toContain(token);
    const cookie = await openLink(url);
    const sessions = await h.db.query<Record<string, unknown>>(`SELECT * FROM sessions`);
    expect(JSON.stringify(sessions)).not.toContain(cookie!.slice('acs_session='.length));
  });
});

describe('sessions over time', () => {
  it('session: 12 hours without use end it; use within them keeps it', async () => {
    const cookie = (await openLink(await link()))!;
    await h.db.query(`UPDATE sessions SET last_used_at = now() - interval '11 hours 59 minutes'`);
    expect((await me(cookie)).status).toBe(200);
    // That use moved last_used_at to now: 11 more hours idle are fine.
    await h.db.query(`UPDATE sessions SET last_used_at = last_used_at - interval '11 hours'`);
    expect((await me(cookie)).status).toBe(200);
    await h.db.query(`UPDATE sessions SET last_used_at = now() - interval '12 hours 1 second'`);
    const ended = await me(cookie);
    expect(ended.status).toBe(401);
    expect(ended.body.code).toBe('unauthenticated');
  });

  it('session: 7 days after the sign-in it ends, however much it was used', async () => {
    const cookie = (await openLink(await link()))!;
    const before = await me(cookie);
    expect(Date.parse(before.body.idle_expires_at)).toBeLessThanOrEqual(Date.parse(before.body.expires_at));
    await h.db.query(`UPDATE sessions SET created_at = now() - interval '7 days', expires_at = now() - interval '1 second', last_used_at = now()`);
    expect((await me(cookie)).status).toBe(401);
  });

  it('session: an operator session ends when the server is given another admin token', async () => {
    const { createOperatorSession, findSession } = await import('../../service/sessions/sessions.ts');
    const { secret } = await createOperatorSession(h.db, 'first-token');
    expect(await findSession(h.db, secret, { adminToken: 'first-token' })).toMatchObject({ kind: 'operator' });
    expect(await findSession(h.db, secret, { adminToken: 'second-token' })).toBeUndefined();
    expect(await findSession(h.db, secret, {})).toBeUndefined();
    // And it is no person's session: the person routes refuse it.
    expect((await me(`acs_session=${secret}`)).status).toBe(401);
  });
});

describe("a person's threads on this backend", () => {
  it('reach: the inbox, a reply and a read mark work, and deleting the human ends the session', async () => {
    const team = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'reach' });
    const erin = (await h.call('POST', `/api/v1/teams/${team.body.team_id}/humans`, { name: 'erin' })).body.human_id;
    const bot = (await h.call('POST', `/api/v1/teams/${team.body.team_id}/agents`, { name: 'bot' })).body.agent_id;
    const edge = (await h.call('POST', `/api/v1/teams/${team.body.team_id}/edges`, { participants: [erin, bot] })).body.edge_id;
    const thread = (await h.call('POST', `/api/v1/edges/${edge}/threads`, { sender_agent_id: bot, subject: 'Hi', content: 'Ready?', expects_reply: true })).body.thread_id;
    const url = (await h.call('POST', `/api/v1/humans/${erin}/sign-in-links`, {})).body.url;
    const cookie = (await openLink(url))!;
    const csrf = (await me(cookie)).body.csrf_token;
    const listed = await request(`${h.server.url}/api/v1/me/threads`, 'GET', undefined, { cookie });
    expect(listed.body.threads).toEqual([expect.objectContaining({ thread_id: thread, unread_count: 1, awaiting_reply: true, human_id: erin })]);
    const sent = await request(`${h.server.url}/api/v1/me/threads/${thread}/messages`, 'POST', { content: 'Yes' }, { cookie, 'x-csrf-token': csrf });
    expect(sent.status).toBe(201);
    const read = await request(`${h.server.url}/api/v1/me/threads/${thread}/read`, 'POST', {}, { cookie, 'x-csrf-token': csrf });
    expect(read.body).toEqual({ thread_id: thread, unread_count: 0 });
    await h.call('DELETE', `/api/v1/edges/${edge}`);
    expect((await h.call('DELETE', `/api/v1/humans/${erin}`)).status).toBe(200);
    expect((await me(cookie)).status).toBe(401);
    const left = await h.db.query(`SELECT 1 FROM session_humans WHERE human_id = $1`, [erin]);
    expect(left).toEqual([]);
  });
});

describe('the console is served', () => {
  it('console: every page answers the same HTML with a strict Content-Security-Policy and no inline script', async () => {
    const pages = ['/', '/sign-in', '/inbox', `/threads/${crypto.randomUUID()}`, `/teams/${crypto.randomUUID()}`, '/connect', '/operator', '/sign-in?error=link_invalid'];
    let html: string | undefined;
    for (const page of pages) {
      const response = await fetch(h.server.url + page);
      expect(response.status, page).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(response.headers.get('content-security-policy')).toBe(consoleCsp);
      expect(response.headers.get('x-frame-options')).toBe('DENY');
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      const text = await response.text();
      html ??= text;
      expect(text).toBe(html);
    }
    expect(consoleCsp).toContain("script-src 'self'");
    expect(consoleCsp).not.toContain('unsafe-inline');
    // Every script is a file of this origin: none inline.
    const scripts = [...html!.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attributes, body] of scripts) {
      expect(attributes).toMatch(/src="\/assets\/app-[A-Z0-9]+\.js"/);
      expect(body!.trim()).toBe('');
    }
    expect(html).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=/i);
    // The assets it names are served, gzipped when asked, cached for good (their names change with them).
    const script = /src="(\/assets\/[^"]+)"/.exec(html!)![1]!;
    const asset = await fetch(h.server.url + script, { headers: { 'accept-encoding': 'gzip' } });
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(asset.headers.get('cache-control')).toContain('immutable');
    expect((await asset.text()).length).toBeGreaterThan(1000);
    const missing = await fetch(`${h.server.url}/assets/nothing-here.js`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { code: string }).code).toBe('route_not_found');
  });

  it('console: its pages are not API operations: the OpenAPI document lists none of them, nor the sign-in redirects', async () => {
    const doc = (await request(`${h.server.url}/api/v1/openapi.json`, 'GET')).body;
    const paths = Object.keys(doc.paths);
    for (const page of ['/', '/inbox', '/connect', '/operator', '/assets/*', '/sign-in/link', '/sign-in/oidc']) expect(paths).not.toContain(page);
    expect(paths).toEqual(expect.arrayContaining(['/me', '/me/threads', '/me/threads/{thread_id}/messages', '/humans/{human_id}/sign-in-links']));
    expect(doc.paths['/me/threads/{thread_id}/messages'].post.security).toEqual([{ session: [] }]);
    expect(doc.components.securitySchemes.session).toMatchObject({ type: 'apiKey', in: 'cookie', name: 'acs_session' });
  });

  it('logging: a sign-in token, an OpenID code and state never reach a log line', () => {
    expect(loggedUrl('/sign-in/link?token=acs_signin_abc')).toBe('/sign-in/link?token=[redacted]');
    expect(loggedUrl('/sign-in/oidc/callback?code=xyz&state=abc&iss=x')).toBe('/sign-in/oidc/callback?code=[redacted]&state=[redacted]&iss=x');
    expect(loggedUrl('/api/v1/threads/1?after=2')).toBe('/api/v1/threads/1?after=2');
  });
});

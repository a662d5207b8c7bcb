/**
 * Console sessions and sign-in links over time (contract §10): what the conformance suite cannot
 * wait for. The test shares the server's storage and moves stored times back (a link's
 * `expires_at`, a session's `last_used_at` and `expires_at`), as hours and days passing would.
 * Also: the console's pages and assets are served with the strict Content-Security-Policy (a
 * sign-in link's page with its own), a person's event stream names no place in the
 * organization's log (its cursors; an expired one answered without numbers), and secrets in URLs
 * never reach a log line, whatever the spelling of the query.
 */
import { createHash, randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loggedUrl } from '../../service/http/app.ts';
import { consoleCsp } from '../../service/http/console-assets.ts';
import { signInPageCsp } from '../../service/http/sign-in-page.ts';
import { request, startHarness, startHarnessWithDb, type Harness } from './helpers.ts';
import type { Db } from '../../service/storage/db.ts';
import { signInWithLink } from '../support/sign-in-link.ts';
import { openStream } from '../support/sse.ts';
import { eventCursors } from '../../service/sessions/event-cursors.ts';
import { createSecretBox } from '../../service/domain/secret-box.ts';

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

/** Signs in with a link (its page, then its button); output: the session cookie (`acs_session=…`) or undefined. */
async function openLink(url: string): Promise<string | undefined> {
  return (await signInWithLink(url, { base: h.server.url })).cookie;
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

describe("a person's event stream names no place in the organization's log", () => {
  it('event cursors: a seq comes back from its cursor in its organization only; cursors are fixed per event, 22 characters, and made-up or altered ones are refused', () => {
    const cursors = eventCursors(createSecretBox(randomBytes(32)));
    const org = crypto.randomUUID();
    const ids = [1, 2, 3, 1000, Number.MAX_SAFE_INTEGER].map((seq) => cursors.seal(org, seq));
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(ids.map((id) => cursors.open(org, id))).toEqual([1, 2, 3, 1000, Number.MAX_SAFE_INTEGER]);
    expect(cursors.seal(org, 2)).toBe(ids[1]);
    expect(cursors.open(crypto.randomUUID(), ids[0]!)).toBeUndefined();
    const altered = `${ids[0]!.slice(0, 5)}${ids[0]![5] === 'A' ? 'B' : 'A'}${ids[0]!.slice(6)}`;
    for (const bad of [altered, '1', '', 'AAAAAAAAAAAAAAAAAAAAAA', `${ids[0]}A`]) expect(cursors.open(org, bad), bad).toBeUndefined();
    // Another server key reads none of them.
    expect(eventCursors(createSecretBox(randomBytes(32))).open(org, ids[0]!)).toBeUndefined();
  });

  it('stream: resuming from an id whose events are no longer kept is 410 events_expired, without oldest_seq or any number of the log', async () => {
    const team = (await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'stream' })).body.team_id;
    const gus = (await h.call('POST', `/api/v1/teams/${team}/humans`, { name: 'gus' })).body.human_id;
    const bot = (await h.call('POST', `/api/v1/teams/${team}/agents`, { name: 'bot' })).body.agent_id;
    const edge = (await h.call('POST', `/api/v1/teams/${team}/edges`, { participants: [gus, bot] })).body.edge_id;
    const cookie = (await openLink((await h.call('POST', `/api/v1/humans/${gus}/sign-in-links`, {})).body.url))!;
    const stream = await openStream(`${h.server.url}/api/v1/me/events/stream`, { cookie });
    let first: string;
    let thread: string;
    try {
      await stream.waitForComments(1);
      thread = (await h.call('POST', `/api/v1/edges/${edge}/threads`, { sender_agent_id: bot, content: 'hello' })).body.thread_id;
      first = (await stream.waitForEvents(1))[0]!.id!;
    } finally {
      stream.close();
    }
    await h.call('POST', `/api/v1/threads/${thread}/messages`, { sender_agent_id: bot, content: 'later' });
    // Retention removes the events up to just after that one.
    const [opened] = await h.db.query<{ seq: string }>(`SELECT seq FROM events WHERE org_id = $1 AND type = 'thread.opened' AND data->>'thread_id' = $2`, [h.orgId, thread]);
    await h.db.query(`DELETE FROM events WHERE org_id = $1 AND seq <= $2`, [h.orgId, Number(opened!.seq) + 1]);
    const expired = await request(`${h.server.url}/api/v1/me/events/stream`, 'GET', undefined, { cookie, 'last-event-id': first });
    expect(expired.status).toBe(410);
    expect(expired.body.code).toBe('events_expired');
    expect(expired.body).not.toHaveProperty('oldest_seq');
    expect(expired.body.detail).not.toMatch(/\d/);
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

  it("sign-in page: no script may run, its one inline stylesheet is allowed by its hash, and the names it shows are escaped", async () => {
    const team = (await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: '<i>ops</i> & "co"' })).body.team_id;
    const human = (await h.call('POST', `/api/v1/teams/${team}/humans`, { name: '<script>alert(1)</script>' })).body.human_id;
    const url = (await h.call('POST', `/api/v1/humans/${human}/sign-in-links`, {})).body.url;
    const page = await fetch(url.replace(/^https?:\/\/[^/]+/, h.server.url), { redirect: 'manual' });
    expect(page.status).toBe(200);
    const html = await page.text();
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toBe(signInPageCsp);
    const styles = [...html.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => m[1]!);
    expect(styles).toHaveLength(1);
    expect(csp).toContain(`style-src 'sha256-${createHash('sha256').update(styles[0]!, 'utf8').digest('base64')}'`);
    expect(csp).not.toMatch(/script-src|unsafe/);
    expect(html).not.toMatch(/<script\b|\sstyle=|\son[a-z]+=/i);
    expect(html).toContain('Sign in as &lt;script&gt;alert(1)&lt;/script&gt;?');
    expect(html).toContain('team <strong>&lt;i&gt;ops&lt;/i&gt; &amp; &quot;co&quot;</strong>');
    expect(page.headers.get('referrer-policy')).toBe('strict-origin');
    expect(page.headers.get('x-frame-options')).toBe('DENY');
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
    // Decoded before it is compared: the names the router reads as token, code and state.
    expect(loggedUrl('/sign-in/link?%74oken=s1&TOKEN=s2&to%6Ben=s3&token=a&token=s4&x=1')).toBe('/sign-in/link?%74oken=[redacted]&TOKEN=[redacted]&to%6Ben=[redacted]&token=[redacted]&token=[redacted]&x=1');
    expect(loggedUrl('/cb?%63ode=s1&%53TATE=s2&+code+=s3&c%2564e=kept')).toBe('/cb?%63ode=[redacted]&%53TATE=[redacted]&+code+=[redacted]&c%2564e=kept');
  });

  it('logging: whatever the spelling of token, code and state in the query, the request log keeps none of their values', async () => {
    let text = '';
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        text += chunk.toString('utf8');
        done();
      },
    });
    const logged = await startHarness({ inMemory: true, logger: { level: 'info', stream } });
    try {
      const team = await logged.call('POST', `/api/v1/organizations/${logged.orgId}/teams`, { team_name: 'ops' });
      const human = (await logged.call('POST', `/api/v1/teams/${team.body.team_id}/humans`, { name: 'dana' })).body.human_id;
      const url = (await logged.call('POST', `/api/v1/humans/${human}/sign-in-links`, {})).body.url as string;
      const token = new URL(url).searchParams.get('token')!;
      const secrets: string[] = [token];
      const secret = (what: string) => {
        const value = `${what}-${crypto.randomUUID()}`;
        secrets.push(value);
        return value;
      };
      // The router reads a percent-encoded name as the name itself: the link is recognised.
      const opened = await fetch(`${logged.server.url}/sign-in/link?%74oken=${token}`, { redirect: 'manual' });
      expect(opened.headers.get('location')).not.toBe('/sign-in?error=link_invalid');
      const paths = [
        `/sign-in/link?%54%4F%4B%45%4E=${secret('upper-encoded')}`,
        `/sign-in/link?TOKEN=${secret('upper')}&Token=${secret('mixed')}`,
        `/sign-in/link?token=${secret('first')}&token=${secret('repeated')}`,
        `/sign-in/link?to%6ben=${secret('partly-encoded')}`,
        `/sign-in/link?token+=${secret('plus')}&%2574oken=${secret('encoded-twice')}`,
        `/sign-in/link?x=1;token=${secret('semicolon')}`,
        `/sign-in/oidc/callback?%63ode=${secret('code')}&%73tate=${secret('state')}`,
        `/sign-in/oidc/callback?CODE=${secret('upper-code')}&State=${secret('mixed-state')}&co%64e=${secret('partly-code')}`,
        // Not a query at all, but a secret all the same: recognised by its prefix.
        `/sign-in/link/${secret('acs_signin_inpath').replace(/-/g, '')}`,
      ];
      for (const path of paths) await fetch(logged.server.url + path, { redirect: 'manual' });
      await expect.poll(() => text.split('\n').filter((line) => line.includes('"url":"/sign-in/')).length).toBeGreaterThanOrEqual(paths.length + 1);
      for (const value of secrets) {
        expect(text, value).not.toContain(value);
        expect(text, value).not.toContain(value.replace(/-/g, ''));
      }
      expect(text).toContain('%74oken=[redacted]');
    } finally {
      await logged.server.close();
    }
  });
});

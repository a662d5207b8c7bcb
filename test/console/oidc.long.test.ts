/**
 * Signing in to the console through OpenID Connect (contract §10), against a real OpenID
 * provider started here (the `oidc-provider` package, with its development login pages), in a
 * real Chromium: Authorization Code with PKCE, a verified email signing the person in as every
 * human with that email, then the `approval` pipeline answered from the inbox as with a link.
 * Refused: an unverified email, an email no human has, a callback that no login of this browser
 * started, and a callback used once already.
 */
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Provider from 'oidc-provider';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../service/index.ts';
import { browserUnavailable, expectAccessible, launchBrowser, type TestBrowser } from '../support/browser.ts';
import { runTeamctl } from '../support/cli.ts';
import { request } from '../service/helpers.ts';

const skip = browserUnavailable();
const example = resolve(import.meta.dirname, '..', '..', 'examples', 'triage.yaml');
const clientId = 'acs-console';
const clientSecret = `secret-${crypto.randomUUID()}`;

/** The provider's accounts: the login typed on its development login page names one. */
const accounts: Record<string, { email: string; email_verified: boolean }> = {
  dana: { email: 'Dana@Example.com', email_verified: true },
  unverified: { email: 'dana@example.com', email_verified: false },
  nobody: { email: 'nobody@example.com', email_verified: true },
};

let providerServer: HttpServer;
let issuer: string;
let server: RunningServer;
let browser: TestBrowser;
let home: string;
let apiKey: string;
let env: NodeJS.ProcessEnv;
let dana: string;
let danaElsewhere: string;

const api = async (method: string, path: string, body?: unknown) => {
  const reply = await request(`${server.url}${path}`, method, body, { 'x-api-key': apiKey });
  expect(reply.status, `${method} ${path}: ${JSON.stringify(reply.body)}`).toBeLessThan(300);
  return reply.body;
};

/** Goes through the provider's development login and consent pages as `login`. */
async function signInAtProvider(page: Page, login: string): Promise<void> {
  await page.goto(`${server.url}/sign-in`);
  const host = new URL(issuer).host;
  await page.getByRole('link', { name: `Sign in with ${host}` }).click();
  await page.waitForURL(`${issuer}/interaction/**`, { waitUntil: 'commit' });
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any password');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
}

describe.skipIf(skip)(`OpenID Connect sign-in in Chromium${skip ? ` (skipped: ${skip})` : ''}`, () => {
  beforeAll(async () => {
    // The provider's port first (its issuer names it), then acs-server (which discovers the
    // provider at the first sign-in), then the provider itself, which must know acs-server's callback.
    providerServer = createServer();
    await new Promise<void>((done) => providerServer.listen(0, '127.0.0.1', done));
    issuer = `http://127.0.0.1:${(providerServer.address() as AddressInfo).port}`;
    server = await startServer({ port: 0, inMemory: true, tickMs: 50, oidc: { issuer, clientId, clientSecret }, prepareConsole: true });
    const provider = new Provider(issuer, {
      clients: [{ client_id: clientId, client_secret: clientSecret, redirect_uris: [`${server.url}/sign-in/oidc/callback`], grant_types: ['authorization_code'], response_types: ['code'] }],
      pkce: { required: () => true },
      claims: { openid: ['sub'], email: ['email', 'email_verified'] },
      findAccount: async (_ctx: unknown, id: string) => ({
        accountId: id,
        claims: async () => ({ sub: id, ...(accounts[id] ?? { email: `${id}@example.com`, email_verified: false }) }),
      }),
      cookies: { keys: [crypto.randomUUID()] },
      ttl: { Interaction: 600, Session: 600, Grant: 600, AccessToken: 600, IdToken: 600, AuthorizationCode: 60 },
    });
    // The development login pages warn once that they are for development: they are.
    provider.on('server_error', (_ctx: unknown, error: Error) => console.error('oidc-provider:', error));
    providerServer.on('request', provider.callback());

    home = await mkdtemp(join(tmpdir(), 'acs-oidc-test-'));
    apiKey = (await server.provisionOrganization('oidc-test')).api_key;
    env = { ACS_BASE_URL: server.url, ACS_API_KEY: apiKey, ECHO_PROVIDER_KEY: 'echo-key', HOME: home, PATH: process.env.PATH };
    const applied = await runTeamctl(['apply', '-f', example, '--auto-approve'], env);
    expect(applied.code, applied.stdout + applied.stderr).toBe(0);
    const orgs = await api('GET', '/api/v1/organizations');
    const orgId = orgs.organizations.find((o: { org_name: string }) => o.org_name === 'acme-support').org_id;
    const teamId = (await api('GET', `/api/v1/organizations/${orgId}/teams`)).teams[0].team_id;
    dana = (await api('GET', `/api/v1/teams/${teamId}/humans`)).humans.find((h: { name: string }) => h.name === 'dana').human_id;
    // The same person in a team of another organization, by the same email.
    const other = await api('POST', '/api/v1/organizations', { org_name: 'night-shift' });
    const team = await api('POST', `/api/v1/organizations/${other.org_id}/teams`, { team_name: 'on-call' });
    danaElsewhere = (await api('POST', `/api/v1/teams/${team.team_id}/humans`, { name: 'dana-on-call', email: 'dana@example.com' })).human_id;
    const pager = await api('POST', `/api/v1/teams/${team.team_id}/agents`, { name: 'pager' });
    const edge = await api('POST', `/api/v1/teams/${team.team_id}/edges`, { participants: [danaElsewhere, pager.agent_id] });
    await api('POST', `/api/v1/edges/${edge.edge_id}/threads`, { sender_agent_id: pager.agent_id, subject: 'Night alert', content: 'Disk full on db-2' });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await new Promise((done) => providerServer?.close(done));
    await rm(home, { recursive: true, force: true });
  });

  it('oidc: a verified email signs dana in as every human with it; she answers the approval pipeline and the run completes', async () => {
    const run = runTeamctl(['run', 'approval', '-f', example, '--input', 'change=v3', '--json'], env);
    const { page, problems } = await browser.newPage();
    await expectAccessibleSignIn(page);
    await signInAtProvider(page, 'dana');
    await page.waitForURL(`${server.url}/inbox`);
    const me = await (await page.request.get(`${server.url}/api/v1/me`)).json();
    expect(me.method).toBe('oidc');
    expect(me.email).toBe('Dana@Example.com');
    expect(me.humans.map((h: { human_id: string }) => h.human_id).sort()).toEqual([dana, danaElsewhere].sort());
    const inbox = page.getByRole('list', { name: 'Inbox' });
    // Both teams' threads, in one inbox.
    await expect.poll(() => inbox.getByRole('listitem').filter({ hasText: 'Night alert' }).count(), { timeout: 30_000 }).toBe(1);
    const question = inbox.getByRole('listitem').filter({ hasText: 'Approve v3?' });
    await expect.poll(() => question.count(), { timeout: 30_000 }).toBe(1);
    await question.getByRole('link').click();
    await page.getByRole('textbox', { name: 'Reply' }).fill('approve');
    await page.getByRole('button', { name: 'Send' }).click();
    const finished = await run;
    expect(finished.code, finished.stdout + finished.stderr).toBe(0);
    expect(JSON.parse(finished.stdout)).toMatchObject({ status: 'completed', output: 'approve' });
    // Both teams appear in the navigation.
    const nav = page.getByRole('navigation', { name: 'Main' });
    expect(await nav.getByRole('link', { name: 'Team intake' }).count()).toBe(1);
    expect(await nav.getByRole('link', { name: 'Team on-call' }).count()).toBe(1);
    // No script error, no dialog (the sign-in page's own 401 from GET /api/v1/me is expected).
    expect(problems.filter((p) => !p.startsWith('console: Failed to load resource'))).toEqual([]);
  });

  it('oidc: an email the provider did not verify, or that no human has, signs nobody in and says why', async () => {
    for (const [login, words] of [
      ['unverified', 'did not confirm your email address'],
      ['nobody', 'No team has a member with your email address'],
    ] as const) {
      const { page } = await browser.newPage();
      await signInAtProvider(page, login);
      await page.waitForURL(`${server.url}/sign-in?error=*`);
      await expect.poll(() => page.getByRole('alert').textContent()).toContain(words);
      expect((await page.request.get(`${server.url}/api/v1/me`)).status()).toBe(401);
      await expectAccessible(page, `sign-in refused (${login})`);
    }
  });

  it('oidc: a callback that no login of this browser started, or a replayed one, signs nobody in', async () => {
    const forged = await fetch(`${server.url}/sign-in/oidc/callback?code=made-up&state=made-up&iss=${encodeURIComponent(issuer)}`, { redirect: 'manual' });
    expect(forged.status).toBe(303);
    expect(forged.headers.get('location')).toBe('/sign-in?error=oidc_login_expired');
    expect(forged.headers.getSetCookie().some((c) => c.startsWith('acs_session=acs'))).toBe(false);

    // A real login, whose callback is then replayed by another browser (no acs_oidc cookie) and by the same one.
    const { page, context } = await browser.newPage();
    let callback: string | undefined;
    // Stop at the consent: follow the provider's redirects by hand up to the callback URL, unopened.
    await page.route(`${issuer}/interaction/**`, async (route) => {
      if (route.request().method() !== 'POST' || !(route.request().postData() ?? '').includes('prompt=consent')) return route.continue();
      const consented = await route.fetch({ maxRedirects: 0 });
      const resume = consented.headers().location;
      const resumed = resume ? await page.request.get(new URL(resume, issuer).href, { maxRedirects: 0 }) : undefined;
      callback = resumed?.headers().location;
      return route.fulfill({ status: 200, contentType: 'text/plain', body: 'stopped before the callback' });
    });
    await signInAtProvider(page, 'dana');
    await expect.poll(() => callback).toMatch(new RegExp(`^${server.url}/sign-in/oidc/callback\\?`));
    // Another browser (without this one's acs_oidc cookie) cannot finish it.
    const elsewhere = await fetch(callback!, { redirect: 'manual' });
    expect(elsewhere.headers.get('location')).toBe('/sign-in?error=oidc_login_expired');
    // The browser that started it can, once.
    await page.goto(callback!);
    await page.waitForURL(`${server.url}/inbox`);
    expect((await page.request.get(`${server.url}/api/v1/me`)).status()).toBe(200);
    // The same callback again, even from the browser that started it: the login was used.
    const cookies = await context.cookies(server.url);
    const replay = await fetch(callback!, { redirect: 'manual', headers: { cookie: cookies.map((c) => `${c.name}=${c.value}`).join('; ') } });
    expect(replay.headers.get('location')).toBe('/sign-in?error=oidc_login_expired');
  });
});

async function expectAccessibleSignIn(page: Page): Promise<void> {
  await page.goto(`${server.url}/sign-in`);
  await expect.poll(() => page.getByRole('link', { name: /^Sign in with / }).count()).toBe(1);
  await expectAccessible(page, 'sign-in with OpenID Connect');
}

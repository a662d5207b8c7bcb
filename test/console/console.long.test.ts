/**
 * The console in a real Chromium (docs/console.md): a person signs in by a sign-in link, finds
 * the question of an `approval` pipeline run (examples/triage.yaml, `teamctl run approval` on
 * the local engine) in the inbox, answers `approve`, and the run completes; untrusted message
 * content renders as text; another team's thread is "Not found"; a revoked session is signed
 * out; the team graph; connecting an agent; the operators' review; and axe-core finds no serious
 * or critical violation on any page. The screenshots of docs/console.md are taken here.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../service/index.ts';
import { browserUnavailable, expectAccessible, launchBrowser, screenshot, type TestBrowser } from '../support/browser.ts';
import { runTeamctl } from '../support/cli.ts';
import { request } from '../service/helpers.ts';

const skip = browserUnavailable();
const example = resolve(import.meta.dirname, '..', '..', 'examples', 'triage.yaml');
const adminToken = `admin-${crypto.randomUUID()}`;

let server: RunningServer;
let browser: TestBrowser;
let home: string;
let apiKey: string;
let env: NodeJS.ProcessEnv;
let ids: { orgId: string; teamId: string; dana: string; triager: string; summarizer: string };

const api = (method: string, path: string, body?: unknown) => request(`${server.url}${path}`, method, body, { 'x-api-key': apiKey });

async function ok(method: string, path: string, body?: unknown) {
  const reply = await api(method, path, body);
  expect(reply.status, `${method} ${path}: ${JSON.stringify(reply.body)}`).toBeLessThan(300);
  return reply.body;
}

/** A fresh sign-in link of a human. */
async function linkFor(humanId: string): Promise<string> {
  return (await ok('POST', `/api/v1/humans/${humanId}/sign-in-links`, {})).url;
}

/** A new browser context signed in as `humanId` by a link, on the inbox. */
async function signedIn(humanId: string): Promise<{ page: Page; problems: string[] }> {
  const { page, problems } = await browser.newPage();
  await page.goto(await linkFor(humanId));
  await page.waitForURL('**/inbox');
  await expect.poll(() => page.getByRole('heading', { name: 'Inbox', level: 1 }).count()).toBe(1);
  return { page, problems };
}

describe.skipIf(skip)(`the console in Chromium${skip ? ` (skipped: ${skip})` : ''}`, () => {
  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), 'acs-console-test-'));
    server = await startServer({ port: 0, inMemory: true, tickMs: 50, adminToken, prepareConsole: true });
    apiKey = (await server.provisionOrganization('console-test')).api_key;
    env = { ACS_BASE_URL: server.url, ACS_API_KEY: apiKey, ECHO_PROVIDER_KEY: 'echo-key', HOME: home, PATH: process.env.PATH };
    const applied = await runTeamctl(['apply', '-f', example, '--auto-approve'], env);
    expect(applied.code, applied.stdout + applied.stderr).toBe(0);
    const orgs = await ok('GET', '/api/v1/organizations');
    const orgId = orgs.organizations.find((o: { org_name: string }) => o.org_name === 'acme-support').org_id;
    const teams = await ok('GET', `/api/v1/organizations/${orgId}/teams`);
    const teamId = teams.teams.find((t: { team_name: string }) => t.team_name === 'intake').team_id;
    const graph = await ok('GET', `/api/v1/teams/${teamId}`);
    const agent = (name: string) => graph.agents.find((a: { name: string }) => a.name === name).agent_id;
    ids = { orgId, teamId, dana: graph.humans.find((h: { name: string }) => h.name === 'dana').human_id, triager: agent('triager'), summarizer: agent('summarizer') };
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await rm(home, { recursive: true, force: true });
  });

  it("console: dana signs in by link, finds the approval pipeline's question in her inbox, answers approve, and the run completes", async () => {
    const run = runTeamctl(['run', 'approval', '-f', example, '--input', 'change=v2', '--json'], env);
    const { page, problems } = await signedIn(ids.dana);
    const inbox = page.getByRole('list', { name: 'Inbox' });
    const question = inbox.getByRole('listitem').filter({ hasText: 'Approve v2?' });
    await expect.poll(() => question.count(), { timeout: 30_000 }).toBe(1);
    await expect.poll(() => question.textContent()).toContain('1 unread');
    // The pipeline step waits for dana: the thread says so.
    await expect.poll(() => question.textContent()).toContain('Awaits your answer');
    await expect.poll(() => question.textContent()).toContain('triager');
    await expectAccessible(page, 'inbox');
    await screenshot(page, 'inbox');

    await question.getByRole('link').click();
    await page.waitForURL('**/threads/*');
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Approve v2?');
    const messages = page.getByRole('list', { name: 'Messages' });
    await expect.poll(() => messages.textContent()).toContain('May we roll out v2?');
    await page.getByRole('textbox', { name: 'Reply' }).fill('approve');
    await page.getByRole('button', { name: 'Send' }).click();
    const finished = await run;
    expect(finished.code, finished.stdout + finished.stderr).toBe(0);
    const result = JSON.parse(finished.stdout);
    expect(result).toMatchObject({ status: 'completed', output: 'approve' });
    // The pipeline's confirmation arrives on the open page without a reload.
    await expect.poll(() => messages.textContent(), { timeout: 20_000 }).toContain('Approved: rolling out v2.');
    // The triager's provider left dana's answer to the pipeline that awaited it.
    expect(await messages.textContent()).not.toContain('echo: approve');
    expect(await page.getByRole('textbox', { name: 'Reply' }).inputValue()).toBe('');
    await expectAccessible(page, 'thread');
    await screenshot(page, 'thread');
    // Reading the thread marked it read for dana.
    const threads = await page.request.get(`${server.url}/api/v1/me/threads`);
    const listed = (await threads.json()).threads.find((t: { subject: string }) => t.subject === 'Approve v2?');
    expect(listed.unread_count).toBe(0);
    expect(problems).toEqual([]);
  });

  it("console: the inbox follows the person's event stream: a thread opened for dana appears while it is open", async () => {
    const { page, problems } = await signedIn(ids.dana);
    const inbox = page.getByRole('list', { name: 'Inbox' });
    await expect.poll(() => page.getByRole('status').first().textContent()).not.toContain('Loading');
    const subject = `Live ${crypto.randomUUID().slice(0, 8)}`;
    await ok('POST', `/api/v1/edges/${(await danaEdge(ids.summarizer)).edge_id}/threads`, { sender_agent_id: ids.summarizer, subject, content: 'Fresh news' });
    // Sooner than the 30 s fallback refresh: the stream brought it.
    await expect.poll(() => inbox.getByRole('listitem').filter({ hasText: subject }).count(), { timeout: 15_000 }).toBe(1);
    expect(await inbox.getByRole('listitem').first().textContent()).toContain(subject);
    expect(problems).toEqual([]);
  });

  it('console: dana opens a thread with the summarizer from the inbox; it opens on channel web, from her', async () => {
    const { page } = await signedIn(ids.dana);
    await page.getByRole('combobox', { name: 'With' }).selectOption({ label: 'summarizer (agent)' });
    await page.getByRole('textbox', { name: 'Subject' }).fill('Weekly summary');
    await page.getByRole('textbox', { name: 'Message' }).fill('Please summarize **this week**.');
    await page.getByRole('button', { name: 'Open thread' }).click();
    await page.waitForURL('**/threads/*');
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Weekly summary');
    const messages = page.getByRole('list', { name: 'Messages' });
    await expect.poll(() => messages.getByRole('listitem').first().locator('strong', { hasText: 'this week' }).count()).toBe(1);
    const threadId = page.url().split('/threads/')[1]!;
    const stored = await ok('GET', `/api/v1/threads/${threadId}`);
    expect(stored).toMatchObject({ subject: 'Weekly summary', channel: 'web' });
    expect(stored.messages[0]).toMatchObject({ sender_id: ids.dana, content: 'Please summarize **this week**.' });
    // The summarizer (echo) answers, and the answer shows up on the open page.
    await expect.poll(() => messages.textContent(), { timeout: 20_000 }).toContain('echo: Please summarize');
  });

  it('console: a message with HTML, a script or a javascript: link renders as text; Markdown still renders', async () => {
    const thread = await ok('POST', `/api/v1/edges/${(await danaEdge(ids.triager)).edge_id}/threads`, {
      sender_agent_id: ids.triager,
      subject: 'Untrusted content',
      content: [
        `<img src=x onerror="document.title='pwned'">`,
        '',
        `[click me](javascript:document.title='pwned-link')`,
        '',
        `<script>document.title='pwned-script'</script>`,
        '',
        '<a href="javascript:alert(1)">raw link</a> and **bold** text and [a safe link](https://example.com/docs)',
      ].join('\n'),
    });
    const { page, problems } = await signedIn(ids.dana);
    await page.goto(`${server.url}/threads/${thread.thread_id}`);
    const messages = page.getByRole('list', { name: 'Messages' });
    await expect.poll(() => messages.textContent()).toContain(`<img src=x onerror="document.title='pwned'">`);
    const text = (await messages.textContent()) ?? '';
    expect(text).toContain(`[click me](javascript:document.title='pwned-link')`);
    expect(text).toContain(`<script>document.title='pwned-script'</script>`);
    expect(text).toContain('<a href="javascript:alert(1)">raw link</a>');
    expect(await messages.locator('img, script, iframe').count()).toBe(0);
    expect(await messages.locator('a[href^="javascript" i]').count()).toBe(0);
    expect(await messages.locator('[onerror], [onclick], [onload]').count()).toBe(0);
    expect(await messages.locator('strong', { hasText: 'bold' }).count()).toBe(1);
    const safe = messages.getByRole('link', { name: 'a safe link' });
    expect(await safe.getAttribute('href')).toBe('https://example.com/docs');
    expect(await safe.getAttribute('rel')).toBe('noopener noreferrer nofollow');
    // Give an onerror every chance to have run.
    await page.waitForTimeout(500);
    expect(await page.title()).not.toContain('pwned');
    expect(await page.title()).toContain('Untrusted content');
    expect(problems.filter((p) => p.startsWith('dialog'))).toEqual([]);
    // Behind the sanitizer, the page itself refuses markup written as a string (Trusted Types, CSP).
    // (A string, so that the test's own type check needs no DOM types.)
    const written = await page.evaluate(`(() => {
      try {
        document.createElement('div').innerHTML = '<img src=x>';
        return 'written';
      } catch {
        return 'refused';
      }
    })()`);
    expect(written).toBe('refused');
  });

  it("console: another team's thread id in the URL shows Not found, and reveals nothing of it", async () => {
    // A thread in another organization, and one on an edge of the same team that is not dana's.
    const other = await ok('POST', '/api/v1/organizations', { org_name: `other-${crypto.randomUUID().slice(0, 8)}` });
    const team = await ok('POST', `/api/v1/organizations/${other.org_id}/teams`, { team_name: 'elsewhere' });
    const bob = await ok('POST', `/api/v1/teams/${team.team_id}/humans`, { name: 'bob' });
    const bot = await ok('POST', `/api/v1/teams/${team.team_id}/agents`, { name: 'bot' });
    const edge = await ok('POST', `/api/v1/teams/${team.team_id}/edges`, { participants: [bob.human_id, bot.agent_id] });
    const secret = await ok('POST', `/api/v1/edges/${edge.edge_id}/threads`, { sender_agent_id: bot.agent_id, subject: 'Secret plans', content: 'Only for bob' });
    const { page } = await signedIn(ids.dana);
    for (const id of [secret.thread_id, crypto.randomUUID()]) {
      await page.goto(`${server.url}/threads/${id}`);
      await expect.poll(() => page.getByRole('heading', { name: 'Not found', level: 1 }).count()).toBe(1);
      const body = (await page.locator('main').textContent()) ?? '';
      expect(body).not.toContain('Secret plans');
      expect(body).not.toContain('Only for bob');
    }
    await expectAccessible(page, 'not found');
    await page.goto(`${server.url}/teams/${team.team_id}`);
    await expect.poll(() => page.getByRole('heading', { name: 'Not found', level: 1 }).count()).toBe(1);
  });

  it("console: the team page draws the team's graph as a described picture, with its agents, humans and edges listed", async () => {
    const { page } = await signedIn(ids.dana);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Team intake' }).click();
    await page.waitForURL(`**/teams/${ids.teamId}`);
    const picture = page.getByRole('img', { name: /The graph of team intake/ });
    await expect.poll(() => picture.count()).toBe(1);
    expect(await page.locator('svg .node').count()).toBe(3);
    expect(await page.locator('svg line.edge').count()).toBe(2);
    const description = (await page.locator('svg desc').textContent()) ?? '';
    expect(description).toContain('2 agents, 1 human, 2 edges');
    expect(description).toContain('dana talks with triager');
    const edges = page.getByRole('region', { name: 'Edges' }).getByRole('listitem');
    expect((await edges.allTextContents()).sort()).toEqual(['dana ↔ summarizer', 'dana ↔ triager']);
    await expectAccessible(page, 'team');
    await screenshot(page, 'team');
  });

  it('console: connecting an external agent shows its MCP key once in a ready configuration, lists it and revokes it', async () => {
    const helper = await ok('POST', `/api/v1/teams/${ids.teamId}/agents`, { name: 'helper', description: 'Runs in Claude Desktop' });
    const { page } = await signedIn(ids.dana);
    await page.getByRole('link', { name: 'Connect an agent' }).click();
    await page.waitForURL('**/connect');
    const agent = page.getByRole('combobox', { name: 'Agent' });
    await expect.poll(() => agent.locator('option').allTextContents()).toEqual(['helper (team intake)']);
    await page.getByRole('button', { name: 'Create MCP key' }).click();
    const config = page.getByRole('textbox', { name: 'Configuration' });
    await expect.poll(() => config.inputValue()).toContain('acs_mcp_');
    const parsed = JSON.parse(await config.inputValue());
    const entry = parsed.mcpServers['intake-helper'];
    expect(entry.args).toContain(`${server.url}/api/v1/mcp`);
    const secret: string = entry.env.ACS_MCP_KEY;
    await page.getByRole('combobox', { name: 'Client' }).selectOption('vscode');
    const vscode = JSON.parse(await config.inputValue());
    expect(vscode.servers['intake-helper']).toEqual({ type: 'http', url: `${server.url}/api/v1/mcp`, headers: { 'x-api-key': secret } });
    const keys = await ok('GET', `/api/v1/agents/${helper.agent_id}/mcp-keys`);
    expect(keys.mcp_keys).toHaveLength(1);
    const revoke = page.getByRole('button', { name: `Revoke key ${secret.slice(0, 12)}` });
    await expect.poll(() => revoke.count()).toBe(1);
    await expectAccessible(page, 'connect an agent');
    await screenshot(page, 'connect');
    await revoke.click();
    await expect.poll(() => page.getByText('No active key.').count()).toBe(1);
    expect((await ok('GET', `/api/v1/agents/${helper.agent_id}/mcp-keys`)).mcp_keys).toEqual([]);
    // Shown once: after a reload the secret is nowhere on the page.
    await page.reload();
    await expect.poll(() => page.getByRole('heading', { name: 'Connect an agent', level: 1 }).count()).toBe(1);
    expect(await page.content()).not.toContain(secret);
  });

  it('console: a session revoked by deleting its human signs the console out, saying so', async () => {
    const frank = await ok('POST', `/api/v1/teams/${ids.teamId}/humans`, { name: 'frank' });
    const edge = await ok('POST', `/api/v1/teams/${ids.teamId}/edges`, { participants: [frank.human_id, ids.summarizer] });
    const { page } = await signedIn(frank.human_id);
    await ok('DELETE', `/api/v1/edges/${edge.edge_id}`);
    await ok('DELETE', `/api/v1/humans/${frank.human_id}`);
    // The inbox refreshes every few seconds; the next refresh finds the session gone.
    await expect.poll(() => page.getByText('Your session has ended').count(), { timeout: 30_000 }).toBe(1);
    expect(await page.getByRole('heading', { name: 'Sign in to the ACS console' }).count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
  });

  it('console: Sign out ends the session; the sign-in page explains a used link', async () => {
    const { page } = await signedIn(ids.dana);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Sign in to the ACS console' }).count()).toBe(1);
    expect((await page.request.get(`${server.url}/api/v1/me`)).status()).toBe(401);
    const link = await linkFor(ids.dana);
    await page.goto(link);
    await page.waitForURL('**/inbox');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.goto(link);
    await page.waitForURL('**/sign-in?error=link_invalid');
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('This sign-in link does not work any more');
    await expectAccessible(page, 'sign-in');
    await screenshot(page, 'sign-in');
  });

  it('console: an operator signs in with the admin token and approves an access request; the first key is shown once', async () => {
    const orgName = `requested-${crypto.randomUUID().slice(0, 8)}`;
    const asked = await request(`${server.url}/api/v1/access-requests`, 'POST', { email: 'new-team@example.com', org_name: orgName, intended_use: 'Run our support agents' });
    expect(asked.status).toBe(202);
    const rejectedName = `spam-${crypto.randomUUID().slice(0, 8)}`;
    await request(`${server.url}/api/v1/access-requests`, 'POST', { email: 'spam@example.com', org_name: rejectedName, intended_use: 'nothing good' });
    const { page } = await browser.newPage();
    await page.goto(`${server.url}/operator`);
    await expect.poll(() => page.getByRole('heading', { name: 'Operator sign-in' }).count()).toBe(1);
    await expectAccessible(page, 'operator sign-in');
    await page.getByLabel('Admin token').fill('not-the-token');
    await page.getByRole('button', { name: 'Sign in as operator' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('not the server');
    await page.getByLabel('Admin token').fill(adminToken);
    await page.getByRole('button', { name: 'Sign in as operator' }).click();
    const table = page.getByRole('table', { name: 'Pending access requests' });
    await expect.poll(() => table.getByRole('row').filter({ hasText: orgName }).count()).toBe(1);
    await expectAccessible(page, 'operator review');
    await screenshot(page, 'operator');
    await page.getByRole('button', { name: `Reject ${rejectedName}` }).click();
    await expect.poll(() => table.getByRole('row').filter({ hasText: rejectedName }).count()).toBe(0);
    await page.getByRole('button', { name: `Approve ${orgName}` }).click();
    const key = page.getByRole('textbox', { name: 'Organization key' });
    await expect.poll(() => key.inputValue()).toMatch(/^acs_org_/);
    const orgKey = await key.inputValue();
    // The key works: it reaches the new organization.
    const orgs = await request(`${server.url}/api/v1/organizations`, 'GET', undefined, { 'x-api-key': orgKey });
    expect(orgs.body.organizations.map((o: { org_name: string }) => o.org_name)).toEqual([orgName]);
    // The operator's session reaches no person's route.
    expect((await page.request.get(`${server.url}/api/v1/me`)).status()).toBe(401);
  });
});

/** dana's edge to `peer`. */
async function danaEdge(peer: string): Promise<{ edge_id: string }> {
  const edges = await ok('GET', `/api/v1/teams/${ids.teamId}/edges`);
  return edges.edges.find((e: { participants: string[] }) => e.participants.includes(ids.dana) && e.participants.includes(peer));
}

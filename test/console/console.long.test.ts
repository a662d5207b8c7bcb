/**
 * The console in a real Chromium (docs/console.md): a person signs in by a sign-in link (its
 * page, which a mail scanner's fetch leaves unspent, then its button), finds
 * the question of an `approval` pipeline run (examples/triage.yaml, `teamctl run approval` on
 * the local engine) in the inbox, answers `approve`, and the run completes; untrusted message
 * content renders as text; another team's thread is "Not found"; a revoked session is signed
 * out; the team graph; connecting an agent; the operators' review; the tool calls of an agent's
 * turns in a thread, and an approval answered with Approve or Reject; a reply growing as it is
 * written, and Stop; and axe-core finds no serious or critical violation on any page. The
 * screenshots of docs/console.md are taken here.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
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

/** A new browser context signed in as `humanId` by a link (its page, then its button), on the inbox. */
async function signedIn(humanId: string): Promise<{ page: Page; problems: string[] }> {
  const { page, problems } = await browser.newPage();
  await page.goto(await linkFor(humanId));
  await page.getByRole('button', { name: /^Sign in as / }).click();
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

  it("console: the inbox counts what awaits an answer from the person, and groups below, collapsed, the threads a pipeline wrote in her name; a question she answered from the CLI is no longer unread", async () => {
    // An organization of its own, so that no other test's threads are in erin's inbox.
    const own = join(home, 'own.yaml');
    const orgName = `console-own-${crypto.randomUUID().slice(0, 8)}`;
    await writeFile(
      own,
      [
        'apiVersion: teamctl/v1',
        'organization:',
        `  name: ${orgName}`,
        '  providerKeys:',
        '    echo: ${env:ECHO_PROVIDER_KEY}',
        'teams:',
        '  - name: desk',
        '    agents: [{ name: writer, provider: echo }]',
        '    humans: [{ name: erin }]',
        '    edges: [[erin, writer]]',
        'pipelines:',
        '  - name: brief',
        '    team: desk',
        '    steps:',
        '      - { id: draft, from: erin, to: writer, subject: Draft the brief, content: Draft the brief for v2. }',
        '  - name: sign-off',
        '    team: desk',
        '    steps:',
        '      - id: ask',
        '        from: writer',
        '        to: erin',
        '        subject: Sign off v2?',
        '        content: May v2 go out? Answer approve or reject.',
        '        reply: { schema: { enum: [approve, reject] } }',
        '    output: "{{ steps.ask.value }}"',
        '',
      ].join('\n'),
    );
    const applied = await runTeamctl(['apply', '-f', own, '--auto-approve'], env);
    expect(applied.code, applied.stdout + applied.stderr).toBe(0);
    const orgId = (await ok('GET', '/api/v1/organizations')).organizations.find((o: { org_name: string }) => o.org_name === orgName).org_id;
    const teamId = (await ok('GET', `/api/v1/organizations/${orgId}/teams`)).teams[0].team_id;
    const graph = await ok('GET', `/api/v1/teams/${teamId}`);
    const erin = graph.humans[0].human_id;
    // The pipeline writes to the writer as erin, and takes the writer's answer itself.
    const brief = await runTeamctl(['run', 'brief', '-f', own, '--json'], env);
    expect(brief.code, brief.stdout + brief.stderr).toBe(0);
    // Then the writer asks erin, and the run waits for her answer.
    const signOff = runTeamctl(['run', 'sign-off', '-f', own, '--json'], env);
    let question: { thread_id: string } | undefined;
    await expect
      .poll(async () => {
        question = (await ok('GET', `/api/v1/edges/${graph.edges[0].edge_id}/threads`)).threads.find((t: { subject: string; awaiting_reply_from: string | null }) => t.subject === 'Sign off v2?' && t.awaiting_reply_from === erin);
        return question !== undefined;
      }, { timeout: 30_000 })
      .toBe(true);

    const { page, problems } = await signedIn(erin);
    const inbox = page.getByRole('list', { name: 'Inbox' });
    const status = page.locator('.page-head [role=status]');
    await expect.poll(() => status.textContent(), { timeout: 15_000 }).toBe('1 thread waits for you.');
    expect(await inbox.getByRole('listitem').allTextContents()).toEqual([expect.stringContaining('Sign off v2?')]);
    const group = page.locator('details.on-behalf');
    expect(await group.locator('summary').textContent()).toBe('Written in your name: 1 thread');
    // Collapsed: the pipeline's thread is there, out of the way.
    expect(await group.getAttribute('open')).toBeNull();
    const drafted = page.getByRole('list', { name: 'Written in your name' }).getByRole('listitem').filter({ hasText: 'Draft the brief' });
    expect(await drafted.isVisible()).toBe(false);
    await group.locator('summary').click();
    await expect.poll(() => drafted.isVisible()).toBe(true);
    expect(await drafted.textContent()).toContain('1 unread');
    await expectAccessible(page, 'inbox with threads written in the person\'s name');

    // Erin answers from the CLI: the run takes it, and the console no longer counts the thread as unread.
    const answered = await runTeamctl(['thread', 'send', question!.thread_id, '--from', 'erin', '--content', 'approve'], env);
    expect(answered.code, answered.stderr).toBe(0);
    const finished = await signOff;
    expect(finished.code, finished.stdout + finished.stderr).toBe(0);
    expect(JSON.parse(finished.stdout)).toMatchObject({ status: 'completed', output: 'approve' });
    await expect.poll(() => status.textContent(), { timeout: 20_000 }).toBe('Nothing waits for you.');
    const signed = inbox.getByRole('listitem').filter({ hasText: 'Sign off v2?' });
    expect(await signed.textContent()).not.toContain('unread');
    expect(await signed.textContent()).not.toContain('Awaits your answer');
    expect(await signed.getAttribute('class')).toBeNull();
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

  it("console: an address that is none of its pages shows the console's Not found page (404, not JSON), signed in or not; axe finds nothing", async () => {
    const { page, problems } = await browser.newPage();
    const signedOut = await page.goto(`${server.url}/no-such-page`);
    expect(signedOut!.status()).toBe(404);
    expect(signedOut!.headers()['content-type']).toBe('text/html; charset=utf-8');
    await expect.poll(() => page.getByRole('heading', { name: 'Not found', level: 1 }).count()).toBe(1);
    expect(await page.locator('main').textContent()).toContain('The console has no page at this address');
    expect(await page.getByRole('link', { name: 'go to the sign-in page' }).getAttribute('href')).toBe('/sign-in');
    await expectAccessible(page, 'not found, signed out');
    // Nothing went wrong but the 404 itself and, signed out, the app's question who is signed in (401): Chromium may log both.
    const unexpected = (found: string[]) => found.filter((problem) => !/status of 40[14]\b/.test(problem));
    expect(unexpected(problems)).toEqual([]);

    const { page: dana, problems: danaProblems } = await signedIn(ids.dana);
    const signedInReply = await dana.goto(`${server.url}/inbox/typo`);
    expect(signedInReply!.status()).toBe(404);
    await expect.poll(() => dana.getByRole('heading', { name: 'Not found', level: 1 }).count()).toBe(1);
    // The console around it: its navigation, and a way back.
    expect(await dana.getByRole('navigation', { name: 'Main' }).count()).toBe(1);
    await dana.getByRole('link', { name: 'go to your inbox' }).click();
    await expect.poll(() => dana.getByRole('heading', { name: 'Inbox', level: 1 }).count()).toBe(1);
    expect(unexpected(danaProblems)).toEqual([]);
  });

  it('console: a message of another day shows its date beside its time, and its whole date and time on hover', async () => {
    const { page } = await signedIn(ids.dana);
    const subject = `Dated ${crypto.randomUUID().slice(0, 8)}`;
    const thread = await ok('POST', `/api/v1/edges/${(await danaEdge(ids.summarizer)).edge_id}/threads`, { sender_agent_id: ids.summarizer, subject, content: 'Written today' });
    await page.goto(`${server.url}/threads/${thread.thread_id}`);
    const time = page.getByRole('list', { name: 'Messages' }).locator('time').first();
    await expect.poll(() => time.textContent()).toMatch(/^\d{2}:\d{2}(\s?[AP]M)?$/);
    // Two days later, the same message carries its date.
    await page.clock.setFixedTime(new Date(Date.now() + 2 * 86_400_000));
    await page.reload();
    await expect.poll(() => time.textContent()).toMatch(/\b[A-Z][a-z]{2}\b.*, \d{2}:\d{2}/);
    expect(await time.getAttribute('title')).toMatch(/\b20\d{2}\b/);
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
    // "Agent" once: the field's label, not a heading above it too.
    expect(await page.getByRole('heading', { name: 'Agent', exact: true }).count()).toBe(0);
    expect(await page.getByText('Agent', { exact: true }).count()).toBe(1);
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

  it("console: a sign-in link opens a page naming dana, her team and organization, without script; a mail scanner's fetch spends nothing; the page's button signs her in", async () => {
    const link = await linkFor(ids.dana);
    // A mail scanner fetches the link (and its page's form is never sent): nothing is spent.
    for (const method of ['GET', 'GET', 'HEAD']) expect((await fetch(link, { method, redirect: 'manual' })).status).toBe(200);
    const { page, problems } = await browser.newPage();
    await page.goto(link);
    await expect.poll(() => page.getByRole('heading', { name: 'Sign in as dana?', level: 1 }).count()).toBe(1);
    const text = (await page.locator('main').textContent()) ?? '';
    expect(text).toContain('as dana of team intake, in the organization acme-support');
    // Served by the server alone: no script, one form, its one button.
    expect(await page.locator('script').count()).toBe(0);
    expect(await page.locator('form[method="post"]').count()).toBe(1);
    expect(await page.getByRole('button').count()).toBe(1);
    expect((await page.context().cookies()).map((c) => c.name)).toEqual(['acs_signin_csrf']);
    await expectAccessible(page, 'sign-in link');
    await screenshot(page, 'sign-in-link');
    await page.getByRole('button', { name: 'Sign in as dana' }).click();
    await page.waitForURL('**/inbox');
    await expect.poll(() => page.getByRole('heading', { name: 'Inbox', level: 1 }).count()).toBe(1);
    expect((await page.context().cookies()).map((c) => c.name)).toEqual(['acs_session']);
    // The page's Content-Security-Policy let it be shown as it is (a refusal would be a console error).
    expect(problems).toEqual([]);
    // Spent: opened again, the link signs nobody in.
    const { page: later } = await browser.newPage();
    await later.goto(link);
    await later.waitForURL('**/sign-in?error=link_invalid');
  });

  it('console: Sign out ends the session; the sign-in page explains a used link', async () => {
    const { page } = await signedIn(ids.dana);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Sign in to the ACS console' }).count()).toBe(1);
    expect((await page.request.get(`${server.url}/api/v1/me`)).status()).toBe(401);
    const link = await linkFor(ids.dana);
    await page.goto(link);
    await page.getByRole('button', { name: 'Sign in as dana' }).click();
    await page.waitForURL('**/inbox');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.goto(link);
    await page.waitForURL('**/sign-in?error=link_invalid');
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('This sign-in link does not work any more');
    // It speaks to the person signing in: whom to ask, no command line.
    const text = (await page.locator('main').textContent()) ?? '';
    expect(text).toContain('No link, or yours no longer works? Ask your operator — whoever manages your team — to send you a new one.');
    expect(text).not.toContain('teamctl');
    expect(await page.locator('main code').count()).toBe(0);
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

  describe('tool calls and approvals', () => {
    /** Team desk of its own (the graph of intake stays as the tests above expect): dana; clerk (echo with the team tools, whoami needs dana's approval); researcher (echo). */
    let desk: { dana: string; clerk: string; edge: string };
    beforeAll(async () => {
      // The server, organization and browser of the enclosing suite (its beforeAll runs first).
      const team = await ok('POST', `/api/v1/organizations/${ids.orgId}/teams`, { team_name: 'desk' });
      const dana = (await ok('POST', `/api/v1/teams/${team.team_id}/humans`, { name: 'dana' })).human_id;
      const clerk = (await ok('POST', `/api/v1/teams/${team.team_id}/agents`, { name: 'clerk', provider: 'echo', tools: { team: true, approval: { by: 'dana', tools: ['whoami'] } } })).agent_id;
      const researcher = (await ok('POST', `/api/v1/teams/${team.team_id}/agents`, { name: 'researcher', provider: 'echo' })).agent_id;
      const edge = (await ok('POST', `/api/v1/teams/${team.team_id}/edges`, { participants: [dana, clerk] })).edge_id;
      await ok('POST', `/api/v1/teams/${team.team_id}/edges`, { participants: [clerk, researcher] });
      desk = { dana, clerk, edge };
    });

    /** dana of desk opens a thread to clerk; output: its id, once clerk's turn made `count` tool calls (read with the org key). */
    async function askClerk(subject: string, content: string, count: number): Promise<{ threadId: string; calls: Array<{ tool: string; status: string; waiting_on: { thread_id: string } | null }> }> {
      const threadId = (await ok('POST', `/api/v1/edges/${desk.edge}/threads`, { sender_agent_id: desk.dana, subject, content })).thread_id;
      let calls: Array<{ tool: string; status: string; waiting_on: { thread_id: string } | null }> = [];
      await expect
        .poll(async () => {
          calls = (await ok('GET', `/api/v1/threads/${threadId}/tool-calls`)).tool_calls;
          return calls.filter((c) => c.status === 'completed' || c.status === 'awaiting_approval').length;
        }, { timeout: 20_000 })
        .toBe(count);
      return { threadId, calls };
    }

    it("console: a thread shows the tool calls of the agent's turn next to the message it answers, then next to the reply; Approve answers the approval question", async () => {
      const { threadId } = await askClerk('Tool check', 'ask researcher: status?\ncall whoami', 2);
      const { page, problems } = await signedIn(desk.dana);
      await page.goto(`${server.url}/threads/${threadId}`);
      const messages = page.getByRole('list', { name: 'Messages' });
      const turn = messages.getByRole('region', { name: "Tool calls of clerk's turn" });
      await expect.poll(() => turn.count()).toBe(1);
      // Under dana's message while the turn waits for her approval.
      expect(await messages.locator(':scope > li').first().getByRole('region', { name: "Tool calls of clerk's turn" }).count()).toBe(1);
      expect(await turn.locator('.head').textContent()).toBe("clerk's turn (no reply yet): 2 tool calls");
      const summaries = turn.locator('summary');
      await expect.poll(() => summaries.allTextContents()).toEqual([
        expect.stringMatching(/^ask · asks researcher · ✓ completed · \d+(\.\d)? m?s$/),
        expect.stringMatching(/^whoami · approval by You · ◔ awaiting approval · since /),
      ]);
      // Collapsed until opened: then the arguments and the result.
      const ask = turn.locator('details').first();
      expect(await ask.getAttribute('open')).toBeNull();
      await summaries.first().click();
      expect(await ask.getAttribute('open')).not.toBeNull();
      const shown = (await ask.locator('dl').textContent()) ?? '';
      expect(shown).toContain('Arguments');
      expect(shown).toContain('"peer": "researcher"');
      expect(shown).toContain('Result');
      expect(shown).toContain('"content": "echo: status?"');
      await expectAccessible(page, 'thread with tool calls');
      await screenshot(page, 'tool-calls');

      // The same thread open in a second tab follows what happens without a reload.
      const watcher = await page.context().newPage();
      await watcher.goto(`${server.url}/threads/${threadId}`);
      const watched = watcher.getByRole('list', { name: 'Messages' }).getByRole('region', { name: "Tool calls of clerk's turn" });
      await expect.poll(() => watched.locator('summary').nth(1).textContent()).toContain('awaiting approval');

      await turn.getByRole('link', { name: "Answer clerk's approval question" }).click();
      await page.waitForURL('**/threads/*');
      await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Approval: whoami');
      const approval = page.getByRole('region', { name: 'clerk asks for your approval' });
      await expect.poll(() => approval.count()).toBe(1);
      expect(await approval.textContent()).toContain('To call whoami');
      await expectAccessible(page, 'approval');
      await screenshot(page, 'approval');
      await approval.getByRole('button', { name: 'Approve' }).click();
      const answered = page.getByRole('list', { name: 'Messages' });
      // The question itself says "approve" too: wait for the person's own message (written by "You").
      await expect.poll(() => answered.locator(':scope > li').last().textContent()).toMatch(/^You\b/);
      expect(await answered.locator(':scope > li').last().textContent()).toContain('approve');
      await expect.poll(() => approval.count()).toBe(0);

      // The turn goes on: the reply comes, and the calls move next to it, whoami completed.
      const thread = watcher.getByRole('list', { name: 'Messages' });
      await expect.poll(() => thread.locator(':scope > li').last().textContent(), { timeout: 20_000 }).toContain('echo: ask researcher: status?');
      const underReply = thread.locator(':scope > li').last().getByRole('region', { name: "Tool calls of clerk's turn" });
      await expect.poll(() => underReply.locator('.head').textContent(), { timeout: 20_000 }).toBe("clerk's turn: 2 tool calls");
      expect(await underReply.locator('summary').nth(1).textContent()).toMatch(/^whoami · approval by You · ✓ completed · /);
      expect(await thread.locator(':scope > li').first().getByRole('region').count()).toBe(0);
      expect(problems).toEqual([]);
    });

    it('console: Reject with a reason answers the approval question; the tool call shows rejected, with the reason', async () => {
      const { threadId, calls } = await askClerk('Reject check', 'call whoami', 1);
      const { page, problems } = await signedIn(desk.dana);
      await page.goto(`${server.url}/threads/${calls[0]!.waiting_on!.thread_id}`);
      const approval = page.getByRole('region', { name: 'clerk asks for your approval' });
      await expect.poll(() => approval.count()).toBe(1);
      await approval.getByRole('textbox', { name: 'Reason for rejecting (optional)' }).fill('not today');
      await approval.getByRole('button', { name: 'Reject' }).click();
      await expect.poll(() => page.getByRole('list', { name: 'Messages' }).locator(':scope > li').last().textContent()).toContain('reject: not today');
      await page.goto(`${server.url}/threads/${threadId}`);
      const turn = page.getByRole('list', { name: 'Messages' }).locator(':scope > li').last().getByRole('region', { name: "Tool calls of clerk's turn" });
      await expect.poll(() => turn.locator('summary').first().textContent(), { timeout: 20_000 }).toMatch(/^whoami · approval by You · ✗ rejected · /);
      await turn.locator('summary').first().click();
      expect(await turn.locator('dl').textContent()).toContain('rejected: dana rejected it: not today');
      expect(problems).toEqual([]);
    });
  });

  describe('replies as they are written', () => {
    /**
     * A server of its own whose echo provider writes a word every 150 ms (`ACS_ECHO_STREAM_MS`),
     * so a reply grows slowly enough to watch and to stop; the browser of the enclosing suite.
     */
    let paced: RunningServer;
    let pacedKey: string;
    let desk: { dana: string; writer: string; edge: string };
    const pacedOk = async (method: string, path: string, body?: unknown) => {
      const reply = await request(`${paced.url}${path}`, method, body, { 'x-api-key': pacedKey });
      expect(reply.status, `${method} ${path}: ${JSON.stringify(reply.body)}`).toBeLessThan(300);
      return reply.body;
    };
    /** What echo writes for `content`: `echo: ` and the words. */
    const echoOf = (content: string) => `echo: ${content}`;
    /** `count` words, numbered so that each prefix of the reply differs. */
    const wordsText = (count: number, label: string) => Array.from({ length: count }, (_, i) => `${label}${i + 1}`).join(' ');

    beforeAll(async () => {
      paced = await startServer({ port: 0, inMemory: true, tickMs: 50, prepareConsole: true, env: { ...process.env, ACS_ECHO_STREAM_MS: '150' } });
      const org = await paced.provisionOrganization('console-streams');
      pacedKey = org.api_key;
      await pacedOk('PUT', `/api/v1/organizations/${org.org_id}/api-keys/echo`, { api_key: 'echo-key' });
      const team = await pacedOk('POST', `/api/v1/organizations/${org.org_id}/teams`, { team_name: 'studio' });
      const dana = (await pacedOk('POST', `/api/v1/teams/${team.team_id}/humans`, { name: 'dana' })).human_id;
      const writer = (await pacedOk('POST', `/api/v1/teams/${team.team_id}/agents`, { name: 'writer', provider: 'echo' })).agent_id;
      const edge = (await pacedOk('POST', `/api/v1/teams/${team.team_id}/edges`, { participants: [dana, writer] })).edge_id;
      desk = { dana, writer, edge };
    });
    afterAll(async () => {
      await paced?.close();
    });

    /** dana signed in on the paced server, on a thread with writer whose first exchange is done. */
    async function danaOnThread(subject: string): Promise<{ page: Page; problems: string[]; threadId: string }> {
      const threadId = (await pacedOk('POST', `/api/v1/edges/${desk.edge}/threads`, { sender_agent_id: desk.dana, subject, content: 'hello' })).thread_id;
      const { page, problems } = await browser.newPage();
      await page.goto((await pacedOk('POST', `/api/v1/humans/${desk.dana}/sign-in-links`, {})).url);
      await page.getByRole('button', { name: /^Sign in as / }).click();
      await page.waitForURL('**/inbox');
      await page.goto(`${paced.url}/threads/${threadId}`);
      await expect.poll(() => page.getByRole('list', { name: 'Messages' }).textContent(), { timeout: 20_000 }).toContain('echo: hello');
      return { page, problems, threadId };
    }

    /** The thread page as it is now, in one look: the growing reply (its text, aria-busy, whether a live region holds it), Stop, the messages. */
    interface Look {
      growing: string | null;
      busy: string | null;
      inLiveRegion: boolean;
      stop: boolean;
      messages: string[];
    }
    const look = (page: Page): Promise<Look> =>
      page.evaluate(`(() => {
        const writing = document.querySelector('.writing .reply-writing');
        const content = writing ? writing.querySelector('.content') : null;
        return {
          growing: content ? content.textContent.trim() : null,
          busy: writing ? writing.getAttribute('aria-busy') : null,
          inLiveRegion: writing ? writing.closest('[aria-live], [role="status"], [role="log"], [role="alert"]') !== null : false,
          stop: [...document.querySelectorAll('button')].some((b) => b.textContent === 'Stop'),
          messages: [...document.querySelectorAll('ol.messages > li .content')].map((c) => c.textContent.trim()),
        };
      })()`) as Promise<Look>;

    it("console: a reply grows on screen as it is written, outside any live region and aria-busy, with Stop; the whole message then takes its place, once, in the messages' polite live region", async () => {
      const { page, problems, threadId } = await danaOnThread('Growing');
      const content = wordsText(24, 'grow');
      await page.getByRole('textbox', { name: 'Reply' }).fill(content);
      await page.getByRole('button', { name: 'Send' }).click();
      const looks: Look[] = [];
      const deadline = Date.now() + 30_000;
      for (;;) {
        const now = await look(page);
        looks.push(now);
        if (now.messages.some((m) => m.startsWith(echoOf(content)))) break;
        if (Date.now() > deadline) throw new Error(`the reply never came; last look: ${JSON.stringify(now)}`);
        await page.waitForTimeout(40);
      }
      const final = echoOf(content);
      // Several texts seen while it grew, each longer than the one before, each a start of the reply.
      const seen = [...new Set(looks.map((l) => l.growing).filter((t): t is string => t !== null && t.trim() !== ''))];
      expect(seen.length, `texts seen: ${JSON.stringify(seen)}`).toBeGreaterThanOrEqual(3);
      expect(seen.some((t) => t.trim() !== final)).toBe(true);
      for (const [i, text] of seen.entries()) {
        expect(final.startsWith(text.trim()), `${JSON.stringify(text)} starts the reply`).toBe(true);
        if (i > 0) expect(text.length).toBeGreaterThanOrEqual(seen[i - 1]!.length);
      }
      // While it grew: marked busy, in no live region (not read out piece by piece), with Stop.
      const growing = looks.filter((l) => l.growing !== null && l.growing.trim() !== '' && l.growing.trim() !== final);
      expect(growing.length).toBeGreaterThan(0);
      for (const l of growing) expect({ busy: l.busy, inLiveRegion: l.inLiveRegion, stop: l.stop }).toEqual({ busy: 'true', inLiveRegion: false, stop: true });
      // Posted: the message once among the messages (a polite live region), the growing text and Stop gone.
      await expect.poll(async () => (await look(page)).growing).toBeNull();
      const after = await look(page);
      expect(after.messages.filter((m) => m.includes(content))).toEqual([content, final]);
      expect(after.stop).toBe(false);
      expect(await page.getByRole('list', { name: 'Messages' }).getAttribute('aria-live')).toBe('polite');
      const stored = await pacedOk('GET', `/api/v1/threads/${threadId}`);
      expect(stored.messages.at(-1)).toMatchObject({ sender_id: desk.writer, content: final, stopped: false });
      expect(problems).toEqual([]);
    });

    it('console: Stop ends the reply being written: what was written is posted, marked stopped in words, and nothing more is written; axe finds nothing while it grows or after', async () => {
      const { page, problems, threadId } = await danaOnThread('VPN outage summary');
      const content = [
        'Please draft the incident summary of the VPN outage on Tuesday: what failed, who noticed first, how long customers waited,',
        'which certificate expired and why the renewal job did not run, what we changed since, and what we still have to do before',
        'the next renewal in March, with an owner and a date for each step, in plain words for the whole support team.',
      ].join(' ');
      const full = echoOf(content);
      await page.getByRole('textbox', { name: 'Reply' }).fill(content);
      await page.getByRole('button', { name: 'Send' }).click();
      const writing = page.getByRole('region', { name: 'Replies being written' });
      await expect.poll(() => writing.textContent(), { timeout: 20_000 }).toContain('incident summary ');
      await expectAccessible(page, 'a reply being written');
      await screenshot(page, 'reply-writing');
      const stopRequest = page.waitForRequest((r) => r.url().endsWith(`/api/v1/me/threads/${threadId}/stop`) && r.method() === 'POST');
      await writing.getByRole('button', { name: 'Stop' }).click();
      // Sent as every change of the console is: with the session's CSRF token.
      expect((await stopRequest).headers()['x-csrf-token']).toBeTruthy();
      const messages = page.getByRole('list', { name: 'Messages' });
      const stoppedReply = messages.locator(':scope > li').filter({ hasText: 'Stopped while it was being written' });
      await expect.poll(() => stoppedReply.count(), { timeout: 20_000 }).toBe(1);
      const stored = (await pacedOk('GET', `/api/v1/threads/${threadId}`)).messages;
      const reply = stored.at(-1);
      expect(reply).toMatchObject({ sender_id: desk.writer, stopped: true });
      // What echo had written until then: a start of its whole reply, and not all of it.
      expect(full.startsWith(reply.content)).toBe(true);
      expect(reply.content.length).toBeGreaterThanOrEqual('echo: Please draft the incident summary'.length);
      expect(reply.content.length).toBeLessThan(full.length);
      expect((await stoppedReply.locator('.content').textContent())?.trim()).toBe(reply.content.trim());
      expect(await writing.count()).toBe(0);
      await expectAccessible(page, 'a stopped reply');
      await screenshot(page, 'reply-stopped');
      // Nothing more is written: no word after the stop, on the page or in the thread.
      await page.waitForTimeout(1_500);
      expect(await writing.count()).toBe(0);
      expect((await pacedOk('GET', `/api/v1/threads/${threadId}`)).messages).toHaveLength(stored.length);
      expect((await look(page)).messages.at(-1)?.trim()).toBe(reply.content.trim());
      expect(problems).toEqual([]);
    });
  });
});

/** dana's edge to `peer`. */
async function danaEdge(peer: string): Promise<{ edge_id: string }> {
  const edges = await ok('GET', `/api/v1/teams/${ids.teamId}/edges`);
  return edges.edges.find((e: { participants: string[] }) => e.participants.includes(ids.dana) && e.participants.includes(peer));
}

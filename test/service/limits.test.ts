import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTeam, request, startHarness, withTeamHarness, type Harness, type TeamIds } from './helpers.ts';

describe('text limits', () => {
  let h: Harness;
  let ids: TeamIds;
  withTeamHarness((started) => ({ h, ids } = started));

  const paths = (reply: { body: { errors?: Array<{ path: string }> } }) => (reply.body.errors ?? []).map((e) => e.path);

  it('limits: a name of 100 characters after trimming is accepted and 101 is 400 invalid_request', async () => {
    const ok = await h.call('POST', `/api/v1/teams/${ids.teamId}/agents`, { name: `  ${'n'.repeat(100)}  ` });
    expect(ok.status).toBe(201);
    expect(ok.body.name).toBe('n'.repeat(100));
    const long = await h.call('POST', `/api/v1/teams/${ids.teamId}/humans`, { name: 'n'.repeat(101) });
    expect(long.status).toBe(400);
    expect(paths(long)).toEqual(['name']);
  });

  it('limits: descriptions and instructions take 4,000 characters and 4,001 is 400 naming each field', async () => {
    const ok = await h.call('POST', `/api/v1/teams/${ids.teamId}/agents`, { name: 'long-ok', description: 'd'.repeat(4000), instructions: 'i'.repeat(4000) });
    expect(ok.status).toBe(201);
    const long = await h.call('POST', `/api/v1/teams/${ids.teamId}/agents`, { name: 'long-bad', description: 'd'.repeat(4001), instructions: 'i'.repeat(4001) });
    expect(long.status).toBe(400);
    expect(paths(long).sort()).toEqual(['description', 'instructions']);
    const team = await h.call('PATCH', `/api/v1/teams/${ids.teamId}`, { description: 'd'.repeat(4001) });
    expect(paths(team)).toEqual(['description']);
  });

  it('limits: a thread subject takes 200 characters and 201 is 400', async () => {
    const thread = (subject: string) => h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, subject, content: 'c' });
    expect((await thread('s'.repeat(200))).status).toBe(201);
    const long = await thread('s'.repeat(201));
    expect(long.status).toBe(400);
    expect(paths(long)).toEqual(['subject']);
  });

  it('limits: message content is 1 to 32,768 characters after trimming', async () => {
    const opened = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'c' });
    const send = (content: string) => h.call('POST', `/api/v1/threads/${opened.body.thread_id}/messages`, { sender_agent_id: ids.agentId, content });
    expect((await send('c'.repeat(32768))).status).toBe(201);
    for (const content of ['c'.repeat(32769), '', '   \n ']) {
      const bad = await send(content);
      expect(bad.status).toBe(400);
      expect(paths(bad)).toEqual(['content']);
    }
    const opening = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'c'.repeat(32769) });
    expect(paths(opening)).toEqual(['content']);
  });

  it('limits: channel must match ^[a-z][a-z0-9_-]{0,31}$', async () => {
    const thread = (channel: string) => h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'c', channel });
    for (const channel of ['a', 'slack', 'x_y-z9', `a${'b'.repeat(31)}`]) expect((await thread(channel)).status).toBe(201);
    for (const channel of ['', 'Slack', '9lives', 'has space', `a${'b'.repeat(32)}`]) {
      const bad = await thread(channel);
      expect(bad.status).toBe(400);
      expect(paths(bad)).toEqual(['channel']);
    }
  });

  it('limits: a body of just under 1 MiB is read and just over is 413 payload_too_large', async () => {
    // A valid JSON body whose one string makes it 1 MiB ± a few bytes: the limit, not the schema, decides.
    const sized = (bytes: number) => {
      const shell = JSON.stringify({ team_name: '' });
      return JSON.stringify({ team_name: 'x'.repeat(bytes - shell.length) });
    };
    const under = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, sized(1024 * 1024));
    expect(under.status).toBe(400);
    expect(paths(under)).toEqual(['team_name']);
    const over = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, sized(1024 * 1024 + 1));
    expect(over.status).toBe(413);
    expect(over.body.code).toBe('payload_too_large');
  });
});

describe('rate limiting', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ inMemory: true, rateLimit: { max: 5, windowMs: 60_000 } });
  });
  afterAll(async () => {
    await h.server.close();
  });

  it('rate limiting: the 6th request of a key within the window is 429 rate_limited with Retry-After', async () => {
    const replies = [];
    for (let i = 0; i < 6; i += 1) replies.push(await h.call('GET', '/api/v1/organizations'));
    expect(replies.slice(0, 5).map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(replies.map((r) => r.headers.get('ratelimit-remaining'))).toEqual(['4', '3', '2', '1', '0', '0']);
    const limited = replies[5]!;
    expect(limited.status).toBe(429);
    expect(limited.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(limited.body).toMatchObject({ code: 'rate_limited', status: 429 });
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
  });

  it('rate limiting: another key of another organization has its own budget', async () => {
    const other = await h.server.provisionOrganization('other-budget');
    const reply = await request(`${h.server.url}/api/v1/organizations`, 'GET', undefined, { 'x-api-key': other.api_key });
    expect(reply.status).toBe(200);
    expect(reply.headers.get('ratelimit-remaining')).toBe('4');
  });

  it('rate limiting: every response carries RateLimit-Limit, -Remaining and -Reset, errors and 404s included', async () => {
    const other = await h.server.provisionOrganization('headers');
    const key = { 'x-api-key': other.api_key };
    const replies = [
      await request(`${h.server.url}/api/v1/organizations`, 'GET', undefined, key),
      await request(`${h.server.url}/api/v1/teams/00000000-0000-4000-8000-000000000000`, 'GET', undefined, key),
      await request(`${h.server.url}/api/v1/no-such-route`, 'GET', undefined, key),
      await request(`${h.server.url}/api/v1/organizations`, 'POST', '{not json', key),
    ];
    expect(replies.map((r) => r.status)).toEqual([200, 404, 404, 400]);
    for (const reply of replies) {
      expect(reply.headers.get('ratelimit-limit')).toBe('5');
      expect(reply.headers.get('ratelimit-remaining')).toMatch(/^\d+$/);
      const reset = Number(reply.headers.get('ratelimit-reset'));
      expect(reset).toBeGreaterThan(0);
      expect(reset).toBeLessThanOrEqual(60);
    }
  });

  it('rate limiting: requests without a valid key are limited by client address, made-up keys included', async () => {
    const statuses = [];
    for (let i = 0; i < 6; i += 1) {
      const reply = await request(`${h.server.url}/api/v1/organizations`, 'GET', undefined, { 'x-api-key': `acs_org_${String(i).repeat(40)}` });
      expect(reply.headers.get('ratelimit-limit')).toBe('5');
      statuses.push(reply.status);
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
    // The address budget is spent; a valid key still has its own.
    const fresh = await h.server.provisionOrganization('fresh');
    expect((await request(`${h.server.url}/api/v1/organizations`, 'GET', undefined, { 'x-api-key': fresh.api_key })).status).toBe(200);
  });
});

describe('rate limiting of the MCP endpoint', () => {
  let h: Harness;
  let ids: TeamIds;
  let threadId: string;
  beforeAll(async () => {
    h = await startHarness({ inMemory: true, rateLimit: { max: 20, windowMs: 60_000 } });
    ids = await buildTeam(h);
    threadId = (await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'hello' })).body.thread_id;
  });
  afterAll(async () => {
    await h.server.close();
  });

  const mcpKey = async () => (await h.call('POST', `/api/v1/agents/${ids.agentId}/mcp-keys`)).body.mcp_key as string;
  const sends = (n: number, from = 0) =>
    Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: from + i, method: 'tools/call', params: { name: 'send_message', arguments: { thread_id: threadId, content: `m${from + i}` } } }));
  const post = (key: string, body: unknown) =>
    request(`${h.server.url}/api/v1/mcp`, 'POST', body, { 'x-api-key': key, accept: 'application/json, text/event-stream' });
  const messageCount = async () => (await h.call('GET', `/api/v1/threads/${threadId}?limit=1`)).body.message_count as number;

  it('mcp rate limiting: a JSON-RPC batch costs one request per message, and a batch over what is left is refused whole, writing nothing', async () => {
    const key = await mcpKey();
    const first = await post(key, sends(8));
    expect(first.status).toBe(200);
    expect(first.body).toHaveLength(8);
    expect(first.headers.get('ratelimit-remaining')).toBe('12');
    const before = await messageCount();
    const refused = await post(key, sends(13, 100));
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 'rate_limited' });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.headers.get('ratelimit-remaining')).toBe('0');
    expect(await messageCount()).toBe(before);
  });

  it('mcp rate limiting: the MCP keys of one agent share one budget, so more keys buy no more calls', async () => {
    const [one, two] = [await mcpKey(), await mcpKey()];
    // The agent's budget is what the test above left of it: nothing.
    expect((await post(one, sends(1))).status).toBe(429);
    expect((await post(two, sends(1))).status).toBe(429);
  });

  it('mcp rate limiting: a batch larger than a whole window allows is 400 invalid_request, since no wait would let it pass', async () => {
    const other = await buildTeam(h);
    const key = (await h.call('POST', `/api/v1/agents/${other.agentId}/mcp-keys`)).body.mcp_key as string;
    const tooBig = await post(key, sends(21));
    expect(tooBig.status).toBe(400);
    expect(tooBig.body).toMatchObject({ code: 'invalid_request', errors: [{ path: 'body' }] });
  });
});

describe('rate limiting a client that keeps sending', () => {
  let h: Harness;
  beforeAll(async () => {
    // A short window, and a hold longer than the window: a held refusal is answered when the window ends.
    h = await startHarness({ inMemory: true, rateLimit: { max: 2, windowMs: 3_000, repeatDelayMs: 60_000 } });
  });
  afterAll(async () => {
    await h.server.close();
  });

  it('rate limiting: the first refusal of a window is answered at once, a repeated one only when the window ends, then requests pass again', async () => {
    const other = await h.server.provisionOrganization('someone-else');
    const statuses = [];
    for (let i = 0; i < 3; i += 1) statuses.push((await h.call('GET', '/api/v1/organizations')).status);
    // The third is refused, and answered: the test goes on.
    expect(statuses).toEqual([200, 200, 429]);
    let settled = false;
    const repeated = h.call('GET', '/api/v1/organizations').then((reply) => ((settled = true), reply));
    // Another key's requests are answered meanwhile; the repeated refusal is still held.
    expect((await request(`${h.server.url}/api/v1/organizations`, 'GET', undefined, { 'x-api-key': other.api_key })).status).toBe(200);
    expect(settled).toBe(false);
    const held = await repeated;
    expect(held.status).toBe(429);
    expect(held.body).toMatchObject({ code: 'rate_limited' });
    // Answered as the window ends: Retry-After counts from the answer.
    expect(held.headers.get('retry-after')).toBe('1');
    let after = await h.call('GET', '/api/v1/organizations');
    for (let i = 0; i < 20 && after.status === 429; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      after = await h.call('GET', '/api/v1/organizations');
    }
    expect(after.status).toBe(200);
  });
});

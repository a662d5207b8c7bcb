/**
 * Contract §14 (issue 41, item 2): held requests — long polls, event waits, event and thread
 * streams, MCP waits, the console's streams — are capped per organization as well as per key and
 * per process, so that one organization at its cap (whatever keys, MCP keys and sessions it holds
 * them with) is refused 429 `too_many_waits` while another organization's waits are still held.
 * A session counts toward the organization its request is about; an MCP key toward its agent's.
 * On PGlite here, on PostgreSQL in the `postgres` project; across two processes in
 * multi-process.test.ts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createPersonSession, SessionMethods } from '../../service/sessions/sessions.ts';
import type { Db } from '../../service/storage/db.ts';
import { request, startHarnessWithDb, type Harness, type Reply } from './helpers.ts';

/** A request held open (a stream, an MCP wait that streams its progress), or its refusal. */
interface Held {
  status: number;
  contentType: string;
  /** The refusal's problem document (when not 200). */
  problem: any;
  retryAfter: string | null;
  close(): void;
}

const open: Held[] = [];
afterEach(() => {
  for (const held of open.splice(0)) held.close();
});

/**
 * Sends a request that holds its connection once answered 200 (its headers arrive, its body
 * stays open); a refusal's body is read. The request is closed after the test.
 */
async function hold(url: string, headers: Record<string, string>, body?: unknown): Promise<Held> {
  const controller = new AbortController();
  const response = await fetch(url, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: controller.signal,
  });
  const held: Held = {
    status: response.status,
    contentType: response.headers.get('content-type') ?? '',
    problem: response.status === 200 ? undefined : await response.json(),
    retryAfter: response.headers.get('retry-after'),
    close: () => controller.abort(),
  };
  open.push(held);
  return held;
}

/** An MCP `wait_for_messages` with a progress token: answered as a stream, whose headers come as it begins to wait. */
const mcpWait = (id: number) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'wait_for_messages', arguments: { timeout_seconds: 25 }, _meta: { progressToken: `wait-${id}` } },
});

/** An organization's world: a person's human and an agent (or a second human) on an edge, and a thread on it. */
interface World {
  orgId: string;
  key: string;
  call(method: string, path: string, body?: unknown): Promise<Reply>;
  person: string;
  peer: string;
  threadId: string;
  /** The id of the thread's newest message (a long poll after it waits). */
  last: string;
  /** The MCP key of the agent, when the peer is one. */
  mcpKey?: string;
}

async function world(base: string, orgId: string, key: string, peerKind: 'agent' | 'human'): Promise<World> {
  const call = (method: string, path: string, body?: unknown) => request(`${base}${path}`, method, body, { 'x-api-key': key });
  const team = (await call('POST', `/api/v1/organizations/${orgId}/teams`, { team_name: 'waits' })).body.team_id;
  const person = (await call('POST', `/api/v1/teams/${team}/humans`, { name: 'pat' })).body.human_id;
  const peerReply = (await call('POST', `/api/v1/teams/${team}/${peerKind}s`, { name: 'peer' })).body;
  const peer = peerReply.agent_id ?? peerReply.human_id;
  const edge = (await call('POST', `/api/v1/teams/${team}/edges`, { participants: [person, peer] })).body.edge_id;
  // Opened by the peer: an agent has nothing unread, so its wait is held.
  const thread = (await call('POST', `/api/v1/edges/${edge}/threads`, { sender_agent_id: peer, content: 'open' })).body;
  const page = (await call('GET', `/api/v1/threads/${thread.thread_id}`)).body;
  const mcpKey = peerKind === 'agent' ? (await call('POST', `/api/v1/agents/${peer}/mcp-keys`)).body.mcp_key : undefined;
  return { orgId, key, call, person, peer, threadId: thread.thread_id, last: page.messages.at(-1).message_id, ...(mcpKey ? { mcpKey } : {}) };
}

describe('held waits per organization', () => {
  const perOrg = 4;
  let h: Harness & { db: Db };
  let alpha: World;
  let beta: World;
  let cookie: string;
  let alphaKeys: string[];
  beforeAll(async () => {
    h = await startHarnessWithDb('alpha', { options: { rateLimit: false, heldWaits: { perOrg, perKey: 10, perProcess: 100 } } });
    const second = await h.server.provisionOrganization('beta');
    alpha = await world(h.server.url, h.orgId, h.apiKey, 'agent');
    beta = await world(h.server.url, second.org_id, second.api_key, 'human');
    // More keys of alpha: each holds one wait, so that no key's own bound is what refuses.
    alphaKeys = [];
    for (const name of ['second', 'third']) alphaKeys.push((await alpha.call('POST', `/api/v1/organizations/${alpha.orgId}/keys`, { name })).body.api_key);
    // A person whose humans are in both organizations (as an OpenID Connect sign-in by one email makes).
    const { secret } = await createPersonSession(h.db, { humanIds: [alpha.person, beta.person], method: SessionMethods.oidc, email: 'pat@example.com' });
    cookie = `acs_session=${secret}`;
  });
  afterAll(async () => {
    await h?.server.close();
  });

  it('held waits: an organization at its cap is refused 429 too_many_waits on every kind of wait, whatever key or session asks, while another organization still waits', async () => {
    const url = h.server.url;
    const accept = { accept: 'application/json, text/event-stream' };
    // Alpha fills its cap with four holders: its key's event stream, a second key's thread stream,
    // its agent's MCP wait and the person's console stream of alpha.
    const filling = [
      await hold(`${url}/api/v1/organizations/${alpha.orgId}/events/stream`, { 'x-api-key': alpha.key }),
      await hold(`${url}/api/v1/threads/${alpha.threadId}/stream`, { 'x-api-key': alphaKeys[0]! }),
      await hold(`${url}/api/v1/mcp`, { ...accept, 'x-api-key': alpha.mcpKey! }, mcpWait(1)),
      await hold(`${url}/api/v1/me/events/stream?org_id=${alpha.orgId}`, { cookie }),
    ];
    expect(filling.map((f) => [f.status, f.contentType.split(';')[0]])).toEqual(filling.map(() => [200, 'text/event-stream']));

    // Every further wait about alpha is refused, from a key that holds nothing, from the session,
    // from the MCP key, as a long poll, an event wait or a stream.
    const refusals: Array<[string, Held | Reply]> = [
      ['a third key\'s long poll', await request(`${url}/api/v1/threads/${alpha.threadId}?after=${alpha.last}&wait=25`, 'GET', undefined, { 'x-api-key': alphaKeys[1]! })],
      ['an event long poll', await request(`${url}/api/v1/organizations/${alpha.orgId}/events?wait=25`, 'GET', undefined, { 'x-api-key': alphaKeys[1]! })],
      ['the session\'s thread stream of alpha', await hold(`${url}/api/v1/me/threads/${alpha.threadId}/stream`, { cookie })],
      ['the MCP key\'s second wait', await hold(`${url}/api/v1/mcp`, { ...accept, 'x-api-key': alpha.mcpKey! }, mcpWait(2))],
    ];
    for (const [what, refused] of refusals) {
      const problem = 'problem' in refused ? refused.problem : refused.body;
      const retryAfter = 'problem' in refused ? refused.retryAfter : refused.headers.get('retry-after');
      expect([refused.status, problem.code], what).toEqual([429, 'too_many_waits']);
      expect(problem.detail, what).toMatch(/this organization already holds 4 waiting requests.*at most 4 are held per organization/);
      expect(Number(retryAfter), what).toBeGreaterThan(0);
    }
    // A request that does not wait is answered as ever.
    expect((await alpha.call('GET', `/api/v1/threads/${alpha.threadId}`)).status).toBe(200);

    // Beta still waits: the same person's stream of beta (a session counts toward the
    // organization its request is about), beta's thread stream, and beta's long poll, which an
    // append answers.
    const betaStreams = [await hold(`${url}/api/v1/me/events/stream?org_id=${beta.orgId}`, { cookie }), await hold(`${url}/api/v1/threads/${beta.threadId}/stream`, { 'x-api-key': beta.key })];
    expect(betaStreams.map((s) => s.status)).toEqual([200, 200]);
    const poll = beta.call('GET', `/api/v1/threads/${beta.threadId}?after=${beta.last}&wait=25`);
    const appended = await beta.call('POST', `/api/v1/threads/${beta.threadId}/messages`, { sender_agent_id: beta.person, content: 'beta is served' });
    expect(appended.status).toBe(201);
    const answered = await poll;
    expect(answered.status).toBe(200);
    expect(answered.body.messages.map((m: { content: string }) => m.content)).toEqual(['beta is served']);

    // Once alpha gives a place back, its waits are held again.
    filling[0]!.close();
    const deadline = Date.now() + 20_000;
    let again: Reply;
    do {
      again = await request(`${url}/api/v1/threads/${alpha.threadId}?after=${alpha.last}&wait=0.2`, 'GET', undefined, { 'x-api-key': alphaKeys[1]! });
      if (again.status === 429) await new Promise((resolve) => setTimeout(resolve, 50));
    } while (again.status === 429 && Date.now() < deadline);
    expect(again.status).toBe(200);
    expect(again.body.messages).toEqual([]);
  });

  it('held waits: a key\'s own bound refuses before its organization\'s, and names the key', async () => {
    const small = await startHarnessWithDb('gamma', { options: { rateLimit: false, heldWaits: { perOrg: 5, perKey: 1, perProcess: 100 } } });
    try {
      const gamma = await world(small.server.url, small.orgId, small.apiKey, 'human');
      const first = await hold(`${small.server.url}/api/v1/organizations/${gamma.orgId}/events/stream`, { 'x-api-key': gamma.key });
      expect(first.status).toBe(200);
      const second = await hold(`${small.server.url}/api/v1/threads/${gamma.threadId}/stream`, { 'x-api-key': gamma.key });
      expect([second.status, second.problem?.code]).toEqual([429, 'too_many_waits']);
      expect(second.problem.detail).toMatch(/this key already holds 1 waiting request\b/);
    } finally {
      await small.server.close();
    }
  });
});

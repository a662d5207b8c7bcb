import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceError } from '../../errors/catalogue.ts';
import { createFairQueue, type FairQueue } from '../../service/http/fair-share.ts';
import type { RequestTurn } from '../../service/domain/request-turn.ts';
import type { Db } from '../../service/storage/db.ts';
import { buildTeam, request, startHarness, startHarnessWithDb, type Harness } from './helpers.ts';

/** Resolves once `holds()` is true, checking every few milliseconds; gives up after 10 s. */
async function until(holds: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!holds()) {
    if (Date.now() > deadline) throw new Error(`never happened: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('fair share: the queue', () => {
  it('fair share: while places are free each request takes one at once, and a place given back goes to the next waiting request', async () => {
    const queue = createFairQueue({ concurrency: 2, queuePerClient: 10 });
    const first = queue.enter('a') as RequestTurn;
    const second = queue.enter('b') as RequestTurn;
    expect(typeof first.release).toBe('function');
    expect(typeof second.release).toBe('function');
    expect(queue.tryEnter('c')).toBeUndefined();
    const third = queue.enter('a');
    expect(third).toBeInstanceOf(Promise);
    // Someone waits: a place is not taken past them, even once one is free.
    expect(queue.tryEnter('c')).toBeUndefined();
    expect(queue.stats()).toEqual({ inProgress: 2, queued: 1, clientsWaiting: 1 });
    first.release();
    first.release();
    (await third).release();
    second.release();
    expect(queue.stats()).toEqual({ inProgress: 0, queued: 0, clientsWaiting: 0 });
  });

  it("fair share: waiting clients take turns, so one client's hundred queued requests do not go before another client's one", async () => {
    const queue = createFairQueue({ concurrency: 1, queuePerClient: 500 });
    const holder = queue.enter('holder') as RequestTurn;
    const served: string[] = [];
    const waits = [
      ...Array.from({ length: 100 }, (_, i) => ({ client: 'flood', label: `flood-${i}` })),
      { client: 'probe', label: 'probe' },
      { client: 'other', label: 'other' },
    ].map(({ client, label }) =>
      (queue.enter(client) as Promise<RequestTurn>).then((turn) => {
        served.push(label);
        turn.release();
      }),
    );
    holder.release();
    await Promise.all(waits);
    expect(served.slice(0, 4)).toEqual(['flood-0', 'probe', 'other', 'flood-1']);
    expect(served).toHaveLength(102);
  });

  it('fair share: a client with its whole queue waiting is refused too_many_requests_queued, and nothing more of it is queued', async () => {
    const queue = createFairQueue({ concurrency: 1, queuePerClient: 2 });
    const holder = queue.enter('holder') as RequestTurn;
    const waiting = [queue.enter('flood'), queue.enter('flood')] as Promise<RequestTurn>[];
    let refusal: unknown;
    try {
      queue.enter('flood');
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(ServiceError);
    expect((refusal as ServiceError).code).toBe('too_many_requests_queued');
    expect(queue.stats().queued).toBe(2);
    // Another client still queues.
    const other = queue.enter('other') as Promise<RequestTurn>;
    const served = [...waiting, other].map((turn) => turn.then((t) => t.release()));
    holder.release();
    await Promise.all(served);
    expect(queue.stats()).toEqual({ inProgress: 0, queued: 0, clientsWaiting: 0 });
  });

  it('fair share: a request that goes away while it waits leaves the queue, and the place goes to the next one', async () => {
    const queue = createFairQueue({ concurrency: 1, queuePerClient: 10 });
    const holder = queue.enter('holder') as RequestTurn;
    const gone = new AbortController();
    const leaving = queue.enter('a', gone.signal) as Promise<RequestTurn>;
    const next = queue.enter('b') as Promise<RequestTurn>;
    gone.abort();
    await expect(leaving).rejects.toMatchObject({ code: 'unavailable' });
    expect(queue.stats()).toEqual({ inProgress: 1, queued: 1, clientsWaiting: 1 });
    holder.release();
    (await next).release();
    expect(queue.stats().inProgress).toBe(0);
  });
});

describe('fair share: the server', () => {
  // One place, so that a test holding it makes every request queue; the test takes places itself.
  let queue: FairQueue;
  let enters = 0;
  let h: Harness;
  let team: Awaited<ReturnType<typeof buildTeam>>;
  beforeAll(async () => {
    const inner = createFairQueue({ concurrency: 1, queuePerClient: 1 });
    queue = {
      options: inner.options,
      stats: () => inner.stats(),
      // Every request arriving at the hook asks for a place at once first.
      tryEnter(client) {
        enters += 1;
        return inner.tryEnter(client);
      },
      enter: (client, signal) => inner.enter(client, signal),
    };
    h = await startHarness({ inMemory: true, fairShare: queue });
    team = await buildTeam(h);
  });
  afterAll(async () => {
    await h.server.close();
  });

  it("fair share: while another client holds the only place, a request waits its turn and is answered once the place is given back", async () => {
    const holder = (await queue.enter('someone else')) as RequestTurn;
    const before = enters;
    let answered = false;
    const get = h.call('GET', `/api/v1/organizations/${h.orgId}`).then((reply) => {
      answered = true;
      return reply;
    });
    await until(() => enters > before && queue.stats().queued === 1, 'the GET is queued');
    expect(answered).toBe(false);
    holder.release();
    expect((await get).status).toBe(200);
  });

  it('fair share: past its queue a request is 429 too_many_requests_queued with Retry-After, and the queued one is still answered', async () => {
    const holder = (await queue.enter('someone else')) as RequestTurn;
    const before = enters;
    const queued = h.call('GET', `/api/v1/organizations/${h.orgId}`);
    await until(() => enters > before && queue.stats().queued === 1, 'the first GET is queued');
    const refused = await h.call('GET', `/api/v1/organizations/${h.orgId}`);
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('too_many_requests_queued');
    expect(refused.headers.get('retry-after')).toBe('1');
    holder.release();
    expect((await queued).status).toBe(200);
  });

  it('fair share: health checks take no place, so they answer while every place is taken', async () => {
    const holder = (await queue.enter('someone else')) as RequestTurn;
    try {
      expect((await request(`${h.server.url}/healthz`, 'GET')).status).toBe(200);
      expect((await request(`${h.server.url}/readyz`, 'GET')).status).toBe(200);
    } finally {
      holder.release();
    }
  });

  // Each held wait gives its place back while it waits: with one place, a GET of the same key
  // is answered while the wait still holds; then a message ends the wait.
  const waits: Array<[string, () => Promise<{ threadId: string; wait: () => Promise<unknown> }>]> = [
    [
      'a thread long poll',
      async () => {
        const opened = await h.call('POST', `/api/v1/edges/${team.edgeId}/threads`, { sender_agent_id: team.humanId, content: 'first' });
        const threadId = opened.body.thread_id as string;
        const page = await h.call('GET', `/api/v1/threads/${threadId}`);
        return { threadId, wait: () => h.call('GET', `/api/v1/threads/${threadId}?after=${page.body.next_after}&wait=30`) };
      },
    ],
    [
      'an event long poll',
      async () => {
        const opened = await h.call('POST', `/api/v1/edges/${team.edgeId}/threads`, { sender_agent_id: team.humanId, content: 'first' });
        const head = await h.call('GET', `/api/v1/organizations/${h.orgId}/events?limit=200`);
        return { threadId: opened.body.thread_id, wait: () => h.call('GET', `/api/v1/organizations/${h.orgId}/events?after=${head.body.next_after}&wait=30&types=message.created`) };
      },
    ],
    [
      'an MCP wait_for_messages',
      async () => {
        const key = await h.call('POST', `/api/v1/agents/${team.agentId}/mcp-keys`);
        const opened = await h.call('POST', `/api/v1/edges/${team.edgeId}/threads`, { sender_agent_id: team.humanId, content: 'first' });
        const threadId = opened.body.thread_id as string;
        const headers = { 'x-api-key': key.body.mcp_key, accept: 'application/json, text/event-stream' };
        const call = (timeout: number) =>
          request(`${h.server.url}/api/v1/mcp`, 'POST', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'wait_for_messages', arguments: { thread_id: threadId, timeout_seconds: timeout } } }, headers);
        // Take what is unread now, so the wait has nothing to answer at once.
        await call(0);
        return { threadId, wait: () => call(30) };
      },
    ],
  ];
  it.each(waits)('fair share: %s gives its place back while it waits', async (_name, start) => {
    const { threadId, wait } = await start();
    const before = enters;
    let ended = false;
    const waiting = wait().then((reply) => {
      ended = true;
      return reply;
    });
    await until(() => enters > before && queue.stats().inProgress === 0, 'the wait took its place and gave it back');
    const get = await h.call('GET', `/api/v1/organizations/${h.orgId}`);
    expect(get.status).toBe(200);
    expect(ended).toBe(false);
    await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: team.humanId, content: 'the answer' });
    const reply = (await waiting) as { status: number; body: unknown };
    expect(reply.status).toBe(200);
    expect(JSON.stringify(reply.body)).toContain('the answer');
  });

  it('fair share: an event stream gives its place back once it streams', async () => {
    const before = enters;
    const stream = new AbortController();
    const response = await fetch(`${h.server.url}/api/v1/organizations/${h.orgId}/events/stream`, { headers: { 'x-api-key': h.apiKey }, signal: stream.signal });
    expect(response.status).toBe(200);
    await until(() => enters > before && queue.stats().inProgress === 0, 'the stream gave its place back');
    expect((await h.call('GET', `/api/v1/organizations/${h.orgId}`)).status).toBe(200);
    stream.abort();
  });
});

describe('fair share: MCP batches', () => {
  // Appends in flight at once, as the server's storage sees them.
  let inFlight = 0;
  let most = 0;
  let h: Harness;
  beforeAll(async () => {
    h = await startHarnessWithDb('batches', {
      wrap: (db: Db) =>
        new Proxy(db, {
          get(target, name, receiver) {
            if (name !== 'query') return Reflect.get(target, name, receiver);
            return async (sql: string, params?: unknown[]) => {
              const append = sql.includes('acs_append_message');
              if (append) most = Math.max(most, ++inFlight);
              try {
                return await target.query(sql, params);
              } finally {
                if (append) inFlight -= 1;
              }
            };
          },
        }),
    });
  });
  afterAll(async () => {
    await h.server.close();
  });

  it("fair share: a batch's tool calls run one after another, so a batch of 20 send_message calls holds one database connection at a time, and its messages keep the batch's order", async () => {
    const team = await buildTeam(h);
    const key = await h.call('POST', `/api/v1/agents/${team.agentId}/mcp-keys`);
    const opened = await h.call('POST', `/api/v1/edges/${team.edgeId}/threads`, { sender_agent_id: team.humanId, content: 'open' });
    const threadId = opened.body.thread_id as string;
    const batch = Array.from({ length: 20 }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name: 'send_message', arguments: { thread_id: threadId, content: `m${i}` } } }));
    most = 0;
    const reply = await request(`${h.server.url}/api/v1/mcp`, 'POST', batch, { 'x-api-key': key.body.mcp_key, accept: 'application/json, text/event-stream' });
    expect(reply.status).toBe(200);
    expect((reply.body as Array<{ result: { isError?: boolean } }>).every((r) => !r.result.isError)).toBe(true);
    expect(most).toBe(1);
    const page = await h.call('GET', `/api/v1/threads/${threadId}?limit=50`);
    expect(page.body.messages.map((m: { content: string }) => m.content)).toEqual(['open', ...batch.map((_, i) => `m${i}`)]);
  });
});

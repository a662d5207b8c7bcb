/**
 * The client's HTTP transport (undici's `request`), against plain `node:http` servers that misbehave
 * on purpose: the per-request deadline (answer and body), aborts, kept-alive connections, a long
 * poll's longer deadline, and the rate-limit headers reaching the pacer.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { AcsApiError, AcsClient } from '../../client/index.ts';
import { RateLimitPacer } from '../../client/rate-limit-pacer.ts';

const servers: http.Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

/** A server on a free port answering with `handler`; counts the connections it accepted. */
async function serve(handler: http.RequestListener): Promise<{ url: string; connections: () => number; requests: () => number }> {
  let connections = 0;
  let requests = 0;
  const server = http.createServer((req, res) => {
    requests++;
    handler(req, res);
  });
  server.on('connection', () => connections++);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, connections: () => connections, requests: () => requests };
}

const json = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

async function failure(promise: Promise<unknown>): Promise<AcsApiError> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(AcsApiError);
  return error as AcsApiError;
}

describe('client transport', () => {
  it("client: a global dispatcher of another undici (Node 22's fetch installs its own) is passed over for a pool of the client's own", async () => {
    const { url } = await serve((_req, res) => json(res, 200, { organizations: [] }));
    // What Node 22's fetch leaves under undici's global name: an object whose dispatch does not
    // take this undici's handlers (there it throws UND_ERR_INVALID_ARG).
    const name = Symbol.for('undici.globalDispatcher.1');
    const previous = (globalThis as Record<symbol, unknown>)[name];
    let foreignCalls = 0;
    (globalThis as Record<symbol, unknown>)[name] = {
      dispatch() {
        foreignCalls++;
        throw Object.assign(new Error('invalid onError method'), { code: 'UND_ERR_INVALID_ARG' });
      },
    };
    try {
      expect(await new AcsClient({ baseUrl: url, apiKey: 'k' }).listOrganizations()).toEqual([]);
      expect(foreignCalls).toBe(0);
    } finally {
      (globalThis as Record<symbol, unknown>)[name] = previous;
    }
  });

  it('client: a request that gets no answer within its timeout fails as network_error naming the timeout', async () => {
    const { url } = await serve(() => {
      // Never answers.
    });
    const error = await failure(new AcsClient({ baseUrl: url, apiKey: 'k', timeoutMs: 300 }).listOrganizations());
    expect(error).toMatchObject({ status: 0, code: 'network_error', retryable: true });
    expect(error.message).toContain('no answer within');
  });

  it('client: an answer whose body stops arriving fails within the same deadline', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"organizations": [');
    });
    const error = await failure(new AcsClient({ baseUrl: url, apiKey: 'k', timeoutMs: 300 }).listOrganizations());
    expect(error).toMatchObject({ status: 0, code: 'network_error' });
    expect(error.message).toContain('no answer within');
  });

  it('client: an aborted request fails as network_error saying aborted, long before its timeout', async () => {
    const { url, requests } = await serve(() => {
      // Never answers: only the abort ends the request.
    });
    const controller = new AbortController();
    const pending = new AcsClient({ baseUrl: url, apiKey: 'k', timeoutMs: 600_000 }).createTeam('org', { team_name: 'a' }, { signal: controller.signal });
    while (requests() === 0) await new Promise((r) => setTimeout(r, 10));
    controller.abort();
    const error = await failure(pending);
    expect(error).toMatchObject({ status: 0, code: 'network_error' });
    expect(error.message).toContain('(aborted)');
  });

  it('client: a signal aborted before the request is sent fails it without contacting the service', async () => {
    const { url, requests } = await serve((_req, res) => json(res, 200, { organizations: [] }));
    const error = await failure(new AcsClient({ baseUrl: url, apiKey: 'k' }).createTeam('org', { team_name: 'a' }, { signal: AbortSignal.abort() }));
    expect(error.message).toContain('(aborted)');
    expect(requests()).toBe(0);
  });

  it('client: requests one after another reuse kept-alive connections instead of opening one each', async () => {
    const { url, connections, requests } = await serve((_req, res) => json(res, 200, { organizations: [] }));
    const client = new AcsClient({ baseUrl: url, apiKey: 'k' });
    for (let i = 0; i < 20; i++) expect(await client.listOrganizations()).toEqual([]);
    expect(requests()).toBe(20);
    // The pool may open a second connection while the first is being handed back; never one a request.
    expect(connections()).toBeLessThanOrEqual(2);
  });

  it("client: a long poll's wait is added to its deadline", async () => {
    const { url } = await serve((_req, res) => {
      setTimeout(() => json(res, 200, { thread_id: 't', messages: [], next_cursor: null }), 700);
    });
    const page = await new AcsClient({ baseUrl: url, apiKey: 'k', timeoutMs: 300 }).getThread('t', { wait: 1 });
    expect(page).toMatchObject({ thread_id: 't', messages: [] });
  });

  it("client: the body, the key and the service's answer go through unchanged", async () => {
    let seen: { method?: string; url?: string; key?: string | string[]; type?: string | string[]; body?: string } = {};
    const { url } = await serve((req, res) => {
      let body = '';
      req.setEncoding('utf8').on('data', (c: string) => (body += c));
      req.on('end', () => {
        seen = { method: req.method, url: req.url, key: req.headers['x-api-key'], type: req.headers['content-type'], body };
        json(res, 201, { team_id: 't1', team_name: 'é — ü' }, { 'x-request-id': 'r-1' });
      });
    });
    const team = await new AcsClient({ baseUrl: `${url}/api/v1/`, apiKey: 'the-key' }).createTeam('org 1', { team_name: 'é — ü' });
    expect(team).toEqual({ team_id: 't1', team_name: 'é — ü' });
    expect(seen).toEqual({ method: 'POST', url: '/api/v1/organizations/org%201/teams', key: 'the-key', type: 'application/json', body: JSON.stringify({ team_name: 'é — ü' }) });
  });

  it("client: each answer's rate-limit headers reach the pacer, which then holds back the next request", async () => {
    const { url, requests } = await serve((_req, res) => json(res, 200, { organizations: [] }, { 'ratelimit-limit': '2', 'ratelimit-remaining': '0', 'ratelimit-reset': '30' }));
    const client = new AcsClient({ baseUrl: url, apiKey: 'k', pacer: new RateLimitPacer() });
    await client.listOrganizations();
    const error = await failure(client.listOrganizations());
    expect(error).toMatchObject({ status: 429, code: 'rate_limited' });
    expect(error.retryAfterSeconds).toBeGreaterThan(5);
    expect(requests()).toBe(1);
  });

  it('client: an error answer keeps its status, code, detail and request id', async () => {
    const { url } = await serve((_req, res) => json(res, 409, { code: 'conflict', detail: 'taken', existing_id: 'x1', request_id: 'r-9' }));
    const error = await failure(new AcsClient({ baseUrl: url, apiKey: 'k' }).createTeam('org', { team_name: 'a' }));
    expect(error).toMatchObject({ status: 409, code: 'conflict', existingId: 'x1', requestId: 'r-9' });
    expect(error.message).toBe('POST /organizations/org/teams: 409 conflict: taken');
  });
});

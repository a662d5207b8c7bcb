/**
 * Slow and greedy clients (issue 21, defect 3): a request must arrive in time, headers and body,
 * and one client address holds a bounded number of connections. Raw sockets, as an attacker
 * sends them, against a server with short limits.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../service/index.ts';
import { request } from './helpers.ts';
import { defaultConnectionLimits, refusalHoldMs } from '../../service/http/connection-limits.ts';

/** A raw connection that records what it received and when it closed. */
interface RawConnection {
  socket: Socket;
  received(): string;
  closed: Promise<void>;
}

function open(url: string, localAddress?: string): Promise<RawConnection> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    let data = '';
    const socket = connect({ port: Number(port), host: hostname, ...(localAddress ? { localAddress } : {}) });
    const closed = new Promise<void>((done) => socket.once('close', () => done()));
    socket.on('data', (chunk: Buffer) => (data += chunk.toString()));
    socket.on('error', () => {});
    socket.once('connect', () => resolve({ socket, received: () => data, closed }));
    socket.once('error', reject);
  });
}

/** Writes `bytes` one character every `everyMs` until the socket closes or they run out. */
async function trickle(connection: RawConnection, bytes: string, everyMs: number): Promise<void> {
  for (const byte of bytes) {
    if (connection.socket.destroyed || !connection.socket.writable) return;
    connection.socket.write(byte);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Resolves when every connection closed; rejects naming how many are still open after `ms`. */
async function allClosed(connections: RawConnection[], ms: number): Promise<void> {
  let open = connections.length;
  for (const c of connections) void c.closed.then(() => (open -= 1));
  await Promise.race([
    Promise.all(connections.map((c) => c.closed)),
    new Promise((_, reject) => setTimeout(() => reject(new Error(`${open} of ${connections.length} connections still open after ${ms} ms`)), ms)),
  ]);
}

describe('connection limits', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({
      inMemory: true,
      port: 0,
      logger: false,
      connectionLimits: { headersTimeoutMs: 1000, requestTimeoutMs: 2000, idleTimeoutMs: 5000, maxConnectionsPerClient: 40 },
    });
  });
  afterAll(async () => {
    await server.close();
  });

  it('connection limits: 30 clients trickling the body of the unauthenticated POST /access-requests are answered 408 request_timeout and closed', async () => {
    const body = JSON.stringify({ email: 'slow@example.com', org_name: 'slow', intended_use: 'x'.repeat(200) });
    const head = `POST /api/v1/access-requests HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const connections = await Promise.all(Array.from({ length: 30 }, () => open(server.url)));
    for (const c of connections) {
      c.socket.write(head);
      void trickle(c, body, 300);
    }
    await allClosed(connections, 20_000);
    for (const c of connections) {
      expect(c.received()).toMatch(/^HTTP\/1\.1 408 /);
      expect(c.received()).toContain('application/problem+json');
      expect(c.received()).toContain('"code":"request_timeout"');
    }
  });

  it('connection limits: clients trickling their headers are closed too, and an idle connection that sends nothing is closed', async () => {
    const slow = await Promise.all(Array.from({ length: 10 }, () => open(server.url)));
    for (const c of slow) void trickle(c, 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n', 300);
    const silent = await open(server.url);
    await allClosed([...slow, silent], 20_000);
    for (const c of slow) expect(c.received()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('connection limits: one address holds at most the cap; the connection over it is answered 429 and closed, and the server keeps serving', async () => {
    const held = await Promise.all(Array.from({ length: 40 }, () => open(server.url)));
    try {
      const over = await open(server.url);
      await allClosed([over], 10_000);
      expect(over.received()).toMatch(/^HTTP\/1\.1 429 /);
      expect(over.received()).toContain('"code":"rate_limited"');
      expect(over.received()).toMatch(/Retry-After: 1/i);
    } finally {
      for (const c of held) c.socket.destroy();
      await Promise.all(held.map((c) => c.closed));
    }
    expect((await request(`${server.url}/healthz`, 'GET')).status).toBe(200);
  });

  it('connection limits: refusals of connections over the cap are held a second, for as many as the cap, so reconnecting at once gains nothing; past those they are sent at once', async () => {
    // An address of its own: the other tests' connections may still be closing on the server's side.
    const from = '127.0.0.3';
    const held = await Promise.all(Array.from({ length: 40 }, () => open(server.url, from)));
    try {
      const waiting = await Promise.all(Array.from({ length: 40 }, () => open(server.url, from)));
      const extra = await open(server.url, from);
      await allClosed([extra], 10_000);
      expect(extra.received()).toMatch(/^HTTP\/1\.1 429 /);
      // The 40 held refusals are not answered yet when the one past them already is.
      expect(waiting.map((c) => c.received())).toEqual(waiting.map(() => ''));
      await allClosed(waiting, 10_000);
      for (const c of waiting) expect(c.received()).toMatch(/^HTTP\/1\.1 429 /);
    } finally {
      for (const c of held) c.socket.destroy();
      await Promise.all(held.map((c) => c.closed));
    }
    expect((await request(`${server.url}/healthz`, 'GET')).status).toBe(200);
  });

  it('connection limits: a long poll held longer than the request timeout is not cut: only receiving the request is timed', async () => {
    const { org_id, api_key } = await server.provisionOrganization('long-poll');
    const call = (method: string, path: string, body?: unknown) => request(`${server.url}${path}`, method, body, { 'x-api-key': api_key });
    const team = (await call('POST', `/api/v1/organizations/${org_id}/teams`, { team_name: 't' })).body.team_id;
    const [a, b] = [(await call('POST', `/api/v1/teams/${team}/humans`, { name: 'a' })).body.human_id, (await call('POST', `/api/v1/teams/${team}/humans`, { name: 'b' })).body.human_id];
    const edge = (await call('POST', `/api/v1/teams/${team}/edges`, { participants: [a, b] })).body.edge_id;
    const thread = (await call('POST', `/api/v1/edges/${edge}/threads`, { sender_agent_id: a, content: 'hi' })).body;
    const page = await call('GET', `/api/v1/threads/${thread.thread_id}?after=${(await call('GET', `/api/v1/threads/${thread.thread_id}`)).body.next_after}&wait=3`);
    expect(page.status).toBe(200);
    expect(page.body.messages).toEqual([]);
  });
});

describe('connection limits: the hold of a refusal', () => {
  it('connection limits: a refusal is held 1 s, but under half the headers timeout, so it is answered before the server would answer the silent connection 408', () => {
    expect(refusalHoldMs(defaultConnectionLimits)).toBe(1000);
    expect(refusalHoldMs({ ...defaultConnectionLimits, headersTimeoutMs: 1000, requestTimeoutMs: 2000 })).toBe(500);
    expect(refusalHoldMs({ ...defaultConnectionLimits, headersTimeoutMs: 10_000, requestTimeoutMs: 600 })).toBe(300);
    expect(refusalHoldMs({ ...defaultConnectionLimits, headersTimeoutMs: 0, requestTimeoutMs: 0 })).toBe(1000);
  });
});

/**
 * Slow and greedy clients (issue 21, defect 3): a request must arrive in time, headers and body,
 * and one client address holds a bounded number of connections. Raw sockets, as an attacker
 * sends them, against a server with short limits.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../service/index.ts';
import { buildTeam, request, startHarness, type Harness } from './helpers.ts';
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

/** How many HTTP responses `text` holds (status lines). */
const responses = (text: string) => text.match(/HTTP\/1\.1 \d{3} /g)?.length ?? 0;

/** Resolves once `connection` has received a whole response after the first `from` characters; rejects after 10 s. */
async function answerOn(connection: RawConnection, from = 0): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const text = connection.received().slice(from);
    const head = text.indexOf('\r\n\r\n');
    const length = Number(/content-length: (\d+)/i.exec(text)?.[1] ?? NaN);
    if (head >= 0 && (Buffer.byteLength(text.slice(head + 4)) >= length || /content-type: text\/event-stream/i.test(text))) return text;
    if (Date.now() > deadline) throw new Error(`no whole response within 10 s: ${JSON.stringify(text.slice(0, 200))}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('connection limits: a connection over the cap runs nothing (contract §14)', () => {
  const cap = 4;
  let h: Harness;
  let threadId: string;
  let humanId: string;
  beforeAll(async () => {
    // The default header timeout (10 s): connections held under the cap stay open through a test.
    h = await startHarness({ inMemory: true, publicUrl: 'https://console.example.test', rateLimit: false, connectionLimits: { maxConnectionsPerClient: cap } });
    const ids = await buildTeam(h);
    humanId = ids.humanId;
    threadId = (await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'first' })).body.thread_id;
  });
  afterAll(async () => {
    await h?.server.close();
  });

  /** `cap` connections from `from`, each served one GET /healthz (so each is counted and kept alive). */
  async function fill(from: string): Promise<RawConnection[]> {
    const held = await Promise.all(Array.from({ length: cap }, () => open(h.server.url, from)));
    for (const c of held) {
      c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      expect(await answerOn(c)).toMatch(/^HTTP\/1\.1 200 /);
    }
    return held;
  }

  async function contents(): Promise<string[]> {
    return (await h.call('GET', `/api/v1/threads/${threadId}?limit=200`)).body.messages.map((m: { content: string }) => m.content);
  }

  it('connection limits: a connection over the cap that sends a whole POST /threads/{id}/messages at once gets exactly one 429 (problem+json, Retry-After, HSTS), is closed, and the message is not stored; a connection under the cap is served', async () => {
    const from = '127.0.0.21';
    const held = await fill(from);
    try {
      const over = await open(h.server.url, from);
      const content = `over the cap ${crypto.randomUUID()}`;
      const body = JSON.stringify({ sender_agent_id: humanId, content });
      const append = `POST /api/v1/threads/${threadId}/messages HTTP/1.1\r\nHost: x\r\nX-API-Key: ${h.apiKey}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
      // Keep-alive: a second request after it, as a client that would pair a late answer with it.
      over.socket.write(`${append}GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`);
      await allClosed([over], 10_000);
      const answer = over.received();
      expect(answer).toMatch(/^HTTP\/1\.1 429 /);
      expect(responses(answer)).toBe(1);
      expect(answer).toMatch(/\r\nContent-Type: application\/problem\+json\r\n/i);
      expect(answer).toContain('"code":"rate_limited"');
      expect(answer).toMatch(/\r\nRetry-After: 1\r\n/i);
      expect(answer).toMatch(/\r\nStrict-Transport-Security: max-age=31536000\r\n/i);
      expect(await contents()).not.toContain(content);

      // The connections under the cap are served, a write too.
      const served = `under the cap ${crypto.randomUUID()}`;
      const servedBody = JSON.stringify({ sender_agent_id: humanId, content: served });
      const before = held[0]!.received().length;
      held[0]!.socket.write(`POST /api/v1/threads/${threadId}/messages HTTP/1.1\r\nHost: x\r\nX-API-Key: ${h.apiKey}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(servedBody)}\r\n\r\n${servedBody}`);
      expect(await answerOn(held[0]!, before)).toMatch(/^HTTP\/1\.1 201 /);
      expect(await contents()).toContain(served);
    } finally {
      for (const c of held) c.socket.destroy();
      await Promise.all(held.map((c) => c.closed));
    }
  });

  it('connection limits: an event stream asked for on a connection over the cap is refused 429 and closed, never streamed; under the cap it streams', async () => {
    const from = '127.0.0.22';
    const held = await fill(from);
    const stream = `GET /api/v1/organizations/${h.orgId}/events/stream HTTP/1.1\r\nHost: x\r\nX-API-Key: ${h.apiKey}\r\n\r\n`;
    try {
      const over = await open(h.server.url, from);
      over.socket.write(stream);
      await allClosed([over], 10_000);
      expect(over.received()).toMatch(/^HTTP\/1\.1 429 /);
      expect(responses(over.received())).toBe(1);
      expect(over.received()).not.toMatch(/text\/event-stream/i);

      const before = held[1]!.received().length;
      held[1]!.socket.write(stream);
      const streamed = await answerOn(held[1]!, before);
      expect(streamed).toMatch(/^HTTP\/1\.1 200 /);
      expect(streamed).toMatch(/content-type: text\/event-stream/i);
    } finally {
      for (const c of held) c.socket.destroy();
      await Promise.all(held.map((c) => c.closed));
    }
  });

  it('connection limits: a request the HTTP parser cannot read is answered 400 invalid_request with HSTS too (no hook runs for it)', async () => {
    const c = await open(h.server.url, '127.0.0.23');
    c.socket.write('NOT HTTP AT ALL\r\n\r\n');
    await allClosed([c], 10_000);
    expect(c.received()).toMatch(/^HTTP\/1\.1 400 /);
    expect(c.received()).toMatch(/\r\nStrict-Transport-Security: max-age=31536000\r\n/i);
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

/**
 * What the soak's clients do, one async loop each, until `stop` is aborted. Every write a client
 * sends carries a unique content; a write the service acknowledged (201, or a message in a
 * JSON-RPC result) goes into the {@link Ledger}, which the soak checks against the database at the
 * end: nothing acknowledged may be missing, nothing may be there twice.
 */
import { connect } from 'node:net';
import { retryAfterMs, sleep, type SoakClient, type SoakReply } from './http.ts';

/** A tenant of the soak: an organization with its own key, a team, a thread between two participants. */
export interface Tenant {
  index: number;
  orgId: string;
  apiKey: string;
  teamId: string;
  /** The participant that writes (a human). */
  writer: string;
  /** The other participant: a human, or an external agent when `mcpKey` is set. */
  peer: string;
  edgeId: string;
  threadId: string;
  mcpKey?: string;
}

/** Acknowledged writes and what the clients saw, for the check at the end. */
export class Ledger {
  /** thread id → content → the message id the service acknowledged. */
  readonly acknowledged = new Map<string, Map<string, string>>();
  /** Threads opened and acknowledged (201), with the tenant that opened them. */
  readonly openedThreads: Array<{ threadId: string; tenant: number }> = [];
  /** Writes given up without an acknowledgement (the answer was lost and could not be replayed). */
  unacknowledged = 0;
  /** Retries of a write after a lost answer (same Idempotency-Key). */
  retries = 0;
  /** Long-poll readers: a message seen twice, or out of order. */
  readonly pollAnomalies: string[] = [];
  /** Answers by kind of client and status (`writer 201`, `hostile 429`, `writer ECONNREFUSED`). */
  readonly outcomes = new Map<string, number>();

  count(role: string, reply: SoakReply): void {
    const key = `${role} ${reply.failure ?? reply.status}`;
    this.outcomes.set(key, (this.outcomes.get(key) ?? 0) + 1);
  }

  ack(threadId: string, content: string, messageId: string): void {
    let thread = this.acknowledged.get(threadId);
    if (!thread) this.acknowledged.set(threadId, (thread = new Map()));
    thread.set(content, messageId);
  }
}

/**
 * Appends `content` to the tenant's thread until the service acknowledges it: a lost answer
 * (connection refused or reset: the process was killed) is sent again, with the same
 * Idempotency-Key, to the other process; 409 `idempotency_key_in_use` (the killed process had
 * claimed the key) is waited out; 429 and 503 wait their `Retry-After`. Gives up at `deadline`.
 */
async function appendUntilAcknowledged(client: SoakClient, tenant: Tenant, content: string, ledger: Ledger, role: string, deadline: () => number): Promise<void> {
  for (let attempt = 0; Date.now() < deadline(); attempt += 1) {
    if (attempt > 0) ledger.retries += 1;
    const reply = await client.request('POST', `/threads/${tenant.threadId}/messages`, { sender_agent_id: tenant.writer, content }, { 'idempotency-key': content });
    ledger.count(role, reply);
    if (reply.status === 201) {
      ledger.ack(tenant.threadId, content, reply.body.message_id as string);
      return;
    }
    if (reply.status === 0) {
      client.failover();
      await sleep(200);
    } else if (reply.status === 429 || reply.status === 503) await sleep(retryAfterMs(reply));
    else if (reply.status === 409) await sleep(1000);
    else if (reply.status >= 500) await sleep(500);
    else return;
  }
  ledger.unacknowledged += 1;
}

/** Writes every 100–300 ms, each write until acknowledged (REST, Idempotency-Key). */
export async function writer(client: SoakClient, tenant: Tenant, ledger: Ledger, stop: AbortSignal, grace: () => number): Promise<void> {
  for (let n = 0; !stop.aborted; n += 1) {
    await appendUntilAcknowledged(client, tenant, `w${tenant.index}-${n}`, ledger, 'writer', () => (stop.aborted ? grace() : Infinity));
    await sleep(100 + Math.random() * 200);
  }
}

/**
 * A conversation: writes every 0.5–1.5 s and, beside it, long-polls the thread (`wait=10`) from
 * the last message seen, checking that each message arrives once and in order.
 */
export async function conversation(client: SoakClient, pollClient: SoakClient, tenant: Tenant, ledger: Ledger, stop: AbortSignal, grace: () => number): Promise<void> {
  const writing = (async () => {
    for (let n = 0; !stop.aborted; n += 1) {
      await appendUntilAcknowledged(client, tenant, `c${tenant.index}-${n}`, ledger, 'conversation', () => (stop.aborted ? grace() : Infinity));
      await sleep(500 + Math.random() * 1000);
    }
  })();
  const polling = (async () => {
    let after: string | null = null;
    const seen = new Set<string>();
    let lastSeq = 0;
    while (!stop.aborted) {
      const query: string = after ? `?after=${after}&wait=10&limit=200` : '?limit=200';
      const reply = await pollClient.request('GET', `/threads/${tenant.threadId}${query}`);
      ledger.count('long-poll', reply);
      if (reply.status === 0) {
        pollClient.failover();
        await sleep(200);
        continue;
      }
      if (reply.status !== 200) {
        await sleep(reply.status === 429 ? retryAfterMs(reply) : 500);
        continue;
      }
      for (const message of reply.body.messages as Array<{ message_id: string; seq?: number; content: string }>) {
        if (seen.has(message.message_id)) ledger.pollAnomalies.push(`thread ${tenant.threadId}: ${message.message_id} seen twice`);
        seen.add(message.message_id);
        const seq = Number(/-(\d+)$/.exec(message.content)?.[1] ?? NaN);
        if (message.content.startsWith(`c${tenant.index}-`) && Number.isFinite(seq)) {
          if (seq < lastSeq) ledger.pollAnomalies.push(`thread ${tenant.threadId}: ${message.content} after c…-${lastSeq}`);
          lastSeq = Math.max(lastSeq, seq);
        }
      }
      after = reply.body.next_after as string | null;
    }
  })();
  await Promise.all([writing, polling]);
}

/** One JSON-RPC `tools/call`. */
const call = (id: number, name: string, args: Record<string, unknown>) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

/**
 * An external agent over MCP: batches of two `send_message` and a `read_thread`, and now and then
 * a `wait_for_messages`. JSON-RPC has no Idempotency-Key, so a batch whose answer was lost is not
 * sent again (its messages are unacknowledged: they may or may not be there, never twice).
 */
export async function mcpAgent(client: SoakClient, tenant: Tenant, ledger: Ledger, stop: AbortSignal): Promise<void> {
  const headers = { 'x-api-key': tenant.mcpKey!, accept: 'application/json, text/event-stream' };
  for (let n = 0; !stop.aborted; n += 2) {
    const contents = [`m${tenant.index}-${n}`, `m${tenant.index}-${n + 1}`];
    const batch = [...contents.map((content, i) => call(i + 1, 'send_message', { thread_id: tenant.threadId, content })), call(3, 'read_thread', { thread_id: tenant.threadId, limit: 5 })];
    const reply = await client.request('POST', '/mcp', batch, headers);
    ledger.count('mcp', reply);
    if (reply.status === 0) {
      ledger.unacknowledged += contents.length;
      client.failover();
      await sleep(200);
      continue;
    }
    if (reply.status === 200 && Array.isArray(reply.body)) {
      for (const result of reply.body as Array<{ id: number; result?: { isError?: boolean; structuredContent?: { message_id: string; content: string } } }>) {
        const message = result.result?.structuredContent;
        if (result.id <= 2 && !result.result?.isError && message?.message_id) ledger.ack(tenant.threadId, message.content, message.message_id);
      }
    } else if (reply.status === 429 || reply.status === 503) await sleep(retryAfterMs(reply));
    if (n % 8 === 6) ledger.count('mcp-wait', await client.request('POST', '/mcp', call(9, 'wait_for_messages', { timeout_seconds: 2 }), headers));
    await sleep(300 + Math.random() * 400);
  }
}

/** A program reading what a dashboard reads, and now and then opening a thread (acknowledged ones are checked). */
export async function reader(client: SoakClient, tenant: Tenant, ledger: Ledger, stop: AbortSignal): Promise<void> {
  const reads = [`/teams/${tenant.teamId}`, `/edges/${tenant.edgeId}/threads`, `/threads/${tenant.threadId}?limit=20`, `/organizations/${tenant.orgId}/deletion-preview`];
  for (let n = 0; !stop.aborted; n += 1) {
    const reply =
      n % 10 === 9
        ? await client.request('POST', `/edges/${tenant.edgeId}/threads`, { sender_agent_id: tenant.writer, content: `t${tenant.index}-${n}`, subject: 'soak' }, { 'idempotency-key': `t${tenant.index}-${n}` })
        : await client.request('GET', reads[n % reads.length]!);
    ledger.count('reader', reply);
    if (reply.status === 201) ledger.openedThreads.push({ threadId: reply.body.thread_id as string, tenant: tenant.index });
    if (reply.status === 0) client.failover();
    await sleep(reply.status === 429 ? retryAfterMs(reply) : 200 + Math.random() * 200);
  }
}

/** The unrelated GET whose latency the soak reports: one every 100 ms, its own key. */
export async function probe(client: SoakClient, tenant: Tenant, samples: Array<{ at: number; ms: number; ok: boolean }>, ledger: Ledger, stop: AbortSignal): Promise<void> {
  while (!stop.aborted) {
    const reply = await client.request('GET', `/organizations/${tenant.orgId}`, undefined, {}, 5000);
    ledger.count('probe', reply);
    samples.push({ at: Date.now(), ms: reply.ms, ok: reply.status === 200 });
    if (reply.status === 0) client.failover();
    await sleep(100);
  }
}

/**
 * A slow client: connections that send a request's headers and then its body one byte every 2 s
 * (from its own address), opened again as the server closes them.
 */
export async function slowClient(urls: () => readonly string[], sourceAddress: string, ledger: Ledger, stop: AbortSignal, connections = 20): Promise<void> {
  let turn = 0;
  const body = JSON.stringify({ email: 'slow@example.com', org_name: 'slow', intended_use: 'x'.repeat(400) });
  const one = async (n: number) => {
    while (!stop.aborted) {
      const url = new URL(urls()[(n + turn) % urls().length]!);
      await new Promise<void>((resolve) => {
        const socket = connect({ host: url.hostname, port: Number(url.port), localAddress: sourceAddress });
        let answer = '';
        let failure = 'closed';
        socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
        socket.on('error', (error: NodeJS.ErrnoException) => (failure = error.code ?? 'error'));
        socket.on('close', () => {
          const status = /^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? failure;
          ledger.outcomes.set(`slow ${status}`, (ledger.outcomes.get(`slow ${status}`) ?? 0) + 1);
          // A refused connection: that process is being restarted; try the other one.
          if (failure === 'ECONNREFUSED') turn += 1;
          resolve();
        });
        socket.on('connect', async () => {
          socket.write(`POST /api/v1/access-requests HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
          for (const byte of body) {
            if (stop.aborted || socket.destroyed) break;
            socket.write(byte);
            await sleep(2000);
          }
          socket.destroy();
        });
      });
      await sleep(500);
    }
  };
  await Promise.all(Array.from({ length: connections }, (_, n) => one(n)));
}

/**
 * The hostile client, from one address: 100 loops of keyed GETs as fast as they go (its key's
 * budget runs out: 429), MCP batches of 100 `send_message` (one batch spends a window), and 60
 * loops of unauthenticated `POST /access-requests` (limited by address): more connections than
 * one address may hold (the server answers the extra ones 429 and closes them).
 */
export async function hostile(client: SoakClient, anonymous: SoakClient, tenant: Tenant, ledger: Ledger, stop: AbortSignal): Promise<void> {
  const headers = { 'x-api-key': tenant.mcpKey!, accept: 'application/json, text/event-stream' };
  const batch = Array.from({ length: 100 }, (_, i) => call(i + 1, 'send_message', { thread_id: tenant.threadId, content: `hostile ${i}` }));
  const loop = async (send: () => Promise<SoakReply>, role: string) => {
    while (!stop.aborted) {
      const reply = await send();
      ledger.count(role, reply);
      if (reply.status === 0) {
        client.failover();
        anonymous.failover();
        await sleep(50);
      }
    }
  };
  await Promise.all([
    ...Array.from({ length: 100 }, () => loop(() => client.request('GET', '/organizations', undefined, {}, 5000), 'hostile-get')),
    ...Array.from({ length: 4 }, () => loop(() => client.request('POST', '/mcp', batch, headers, 5000), 'hostile-mcp')),
    ...Array.from({ length: 60 }, () => loop(() => anonymous.request('POST', '/access-requests', { email: 'x@example.com', org_name: 'flood', intended_use: 'flood' }, {}, 5000), 'hostile-anon')),
  ]);
}

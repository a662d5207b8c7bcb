/**
 * The soak's fairness phase (issue 41; contract §14), run once the main load has stopped:
 *
 * - **One organization at its bound of held waits.** A greedy organization opens event streams
 *   with several keys on every process until its bound refuses it (429 `too_many_waits`), and
 *   holds them; meanwhile another organization's long polls must be held and answered. Their wake
 *   latency (append sent → held poll answered, the poll on one process and the append through the
 *   other) is measured before the greedy organization's streams and while they are held, and
 *   reported, not judged (the machine's load decides timings, as the project's rule for tests says).
 * - **Connections past the per-address cap.** A client fills an address's cap of connections on a
 *   process, then opens more, each sending a whole `POST /threads/{id}/messages` at once: each
 *   must be answered one 429 and closed, and none of their messages may be stored (the soak checks
 *   the thread afterwards).
 */
import http from 'node:http';
import { connect, type Socket } from 'node:net';
import { loopbackAddress, sleep, type SoakClient } from './http.ts';
import type { Tenant } from './traffic.ts';

/** A held event stream, or the refusal of one. */
interface StreamAttempt {
  status: number | string;
  code?: string;
  close(): void;
}

/** Opens `orgId`'s event stream on `url` with `apiKey` from `sourceAddress`; resolves once its headers (or its refusal) arrive. */
function openStream(url: string, orgId: string, apiKey: string, sourceAddress: string): Promise<StreamAttempt> {
  const base = new URL(url);
  return new Promise((resolve) => {
    const req = http.request({
      host: base.hostname,
      port: base.port,
      path: `/api/v1/organizations/${orgId}/events/stream`,
      headers: { 'x-api-key': apiKey },
      localAddress: sourceAddress,
      agent: false,
    });
    const close = () => req.destroy();
    req.on('response', (res) => {
      if (res.statusCode === 200) {
        // Keep-alive comments and events are read and dropped while it is held.
        res.resume();
        res.on('error', () => {});
        resolve({ status: 200, close });
        return;
      }
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => {
        let code: string | undefined;
        try {
          code = (JSON.parse(text) as { code?: string }).code;
        } catch {
          // not a problem document
        }
        resolve({ status: res.statusCode ?? 0, ...(code ? { code } : {}), close });
      });
      res.on('error', () => resolve({ status: 'ECONNRESET', close }));
    });
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ status: error.code ?? 'error', close }));
    req.end();
  });
}

/** What the greedy organization got on one process. */
export interface GreedyOutcome {
  /** Streams held (200). */
  held: number;
  /** Refused 429 `too_many_waits`. */
  refused: number;
  /** Anything else, by status or failure. */
  other: Record<string, number>;
}

/**
 * Opens `bound + extra` event streams of `orgId` on each of `urls`, round-robin over `apiKeys` and
 * from `ceil(n / 100)` source addresses (network `network`: under the per-address cap), 16 at a
 * time. Output: per process what was held and refused, and `close` to end every held stream.
 */
export async function holdOrganizationsBound(
  urls: readonly string[],
  orgId: string,
  apiKeys: readonly string[],
  bound: number,
  extra: number,
  network: number,
): Promise<{ outcomes: GreedyOutcome[]; close(): void }> {
  const attempts: StreamAttempt[] = [];
  const outcomes: GreedyOutcome[] = [];
  const total = bound + extra;
  for (const [p, url] of urls.entries()) {
    const outcome: GreedyOutcome = { held: 0, refused: 0, other: {} };
    for (let i = 0; i < total; i += 16) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(16, total - i) }, (_, k) => openStream(url, orgId, apiKeys[(i + k) % apiKeys.length]!, loopbackAddress(p * 50 + Math.floor((i + k) / 100), network))),
      );
      for (const attempt of batch) {
        attempts.push(attempt);
        if (attempt.status === 200) outcome.held += 1;
        else if (attempt.status === 429 && attempt.code === 'too_many_waits') outcome.refused += 1;
        else outcome.other[String(attempt.status)] = (outcome.other[String(attempt.status)] ?? 0) + 1;
      }
    }
    outcomes.push(outcome);
  }
  return { outcomes, close: () => attempts.forEach((a) => a.close()) };
}

/** Wake latencies of one organization's long polls, and the polls not answered with their message. */
export interface WakeSamples {
  ms: number[];
  /** Polls refused (429) or answered without the message: the organization was not served. */
  notServed: Array<string>;
}

/**
 * `samples` long-poll wakes of `tenant`'s thread, one at a time: a poll (`wait=10`) held on one
 * process (`clients[i % 2]`), 20 ms of head start, then an append through the other; the sample
 * is the time from sending the append to the poll's answer. Output: the samples (ms) and what
 * was not served.
 */
export async function wakeSamples(clients: readonly [SoakClient, SoakClient], tenant: Tenant, samples: number, label: string): Promise<WakeSamples> {
  const result: WakeSamples = { ms: [], notServed: [] };
  // From the thread's newest message: the cursor of its last page.
  let after: string | undefined;
  for (;;) {
    const page = await clients[0].request('GET', `/threads/${tenant.threadId}?limit=200${after ? `&after=${after}` : ''}`);
    if (page.status !== 200) throw new Error(`fairness: reading thread ${tenant.threadId}: ${page.failure ?? page.status}`);
    after = (page.body.next_after as string | null) ?? after;
    if (!page.body.has_more) break;
  }
  for (let i = 0; i < samples; i += 1) {
    const [poller, writer] = i % 2 === 0 ? clients : [clients[1], clients[0]];
    let answeredAt = 0;
    const poll = poller.request('GET', `/threads/${tenant.threadId}?after=${after}&wait=10`).then((reply) => ((answeredAt = performance.now()), reply));
    await sleep(20);
    const content = `${label}-${i}`;
    const sentAt = performance.now();
    const appended = await writer.request('POST', `/threads/${tenant.threadId}/messages`, { sender_agent_id: tenant.writer, content }, { 'idempotency-key': content });
    const reply = await poll;
    if (reply.status !== 200 || !(reply.body?.messages as Array<{ content: string }> | undefined)?.some((m) => m.content === content)) {
      result.notServed.push(`${content}: ${reply.failure ?? reply.status} ${reply.body?.code ?? ''}`.trim());
    } else result.ms.push(answeredAt - sentAt);
    if (appended.status === 201) after = appended.body.message_id as string;
  }
  return result;
}

/** What the connections past the cap got. */
export interface OverCapOutcome {
  /** Connections opened past the cap (each sent one whole append). */
  connections: number;
  /** Answered exactly one 429 and closed. */
  refused: number;
  /** Answered something else, or more than one response: a request of theirs ran. */
  served: string[];
  /** Closed without an answer (reset under load): reported. */
  unanswered: number;
  /** The contents they sent: none may be stored. */
  contents: string[];
}

/** A raw connection from `sourceAddress` that records what it received; resolves once connected. */
function rawConnection(url: string, sourceAddress: string): Promise<{ socket: Socket; received(): string; closed: Promise<void> }> {
  const base = new URL(url);
  return new Promise((resolve, reject) => {
    let data = '';
    const socket = connect({ host: base.hostname, port: Number(base.port), localAddress: sourceAddress });
    const closed = new Promise<void>((done) => socket.once('close', () => done()));
    socket.on('data', (chunk: Buffer) => (data += chunk.toString()));
    socket.on('error', () => {});
    socket.once('connect', () => resolve({ socket, received: () => data, closed }));
    socket.once('error', reject);
  });
}

/** Resolves once `text()` holds a whole response, or after `ms` (with what it holds). */
async function untilAnswered(text: () => string, ms: number): Promise<string> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const t = text();
    const head = t.indexOf('\r\n\r\n');
    const length = Number(/content-length: (\d+)/i.exec(t)?.[1] ?? NaN);
    if (head >= 0 && Buffer.byteLength(t.slice(head + 4)) >= length) return t;
    await sleep(10);
  }
  return text();
}

/**
 * Fills the cap (`cap` connections, each served a keep-alive `GET /healthz`) of `sourceAddress` on
 * `url`, then opens `extra` more connections, each sending at once a whole append of a unique
 * content to `tenant`'s thread (with an Idempotency-Key); waits for them to close (at most 15 s),
 * then closes the cap's connections. Output: what the extra connections got, and their contents.
 */
export async function connectionsPastTheCap(url: string, sourceAddress: string, cap: number, extra: number, tenant: Tenant, label: string): Promise<OverCapOutcome> {
  const held: Array<Awaited<ReturnType<typeof rawConnection>>> = [];
  const outcome: OverCapOutcome = { connections: extra, refused: 0, served: [], unanswered: 0, contents: [] };
  try {
    for (let i = 0; i < cap; i += 16) {
      const batch = await Promise.all(Array.from({ length: Math.min(16, cap - i) }, () => rawConnection(url, sourceAddress)));
      held.push(...batch);
      await Promise.all(
        batch.map((c) => {
          c.socket.write('GET /healthz HTTP/1.1\r\nHost: soak\r\n\r\n');
          return untilAnswered(c.received, 15_000);
        }),
      );
    }
    const over = await Promise.all(
      Array.from({ length: extra }, async (_, i) => {
        const content = `${label}-${i}`;
        outcome.contents.push(content);
        const c = await rawConnection(url, sourceAddress);
        const body = JSON.stringify({ sender_agent_id: tenant.writer, content });
        c.socket.write(
          `POST /api/v1/threads/${tenant.threadId}/messages HTTP/1.1\r\nHost: soak\r\nX-API-Key: ${tenant.apiKey}\r\nIdempotency-Key: ${content}\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        );
        await Promise.race([c.closed, sleep(15_000)]);
        c.socket.destroy();
        return c.received();
      }),
    );
    for (const answer of over) {
      const statuses = [...answer.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => m[1]);
      if (statuses.length === 0) outcome.unanswered += 1;
      else if (statuses.length === 1 && statuses[0] === '429' && answer.includes('"code":"rate_limited"')) outcome.refused += 1;
      else outcome.served.push(statuses.join('+'));
    }
  } finally {
    for (const c of held) c.socket.destroy();
  }
  return outcome;
}

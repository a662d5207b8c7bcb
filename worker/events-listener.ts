/**
 * `teamctl worker --events-listen HOST:PORT`: the receiver of the organization's webhook (contract
 * §9) that wakes pipeline runs waiting by push (`workflows/pipeline-waits.ts`).
 *
 * A delivery is a `POST /` of one event, signed per Standard Webhooks. The listener
 *
 * 1. verifies the signature with the `standardwebhooks` library against each secret it holds (the
 *    variable `--events-secret-env` names; several, comma-separated, during a rotation): 401
 *    otherwise;
 * 2. passes over what cannot wake a run (another type than `message.created`; a message that
 *    answers no message awaiting a reply: `answers_message_id` null) with 204;
 * 3. finds the runs waiting for this message's sender in its thread by the search attribute
 *    `TeamctlAwaitingThreads` (a visibility query) and signals each (`message`, idempotent by the
 *    event id in the run);
 * 4. answers 204 only once Temporal accepted every signal. When Temporal cannot be reached it
 *    answers 503, and the service delivers the event again later (its retries: 5 s, 5 min, …).
 *    When no run is found for a message that answers an awaited one, written in the last two
 *    minutes, it looks again for a few seconds (visibility lags behind the run's upsert) and then
 *    answers 503, so the next delivery finds the run; later, it answers 204 (a program that is not
 *    a teamctl run may have awaited that answer).
 *
 * Several workers may listen (behind one URL, or as several webhooks): signals are idempotent by
 * event id, and each listener remembers the events it has passed on to skip a redelivery quickly.
 * The listener never needs to be up for correctness: a waiting run reads its thread every
 * `reconcileEvery` anyway.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Client } from '@temporalio/client';
import { Webhook } from 'standardwebhooks';
import type { MessageSignal } from '../workflows/pipeline-waits.ts';
import { AWAITING_THREADS_NAME, awaitingKey, messageSignal } from '../workflows/pipeline-waits.ts';

/** Settings of the listener. */
export interface EventsListenerOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** The webhook secrets (`whsec_…`) a delivery may be signed with: one, or two during a rotation. */
  secrets: readonly string[];
  /** A Temporal client on the worker's namespace. */
  client: Client;
  /** Where a line is written for each delivery that fails (default: nothing). */
  log?: (line: string) => void;
  /** How long to look for the run of an awaited answer before answering 503, in ms (default 3,000). */
  lookupWindowMs?: number;
  /** An awaited answer older than this (ms) that finds no run is acknowledged (default 120,000). */
  recentMs?: number;
}

/** A running listener. */
export interface EventsListener {
  /** `http://HOST:PORT/`: the URL a webhook points at. */
  url: string;
  port: number;
  /** Deliveries answered so far, by status (for tests and the worker's stop line). */
  counts: Record<number, number>;
  close(): Promise<void>;
}

/** Largest body accepted: an event is at most a message of 32,768 characters and its envelope. */
const MAX_BODY_BYTES = 1024 * 1024;
/** Event ids remembered as passed on. */
const REMEMBERED = 10_000;

/** Parses `HOST:PORT` (`[::1]:8787` for IPv6). Errors: a message for `--events-listen`. */
export function parseListenAddress(text: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(text.trim());
  const port = match ? Number(match[3]) : NaN;
  if (!match || !Number.isInteger(port) || port > 65_535) throw new Error(`--events-listen: expected HOST:PORT (e.g. 0.0.0.0:8787 or [::1]:8787), got ${JSON.stringify(text)}`);
  return { host: (match[1] ?? match[2])!, port };
}

/**
 * Reads the secrets from the variable `name` of `env`: comma-separated `whsec_…` values.
 * Errors: a message naming the variable (never a value) when it is unset or holds no secret.
 */
export function secretsFrom(env: NodeJS.ProcessEnv, name: string): string[] {
  const secrets = (env[name] ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (secrets.length === 0) throw new Error(`--events-listen needs the webhook's secret: set ${name} to it (whsec_…; two, comma-separated, during a rotation), or name another variable with --events-secret-env`);
  for (const secret of secrets) {
    try {
      new Webhook(secret);
    } catch {
      throw new Error(`${name} holds a value that is not a webhook secret (whsec_ and base64)`);
    }
  }
  return secrets;
}

/** The event a delivery carries, as far as the listener reads it. */
interface DeliveredEvent {
  event_id: string;
  type: string;
  created_at?: string;
  data?: { thread_id?: string; message_id?: string; sender_id?: string; content?: string; answers_message_id?: string | null };
}

/**
 * Starts the listener (see the module comment). Output: its URL, counts and `close()`. Errors:
 * the server's (`EADDRINUSE`, …) when it cannot listen.
 */
export async function startEventsListener(options: EventsListenerOptions): Promise<EventsListener> {
  const verifiers = options.secrets.map((secret) => new Webhook(secret));
  const passed = new Set<string>();
  const passedOrder: string[] = [];
  const counts: Record<number, number> = {};
  const lookupWindowMs = options.lookupWindowMs ?? 3_000;
  const recentMs = options.recentMs ?? 120_000;

  const remember = (eventId: string) => {
    passed.add(eventId);
    passedOrder.push(eventId);
    if (passedOrder.length > REMEMBERED) passed.delete(passedOrder.shift()!);
  };

  /** The runs (workflow ids) waiting for `senderId` in `threadId`, by the search attribute. */
  const waitingRuns = async (threadId: string, senderId: string): Promise<string[]> => {
    const ids: string[] = [];
    const query = `${AWAITING_THREADS_NAME} = '${awaitingKey(threadId, senderId).replace(/'/g, '')}' AND ExecutionStatus = 'Running'`;
    for await (const info of options.client.workflow.list({ query })) ids.push(info.workflowId);
    return ids;
  };

  /** Handles one verified event; output: the status to answer. */
  const handle = async (event: DeliveredEvent): Promise<number> => {
    if (event.type !== 'message.created' || passed.has(event.event_id)) return 204;
    const data = event.data ?? {};
    // A message that answers no awaited message is nobody's reply (every awaited send expects one).
    if (data.answers_message_id === null || !data.thread_id || !data.sender_id || !data.message_id) return 204;
    let runs = await waitingRuns(data.thread_id, data.sender_id);
    const awaited = typeof data.answers_message_id === 'string';
    const recent = event.created_at !== undefined && Date.now() - Date.parse(event.created_at) < recentMs;
    if (runs.length === 0 && awaited && recent) {
      // The run may have listed the thread a moment ago: visibility is eventually consistent.
      const until = Date.now() + lookupWindowMs;
      while (runs.length === 0 && Date.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        runs = await waitingRuns(data.thread_id, data.sender_id);
      }
      if (runs.length === 0) return 503;
    }
    const signal: MessageSignal = {
      event_id: event.event_id,
      thread_id: data.thread_id,
      message_id: data.message_id,
      sender_id: data.sender_id,
      content: data.content ?? '',
      ...(data.answers_message_id !== undefined ? { answers_message_id: data.answers_message_id } : {}),
    };
    for (const workflowId of runs) {
      try {
        await options.client.workflow.getHandle(workflowId).signal(messageSignal, signal);
      } catch (error) {
        // Ended meanwhile: nothing waits there any more.
        if (!(error instanceof WorkflowNotFoundError)) throw error;
      }
    }
    remember(event.event_id);
    return 204;
  };

  const server = http.createServer((req, res) => {
    const answer = (status: number, headers: Record<string, string> = {}) => {
      counts[status] = (counts[status] ?? 0) + 1;
      res.writeHead(status, headers).end();
    };
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/') return answer(404);
    if (req.method !== 'POST') return answer(405, { allow: 'POST' });
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on('end', () => {
      if (tooLarge) return answer(413);
      const body = Buffer.concat(chunks).toString('utf8');
      let event: DeliveredEvent | undefined;
      for (const verifier of verifiers) {
        try {
          event = verifier.verify(body, req.headers as Record<string, string>) as DeliveredEvent;
          break;
        } catch {
          // Not this secret (or not signed at all): try the next one.
        }
      }
      if (!event) {
        options.log?.(`events listener: a delivery that no secret verifies (webhook-id ${String(req.headers['webhook-id'] ?? 'none')}): answered 401`);
        return answer(401);
      }
      handle(event).then(
        (status) => answer(status, status === 503 ? { 'retry-after': '5' } : {}),
        (error: unknown) => {
          options.log?.(`events listener: event ${event.event_id} not passed on (${(error as Error).message}): answered 503, the service delivers it again`);
          answer(503, { 'retry-after': '5' });
        },
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}/`,
    port,
    counts,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

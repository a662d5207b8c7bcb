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
 *
 * **Catching up.** With `stateFile`, the listener keeps its place in each organization's event
 * log (`worker/events-position.ts`: the last event it handled). Started again after a crash or a
 * stop, with `readEvents`, it reads each log from there (`message.created` only) and passes on
 * what came while it was down, as if delivered, so a reply written meanwhile wakes its run at once
 * rather than at the webhook's next retry (5 s, then 5 min, …). The webhook still delivers those
 * events: the listener skips the ones it has passed on, and a signal is idempotent by event id.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Client } from '@temporalio/client';
import { Webhook } from 'standardwebhooks';
import type { MessageSignal } from '../workflows/pipeline-waits.ts';
import { AWAITING_THREADS_NAME, awaitingKey, messageSignal } from '../workflows/pipeline-waits.ts';
import { openEventsPosition } from './events-position.ts';
import type { EventsPosition } from './events-position.ts';

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
  /**
   * Where the listener keeps its place in each organization's event log (a small JSON file,
   * `worker/events-position.ts`). Absent: no place is kept and nothing is caught up.
   */
  stateFile?: string;
  /**
   * Reads one page of an organization's event log: up to `limit` `message.created` events after the
   * seq `after` (undefined: from the oldest kept), as `GET /organizations/{org_id}/events` answers (contract
   * §9). Used at start to catch up from the place in `stateFile`; absent: nothing is caught up.
   * Errors: the client's (`AcsApiError`: `events_expired`, `invalid_cursor`, `not_found`, …).
   */
  readEvents?: (orgId: string, after: number | undefined, limit: number) => Promise<{ events: readonly LoggedEvent[]; next_after: number }>;
}

/** An event as a page of the log holds it (contract §9); the listener reads it as a delivery's. */
export interface LoggedEvent {
  event_id: string;
  type: string;
  seq: number;
  created_at: string;
  data: unknown;
}

/** What catching up on one organization's log came to. */
export interface CatchUpReport {
  org_id: string;
  /** The seq read after: the place kept in the state file. */
  after: number;
  /** Events read. */
  events: number;
  /** Replies passed on to waiting runs (signalled). */
  passedOn: number;
  /** Why the catch-up stopped early (the webhook's retries deliver the rest); absent when it read the log to its end. */
  error?: string;
}

/** A running listener. */
export interface EventsListener {
  /** `http://HOST:PORT/`: the URL a webhook points at. */
  url: string;
  port: number;
  /** Deliveries answered so far, by status (for tests and the worker's stop line). */
  counts: Record<number, number>;
  /** The state file kept (`stateFile`), if any. */
  stateFile?: string;
  /** Settles once the catch-up at start ended: one report per organization of the state file (none without `stateFile` and `readEvents`). Never rejects. */
  caughtUp: Promise<CatchUpReport[]>;
  /** Stops listening (and catching up) and writes the place kept. */
  close(): Promise<void>;
}

/** Largest body accepted: an event is at most a message of 32,768 characters and its envelope. */
const MAX_BODY_BYTES = 1024 * 1024;
/** Event ids remembered as passed on. */
const REMEMBERED = 10_000;
/** Events read per page when catching up (the most a page of the log holds, contract §9). */
const CATCH_UP_PAGE = 500;

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
  seq?: number;
  org_id?: string;
  created_at?: string;
  data?: { thread_id?: string; message_id?: string; sender_id?: string; content?: string; answers_message_id?: string | null };
}

/**
 * Starts the listener (see the module comment) and, with `stateFile` and `readEvents`, its catch-up
 * (`caughtUp`). Output: its URL, counts and `close()`. Errors: the server's (`EADDRINUSE`, …) when
 * it cannot listen; a message naming `stateFile` when that file cannot be read or is not a state file.
 */
export async function startEventsListener(options: EventsListenerOptions): Promise<EventsListener> {
  const position: EventsPosition | undefined = options.stateFile
    ? await openEventsPosition(options.stateFile, (error) => options.log?.(`events listener: could not write ${options.stateFile} (${error.message}); retried at the next event`))
    : undefined;
  let closed = false;
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

  /**
   * Handles one verified event; output: the status to answer, and how many runs were signalled.
   * `catchingUp`: read from the log at start, where no run found means nothing waits for it.
   */
  const handle = async (event: DeliveredEvent, catchingUp = false): Promise<{ status: number; signalled: number }> => {
    const nothing = { status: 204, signalled: 0 };
    if (event.type !== 'message.created' || passed.has(event.event_id)) return nothing;
    const data = event.data ?? {};
    // A message that answers no awaited message is nobody's reply (every awaited send expects one).
    if (data.answers_message_id === null || !data.thread_id || !data.sender_id || !data.message_id) return nothing;
    let runs = await waitingRuns(data.thread_id, data.sender_id);
    const awaited = typeof data.answers_message_id === 'string';
    const recent = event.created_at !== undefined && Date.now() - Date.parse(event.created_at) < recentMs;
    if (runs.length === 0 && awaited && recent && !catchingUp) {
      // The run may have listed the thread a moment ago: visibility is eventually consistent.
      const until = Date.now() + lookupWindowMs;
      while (runs.length === 0 && Date.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        runs = await waitingRuns(data.thread_id, data.sender_id);
      }
      if (runs.length === 0) return { status: 503, signalled: 0 };
    }
    const signal: MessageSignal = {
      event_id: event.event_id,
      thread_id: data.thread_id,
      message_id: data.message_id,
      sender_id: data.sender_id,
      content: data.content ?? '',
      ...(data.answers_message_id !== undefined ? { answers_message_id: data.answers_message_id } : {}),
    };
    let signalled = 0;
    for (const workflowId of runs) {
      try {
        await options.client.workflow.getHandle(workflowId).signal(messageSignal, signal);
        signalled += 1;
      } catch (error) {
        // Ended meanwhile: nothing waits there any more.
        if (!(error instanceof WorkflowNotFoundError)) throw error;
      }
    }
    remember(event.event_id);
    return { status: 204, signalled };
  };

  /** Records in the kept place what became of `event` (204: handled; otherwise not passed on). */
  const record = (event: DeliveredEvent, status: number) => {
    if (!position || typeof event.org_id !== 'string' || !Number.isInteger(event.seq)) return;
    if (status === 204) position.handled(event.org_id, event.seq!);
    else position.unsettled(event.org_id, event.seq!);
  };

  /**
   * Reads each organization's log from the place kept, passing on what came since (see the module
   * comment). An organization whose log cannot be read (another organization's key, the service
   * down) or whose signals Temporal does not take is reported and left to the webhook's retries.
   */
  const catchUp = async (): Promise<CatchUpReport[]> => {
    const reports: CatchUpReport[] = [];
    if (!position || !options.readEvents) return reports;
    for (const [orgId, kept] of position.atStart) {
      const report: CatchUpReport = { org_id: orgId, after: kept, events: 0, passedOn: 0 };
      reports.push(report);
      let after: number | undefined = kept;
      try {
        while (!closed) {
          position.readingFrom(orgId, Math.max(after ?? 0, 0));
          let page: Awaited<ReturnType<NonNullable<EventsListenerOptions['readEvents']>>>;
          try {
            page = await options.readEvents(orgId, after, CATCH_UP_PAGE);
          } catch (error) {
            const code = (error as { code?: string }).code;
            // Older than the oldest event kept: read from the oldest kept.
            if (code === 'events_expired' && after !== undefined) {
              after = undefined;
              continue;
            }
            // Beyond the newest: the log is not the one the place was kept in (a new database); kept anew from the next event.
            if (code === 'invalid_cursor') position.forget(orgId);
            throw error;
          }
          for (const event of page.events) {
            if (closed) break;
            report.events += 1;
            const read = { ...event, org_id: orgId } as DeliveredEvent;
            const { status, signalled } = await handle(read, true);
            report.passedOn += signalled;
            record(read, status);
            if (status === 204) position.readingFrom(orgId, event.seq);
          }
          if (closed) break;
          // A page not full is the end of the log as it was read: the place is then what was handled.
          if (page.events.length < CATCH_UP_PAGE || page.next_after === after) {
            position.handled(orgId, page.next_after);
            position.readingFrom(orgId, undefined);
            break;
          }
          after = page.next_after;
        }
      } catch (error) {
        // The place stays where the catch-up stopped: the next start reads on from there.
        report.error = (error as Error).message;
      }
    }
    return reports;
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
        ({ status }) => {
          record(event, status);
          answer(status, status === 503 ? { 'retry-after': '5' } : {});
        },
        (error: unknown) => {
          options.log?.(`events listener: event ${event.event_id} not passed on (${(error as Error).message}): answered 503, the service delivers it again`);
          record(event, 503);
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
  const caughtUp = catchUp();
  return {
    url: `http://${host}:${port}/`,
    port,
    counts,
    ...(options.stateFile ? { stateFile: options.stateFile } : {}),
    caughtUp,
    async close() {
      closed = true;
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      // A catch-up still reading stops at its next step (`closed`); what it recorded so far is written.
      await position?.flush().catch((error: Error) => options.log?.(`events listener: could not write ${options.stateFile} (${error.message})`));
    },
  };
}

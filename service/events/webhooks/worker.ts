/**
 * Webhook deliveries of one process (contract §9): dispatching events to deliveries, then
 * attempting them, across any number of processes on one database.
 *
 * - **Dispatch.** Each webhook keeps its place in its organization's log (`cursor_seq`). After
 *   this process numbered new events of an organization with webhooks, and every
 *   `pollMs` for whatever a dead process left, the webhooks behind the log are locked (`FOR UPDATE
 *   SKIP LOCKED`: one process dispatches a webhook at a time, the others skip it), a delivery row
 *   is inserted for each matching event after the cursor, and the cursor moves, in one
 *   transaction: no event is skipped or dispatched twice.
 * - **Delivery.** Due deliveries are claimed with `FOR UPDATE SKIP LOCKED` and leased (their
 *   `next_attempt_at` moves to the lease's end), so each attempt is made by one process; a
 *   process that dies mid-attempt leaves the delivery to be attempted again when the lease ends.
 *   Pending deliveries are rows, so they survive restarts.
 * - **Attempt.** A `POST` of the event JSON signed per Standard Webhooks (signing.ts), to the
 *   checked address (outbound/url-guard.ts), answered within `timeoutMs`: 2xx is delivered; 410 disables
 *   the webhook; anything else is retried after the next delay of the schedule, or after the
 *   receiver's `Retry-After` on 429/503 when that is longer; after the last, failed.
 * - **Log.** Each attempt's outcome is a row of its own (`webhook_delivery_attempts`), written in
 *   the transaction that records it on the delivery, so the delivery log lists every attempt
 *   (contract §9); an attempt whose process died is listed, without an outcome, when the next
 *   claim finds its lease run out.
 */
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { VERSION } from '../../../api/version.ts';
import type { DomainDeps } from '../../domain/caller.ts';
import { newId } from '../../domain/ids.ts';
import { toEvent, typeFilterSql, type EventRow } from '../log.ts';
import { signDelivery } from './signing.ts';
import { guardedLookup, refusedAddress } from '../../outbound/url-guard.ts';
import type { WebhookRuntime, WebhookSettings } from './webhooks.ts';
import { WebhookOutcomes } from '../../metrics/hooks.ts';

/** The most a `Retry-After` may push an attempt back: a day. */
const maxRetryAfterMs = 24 * 3600e3;
/** Events dispatched per webhook per transaction. */
const dispatchBatch = 1_000;
/** Bytes of a receiver's answer read (and dropped) at most. */
const maxResponseBytes = 64 * 1024;
/** The error listed for an attempt whose process stopped before it recorded an outcome. */
export const abandonedAttempt = 'no outcome recorded: the process making this attempt stopped before it ended (its lease ran out); attempted again';

/** A running webhook worker. */
export interface WebhookWorker extends WebhookRuntime {
  /** Dispatch and attempt what is due now (tests, and after a change). */
  kick(): void;
  /** Stops: no new attempt starts; attempts in flight are abandoned (their leases run out). */
  close(): Promise<void>;
}

interface ClaimedRow extends EventRow {
  delivery_id: string;
  webhook_id: string;
  attempt: number;
  manual: boolean;
  /** When this attempt began: its claim, by the database's clock. */
  started_at: Date;
  url: string;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  event_seq: string;
  event_present: boolean;
  /** The task of an A2A push config (a2a/push-configs.ts); null for an organization's webhook. */
  push_task_id: string | null;
  push_token_sealed: string | null;
  push_auth_scheme: string | null;
  push_auth_sealed: string | null;
}

/** What the worker needs beyond the domain and its settings. */
export interface WebhookWorkerOptions {
  /** The URL the server is reached at (file parts' URLs in A2A push notifications); default none. */
  publicUrl?: (() => string) | undefined;
}

/** What one attempt came to. */
interface Outcome {
  status: number | null;
  error: string | null;
  retryAfterMs: number | undefined;
  durationMs: number;
  /** Whether a request was sent (false: the URL was refused or the event is gone). */
  sent?: boolean;
}

/** `Retry-After` (seconds or an HTTP date) in milliseconds from now, if it says something. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined || text.trim() === '') return undefined;
  if (/^\d+$/.test(text.trim())) return Number(text.trim()) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * Starts the webhook worker of this process over `deps` with `settings`: dispatches after this
 * process numbered new events (`deps.events.onSequenced`) and every `settings.pollMs`, and
 * attempts deliveries as they fall due. `log` gets failures of its own (never a secret).
 */
export function startWebhookWorker(
  deps: DomainDeps,
  settings: WebhookSettings,
  log: (message: string, error?: unknown) => void = () => {},
  options: WebhookWorkerOptions = {},
): WebhookWorker {
  const { db } = deps;
  const token = newId();
  let closed = false;
  /** Organizations with enabled webhooks, as of the last look (and the changes made here since). */
  let watched = new Set<string>();
  const dispatching = new Map<string, { again: boolean }>();
  let inFlight = 0;
  let claiming = false;
  let claimAgain = false;
  let dueTimer: NodeJS.Timeout | undefined;
  const attempts = new Set<Promise<void>>();

  const stopAnnounces = deps.events.onSequenced((orgId) => {
    if (watched.has(orgId)) dispatch(orgId);
  });
  const poll = setInterval(() => void sweep(), settings.pollMs);
  poll.unref();
  void sweep();

  /** The periodic look: which organizations have webhooks, which webhooks are behind, what is due. */
  async function sweep(): Promise<void> {
    if (closed) return;
    try {
      const rows = await db.query<{ org_id: string; behind: boolean }>(
        `SELECT w.org_id, bool_or(w.cursor_seq < COALESCE(c.last_seq, 0)) AS behind
           FROM webhooks w LEFT JOIN event_counters c ON c.org_id = w.org_id
          WHERE w.status = 'enabled' AND w.ended_at IS NULL GROUP BY w.org_id`,
      );
      watched = new Set(rows.map((row) => row.org_id));
      for (const row of rows) if (row.behind) dispatch(row.org_id);
    } catch (error) {
      if (!closed) log('webhooks: the periodic look failed', error);
    }
    claim();
  }

  /** Dispatches the events of `orgId` to deliveries; one run at a time per organization. */
  function dispatch(orgId: string): void {
    const running = dispatching.get(orgId);
    if (running) {
      running.again = true;
      return;
    }
    const state = { again: true };
    dispatching.set(orgId, state);
    void (async () => {
      try {
        while (state.again && !closed) {
          state.again = false;
          if (await dispatchOnce(orgId)) state.again = true;
        }
      } catch (error) {
        if (!closed) log('webhooks: dispatching failed; the next look retries', error);
      } finally {
        dispatching.delete(orgId);
      }
      claim();
    })();
  }

  /** One transaction: the organization's webhooks that are behind, each moved up to a batch. Output: whether more may remain. */
  async function dispatchOnce(orgId: string): Promise<boolean> {
    return db.transaction(async (tx) => {
      const [counter] = await tx.query<{ last_seq: string }>(`SELECT last_seq FROM event_counters WHERE org_id = $1`, [orgId]);
      const head = Number(counter?.last_seq ?? 0);
      const webhooks = await tx.query<{ id: string; events: string[]; cursor_seq: string; task_id: string | null }>(
        `SELECT id, events, cursor_seq, task_id FROM webhooks WHERE org_id = $1 AND status = 'enabled' AND ended_at IS NULL AND cursor_seq < $2 ORDER BY id FOR UPDATE SKIP LOCKED`,
        [orgId, head],
      );
      let more = false;
      for (const webhook of webhooks) {
        const upTo = Math.min(head, Number(webhook.cursor_seq) + dispatchBatch);
        if (upTo < head) more = true;
        await tx.query(
          `INSERT INTO webhook_deliveries (id, webhook_id, org_id, seq, event_id, event_type, next_attempt_at)
           SELECT gen_random_uuid(), $1, e.org_id, e.seq, e.event_id, e.type, now()
             FROM events e WHERE e.org_id = $2 AND e.seq > $3 AND e.seq <= $4 AND ${typeFilterSql(5)}
              AND ($6::text IS NULL OR e.data->>'task_id' = $6::text)
           ON CONFLICT (webhook_id, seq) DO NOTHING`,
          [webhook.id, orgId, webhook.cursor_seq, upTo, webhook.events, webhook.task_id],
        );
        // A task's push config (a2a/push-configs.ts) ends with its task's final state: that
        // notification is its last, and nothing is dispatched to it after.
        await tx.query(
          `UPDATE webhooks SET cursor_seq = $2,
             ended_at = CASE WHEN task_id IS NOT NULL AND EXISTS (
               SELECT 1 FROM events e WHERE e.org_id = $3 AND e.seq > $4 AND e.seq <= $2 AND e.type IN ('task.created', 'task.updated')
                 AND e.data->>'task_id' = $5::text AND e.data->>'state' IN ('completed', 'failed', 'canceled', 'rejected')
             ) THEN now() END
           WHERE id = $1`,
          [webhook.id, upTo, orgId, webhook.cursor_seq, webhook.task_id],
        );
      }
      return more;
    });
  }

  /** Claims as many due deliveries as there are free slots and attempts them; then sets the timer for the next due one. */
  function claim(): void {
    if (closed) return;
    if (claiming) {
      claimAgain = true;
      return;
    }
    claiming = true;
    void (async () => {
      try {
        do {
          claimAgain = false;
          const free = settings.concurrency - inFlight;
          if (free <= 0) break;
          const leaseSeconds = Math.ceil(settings.timeoutMs / 1000) + 15;
          // A delivery still leased is one whose process stopped mid-attempt (its lease ran out):
          // that attempt is listed with no outcome, so the delivery log has no gap (`abandoned`).
          const rows = await db.query<ClaimedRow>(
            `WITH picked AS (
               SELECT d.id, d.attempt, d.lease_token, d.updated_at FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
                WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND w.status = 'enabled'
                ORDER BY d.next_attempt_at LIMIT $1 FOR UPDATE OF d SKIP LOCKED
             ), abandoned AS (
               INSERT INTO webhook_delivery_attempts (delivery_id, attempt, status, error, next_attempt_at, created_at)
               SELECT id, attempt, 'pending', $4, now(), updated_at FROM picked WHERE lease_token IS NOT NULL AND attempt > 0
               ON CONFLICT (delivery_id, attempt) DO NOTHING
             ), leased AS (
               UPDATE webhook_deliveries d SET next_attempt_at = now() + make_interval(secs => $2), lease_token = $3,
                      attempt = d.attempt + 1, updated_at = now()
                 FROM picked WHERE d.id = picked.id
               RETURNING d.id, d.webhook_id, d.org_id, d.seq, d.attempt, d.manual, d.updated_at
             )
             SELECT l.id AS delivery_id, l.webhook_id, l.attempt, l.manual, l.updated_at AS started_at, l.seq AS event_seq, w.url, w.secret_sealed,
                    w.task_id AS push_task_id, w.push_token_sealed, w.push_auth_scheme, w.push_auth_sealed,
                    CASE WHEN w.previous_secret_expires_at > now() THEN w.previous_secret_sealed END AS previous_secret_sealed,
                    e.event_id IS NOT NULL AS event_present, e.org_id, e.seq, e.event_id, e.type, e.team_id, e.data, e.created_at
               FROM leased l JOIN webhooks w ON w.id = l.webhook_id
               LEFT JOIN events e ON e.org_id = l.org_id AND e.seq = l.seq`,
            [free, leaseSeconds, token, abandonedAttempt],
          );
          for (const row of rows) start(row);
          if (rows.length === free) claimAgain = true;
        } while (claimAgain && !closed);
        await scheduleNextDue();
      } catch (error) {
        if (!closed) log('webhooks: claiming deliveries failed; the next look retries', error);
      } finally {
        claiming = false;
      }
    })();
  }

  /** Sets a timer for the earliest pending delivery (the periodic look catches the others' new ones). */
  async function scheduleNextDue(): Promise<void> {
    const [next] = await db.query<{ at: Date | null }>(`SELECT min(next_attempt_at) AS at FROM webhook_deliveries WHERE status = 'pending'`);
    if (closed || !next?.at) return;
    const delay = Math.max(0, new Date(next.at).getTime() - Date.now());
    if (delay >= settings.pollMs) return;
    if (dueTimer) clearTimeout(dueTimer);
    dueTimer = setTimeout(() => {
      dueTimer = undefined;
      claim();
    }, delay + 5);
    dueTimer.unref();
  }

  function start(row: ClaimedRow): void {
    inFlight += 1;
    const attempt: Promise<void> = (async () => {
      try {
        const outcome = row.event_present ? await post(row) : { status: null, error: 'the event is no longer kept (retention)', retryAfterMs: undefined, durationMs: 0 };
        await finish(row, outcome, row.event_present);
      } catch (error) {
        if (!closed) log('webhooks: recording an attempt failed; it is made again when its lease ends', error);
      } finally {
        inFlight -= 1;
        claim();
      }
    })();
    attempts.add(attempt);
    void attempt.finally(() => attempts.delete(attempt));
  }

  /** The body, media type and headers of an A2A push notification (a2a/push-payload.ts, loaded at the first). */
  async function pushNotificationOf(row: ClaimedRow): Promise<{ body: string; contentType: string; headers: Record<string, string> }> {
    const { pushNotification } = await import('../../a2a/push-payload.ts');
    const headers: Record<string, string> = {};
    if (row.push_token_sealed) headers['x-a2a-notification-token'] = deps.secrets.open(row.push_token_sealed);
    if (row.push_auth_scheme && row.push_auth_sealed) headers.authorization = `${row.push_auth_scheme} ${deps.secrets.open(row.push_auth_sealed)}`;
    return { ...pushNotification(row.data, options.publicUrl?.() ?? ''), headers };
  }

  /** Makes one attempt. Never throws: a failure is an outcome. */
  async function post(row: ClaimedRow): Promise<Outcome> {
    const started = performance.now();
    // An A2A push config gets A2A's notification (the Task after the change) with its token and
    // authentication; an organization's webhook, the event.
    let push: Awaited<ReturnType<typeof pushNotificationOf>> | undefined;
    try {
      push = row.push_task_id === null ? undefined : await pushNotificationOf(row);
    } catch (error) {
      return { status: null, error: `the A2A notification could not be made: ${error instanceof Error ? error.message : String(error)}`.slice(0, 500), retryAfterMs: undefined, durationMs: 0 };
    }
    const body = push?.body ?? JSON.stringify(toEvent(row));
    const secrets = [deps.secrets.open(row.secret_sealed), ...(row.previous_secret_sealed ? [deps.secrets.open(row.previous_secret_sealed)] : [])];
    const headers = {
      ...signDelivery(secrets, row.event_id, new Date(), body),
      'content-type': push?.contentType ?? 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      'user-agent': `acs-server/${VERSION} (webhooks)`,
      ...push?.headers,
    };
    let url: URL;
    try {
      url = new URL(row.url);
    } catch {
      return { status: null, error: 'the URL cannot be parsed', retryAfterMs: undefined, durationMs: 0 };
    }
    if (!settings.allowPrivate) {
      const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
      const refused = url.protocol !== 'https:' ? 'not https' : isIP(host) ? refusedAddress(host) : undefined;
      if (refused) return { status: null, error: `webhook_url_refused: ${host} (${refused})`, retryAfterMs: undefined, durationMs: 0 };
    }
    const client = url.protocol === 'https:' ? https : http;
    return new Promise<Outcome>((resolve) => {
      const elapsed = () => Math.round(performance.now() - started);
      const request = client.request(
        url,
        {
          method: 'POST',
          headers,
          timeout: settings.timeoutMs,
          ...(settings.allowPrivate ? {} : { lookup: guardedLookup(settings) as never }),
        },
        (response) => {
          let read = 0;
          response.on('data', (chunk: Buffer) => {
            read += chunk.length;
            if (read > maxResponseBytes) response.destroy();
          });
          const done = () =>
            resolve({ status: response.statusCode ?? null, error: null, retryAfterMs: parseRetryAfter(response.headers['retry-after']), durationMs: elapsed(), sent: true });
          response.once('end', done);
          response.once('close', done);
          response.once('error', done);
        },
      );
      // The whole attempt, not only an idle socket, has `timeoutMs`.
      const deadline = setTimeout(() => request.destroy(Object.assign(new Error(`no answer within ${settings.timeoutMs} ms`), { code: 'ETIMEDOUT' })), settings.timeoutMs);
      request.once('timeout', () => request.destroy(Object.assign(new Error(`no answer within ${settings.timeoutMs} ms`), { code: 'ETIMEDOUT' })));
      request.once('error', (error: NodeJS.ErrnoException) => {
        const message = error.message.startsWith('webhook_url_refused') ? error.message : `${error.code ?? 'error'}: ${error.message}`;
        resolve({ status: null, error: message.slice(0, 500), retryAfterMs: undefined, durationMs: elapsed(), sent: true });
      });
      request.once('close', () => clearTimeout(deadline));
      request.end(body);
    });
  }

  /** Records an attempt's outcome (if the lease is still ours) and what happens next. */
  async function finish(row: ClaimedRow, outcome: Outcome, eventPresent: boolean): Promise<void> {
    const ok = outcome.status !== null && outcome.status >= 200 && outcome.status < 300;
    const gone = outcome.status === 410;
    const error = ok ? null : (outcome.error ?? `the receiver answered ${outcome.status}`);
    let nextMs: number | undefined;
    if (!ok && !gone && eventPresent && !row.manual && row.attempt <= settings.retrySchedule.length) {
      nextMs = settings.retrySchedule[row.attempt - 1]!;
      if ((outcome.status === 429 || outcome.status === 503) && outcome.retryAfterMs !== undefined) nextMs = Math.max(nextMs, Math.min(outcome.retryAfterMs, maxRetryAfterMs));
    }
    const status = ok ? 'delivered' : nextMs === undefined ? 'failed' : 'pending';
    const recorded = await db.transaction(async (tx) => {
      // The delivery's latest attempt and the attempt's own row of the log, together (contract §9: "lists attempts").
      const updated = await tx.query(
        `WITH updated AS (
           UPDATE webhook_deliveries SET status = $3, response_status = $4, error = $5, duration_ms = $6,
             next_attempt_at = CASE WHEN $7::float8 IS NULL THEN NULL ELSE now() + make_interval(secs => $7::float8 / 1000) END,
             lease_token = NULL, updated_at = now()
           WHERE id = $1 AND lease_token = $2
           RETURNING id, attempt, status, response_status, error, duration_ms, next_attempt_at
         ), logged AS (
           INSERT INTO webhook_delivery_attempts (delivery_id, attempt, status, response_status, error, duration_ms, next_attempt_at, created_at)
           SELECT id, attempt, status, response_status, error, duration_ms, next_attempt_at, $8 FROM updated
           ON CONFLICT (delivery_id, attempt) DO NOTHING
         )
         SELECT 1 FROM updated`,
        [row.delivery_id, token, status, outcome.status, error, outcome.durationMs, nextMs ?? null, row.started_at],
      );
      if (gone && updated.length > 0) {
        await tx.query(`UPDATE webhooks SET status = 'disabled', disabled_reason = $2, updated_at = now() WHERE id = $1 AND status = 'enabled'`, [
          row.webhook_id,
          'the receiver answered 410 Gone',
        ]);
      }
      return updated.length > 0;
    });
    // Counted once recorded: an attempt whose lease ran out is another claimer's to count.
    if (recorded) deps.metrics?.webhookAttempt(gone ? WebhookOutcomes.disabled : status === 'pending' ? WebhookOutcomes.retry : status, outcome.sent ? outcome.durationMs / 1000 : undefined);
  }

  return {
    settings,
    changed(orgId) {
      watched.add(orgId);
      dispatch(orgId);
      claim();
    },
    kick() {
      void sweep();
    },
    async close() {
      closed = true;
      clearInterval(poll);
      if (dueTimer) clearTimeout(dueTimer);
      stopAnnounces();
      // Attempts in flight end on their own (within timeoutMs); their results are not recorded
      // once storage closes, and their leases run out, so another start attempts them again.
      await Promise.race([Promise.allSettled([...attempts]), new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
    },
  };
}

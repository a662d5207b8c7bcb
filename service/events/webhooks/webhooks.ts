/**
 * Webhooks of an organization (contract §9): created, listed, changed, deleted, their secrets
 * rotated, and their delivery log read and retried. Deliveries themselves: dispatcher.ts and
 * deliverer.ts. Secrets are sealed at rest with the secret box (like provider keys) and returned
 * only by creation and rotation.
 */
import { ServiceError } from '../../../errors/catalogue.ts';
import {
  maxWebhooksPerOrganization,
  type CreatedWebhook,
  type DeliveryList,
  type DeliveryStatus,
  type RotatedWebhookSecret,
  type Webhook,
  maxListedAttempts,
  type WebhookDelivery,
  type WebhookDeliveryAttempt,
  type WebhookStatus,
} from '../../../api/events.ts';
import { assertOrganizationReachable } from '../../domain/access-checks.ts';
import { reaches, type Caller, type DomainDeps } from '../../domain/caller.ts';
import { iso, isoOrNull, isUuid, newId } from '../../domain/ids.ts';
import type { Queryable } from '../../storage/db.ts';
import { headSeq } from '../log.ts';
import { secretFingerprint } from '../../../api/webhook-fingerprint.ts';
import type { SecretBox } from '../../domain/secret-box.ts';
import { generateWebhookSecret } from './signing.ts';
import { assertDeliverableUrl, type UrlPolicy } from '../../outbound/url-guard.ts';

/** How deliveries are made; `acs-server start` flags (docs/operating-acs-server.md). */
export interface WebhookSettings extends UrlPolicy {
  /** Delays before the retries, in milliseconds (contract §9: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h). */
  retrySchedule: readonly number[];
  /** How long a receiver has to answer, in milliseconds (contract §9: 15 s). */
  timeoutMs: number;
  /** Deliveries in flight at once in this process. */
  concurrency: number;
  /** How often this process looks for deliveries due and events not dispatched yet, in milliseconds. */
  pollMs: number;
}

/** The retry schedule of contract §9, in milliseconds. */
export const defaultRetrySchedule: readonly number[] = [5e3, 5 * 60e3, 30 * 60e3, 2 * 3600e3, 5 * 3600e3, 10 * 3600e3, 10 * 3600e3];

/** Settings by default: public https receivers only, contract §9's schedule. */
export const defaultWebhookSettings: WebhookSettings = {
  allowPrivate: false,
  retrySchedule: defaultRetrySchedule,
  timeoutMs: 15_000,
  concurrency: 16,
  pollMs: 5_000,
};

/** What webhook operations need beyond the domain: the settings, and whom to tell of a change. */
export interface WebhookRuntime {
  settings: WebhookSettings;
  /** Called after a webhook of `orgId` was created or changed: this process starts dispatching its events. */
  changed(orgId: string): void;
}

interface WebhookRow {
  id: string;
  org_id: string;
  name: string | null;
  url: string;
  events: string[];
  description: string;
  status: WebhookStatus;
  disabled_reason: string | null;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Date | null;
  /** Null for webhooks created before fingerprints were stored (migration 0017): made when read. */
  secret_fingerprint: string | null;
  cursor_seq: string;
  created_at: Date;
  updated_at: Date;
}

/** A stored webhook as the API returns it; `secrets` opens the secret of one stored without a fingerprint. */
function toWebhook(row: WebhookRow, secrets: SecretBox): Webhook {
  return {
    webhook_id: row.id,
    org_id: row.org_id,
    name: row.name,
    url: row.url,
    events: row.events,
    description: row.description,
    status: row.status,
    secret_fingerprint: row.secret_fingerprint ?? secretFingerprint(secrets.open(row.secret_sealed)),
    disabled_reason: row.disabled_reason,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

interface DeliveryRow {
  id: string;
  webhook_id: string;
  seq: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempt: number;
  response_status: number | null;
  error: string | null;
  duration_ms: number | null;
  next_attempt_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

interface AttemptRow {
  delivery_id: string;
  attempt: number;
  status: DeliveryStatus;
  response_status: number | null;
  error: string | null;
  duration_ms: number | null;
  next_attempt_at: Date | null;
  created_at: Date;
}

/** Maps a stored attempt to the delivery log's shape (contract §9: "lists attempts"). */
function toAttempt(row: AttemptRow): WebhookDeliveryAttempt {
  return {
    attempt: row.attempt,
    status: row.status,
    response_status: row.response_status,
    error: row.error,
    duration_ms: row.duration_ms,
    next_attempt_at: isoOrNull(row.next_attempt_at),
    created_at: iso(row.created_at),
  };
}

/**
 * The attempts of the deliveries `ids`, oldest first, the latest {@link maxListedAttempts} of each.
 * Output: by delivery id (a delivery never attempted has no entry).
 */
async function attemptsOf(db: Queryable, ids: readonly string[]): Promise<Map<string, WebhookDeliveryAttempt[]>> {
  const byDelivery = new Map<string, WebhookDeliveryAttempt[]>();
  if (ids.length === 0) return byDelivery;
  const rows = await db.query<AttemptRow>(
    `SELECT delivery_id, attempt, status, response_status, error, duration_ms, next_attempt_at, created_at FROM (
       SELECT a.*, row_number() OVER (PARTITION BY a.delivery_id ORDER BY a.attempt DESC) AS latest
         FROM webhook_delivery_attempts a WHERE a.delivery_id = ANY($1::uuid[])
     ) listed WHERE latest <= $2 ORDER BY delivery_id, attempt`,
    [ids, maxListedAttempts],
  );
  for (const row of rows) {
    const list = byDelivery.get(row.delivery_id) ?? [];
    list.push(toAttempt(row));
    byDelivery.set(row.delivery_id, list);
  }
  return byDelivery;
}

/** Maps a stored delivery and its attempts (oldest first) to the delivery log's shape (contract §9). */
export function toDelivery(row: DeliveryRow, attempts: WebhookDeliveryAttempt[]): WebhookDelivery {
  return {
    delivery_id: row.id,
    webhook_id: row.webhook_id,
    event_id: row.event_id,
    seq: Number(row.seq),
    event_type: row.event_type,
    attempt: row.attempt,
    status: row.status,
    response_status: row.response_status,
    error: row.error,
    duration_ms: row.duration_ms,
    next_attempt_at: isoOrNull(row.next_attempt_at),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    attempts,
  };
}

/**
 * Refuses a name another webhook of the organization holds: 409 `conflict` with `existing_id`
 * (as a team's name among the teams). Call it under the organization's row lock.
 */
async function assertNameFree(tx: Queryable, orgId: string, name: string, self?: string): Promise<void> {
  const taken = await tx.query<{ id: string }>(`SELECT id FROM webhooks WHERE org_id = $1 AND name = $2 AND ($3::uuid IS NULL OR id <> $3::uuid)`, [orgId, name, self ?? null]);
  if (taken[0]) throw new ServiceError('conflict', `a webhook named "${name}" already exists in this organization`, { extra: { existing_id: taken[0].id } });
}

/** The webhook `webhookId` if the caller reaches its organization. Errors: `not_found`. */
async function findWebhook(db: Queryable, caller: Caller, webhookId: string, lock = false): Promise<WebhookRow> {
  if (!isUuid(webhookId)) throw new ServiceError('not_found', 'webhook not found');
  const rows = await db.query<WebhookRow>(
    `SELECT w.* FROM webhooks w JOIN organizations o ON o.id = w.org_id WHERE w.id = $2 AND ${reaches('o', 1)}${lock ? ' FOR UPDATE OF w' : ''}`,
    [caller.orgId, webhookId],
  );
  if (!rows[0]) throw new ServiceError('not_found', 'webhook not found');
  return rows[0];
}

/**
 * `POST /organizations/{org_id}/webhooks` (contract §9): a webhook for `events` of the
 * organization, enabled, delivering the events written from now on. The secret is the one given
 * or a new one, returned here (and by rotation) only.
 * `name` (unique in the organization) and `status` (default enabled) are additions.
 * Errors: `not_found` (organization), `webhook_url_refused` (400: not https, or not public; see
 * outbound/url-guard.ts), `webhook_limit` (409: 20 webhooks already), `conflict` (409, with `existing_id`:
 * the name is taken).
 */
export async function createWebhook(
  deps: DomainDeps,
  runtime: WebhookRuntime,
  caller: Caller,
  orgId: string,
  input: { name?: string | undefined; url: string; events: string[]; description?: string | undefined; status?: WebhookStatus | undefined; secret?: string | undefined },
): Promise<CreatedWebhook> {
  await assertOrganizationReachable(deps.db, caller, orgId);
  await assertDeliverableUrl(input.url, runtime.settings);
  // "From now on" starts after what is committed now: its events get their numbers first (the
  // writer may have put numbering off, events/hub.ts), so the cursor below is past them.
  await deps.events.settle(orgId);
  const secret = input.secret ?? generateWebhookSecret();
  const row = await deps.db.transaction(async (tx) => {
    // The organization's row lock serialises the count below with concurrent creations.
    const locked = await tx.query(`SELECT 1 FROM organizations WHERE id = $1 FOR UPDATE`, [orgId]);
    if (locked.length === 0) throw new ServiceError('not_found', 'organization not found');
    // A2A push configs (task-scoped, a2a/push-configs.ts) count against their task's limit, not this one.
    const [{ n } = { n: 0 }] = await tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhooks WHERE org_id = $1 AND task_id IS NULL`, [orgId]);
    if (input.name !== undefined) await assertNameFree(tx, orgId, input.name);
    if (n >= maxWebhooksPerOrganization) {
      throw new ServiceError('webhook_limit', `an organization may have at most ${maxWebhooksPerOrganization} webhooks; delete one first`, {
        extra: { limit: maxWebhooksPerOrganization },
      });
    }
    const rows = await tx.query<WebhookRow>(
      `INSERT INTO webhooks (id, org_id, name, url, events, description, status, secret_sealed, secret_fingerprint, cursor_seq)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING *`,
      [
        newId(),
        orgId,
        input.name ?? null,
        input.url,
        [...new Set(input.events)],
        input.description ?? '',
        input.status ?? 'enabled',
        deps.secrets.seal(secret),
        secretFingerprint(secret),
        await headSeq(tx, orgId),
      ],
    );
    return rows[0]!;
  });
  runtime.changed(orgId);
  return { ...toWebhook(row, deps.secrets), secret };
}

/**
 * `GET /organizations/{org_id}/webhooks`: the organization's webhooks, oldest first, without
 * secrets. A2A push configs (webhooks scoped to a task, a2a/push-configs.ts) are not listed: they
 * are their task's, read by `GET /webhooks/{webhook_id}` and its delivery log. Errors: `not_found`.
 */
export async function listWebhooks(deps: DomainDeps, caller: Caller, orgId: string): Promise<Webhook[]> {
  await assertOrganizationReachable(deps.db, caller, orgId);
  const rows = await deps.db.query<WebhookRow>(`SELECT * FROM webhooks WHERE org_id = $1 AND task_id IS NULL ORDER BY created_at, id`, [orgId]);
  return rows.map((row) => toWebhook(row, deps.secrets));
}

/** `GET /webhooks/{webhook_id}`. Errors: `not_found`. */
export async function getWebhook(deps: DomainDeps, caller: Caller, webhookId: string): Promise<Webhook> {
  return toWebhook(await findWebhook(deps.db, caller, webhookId), deps.secrets);
}

/**
 * `PATCH /webhooks/{webhook_id}` (contract §9): `url` (checked as at creation), `events`,
 * `description`, `status`, `name` (an addition). Enabling a disabled webhook delivers the events
 * written from then on: what was written while it was disabled is skipped (its pending deliveries
 * resume). Errors: `not_found`, `webhook_url_refused`, `conflict` (with `existing_id`: the name is
 * another webhook's).
 */
export async function updateWebhook(
  deps: DomainDeps,
  runtime: WebhookRuntime,
  caller: Caller,
  webhookId: string,
  patch: { name?: string | undefined; url?: string | undefined; events?: string[] | undefined; description?: string | undefined; status?: WebhookStatus | undefined },
): Promise<Webhook> {
  if (patch.url !== undefined) await assertDeliverableUrl(patch.url, runtime.settings);
  // Enabling skips what was written before it: numbered first, as at creation.
  if (patch.status === 'enabled') await deps.events.settle((await findWebhook(deps.db, caller, webhookId)).org_id);
  const row = await deps.db.transaction(async (tx) => {
    const found = await findWebhook(tx, caller, webhookId, true);
    if (patch.name !== undefined && patch.name !== found.name) {
      // The organization's row lock serialises renames with creations (as the count of createWebhook).
      await tx.query(`SELECT 1 FROM organizations WHERE id = $1 FOR UPDATE`, [found.org_id]);
      await assertNameFree(tx, found.org_id, patch.name, webhookId);
    }
    const enabling = patch.status === 'enabled' && found.status === 'disabled';
    const rows = await tx.query<WebhookRow>(
      `UPDATE webhooks SET url = COALESCE($2, url), events = COALESCE($3, events), description = COALESCE($4, description),
         status = COALESCE($5, status), name = COALESCE($8, name),
         disabled_reason = CASE WHEN $5::text IS NULL THEN disabled_reason ELSE NULL END,
         cursor_seq = CASE WHEN $6 THEN $7 ELSE cursor_seq END,
         updated_at = now()
       WHERE id = $1 RETURNING *`,
      [
        webhookId,
        patch.url ?? null,
        patch.events === undefined ? null : [...new Set(patch.events)],
        patch.description ?? null,
        patch.status ?? null,
        enabling,
        enabling ? await headSeq(tx, found.org_id) : 0,
        patch.name ?? null,
      ],
    );
    return rows[0]!;
  });
  runtime.changed(row.org_id);
  return toWebhook(row, deps.secrets);
}

/** `DELETE /webhooks/{webhook_id}`: the webhook and its delivery log. Errors: `not_found`. */
export async function deleteWebhook(deps: DomainDeps, caller: Caller, webhookId: string): Promise<{ deleted: true; webhook_id: string }> {
  await deps.db.transaction(async (tx) => {
    await findWebhook(tx, caller, webhookId, true);
    await tx.query(`DELETE FROM webhooks WHERE id = $1`, [webhookId]);
  });
  return { deleted: true, webhook_id: webhookId };
}

/**
 * `POST /webhooks/{webhook_id}/rotate-secret` (contract §9): a new secret (the one given, or a
 * new one) signs from now on; for `graceSeconds` (default 86,400; 0: not at all) the previous one
 * signs beside it. Output: the new secret (shown only here) and until when the previous one signs.
 * Errors: `not_found`.
 */
export async function rotateWebhookSecret(
  deps: DomainDeps,
  caller: Caller,
  webhookId: string,
  input: { secret?: string | undefined; grace_seconds?: number | undefined },
): Promise<RotatedWebhookSecret> {
  const secret = input.secret ?? generateWebhookSecret();
  const grace = input.grace_seconds ?? 86_400;
  const row = await deps.db.transaction(async (tx) => {
    await findWebhook(tx, caller, webhookId, true);
    const rows = await tx.query<WebhookRow>(
      `UPDATE webhooks SET
         previous_secret_sealed = CASE WHEN $3 > 0 THEN secret_sealed ELSE NULL END,
         previous_secret_expires_at = CASE WHEN $3 > 0 THEN now() + make_interval(secs => $3) ELSE NULL END,
         secret_sealed = $2, secret_fingerprint = $4, updated_at = now()
       WHERE id = $1 RETURNING *`,
      [webhookId, deps.secrets.seal(secret), grace, secretFingerprint(secret)],
    );
    return rows[0]!;
  });
  return { webhook_id: webhookId, secret, previous_secret_expires_at: isoOrNull(row.previous_secret_expires_at) };
}

/**
 * `GET /webhooks/{webhook_id}/deliveries` (contract §9, "Delivery log"): the webhook's deliveries,
 * newest event first, optionally of one status, `limit` per page after the delivery `after`; each
 * with its latest attempt and its `attempts`, oldest first (the latest {@link maxListedAttempts}).
 * Errors: `not_found` (webhook, or an `after` that is not one of its deliveries).
 */
export async function listDeliveries(
  deps: DomainDeps,
  caller: Caller,
  webhookId: string,
  query: { status?: DeliveryStatus | undefined; limit: number; after?: string | undefined },
): Promise<DeliveryList> {
  await findWebhook(deps.db, caller, webhookId);
  let before: string | null = null;
  if (query.after !== undefined) {
    const [cursor] = await deps.db.query<{ seq: string }>(`SELECT seq FROM webhook_deliveries WHERE id = $1 AND webhook_id = $2`, [query.after, webhookId]);
    if (!cursor) throw new ServiceError('invalid_cursor', 'after names no delivery of this webhook');
    before = cursor.seq;
  }
  const rows = await deps.db.query<DeliveryRow>(
    `SELECT * FROM webhook_deliveries WHERE webhook_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::bigint IS NULL OR seq < $3)
      ORDER BY seq DESC LIMIT $4`,
    [webhookId, query.status ?? null, before, query.limit + 1],
  );
  const kept = rows.slice(0, query.limit);
  const attempts = await attemptsOf(deps.db, kept.map((row) => row.id));
  const page = kept.map((row) => toDelivery(row, attempts.get(row.id) ?? []));
  return { deliveries: page, next_after: rows.length > query.limit ? page.at(-1)!.delivery_id : null };
}

/** The error listed for an attempt in flight when a retry asked for by hand took its delivery over. */
const replacedAttempt = 'no outcome recorded: a retry asked for by hand replaced this attempt while it was in flight';

/**
 * `POST /webhooks/{webhook_id}/deliveries/{delivery_id}/retry` (contract §9): sends the event
 * again now, once (no schedule after this attempt), whatever became of the delivery. While the
 * webhook is disabled the attempt waits until it is enabled. Output: the delivery, pending, with
 * the attempts made so far.
 * Errors: `not_found` (webhook or delivery).
 */
export async function retryDelivery(deps: DomainDeps, runtime: WebhookRuntime, caller: Caller, webhookId: string, deliveryId: string): Promise<WebhookDelivery> {
  const webhook = await findWebhook(deps.db, caller, webhookId);
  if (!isUuid(deliveryId)) throw new ServiceError('not_found', 'delivery not found');
  // An attempt in flight (leased) is not recorded once its lease is taken away here: it is
  // listed as replaced, so the log has no gap.
  const rows = await deps.db.query<DeliveryRow>(
    `WITH before AS (
       SELECT id, attempt, lease_token, updated_at FROM webhook_deliveries WHERE id = $1 AND webhook_id = $2 FOR UPDATE
     ), replaced AS (
       INSERT INTO webhook_delivery_attempts (delivery_id, attempt, status, error, next_attempt_at, created_at)
       SELECT id, attempt, 'pending', $3, now(), updated_at FROM before WHERE lease_token IS NOT NULL AND attempt > 0
       ON CONFLICT (delivery_id, attempt) DO NOTHING
     )
     UPDATE webhook_deliveries d SET status = 'pending', next_attempt_at = now(), manual = true, lease_token = NULL, updated_at = now()
       FROM before WHERE d.id = before.id RETURNING d.*`,
    [deliveryId, webhookId, replacedAttempt],
  );
  if (!rows[0]) throw new ServiceError('not_found', 'delivery not found');
  runtime.changed(webhook.org_id);
  const attempts = await attemptsOf(deps.db, [rows[0].id]);
  return toDelivery(rows[0], attempts.get(rows[0].id) ?? []);
}

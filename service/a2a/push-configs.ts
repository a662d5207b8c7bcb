/**
 * A2A push-notification configs (contract §12; A2A v1.0 §3.1.7–§3.1.10, "Push Notification
 * Config" methods, and §4.3, "Push Notification Objects"), delivered as the §9 webhooks of the
 * service: a config is a webhook row scoped to one task (`webhooks.task_id`), so the webhook
 * worker (events/webhooks/worker.ts) dispatches that task's `task.created` and `task.updated`
 * events to it, signs each delivery per Standard Webhooks, retries it on the §9 schedule and lists
 * every attempt in its delivery log (`GET /api/v1/webhooks/{webhook_id}/deliveries`).
 *
 * - **Who.** Only the task's requester at the agent it called, on their edge (the same check as
 *   every A2A call: task-store.ts `callersTask`); others get `TaskNotFoundError` and nothing is
 *   written.
 * - **What the receiver gets.** A2A's push notification: a `StreamResponse` holding the Task as
 *   it was after the change (push-payload.ts), `X-A2A-Notification-Token` with the config's
 *   token, `Authorization: {scheme} {credentials}` when the config has authentication, and the
 *   Standard Webhooks headers of §9. The signing secret is the token (a `whsec_…` token as
 *   Standard Webhooks reads it, any other token as its UTF-8 bytes), so a receiver that holds its
 *   token verifies the signature with any Standard Webhooks library; a config without a token is
 *   signed with a secret nobody is told.
 * - **Secrets.** The token and the credentials are sealed with the secret box; the credentials
 *   are never returned (a config read back has its scheme and empty credentials).
 * - **Until when.** From the change after the config is set (a config given with the
 *   `SendMessage` that created its task: from the task's creation) until the task's final
 *   state, whose notification is the last; the config stays until it is deleted (or its task is,
 *   with its edge).
 */
import type { TaskPushNotificationConfig } from '@a2a-js/sdk';
import type { PushNotificationSender, PushNotificationStore, ServerCallContext } from '@a2a-js/sdk/server';
import { RequestMalformedError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import type { Task } from '../../api/tasks.ts';
import { ServiceError } from '../../errors/catalogue.ts';
import { newId } from '../domain/ids.ts';
import { isFinalTaskState } from '../domain/tasks.ts';
import { headSeq } from '../events/log.ts';
import { generateWebhookSecret } from '../events/webhooks/signing.ts';
import type { WebhookRuntime } from '../events/webhooks/webhooks.ts';
import { secretFingerprint } from '../../api/webhook-fingerprint.ts';
import { assertDeliverableUrl } from '../outbound/url-guard.ts';
import { createdInCall, reachableCall, type ReachableCall } from './call-context.ts';
import { callersTask, type StoreEnv } from './task-store.ts';

/** The event types a push config delivers (the task's changes, contract §12). */
export const pushEventTypes = ['task.created', 'task.updated'] as const;

/** The most push configs one task may have. */
export const maxPushConfigsPerTask = 10;

/** The longest URL, token, scheme, credentials or config id taken, in characters. */
const maxFieldLength = 2048;

/** What the push store needs beyond the task store: the webhook worker to tell of a new config. */
export interface PushEnv extends StoreEnv {
  webhooks?: WebhookRuntime | undefined;
}

interface PushRow {
  id: string;
  task_id: string;
  push_config_id: string;
  url: string;
  push_token_sealed: string | null;
  push_auth_scheme: string | null;
}

/**
 * The Standard Webhooks secret that signs a config's deliveries: a `whsec_…` token itself, any
 * other token as its UTF-8 bytes (`whsec_` + their base64: the same HMAC key a receiver gets from
 * the token with `format: 'raw'`), a new secret when there is no token.
 */
export function signingSecretOf(token: string): string {
  if (token === '') return generateWebhookSecret();
  if (token.startsWith('whsec_')) return token;
  return `whsec_${Buffer.from(token, 'utf8').toString('base64')}`;
}

/** A stored config as A2A returns it: the token as given, the credentials never. */
function toConfig(row: PushRow, open: (sealed: string) => string): TaskPushNotificationConfig {
  return {
    tenant: '',
    id: row.push_config_id,
    taskId: row.task_id,
    url: row.url,
    token: row.push_token_sealed ? open(row.push_token_sealed) : '',
    authentication: row.push_auth_scheme ? { scheme: row.push_auth_scheme, credentials: '' } : undefined,
  };
}

/** A field of a config, checked: a string of at most {@link maxFieldLength} characters. Errors: `RequestMalformedError`. */
function field(value: unknown, name: string): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw new RequestMalformedError(`${name} must be a string`);
  if (value.length > maxFieldLength) throw new RequestMalformedError(`${name} is longer than ${maxFieldLength} characters`);
  return value;
}

/**
 * The task `taskId` of the call's caller (see task-store.ts `callersTask`). Errors:
 * `TaskNotFoundError` (no edge, not its task, no such task).
 */
async function reachableTask(env: StoreEnv, context: ServerCallContext, taskId: string): Promise<{ call: ReachableCall; task: Task }> {
  const call = reachableCall(context);
  const task = await callersTask(env, call, taskId);
  if (!task) throw new TaskNotFoundError(`Task not found: ${taskId}`);
  return { call, task };
}

/**
 * The `PushNotificationStore` of the A2A server over the service's webhooks (see the module's
 * comment). The SDK calls `save` for `CreateTaskPushNotificationConfig` and for a
 * `SendMessage` whose configuration carries one, `load` for get and list, `delete` for delete.
 */
export class DomainPushStore implements PushNotificationStore {
  readonly #env: PushEnv;

  constructor(env: PushEnv) {
    this.#env = env;
  }

  /**
   * Stores `config` for the caller's task `taskId` and sets its `id` when it has none (the
   * webhook's id). The URL is http(s) and follows the §9 rules (https to a public address;
   * `--webhook-allow-private` lifts them); a config
   * with the id of one the task has replaces it (A2A: create with an existing id updates).
   * Deliveries start after the changes written so far (a task created by this very call: from
   * its creation). Errors: `TaskNotFoundError`, `RequestMalformedError` (a URL refused or not
   * a URL, a field too long, more than {@link maxPushConfigsPerTask} configs).
   */
  async save(taskId: string, context: ServerCallContext, config: TaskPushNotificationConfig): Promise<void> {
    const { deps } = this.#env;
    const { call, task } = await reachableTask(this.#env, context, taskId);
    const url = field(config.url, 'url');
    const token = field(config.token, 'token');
    const configId = field(config.id, 'id');
    const scheme = field(config.authentication?.scheme, 'authentication.scheme');
    const credentials = field(config.authentication?.credentials, 'authentication.credentials');
    if (url === '') throw new RequestMalformedError('url is required');
    if (!URL.canParse(url) || !['http:', 'https:'].includes(new URL(url).protocol)) throw new RequestMalformedError(`url must be an http(s) URL: ${url}`);
    try {
      await assertDeliverableUrl(url, deps.urls ?? { allowPrivate: false });
    } catch (error) {
      if (error instanceof ServiceError) throw new RequestMalformedError(error.message);
      throw error;
    }
    const orgId = call.participant.orgId;
    // What is written so far is numbered first: the cursor below is past it (as createWebhook).
    await deps.events.settle(orgId);
    const secret = signingSecretOf(token);
    const id = newId();
    const stored = await deps.db.transaction(async (tx) => {
      // The task's row lock serialises the count below with concurrent creations.
      await tx.query(`SELECT 1 FROM tasks WHERE id = $1 FOR UPDATE`, [task.task_id]);
      const existing = configId ? await tx.query<{ id: string }>(`SELECT id FROM webhooks WHERE task_id = $1 AND push_config_id = $2`, [task.task_id, configId]) : [];
      if (existing[0]) await tx.query(`DELETE FROM webhooks WHERE id = $1`, [existing[0].id]);
      const [{ n } = { n: 0 }] = await tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhooks WHERE task_id = $1`, [task.task_id]);
      if (n >= maxPushConfigsPerTask) throw new RequestMalformedError(`a task may have at most ${maxPushConfigsPerTask} push notification configs; delete one first`);
      // A config given with the message that created the task sees the task from its creation.
      const created = createdInCall(context) === task.task_id
        ? await tx.query<{ seq: string | null }>(`SELECT min(seq) AS seq FROM events WHERE org_id = $1 AND type = 'task.created' AND data->>'task_id' = $2`, [orgId, task.task_id])
        : [];
      const justCreated = created[0]?.seq != null;
      const cursor = justCreated ? Number(created[0]!.seq) - 1 : await headSeq(tx, orgId);
      const rows = await tx.query<PushRow>(
        `INSERT INTO webhooks (id, org_id, url, events, description, status, secret_sealed, secret_fingerprint, cursor_seq,
           task_id, push_config_id, push_token_sealed, push_auth_scheme, push_auth_sealed, created_by, ended_at)
         VALUES ($1, $2, $3, $4, $5, 'enabled', $6, $7, $8, $9, $10, $11, $12, $13, $14, CASE WHEN $15 THEN now() END)
         RETURNING id, task_id, push_config_id, url, push_token_sealed, push_auth_scheme`,
        [
          id,
          orgId,
          url,
          [...pushEventTypes],
          `A2A push notifications of task ${task.task_id}`,
          deps.secrets.seal(secret),
          secretFingerprint(secret),
          cursor,
          task.task_id,
          configId || id,
          token ? deps.secrets.seal(token) : null,
          scheme || null,
          scheme && credentials ? deps.secrets.seal(credentials) : null,
          call.participant.agentId,
          // A final task changes no more: nothing to deliver.
          isFinalTaskState(task.state) && !justCreated,
        ],
      );
      return rows[0]!;
    });
    this.#env.webhooks?.changed(orgId);
    // The SDK returns the config it passed in: its id is the stored one.
    config.id = stored.push_config_id;
    config.taskId = task.task_id;
    config.url = url;
  }

  /** The configs of the caller's task `taskId`, oldest first. Errors: `TaskNotFoundError`. */
  async load(taskId: string, context: ServerCallContext): Promise<TaskPushNotificationConfig[]> {
    const { task } = await reachableTask(this.#env, context, taskId);
    const rows = await this.#env.deps.db.query<PushRow>(
      `SELECT id, task_id, push_config_id, url, push_token_sealed, push_auth_scheme FROM webhooks WHERE task_id = $1 ORDER BY created_at, id`,
      [task.task_id],
    );
    return rows.map((row) => toConfig(row, (sealed) => this.#env.deps.secrets.open(sealed)));
  }

  /**
   * Deletes the config `configId` of the caller's task `taskId` (every config of it when none is
   * named), with its delivery log. Deleting one that does not exist deletes nothing.
   * Errors: `TaskNotFoundError`.
   */
  async delete(taskId: string, context: ServerCallContext, configId?: string): Promise<void> {
    const { task } = await reachableTask(this.#env, context, taskId);
    await this.#env.deps.db.query(`DELETE FROM webhooks WHERE task_id = $1 AND ($2::text IS NULL OR push_config_id = $2)`, [task.task_id, configId ?? null]);
  }
}

/**
 * The SDK's sender, sending nothing: notifications are the webhook worker's, from the task's
 * events in storage, whichever process changed the task (the SDK would send only what passes
 * through this process's event bus, and once, without retries).
 */
export const webhookWorkerSends: PushNotificationSender = {
  async send() {},
};

import { z } from 'zod';
import {
  CreatedWebhook,
  CreateWebhookBody,
  DeliveryList,
  DeliveryListQuery,
  EventListQuery,
  EventPage,
  EventStreamQuery,
  PatchWebhookBody,
  RotatedWebhookSecret,
  RotateWebhookSecretBody,
  StreamedEvent,
  Webhook,
  WebhookDelivery,
} from '../../../api/events.ts';
import { Id } from '../../../api/schemas.ts';
import type { RouteDoc, Tag } from './route-doc.ts';

const WebhookList = z.object({ webhooks: z.array(Webhook) }).meta({ id: 'WebhookList' });
const WebhookDeleted = z.object({ deleted: z.literal(true), webhook_id: Id }).meta({ id: 'WebhookDeleted' });

type Entries = Record<string, Omit<RouteDoc, 'tag'>>;
function tagged(tag: Tag, entries: Entries): Record<string, RouteDoc> {
  return Object.fromEntries(Object.entries(entries).map(([key, doc]) => [key, { ...doc, tag }]));
}

/**
 * The OpenAPI description of the event and webhook routes (contract §9), keyed as in
 * route-docs.ts, which spreads them into the one table of every route.
 */
export const eventRouteDocs: Readonly<Record<string, RouteDoc>> = {
  ...tagged('events', {
    'GET /organizations/:org_id/events': {
      operationId: 'listEvents',
      summary: "A page of the organization's event log (long poll with wait)",
      description:
        'Events with a `seq` after `after`, oldest first, filtered by `types` (comma-separated; `family.*` matches a family) and `team_id`. ' +
        'A reader that passes `next_after` as the next `after` sees every event once, whatever the concurrency of the writers. ' +
        'With `wait`, an empty page is held until a matching event is written or `wait` seconds pass. Events are kept at least ' +
        '7 days: an `after` older than the oldest kept is 410 `events_expired` (with `oldest_seq`: read on from `oldest_seq - 1`); one ' +
        'beyond the newest is 400 `invalid_cursor`. A long poll holds a place among the held waits of its key, of its organization and of ' +
        'the server (429 `too_many_waits` past them).',
      query: EventListQuery,
      success: { status: 200, schema: EventPage, description: 'the events and where to go on from' },
      errors: ['invalid_cursor', 'events_expired', 'too_many_waits'],
    },
    'GET /organizations/:org_id/events/stream': {
      operationId: 'streamEvents',
      summary: "The organization's events as Server-Sent Events",
      description:
        'text/event-stream: each event as `id: <seq>`, `event: <type>`, `data: <the event JSON>` (as `listEvents` returns it), with the ' +
        'same filters, and a comment line at least every 15 s. Resume with the `Last-Event-ID` header (an EventSource sends it when it ' +
        'reconnects; it wins over `after`); neither: the events from now on. Refusals before the stream starts are problem documents ' +
        '(410 `events_expired`, 400 `invalid_cursor`); a client that leaves more than 4 MiB unread is disconnected and resumes. The ' +
        'stream holds a place among the held waits of its key, of its organization and of the server (429 `too_many_waits` past them).',
      query: EventStreamQuery,
      success: {
        status: 200,
        description: 'The stream of events (Server-Sent Events); it ends when the client closes it or the server stops.',
        stream: { event: StreamedEvent, headers: { 'Cache-Control': 'no-store' } },
      },
      errors: ['invalid_cursor', 'events_expired', 'too_many_waits'],
    },
  }),

  ...tagged('webhooks', {
    'POST /organizations/:org_id/webhooks': {
      operationId: 'createWebhook',
      summary: 'Create a webhook (its secret is shown once)',
      description:
        'Delivers the events of `events` written from now on: a POST of the event JSON, signed per Standard Webhooks (`webhook-id` = the ' +
        'event id, `webhook-timestamp`, `webhook-signature`), retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h unless a 2xx comes ' +
        'within 15 s (a longer `Retry-After` on 429/503 is honoured; 410 disables the webhook). At most 20 per organization (409 `webhook_limit`). ' +
        'A `name`, when given, is unique in the organization (409 `conflict` with `existing_id`).',
      body: CreateWebhookBody,
      success: { status: 201, schema: CreatedWebhook, description: 'the webhook with its secret (shown only here and by rotation)' },
      errors: ['webhook_url_refused', 'webhook_limit', 'conflict'],
    },
    'GET /organizations/:org_id/webhooks': {
      operationId: 'listWebhooks',
      summary: "An organization's webhooks, without secrets",
      success: { status: 200, schema: WebhookList, description: 'the webhooks, oldest first' },
    },
    'GET /webhooks/:webhook_id': { operationId: 'getWebhook', summary: 'A webhook, without its secret', success: { status: 200, schema: Webhook, description: 'the webhook' } },
    'PATCH /webhooks/:webhook_id': {
      operationId: 'updateWebhook',
      summary: "Change a webhook's name, URL, events, description or status",
      description:
        'A new `url` is checked as at creation; a new `name` must be free in the organization (409 `conflict` with `existing_id`). ' +
        'Enabled again after being disabled, it delivers the events written from then on.',
      body: PatchWebhookBody,
      success: { status: 200, schema: Webhook, description: 'the webhook' },
      errors: ['webhook_url_refused', 'conflict'],
    },
    'DELETE /webhooks/:webhook_id': {
      operationId: 'deleteWebhook',
      summary: 'Delete a webhook and its delivery log',
      success: { status: 200, schema: WebhookDeleted, description: 'the webhook is gone' },
    },
    'POST /webhooks/:webhook_id/rotate-secret': {
      operationId: 'rotateWebhookSecret',
      summary: "Rotate a webhook's secret (the new one is shown once)",
      description: 'During `grace_seconds` (default 86400) both the new and the previous secret sign every delivery (two signatures in `webhook-signature`).',
      body: RotateWebhookSecretBody,
      bodyOptional: true,
      success: { status: 200, schema: RotatedWebhookSecret, description: 'the new secret and until when the previous one still signs' },
    },
    'GET /webhooks/:webhook_id/deliveries': {
      operationId: 'listWebhookDeliveries',
      summary: "A webhook's delivery log, newest event first",
      description:
        'One delivery per event: its status, the latest attempt\'s answer, when the next attempt is due, and `attempts`: each attempt with its own answer, error and duration, oldest first. ' +
        'Kept 7 days. An `after` that names no delivery of this webhook is 400 `invalid_cursor`.',
      query: DeliveryListQuery,
      success: { status: 200, schema: DeliveryList, description: 'a page of the delivery log' },
      errors: ['invalid_cursor'],
    },
    'POST /webhooks/:webhook_id/deliveries/:delivery_id/retry': {
      operationId: 'retryWebhookDelivery',
      summary: 'Send an event again now',
      description: 'One attempt, now (no retries after it), whatever became of the delivery; while the webhook is disabled it waits until it is enabled.',
      success: { status: 202, schema: WebhookDelivery, description: 'the delivery, pending' },
    },
  }),
};

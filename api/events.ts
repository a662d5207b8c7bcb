/**
 * Zod schemas of the event log, its streams and webhooks (contract §9): the wire format the
 * service validates and returns, the client types its results with, and the OpenAPI document is
 * generated from.
 */
import { z } from 'zod';
import { ToolCall } from './agent-tools.ts';
import { resourceFields } from './resource-fields.ts';
import { Task } from './tasks.ts';
import { Agent, Edge, Human, Id, LongText, Message, Name, Team, Thread, Timestamp, maxGraceSeconds } from './schemas.ts';

/** Every event type the log holds (contract §9; a floor). Families: the part before the dot. */
export const EventTypes = {
  'thread.opened': 'thread.opened',
  'message.created': 'message.created',
  'team.created': 'team.created',
  'team.updated': 'team.updated',
  'team.deleted': 'team.deleted',
  'agent.created': 'agent.created',
  'agent.updated': 'agent.updated',
  'agent.deleted': 'agent.deleted',
  'human.created': 'human.created',
  'human.updated': 'human.updated',
  'human.deleted': 'human.deleted',
  'edge.created': 'edge.created',
  // Edges have no PATCH, so the service never writes it; named so that a filter may say `edge.*` or list it.
  'edge.updated': 'edge.updated',
  'edge.deleted': 'edge.deleted',
  'tool_call.started': 'tool_call.started',
  'tool_call.finished': 'tool_call.finished',
  'task.created': 'task.created',
  'task.updated': 'task.updated',
} as const;
export type EventType = keyof typeof EventTypes;
export const EventTypeSchema = z.enum(EventTypes);

/** The families of event types (`message`, `team`, …): `family.*` in a filter matches each type of it. */
export const EventFamilies = [...new Set(Object.keys(EventTypes).map((type) => type.split('.')[0]!))] as const;

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** One entry of a type filter: a type, or a family followed by `.*`. */
const filterEntry = `(?:${[...Object.keys(EventTypes), ...EventFamilies.map((f) => `${f}.*`)].map(escape).join('|')})`;

/** One type filter entry: `message.created`, or `message.*` for the family (contract §9). */
export const EventTypeFilter = z
  .string()
  .regex(new RegExp(`^${filterEntry}$`), `must be an event type (${Object.keys(EventTypes).join(', ')}) or a family followed by .* (${EventFamilies.map((f) => `${f}.*`).join(', ')})`)
  .meta({ id: 'EventTypeFilter' });

/** `types` of the event routes: comma-separated {@link EventTypeFilter} entries. */
export const EventTypesParam = z
  .string()
  .regex(new RegExp(`^${filterEntry}(?:,${filterEntry})*$`), 'must be event types or families (message.*) separated by commas, without spaces')
  .meta({ description: 'Comma-separated event types; `family.*` matches a whole family (`message.*`). Default: every type.' });

/** Splits a validated `types` parameter into its entries. */
export function splitTypes(types: string | undefined): string[] | undefined {
  return types === undefined ? undefined : types.split(',');
}

// ---- the events ------------------------------------------------------------------------------

/** Longest long poll of the event routes, in seconds (contract §9: as a thread's `wait`). */
export const maxEventWaitSeconds = 30;
/** Most events one page holds (contract §9). */
export const maxEventPageSize = 500;

const envelope = {
  event_id: z.uuid().meta({ description: 'The event id; also `webhook-id` of every delivery of it.' }),
  seq: z.number().int().min(1).meta({ description: "Position in the organization's log: increases by 1 with each event, no gaps." }),
  org_id: z.uuid(),
  team_id: z.uuid().nullable(),
  created_at: Timestamp,
};
const event = <T extends string, D extends z.ZodType>(type: T, data: D, description: string) =>
  z.object({ ...envelope, type: z.literal(type), data }).meta({ description });

const deletedData = (idField: string) => z.object({ [idField]: Id });

/** `thread.opened` data: the Thread after opening, plus its edge's two participants. */
export const ThreadOpenedData = Thread.extend({ participants: z.tuple([Id, Id]) }).meta({ id: 'ThreadOpenedData' });
/**
 * `message.created` data: the Message plus its edge, team and recipient (the other participant),
 * and the message it answers (an addition: see `answers_message_id`).
 */
export const MessageCreatedData = Message.extend({
  stopped: Message.shape.stopped.optional().meta({ description: 'As the Message\'s (absent in events written before the service recorded it).' }),
  edge_id: Id,
  team_id: Id,
  recipient_id: Id,
  answers_message_id: Id.nullable()
    .optional()
    .meta({
      description:
        'The message this one answers: the latest message of the other participant that expected a reply (`expects_reply`), when this is the first message of its sender since; ' +
        'null otherwise (absent in events written before the service recorded it). A program waiting for that reply can tell it from the rest of the thread without reading it.',
    }),
}).meta({ id: 'MessageCreatedData' });

/** One event of an organization's log (contract §9), by type. */
export const Event = z
  .discriminatedUnion('type', [
    event('thread.opened', ThreadOpenedData, 'A thread was opened (its first message follows as message.created).'),
    event('message.created', MessageCreatedData, 'A message was appended.'),
    event('team.created', Team, 'A team was created.'),
    event('team.updated', Team, 'A team was changed (PATCH).'),
    event('team.deleted', deletedData('team_id'), 'A team was deleted, with everything in it (no events for what went with it).'),
    event('agent.created', Agent, 'An agent was created.'),
    event('agent.updated', Agent, 'An agent was changed (PATCH).'),
    event('agent.deleted', deletedData('agent_id'), 'An agent was deleted.'),
    event('human.created', Human, 'A human was created.'),
    event('human.updated', Human, 'A human was changed (PATCH).'),
    event('human.deleted', deletedData('human_id'), 'A human was deleted.'),
    event('edge.created', Edge, 'An edge was created.'),
    event('edge.updated', Edge, 'Reserved: edges cannot be changed, so the service does not write it.'),
    event('edge.deleted', deletedData('edge_id'), 'An edge was deleted, with its threads and messages.'),
    event(
      'tool_call.started',
      ToolCall,
      'A tool call of an agent\'s turn began to run, or began to wait for its approval (`status` says which). Written again when an approved call starts.',
    ),
    event('tool_call.finished', ToolCall, 'A tool call of an agent\'s turn ended: completed, failed or rejected.'),
    event('task.created', Task, 'A task was created, after the thread.opened and message.created of its thread (which its first message opened).'),
    event(
      'task.updated',
      Task,
      'A task changed: its state (with its status message, when the change came with one), or an artifact was added. The data is the Task as it is after the change.',
    ),
  ])
  .meta({ id: 'Event' });
export type Event = z.infer<typeof Event>;

/** `GET /organizations/{org_id}/events` (contract §9). */
export const EventListQuery = z.strictObject({
  after: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .meta({ description: 'A seq: events after it. Absent: from the oldest event kept. Older than the oldest kept (but for 0 when nothing expired): 410 `events_expired`.' }),
  limit: z.coerce.number().int().min(1).max(maxEventPageSize).default(100),
  wait: z.coerce.number().min(0).max(maxEventWaitSeconds).default(0).meta({ description: 'Seconds to hold the request while no event follows `after` (long poll).' }),
  types: EventTypesParam.optional(),
  team_id: Id.optional().meta({ description: "Only this team's events." }),
});

/** The answer of `GET /organizations/{org_id}/events`. */
export const EventPage = z
  .object({
    events: z.array(Event),
    next_after: z
      .number()
      .int()
      .min(0)
      .meta({ description: 'Pass as `after` to read on: the last event returned, or (with filters, or when nothing was there) the newest seq looked at.' }),
  })
  .meta({ id: 'EventPage' });
export type EventPage = z.infer<typeof EventPage>;

/**
 * One event of the stream as Server-Sent Events carry it: `id` (the seq), `event` (the type) and
 * `data` (the event as JSON, as a page holds it).
 */
export const StreamedEvent = z
  .object({
    id: z.string().regex(/^[0-9]+$/).meta({ description: 'The seq.' }),
    event: EventTypeSchema,
    data: z.string().meta({ contentMediaType: 'application/json', description: 'The event, as JSON (an `Event`, as `listEvents` returns it).' }),
  })
  .meta({ id: 'StreamedEvent' });

/** `GET /organizations/{org_id}/events/stream` (contract §9); `Last-Event-ID` wins over `after`. */
export const EventStreamQuery = z.strictObject({
  after: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .meta({ description: 'Start after this seq (the `Last-Event-ID` header wins). Neither: only events from now on.' }),
  types: EventTypesParam.optional(),
  team_id: Id.optional().meta({ description: "Only this team's events." }),
});

// ---- webhooks --------------------------------------------------------------------------------

/** Webhook states (contract §9). */
export const WebhookStatuses = { enabled: 'enabled', disabled: 'disabled' } as const;
export const WebhookStatus = z.enum(WebhookStatuses);
export type WebhookStatus = z.infer<typeof WebhookStatus>;

/** The most webhooks one organization may have. */
export const maxWebhooksPerOrganization = 20;

const b64 = '[A-Za-z0-9+/]';
/**
 * A signing secret (contract §9): `whsec_` and the standard base64 (padded) of 24–64 bytes, as
 * Standard Webhooks writes them. The pattern counts the bytes: 8–20 groups of four characters
 * (24–60 bytes) and an optional last group of 1–3 bytes, or 21 groups and one more byte.
 */
export const WebhookSecret = z
  .string()
  .regex(
    new RegExp(`^whsec_(?:(?:${b64}{4}){8,20}(?:${b64}{4}|${b64}{2}==|${b64}{3}=)?|(?:${b64}{4}){21}(?:${b64}{2}==)?)$`),
    'must be whsec_ followed by the base64 of 24 to 64 bytes',
  )
  .meta({ id: 'WebhookSecret', description: '`whsec_` and the base64 of 24–64 random bytes (Standard Webhooks).' });

/** A webhook URL: http or https, up to 2,048 characters (https only, and public, unless the server allows private ones). */
export const WebhookUrl = z
  .url({ protocol: /^https?$/, normalize: true })
  .max(2048)
  // The protocol rule above, stated in the document too (any case, as URLs take it).
  .meta({ pattern: '^[Hh][Tt][Tt][Pp][Ss]?://' })
  .meta({
    description:
      'Where deliveries are POSTed. An https URL whose host resolves to public addresses only (not loopback, private, link-local or otherwise reserved), ' +
      'checked at creation and at every delivery (400 `webhook_url_refused`); a server started with `--webhook-allow-private` also takes http and private addresses.',
  });

const WebhookEvents = z
  .array(EventTypeFilter)
  .min(1)
  .max(50)
  .refine((items) => new Set(items).size === items.length, 'must not name a type twice')
  .meta({ uniqueItems: true, description: 'Event types to deliver; `family.*` for a whole family.' });

/**
 * A webhook's managed fields, declared once (`api/resource-fields.ts`): the definition file's
 * `webhooks:` entries, the create and PATCH bodies and the webhook as returned derive from it. The
 * secret is not among them: it is write-only (set at creation and by rotation, compared through
 * `secret_fingerprint`).
 */
export const WebhookFields = resourceFields({
  name: {
    rest: 'name',
    value: Name,
    required: true,
    description: 'The webhook\'s name, unique in its organization (teamctl matches a definition\'s webhooks to the live ones by it)',
  },
  url: { rest: 'url', value: WebhookUrl, required: true, description: 'Where deliveries are POSTed (https, public; see `--webhook-allow-private`)' },
  events: { rest: 'events', value: WebhookEvents, required: true, description: 'Event types to deliver (`message.created`), or families (`message.*`)' },
  description: { rest: 'description', value: LongText, default: '', description: 'What the webhook is for' },
  status: {
    rest: 'status',
    value: WebhookStatus,
    serviceDefault: 'enabled',
    description: 'enabled or disabled; managed only when set (the service disables a webhook whose receiver answers 410)',
  },
});

/**
 * `POST /organizations/{org_id}/webhooks` (contract §9). `name` (unique in the organization) and
 * `status` are additions; a webhook without a name is as the contract describes it.
 */
export const CreateWebhookBody = WebhookFields.createBody
  .partial({ name: true })
  .extend({ secret: WebhookSecret.optional().meta({ description: 'Default: a new secret of 32 random bytes.' }) })
  .meta({ id: 'CreateWebhookBody' });

/** `PATCH /webhooks/{webhook_id}` (contract §9; `name` is an addition). */
export const PatchWebhookBody = WebhookFields.patchBody
  .extend({
    status: WebhookStatus.optional().meta({
      description: 'disabled: no delivery is attempted (pending ones wait); enabled again: deliveries resume, and events written while it was disabled are not delivered.',
    }),
  })
  .meta({ id: 'PatchWebhookBody' });

/** `POST /webhooks/{webhook_id}/rotate-secret` (contract §9). */
export const RotateWebhookSecretBody = z
  .strictObject({
    secret: WebhookSecret.optional().meta({ description: 'Default: a new secret of 32 random bytes.' }),
    grace_seconds: z
      .number()
      .int()
      .min(0)
      .max(maxGraceSeconds)
      .optional()
      .meta({ description: 'How long the old secret still signs, beside the new one (default 86400; 0: not at all).' }),
  })
  .meta({ id: 'RotateWebhookSecretBody' });

/** A webhook (contract §9); its secret only in the creation and rotation answers. */
export const Webhook = z
  .object({
    webhook_id: Id,
    org_id: Id,
    name: z.string().nullable().meta({ description: 'Its name, unique in the organization; null when it was created without one.' }),
    url: z.string(),
    events: z.array(z.string()),
    description: z.string(),
    status: WebhookStatus,
    secret_fingerprint: z.string().meta({
      description:
        'A salted HMAC-SHA256 of the current secret (`hmac-sha256:<salt>:<digest>`, both base64url): not the secret, nor a way back to it, but whoever holds a candidate secret can tell ' +
        'whether it is this webhook\'s (teamctl plan does). Changes with every rotation.',
    }),
    disabled_reason: z.string().nullable().meta({ description: 'Why the service disabled it (a 410 from the receiver); null otherwise.' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Webhook' });
export type Webhook = z.infer<typeof Webhook>;

/** A webhook as created: with its secret, shown only here and by rotation. */
export const CreatedWebhook = Webhook.extend({ secret: z.string() }).meta({ id: 'CreatedWebhook' });
export type CreatedWebhook = z.infer<typeof CreatedWebhook>;

/** The answer of a rotation: the new secret, and until when the previous one still signs. */
export const RotatedWebhookSecret = z
  .object({ webhook_id: Id, secret: z.string(), previous_secret_expires_at: Timestamp.nullable() })
  .meta({ id: 'RotatedWebhookSecret' });
export type RotatedWebhookSecret = z.infer<typeof RotatedWebhookSecret>;

/** Delivery states (contract §9). */
export const DeliveryStatuses = { pending: 'pending', delivered: 'delivered', failed: 'failed' } as const;
export const DeliveryStatus = z.enum(DeliveryStatuses);
export type DeliveryStatus = z.infer<typeof DeliveryStatus>;

/** Attempts listed per delivery at most (the latest ones): more than the longest retry schedule (1 + 20) makes. */
export const maxListedAttempts = 30;

/**
 * One attempt of a delivery (contract §9, "Delivery log": "lists attempts"): the receiver's answer,
 * the error and the duration of that attempt, and what the delivery became after it.
 */
export const WebhookDeliveryAttempt = z
  .object({
    attempt: z.number().int().min(1).meta({ description: 'Its number: 1 for the first attempt of the delivery, counting retries asked for by hand.' }),
    status: DeliveryStatus.meta({
      description: 'What the delivery became after it: delivered (a 2xx), pending (it failed and another attempt was due at `next_attempt_at`), failed (it failed and none followed).',
    }),
    response_status: z.number().int().nullable().meta({ description: "The receiver's HTTP status; null when it gave none (no answer in time, no connection, a refused URL)." }),
    error: z.string().nullable().meta({ description: 'Why it failed; null when it did not.' }),
    duration_ms: z.number().int().nullable().meta({ description: 'From the request to the answer, in milliseconds; null when no outcome was recorded.' }),
    next_attempt_at: Timestamp.nullable().meta({ description: 'pending: when the next attempt was due; null otherwise.' }),
    created_at: Timestamp.meta({ description: 'When the attempt began.' }),
  })
  .meta({ id: 'WebhookDeliveryAttempt' });
export type WebhookDeliveryAttempt = z.infer<typeof WebhookDeliveryAttempt>;

/** One delivery of one event to one webhook: its latest attempt, and each attempt (contract §9, "Delivery log"). */
export const WebhookDelivery = z
  .object({
    delivery_id: Id,
    webhook_id: Id,
    event_id: Id,
    seq: z.number().int(),
    event_type: z.string(),
    attempt: z.number().int().min(0).meta({ description: 'Attempts made so far.' }),
    status: DeliveryStatus,
    response_status: z.number().int().nullable().meta({ description: "The receiver's HTTP status at the latest attempt; null when it gave none." }),
    error: z.string().nullable().meta({ description: 'Why the latest attempt failed; null when it did not.' }),
    duration_ms: z.number().int().nullable(),
    next_attempt_at: Timestamp.nullable().meta({ description: 'pending: when the next attempt is due; null once delivered or failed.' }),
    created_at: Timestamp,
    updated_at: Timestamp,
    attempts: z.array(WebhookDeliveryAttempt).meta({
      description: `Each attempt, oldest first (the latest ${maxListedAttempts} when there were more): its own answer, error and duration. Empty before the first attempt.`,
    }),
  })
  .meta({ id: 'WebhookDelivery' });
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

/** `GET /webhooks/{webhook_id}/deliveries` (contract §9): newest event first. */
export const DeliveryListQuery = z.strictObject({
  status: DeliveryStatus.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  after: Id.optional().meta({ description: 'A delivery id: the deliveries listed after it (older events).' }),
});

/** The answer of the delivery log. */
export const DeliveryList = z
  .object({
    deliveries: z.array(WebhookDelivery),
    next_after: Id.nullable().meta({ description: 'Pass as `after` for the next page; null when there is none.' }),
  })
  .meta({ id: 'DeliveryList' });
export type DeliveryList = z.infer<typeof DeliveryList>;

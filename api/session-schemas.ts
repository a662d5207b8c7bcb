/**
 * Zod schemas of the console's wire format (contract §10): sign-in links, and the
 * session-authenticated routes under `/api/v1/me` and the operator's session. The service
 * validates with them, the OpenAPI document is generated from them, and the console's types
 * mirror them.
 */
import { z } from 'zod';
import { EventTypeSchema } from './events.ts';
import { Agent, Content, Edge, Human, Id, Message, Subject, Team, Thread, Timestamp } from './schemas.ts';

/** `POST /api/v1/humans/{human_id}/sign-in-links`: how long the link works, 60 s to 7 days (default 900). */
export const CreateSignInLinkBody = z
  .strictObject({
    ttl_seconds: z.number().int().min(60).max(604_800).optional().meta({ description: 'Seconds the link works; 60–604800, default 900.' }),
  })
  .meta({ id: 'CreateSignInLinkBody' });

/** A one-time sign-in link (contract §10). */
export const SignInLink = z
  .object({
    url: z.string().meta({ description: "Absolute URL of the link's page: its button signs the browser that presses it in as the human, once; opening the page spends nothing." }),
    expires_at: Timestamp,
    human_id: Id,
  })
  .meta({ id: 'SignInLink' });

/** A participant at the other end of one of the person's edges. */
export const Peer = z
  .object({ participant_id: Id, kind: z.enum(['agent', 'human']), name: z.string() })
  .meta({ id: 'Peer' });

/** One human the session acts as, with its team and organization. */
export const MeHuman = z
  .object({
    human_id: Id,
    name: z.string(),
    email: z.string().nullable(),
    team_id: Id,
    team_name: z.string(),
    org_id: Id,
    org_name: z.string(),
  })
  .meta({ id: 'MeHuman' });

/** `GET /api/v1/me`: who the session is, the CSRF token, and when it ends. */
export const Me = z
  .object({
    kind: z.literal('person'),
    method: z.enum(['link', 'oidc']).meta({ description: 'How the session began: a sign-in link or OpenID Connect.' }),
    email: z.string().nullable().meta({ description: 'The verified email of an OpenID Connect sign-in, else null.' }),
    humans: z.array(MeHuman),
    csrf_token: z.string().meta({ description: 'Send it as X-CSRF-Token on every request that changes something.' }),
    created_at: Timestamp,
    expires_at: Timestamp.meta({ description: 'The absolute end: 7 days after the sign-in.' }),
    idle_expires_at: Timestamp.meta({ description: 'The end if the session is not used before: 12 hours after its last use.' }),
  })
  .meta({ id: 'Me' });

/** The newest message of a thread, cut to 280 characters, for an inbox line. */
export const LastMessage = z
  .object({ message_id: Id, sender_id: Id, content: z.string(), sent_at: Timestamp })
  .meta({ id: 'LastMessage' });

/** A thread on one of the person's edges, as the person sees it. */
export const MeThread = Thread.extend({
  human_id: Id.meta({ description: "The person's human on this thread's edge: replies are sent as this human." }),
  peer: Peer,
  last_message: LastMessage.nullable(),
  awaiting_reply: z.boolean().meta({ description: "Whether the thread awaits an answer from the person's human (awaiting_reply_from is that human)." }),
  sent_on_behalf: z.boolean().meta({
    description:
      "Whether the latest message of the person's human here was written in the human's name, not by the person: through an organization key (a pipeline step whose `from` is the human), asking the other participant for an answer (`expects_reply`) that what wrote it awaits, and the thread does not await the human. The console lists these threads apart from what waits for the person.",
  }),
}).meta({ id: 'MeThread' });

export const MeThreadList = z
  .object({ threads: z.array(MeThread), has_more: z.boolean().meta({ description: 'More threads follow the ones listed (raise `limit`, or filter).' }) })
  .meta({ id: 'MeThreadList' });

/** `GET /api/v1/me/threads`: filters. */
export const MeThreadListQuery = z.strictObject({
  team_id: Id.optional(),
  edge_id: Id.optional(),
  unread_only: z
    .enum(['true', 'false'])
    .optional()
    .transform((v) => v === 'true')
    .meta({ description: 'Only threads with unread messages.' }),
  limit: z.coerce.number().int().min(1).max(500).default(200).meta({ description: 'At most this many threads, the most recently active (1–500, default 200).' }),
});

/** A page of one of the person's threads (no long poll: the console follows the event stream or polls). */
export const MeThreadPage = MeThread.extend({
  messages: z.array(Message),
  has_more: z.boolean(),
  next_after: Id.nullable(),
}).meta({ id: 'MeThreadPage' });

export const MeThreadPageQuery = z.strictObject({
  after: Id.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

/** `GET /api/v1/me/events/stream`: which organization's log (when the person's humans are in several), from where. */
export const MeEventStreamQuery = z.strictObject({
  org_id: Id.optional().meta({ description: "The organization whose events to follow; required only when the person's humans are in several." }),
  after: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .meta({ description: 'Start after this event: the `id` of an event of this stream (the `Last-Event-ID` header wins). Neither: only events from now on.' }),
});

/**
 * One event of a person's stream (contract §10; docs/console.md): named by an opaque cursor, not
 * by its place in the organization's log, and sent without `seq`, so the stream tells a person
 * nothing of the log beyond their own events.
 */
export const PersonStreamedEvent = z
  .object({
    id: z
      .string()
      .regex(/^[A-Za-z0-9_-]{22}$/)
      .meta({ description: "The event's cursor: opaque (neither order nor distance shows), the same in every stream of the organization; `Last-Event-ID` (or `after`) resumes after it." }),
    event: EventTypeSchema,
    data: z.string().meta({ contentMediaType: 'application/json', description: "The event as JSON (an `Event` without `seq`: the organization log's numbering is not the person's)." }),
  })
  .meta({ id: 'PersonStreamedEvent' });

/**
 * An agent of one of the person's teams as the console shows it: who it is and whether it takes
 * part over MCP — not how it is configured (no instructions, tools, budget or step limit).
 */
export const MeTeamAgent = Agent.pick({ agent_id: true, team_id: true, name: true, description: true, provider: true, model: true, status: true, created_at: true }).meta({
  id: 'MeTeamAgent',
});

/** A human of one of the person's teams: no email (the person's own is in `GET /me`). */
export const MeTeamHuman = Human.pick({ human_id: true, team_id: true, name: true, created_at: true }).meta({ id: 'MeTeamHuman' });

/**
 * `GET /api/v1/me/teams/{team_id}`: the team graph as a member sees it (docs/console.md, "What
 * a session learns"): the team, its agents and humans by name, its edges. Left out on purpose:
 * the agents' instructions and tools, the other humans' emails, the count of threads between others.
 */
export const MeTeamGraph = Team.extend({
  agents: z.array(MeTeamAgent),
  humans: z.array(MeTeamHuman),
  edges: z.array(Edge),
}).meta({ id: 'MeTeamGraph' });
export type MeTeamGraph = z.infer<typeof MeTeamGraph>;

/** `POST /api/v1/me/threads/{thread_id}/messages`: the sender is the person's human on the thread's edge. */
export const MeAppendMessageBody = z
  .strictObject({
    content: Content,
    expects_reply: z.boolean().optional().meta({ description: 'The message awaits an answer from the other participant.' }),
  })
  .meta({ id: 'MeAppendMessageBody' });

/** `POST /api/v1/me/edges/{edge_id}/threads`: opened by the person's human on the edge, channel `web`. */
export const MeOpenThreadBody = z
  .strictObject({
    subject: Subject.optional(),
    content: Content,
    expects_reply: z.boolean().optional().meta({ description: 'The first message awaits an answer from the other participant.' }),
  })
  .meta({ id: 'MeOpenThreadBody' });

/** `POST /api/v1/me/threads/{thread_id}/read`: up to which message (default: the newest). */
export const MarkReadBody = z.strictObject({ message_id: Id.optional() }).meta({ id: 'MarkReadBody' });
export const MarkReadResult = z.object({ thread_id: Id, unread_count: z.number().int() }).meta({ id: 'MarkReadResult' });

/** One of the person's edges with the peer at its other end. */
export const MeEdge = z
  .object({ edge_id: Id, team_id: Id, human_id: Id, peer: Peer, created_at: Timestamp })
  .meta({ id: 'MeEdge' });
export const MeEdgeList = z.object({ edges: z.array(MeEdge) }).meta({ id: 'MeEdgeList' });

/** `POST /api/v1/me/sign-out`, `POST /admin/v1/sign-out`. */
export const SignedOut = z.object({ signed_out: z.literal(true) }).meta({ id: 'SignedOut' });

/** `POST /admin/v1/sign-in`: no body (the admin token is the bearer credential). */
export const OperatorSignInBody = z.strictObject({}).meta({ id: 'OperatorSignInBody' });

/** `POST /admin/v1/sign-in`, `GET /admin/v1/session`: the operator's session. */
export const OperatorSession = z
  .object({
    kind: z.literal('operator'),
    csrf_token: z.string().meta({ description: 'Send it as X-CSRF-Token on every request that changes something.' }),
    created_at: Timestamp,
    expires_at: Timestamp,
    idle_expires_at: Timestamp,
  })
  .meta({ id: 'OperatorSession' });

/** `GET /api/v1/me/console`: what the console's sign-in page offers (no session needed). */
export const ConsoleSettings = z
  .object({
    oidc: z.object({ issuer: z.string(), start_url: z.string() }).nullable().meta({ description: 'Sign-in through OpenID Connect, when configured.' }),
    operators: z.boolean().meta({ description: 'Whether operators can sign in (the server has an admin token).' }),
  })
  .meta({ id: 'ConsoleSettings' });

export type SignInLink = z.infer<typeof SignInLink>;
export type MeThread = z.infer<typeof MeThread>;
export type MeThreadPage = z.infer<typeof MeThreadPage>;
export type MeEdge = z.infer<typeof MeEdge>;
export type MeHuman = z.infer<typeof MeHuman>;
export type Peer = z.infer<typeof Peer>;

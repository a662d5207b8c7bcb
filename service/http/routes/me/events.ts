import type { FastifyInstance } from 'fastify';
import { MeEventStreamQuery } from '../../../../api/session-schemas.ts';
import type { Event } from '../../../../api/events.ts';
import { ServiceError } from '../../../../errors/catalogue.ts';
import { describePerson, personThreadIds } from '../../../domain/person-reach.ts';
import { headSeq } from '../../../events/log.ts';
import type { StoredEvent } from '../../../events/log.ts';
import { eventCursors, type EventCursors } from '../../../sessions/event-cursors.ts';
import { findSession, sessionCookieName } from '../../../sessions/sessions.ts';
import { personSessionOf, type ConsoleSettings } from '../../session-auth.ts';
import { parseInput } from '../../validate.ts';
import type { RouteContext } from '../context.ts';
import { replyWithEventStream } from '../events.ts';
import { HeldWaitKinds } from '../../../events/held-waits.ts';

/** How often a held stream checks that its session still lives (sign-out elsewhere, expiry). */
const sessionRecheckMs = 15_000;

/** The event types a person's stream carries: what happens in their threads, the tool calls of the agents' turns there included. */
const personEventTypes = ['thread.opened', 'message.created', 'tool_call.started', 'tool_call.finished'];

/**
 * Whether `event` concerns one of `humanIds`: a thread opened on one of their edges, a message
 * from or to one of them, a tool call of a turn on one of `threadIds` (the threads on their
 * edges: a tool call's event names its thread, not the thread's participants). Nothing else of
 * the organization's log reaches a person (contract §10, §11).
 */
export function concernsPerson(event: Event, humanIds: ReadonlySet<string>, threadIds: ReadonlySet<string>): boolean {
  if (event.type === 'thread.opened') return event.data.participants.some((id) => humanIds.has(id));
  if (event.type === 'message.created') return humanIds.has(event.data.sender_id) || humanIds.has(event.data.recipient_id);
  if (event.type === 'tool_call.started' || event.type === 'tool_call.finished') return threadIds.has(event.data.thread_id);
  return false;
}

/** Why a cursor is refused: the same words whatever it was (a number, another stream's id, made up). */
const notACursor = 'not the id of an event of this stream: resume with the `id` of an event it sent (Last-Event-ID), or from now on without one';

/**
 * The seq a person's stream starts after: its `Last-Event-ID` header (what an EventSource sends
 * when it reconnects), else the `after` query parameter, each the opaque id of an event of the
 * stream; undefined when neither is given. Errors: `invalid_cursor` (with the same detail for
 * any value that is no such id).
 */
function resumeCursor(cursors: EventCursors, orgId: string, header: string | string[] | undefined, after: string | undefined): number | undefined {
  const sent = (Array.isArray(header) ? header[0] : header)?.trim() || after;
  if (sent === undefined) return undefined;
  const seq = cursors.open(orgId, sent);
  if (seq === undefined) throw new ServiceError('invalid_cursor', notACursor);
  return seq;
}

/**
 * One event as the person's stream writes it: its cursor as the id and the event without `seq`,
 * so nothing shows where it stands in the organization's log (contract §10).
 */
function personFrame(cursors: EventCursors, event: StoredEvent): string {
  const { seq, ...rest } = event;
  return `id: ${cursors.seal(event.org_id, seq)}\nevent: ${event.type}\ndata: ${JSON.stringify(rest)}\n\n`;
}

/**
 * `GET /me/events/stream` (`org_id?`, `after?`, or `Last-Event-ID`) → 200 `text/event-stream`:
 * the organization's event stream (contract §9's format, `event: <type>` and `data: <event
 * JSON>`, but with an opaque cursor as each `id:` and no `seq` in the data: the person learns
 * nothing of the organization's log but their own events; docs/console.md) filtered to the
 * person's threads (contract §10): `thread.opened` on their edges,
 * `message.created` from or to their humans, `tool_call.started`/`tool_call.finished` of the
 * agents' turns on their threads (contract §11). `org_id` names the organization when the person's
 * humans are in several. The stream ends when the session does: at once when one of its humans
 * is deleted, and within 15 s of a sign-out elsewhere or the session's expiry. It holds a place
 * among the held waits of the session and of the organization it is about (contract §14).
 * Errors: `not_found` (an `org_id` that is not one of the person's), `invalid_request` (no
 * `org_id` while several), `invalid_cursor`, `events_expired`,
 * `too_many_waits`. An `after` or `Last-Event-ID` that is no id of the stream's events is
 * `invalid_cursor`, and one whose events are no longer kept `events_expired`, both worded
 * without any number of the log.
 */
export function meEventRoutes(app: FastifyInstance, { deps, shutdown, heldWaits, streamKeepAliveMs }: RouteContext, settings: ConsoleSettings): void {
  const cursors = eventCursors(deps.secrets);
  app.get<{ Querystring: Record<string, unknown> }>('/me/events/stream', { exposeHeadRoute: false }, async (request, reply) => {
    const query = parseInput(MeEventStreamQuery, request.query);
    const session = personSessionOf(request);
    const orgIds = [...new Set((await describePerson(deps.db, { humanIds: session.humanIds })).map((h) => h.org_id))];
    let orgId: string;
    if (query.org_id !== undefined) {
      if (!orgIds.includes(query.org_id)) throw new ServiceError('not_found', "no organization with this id among this person's");
      orgId = query.org_id;
    } else if (orgIds.length === 1) {
      orgId = orgIds[0]!;
    } else {
      throw new ServiceError('invalid_request', "org_id: required: this person's humans are in several organizations", {
        errors: [{ path: 'org_id', message: "required: this person's humans are in several organizations" }],
      });
    }
    const humans = new Set(session.humanIds);
    // The person's threads, for their tool calls: read after the seq the stream starts from, so
    // that a thread opened later is opened by an event the stream reads (and adds) itself. A
    // stream from now on starts at the head read before them (the few events between that read
    // and the stream's start are sent too: they are the person's, and newer than the page).
    const after = resumeCursor(cursors, orgId, request.headers['last-event-id'], query.after) ?? (await headSeq(deps.db, orgId));
    const threads = new Set(await personThreadIds(deps.db, { humanIds: session.humanIds }));
    // A place among the session's, the organization's (the one the stream is about: a person's
    // humans may be in several) and the process's held waits; taken before the recheck's timer
    // starts, so that a refusal leaves no timer behind.
    const release = heldWaits.acquire({ keyId: `session:${session.id}`, orgId }, 1, HeldWaitKinds.event_stream);
    // The stream ends with the session: a human of it deleted (seen in the log), or a sign-out
    // or expiry (checked every few seconds).
    const ended = new AbortController();
    const secret = request.cookies[sessionCookieName];
    const recheck = setInterval(() => {
      findSession(deps.db, secret, { adminToken: settings.adminToken }).then(
        (live) => {
          if (!live) ended.abort();
        },
        () => {},
      );
    }, sessionRecheckMs);
    try {
      await replyWithEventStream(reply, {
        db: deps.db,
        hub: deps.events,
        orgId,
        filter: { types: [...personEventTypes, 'human.deleted'] },
        accept: (event) => {
          if (event.type === 'human.deleted' && humans.has(String(event.data.human_id))) {
            ended.abort();
            return false;
          }
          if (ended.signal.aborted || !concernsPerson(event, humans, threads)) return false;
          if (event.type === 'thread.opened') threads.add(event.data.thread_id);
          return true;
        },
        after,
        signal: AbortSignal.any([shutdown, ended.signal]),
        keepAliveMs: streamKeepAliveMs,
        frame: (event) => personFrame(cursors, event),
        greeting: () => 'connected',
      });
    } catch (error) {
      // The organization's bounds (its newest and oldest kept seq) are not the person's to know.
      if (error instanceof ServiceError && error.code === 'events_expired') {
        throw new ServiceError('events_expired', 'the events after this id are no longer kept: reconnect without Last-Event-ID to follow from now on');
      }
      if (error instanceof ServiceError && error.code === 'invalid_cursor') throw new ServiceError('invalid_cursor', notACursor);
      throw error;
    } finally {
      clearInterval(recheck);
      release();
    }
  });
}

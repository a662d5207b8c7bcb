import type { FastifyInstance } from 'fastify';
import { MeEventStreamQuery } from '../../../../api/session-schemas.ts';
import type { Event } from '../../../../api/events.ts';
import { ServiceError } from '../../../../errors/catalogue.ts';
import { describePerson } from '../../../domain/person-reach.ts';
import { findSession, sessionCookieName } from '../../../sessions/sessions.ts';
import { personSessionOf, type ConsoleSettings } from '../../session-auth.ts';
import { parseInput } from '../../validate.ts';
import type { RouteContext } from '../context.ts';
import { replyWithEventStream, resumeAfter } from '../events.ts';

/** How often a held stream checks that its session still lives (sign-out elsewhere, expiry). */
const sessionRecheckMs = 15_000;

/** The event types a person's stream carries: what happens in their threads. */
const personEventTypes = ['thread.opened', 'message.created'];

/**
 * Whether `event` concerns one of `humanIds`: a thread opened on one of their edges, a message
 * from or to one of them. Nothing else of the organization's log reaches a person (contract §10).
 */
export function concernsPerson(event: Event, humanIds: ReadonlySet<string>): boolean {
  if (event.type === 'thread.opened') return event.data.participants.some((id) => humanIds.has(id));
  if (event.type === 'message.created') return humanIds.has(event.data.sender_id) || humanIds.has(event.data.recipient_id);
  return false;
}

/**
 * `GET /me/events/stream` (`org_id?`, `after?`, or `Last-Event-ID`) → 200 `text/event-stream`:
 * the organization's event stream (contract §9's format: `id: <seq>`, `event: <type>`, `data:
 * <event JSON>`) filtered to the person's threads (contract §10): `thread.opened` on their edges,
 * `message.created` from or to their humans. `org_id` names the organization when the person's
 * humans are in several. The stream ends when the session does: at once when one of its humans
 * is deleted, and within 15 s of a sign-out elsewhere or the session's expiry. It holds a place
 * among the session's held waits. Errors: `not_found` (an `org_id` that is not one of the
 * person's), `invalid_request` (no `org_id` while several), `invalid_cursor`, `events_expired`,
 * `too_many_waits`.
 */
export function meEventRoutes(app: FastifyInstance, { deps, shutdown, heldWaits, streamKeepAliveMs }: RouteContext, settings: ConsoleSettings): void {
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
    const after = resumeAfter(request, query.after);
    const humans = new Set(session.humanIds);
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
    const release = heldWaits.acquire(`session:${session.id}`);
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
          return !ended.signal.aborted && concernsPerson(event, humans);
        },
        after,
        signal: AbortSignal.any([shutdown, ended.signal]),
        keepAliveMs: streamKeepAliveMs,
      });
    } finally {
      clearInterval(recheck);
      release();
    }
  });
}

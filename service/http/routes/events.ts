import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { EventListQuery, EventStreamQuery, splitTypes } from '../../../api/events.ts';
import { ServiceError } from '../../../errors/catalogue.ts';
import { assertOrganizationReachable } from '../../domain/access-checks.ts';
import { getEventPage } from '../../events/reads.ts';
import { checkStreamStart, streamEvents, type EventStreamOptions } from '../../events/stream.ts';
import { callerOf } from '../auth.ts';
import { parseInput } from '../validate.ts';
import type { Params, RouteContext } from './context.ts';
import { yieldTurn } from '../../domain/request-turn.ts';
import { HeldWaitKinds } from '../../events/held-waits.ts';

/**
 * The seq a stream resumes after: the `Last-Event-ID` header (what an EventSource sends when it
 * reconnects) wins over the `after` query parameter. Errors: `invalid_cursor` for a header that is
 * not a seq.
 */
export function resumeAfter(request: FastifyRequest, after: number | undefined): number | undefined {
  const header = request.headers['last-event-id'];
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.trim() === '') return after;
  if (!/^\d{1,15}$/.test(value.trim())) throw new ServiceError('invalid_cursor', 'Last-Event-ID must be the seq of an event (a non-negative integer)');
  return Number(value.trim());
}

/**
 * Answers `request` with an event stream (contract §9): checks the start (errors are ordinary
 * problem responses up to here), writes 200 `text/event-stream` with the headers the app set so
 * far (request id, rate limit) and streams until the client leaves or the server stops. Shared
 * with the console's session-scoped stream (contract §10), which passes its own `accept`.
 * Errors before the stream starts: `events_expired`, `invalid_cursor`.
 */
export async function replyWithEventStream(reply: FastifyReply, options: Omit<EventStreamOptions, 'keepAliveMs'> & { keepAliveMs?: number | undefined }): Promise<void> {
  await checkStreamStart(options.db, options.orgId, options.after);
  // A stream is a held wait for as long as it lasts: it takes no place among requests in progress.
  yieldTurn();
  reply.hijack();
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) headers[name] = String(value);
  reply.raw.writeHead(200, {
    ...headers,
    // The app's onSend hook, which sets it on every other answer, does not run for a hijacked reply.
    'x-request-id': reply.request.id,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
    // Proxies that buffer responses (nginx) would hold events back.
    'x-accel-buffering': 'no',
  });
  await streamEvents(reply.raw, { ...options, ...(options.keepAliveMs === undefined ? {} : { keepAliveMs: options.keepAliveMs }) });
}

/**
 * Event routes (contract §9): `GET /organizations/{org_id}/events?after&limit&wait&types&team_id`
 * → 200 `{events, next_after}` (a long poll with `wait`), and `GET
 * /organizations/{org_id}/events/stream?after&types&team_id` (or `Last-Event-ID`) → 200
 * `text/event-stream`. Both hold a place among the held waits of the key and of its organization
 * while they wait (contract §14). Errors: `not_found` (organization out of reach),
 * `invalid_request`, `invalid_cursor`, `events_expired` (410, with `oldest_seq`), `too_many_waits`
 * (429).
 */
export function eventRoutes(app: FastifyInstance, { deps, shutdown, heldWaits, streamKeepAliveMs }: RouteContext): void {
  app.get<Params<'org_id'> & { Querystring: Record<string, unknown> }>('/organizations/:org_id/events', async (request) => {
    const query = parseInput(EventListQuery, request.query);
    const caller = callerOf(request);
    const orgId = request.params.org_id;
    await assertOrganizationReachable(deps.db, caller, orgId);
    const release = query.wait > 0 ? heldWaits.acquire(caller, 1, HeldWaitKinds.event_poll) : () => {};
    try {
      return await getEventPage(
        deps,
        orgId,
        { after: query.after, limit: query.limit, wait: query.wait, filter: { types: splitTypes(query.types), teamId: query.team_id } },
        shutdown,
      );
    } finally {
      release();
    }
  });

  // No HEAD route: a stream has no end to stop at.
  app.get<Params<'org_id'> & { Querystring: Record<string, unknown> }>('/organizations/:org_id/events/stream', { exposeHeadRoute: false }, async (request, reply) => {
    const query = parseInput(EventStreamQuery, request.query);
    const caller = callerOf(request);
    const orgId = request.params.org_id;
    await assertOrganizationReachable(deps.db, caller, orgId);
    const after = resumeAfter(request, query.after);
    const release = heldWaits.acquire(caller, 1, HeldWaitKinds.event_stream);
    try {
      await replyWithEventStream(reply, {
        db: deps.db,
        hub: deps.events,
        orgId,
        filter: { types: splitTypes(query.types), teamId: query.team_id },
        after,
        signal: shutdown,
        keepAliveMs: streamKeepAliveMs,
      });
    } finally {
      release();
    }
  });
}

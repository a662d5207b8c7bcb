import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ThreadStreamQuery } from '../../../api/thread-stream.ts';
import { ServiceError } from '../../../errors/catalogue.ts';
import { personThreadOrg } from '../../domain/person-reach.ts';
import { requestStop, threadForCaller } from '../../domain/replies.ts';
import { yieldTurn } from '../../domain/request-turn.ts';
import { parsePosition, type StreamPosition } from '../../events/deltas.ts';
import { HeldWaitKinds } from '../../events/held-waits.ts';
import type { ThreadStreams } from '../../events/thread-stream.ts';
import { callerOf } from '../auth.ts';
import { personSessionOf } from '../session-auth.ts';
import { parseInput } from '../validate.ts';
import type { Params, RouteContext } from './context.ts';

/**
 * Where a stream resumes: `Last-Event-ID` (a reconnecting EventSource sends it) wins over the
 * `after` query; undefined when neither is given. Errors: `invalid_cursor` for a value that is no
 * position of the stream (`12`, `12.3`) or one past its last message.
 */
function resumePosition(request: FastifyRequest, after: string | undefined, messageCount: number): StreamPosition | undefined {
  const header = request.headers['last-event-id'];
  const text = (Array.isArray(header) ? header[0] : header) ?? after;
  if (text === undefined || text.trim() === '') return undefined;
  const position = parsePosition(text);
  if (!position) throw new ServiceError('invalid_cursor', 'after (or Last-Event-ID) must be a position of the thread\'s stream: a message seq (12) or a live item after it (12.3)');
  if (position.after > messageCount) throw new ServiceError('invalid_cursor', 'after (or Last-Event-ID) is past the thread\'s last message');
  return position;
}

/** Answers 200 `text/event-stream` on a hijacked reply and streams the thread until it ends. */
async function replyWithThreadStream(
  reply: FastifyReply,
  streams: ThreadStreams,
  options: { orgId: string; threadId: string; from: StreamPosition | undefined; signal: AbortSignal; keepAliveMs?: number | undefined },
): Promise<void> {
  // A stream is a held wait for as long as it lasts: it takes no place among requests in progress.
  yieldTurn();
  reply.hijack();
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) headers[name] = String(value);
  reply.raw.writeHead(200, {
    ...headers,
    'x-request-id': reply.request.id,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  await streams.stream(reply.raw, options);
}

/**
 * A thread's stream and its stop (§13 of the contract this service implements), with an
 * organization key: `GET /threads/{thread_id}/stream?after` (or `Last-Event-ID`) → 200
 * `text/event-stream` of the thread's messages (`message.created`), a reply's deltas as it is
 * written (`message.delta`), the steps of a turn (`turn.step`), a turn restarted after a crash or
 * a failed call (`turn.restarted`) and the tool calls of its turns (`tool_call.started`,
 * `tool_call.finished`), each with its position as id; `POST /threads/{thread_id}/stop` → 202
 * `{thread_id, stopping}` (agents asked to stop; 0 when nothing was being written). A stream holds
 * a place among the held waits of the key and its organization (contract §14). Errors:
 * `not_found`, `invalid_cursor`, `invalid_request`, `too_many_waits`.
 */
export function threadStreamRoutes(app: FastifyInstance, { deps, shutdown, heldWaits, streamKeepAliveMs, threadStreams: streams }: RouteContext): void {
  app.get<Params<'thread_id'> & { Querystring: Record<string, unknown> }>('/threads/:thread_id/stream', { exposeHeadRoute: false }, async (request, reply) => {
    const query = parseInput(ThreadStreamQuery, request.query);
    const caller = callerOf(request);
    const thread = await threadForCaller(deps, caller, request.params.thread_id);
    const from = resumePosition(request, query.after, thread.messageCount);
    const release = heldWaits.acquire(caller, 1, HeldWaitKinds.event_stream);
    try {
      await replyWithThreadStream(reply, streams, { orgId: thread.orgId, threadId: thread.threadId, from, signal: shutdown, keepAliveMs: streamKeepAliveMs });
    } finally {
      release();
    }
  });
  app.post<Params<'thread_id'>>('/threads/:thread_id/stop', async (request, reply) => {
    const thread = await threadForCaller(deps, callerOf(request), request.params.thread_id);
    return reply.code(202).send({ thread_id: thread.threadId, stopping: await requestStop(deps, thread.threadId) });
  });
}

/**
 * The session's twins of {@link threadStreamRoutes}, for the person's own threads (under
 * `/me`, behind the session hook): `GET /me/threads/{thread_id}/stream`, `POST
 * /me/threads/{thread_id}/stop` (with the CSRF token). A stream holds a place among the held waits
 * of the session and of the thread's organization (a person's humans may be in several). Errors: `not_found` (outside the person's reach), `invalid_cursor`,
 * `invalid_request`, `too_many_waits`.
 */
export function meThreadStreamRoutes(app: FastifyInstance, { deps, shutdown, heldWaits, streamKeepAliveMs, threadStreams: streams }: RouteContext): void {
  app.get<Params<'thread_id'> & { Querystring: Record<string, unknown> }>('/me/threads/:thread_id/stream', { exposeHeadRoute: false }, async (request, reply) => {
    const query = parseInput(ThreadStreamQuery, request.query);
    const session = personSessionOf(request);
    const thread = await personThreadOrg(deps.db, { humanIds: session.humanIds }, request.params.thread_id);
    const from = resumePosition(request, query.after, thread.messageCount);
    // Counted toward the thread's organization: a person's humans may be in several.
    const release = heldWaits.acquire({ keyId: `session:${session.id}`, orgId: thread.orgId }, 1, HeldWaitKinds.event_stream);
    try {
      await replyWithThreadStream(reply, streams, { orgId: thread.orgId, threadId: request.params.thread_id, from, signal: shutdown, keepAliveMs: streamKeepAliveMs });
    } finally {
      release();
    }
  });
  app.post<Params<'thread_id'>>('/me/threads/:thread_id/stop', async (request, reply) => {
    const session = personSessionOf(request);
    await personThreadOrg(deps.db, { humanIds: session.humanIds }, request.params.thread_id);
    return reply.code(202).send({ thread_id: request.params.thread_id, stopping: await requestStop(deps, request.params.thread_id) });
  });
}

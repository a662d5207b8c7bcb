import type { FastifyInstance } from 'fastify';
import { MarkReadBody, MeAppendMessageBody, MeOpenThreadBody, MeThreadListQuery, MeThreadPageQuery } from '../../../../api/session-schemas.ts';
import { ToolCallListQuery } from '../../../../api/agent-tools.ts';
import {
  listPersonEdges,
  listPersonThreadToolCalls,
  listPersonThreads,
  markPersonThreadRead,
  openPersonThread,
  postPersonMessage,
  readPersonThread,
} from '../../../domain/person-reach.ts';
import { personSessionOf } from '../../session-auth.ts';
import { parseInput, parseOptionalBody } from '../../validate.ts';
import type { Params, RouteContext } from '../context.ts';

/**
 * The person's threads and edges (contract §10):
 * `GET /me/threads` (`team_id?`, `edge_id?`, `unread_only?`, `limit?` 1–500, default 200) → 200
 * `{threads, has_more}` (MeThread: the human's `unread_count`, the peer, the newest message,
 * `awaiting_reply`), most recently active first;
 * `GET /me/threads/{thread_id}` (`after?`, `limit?`) → 200 MeThreadPage (moves no read mark);
 * `POST /me/threads/{thread_id}/read` (`message_id?`) → 200 `{thread_id, unread_count}`;
 * `POST /me/threads/{thread_id}/messages` (`content`, `expects_reply?`) → 201 Message from the
 * person's human on the thread's edge;
 * `GET /me/threads/{thread_id}/tool-calls` (`after?`, `limit?` 1–500) → 200 `{tool_calls, next_after}`
 * (the tool calls of the agents' turns on the thread, contract §11);
 * `GET /me/edges` → 200 `{edges}`; `POST /me/edges/{edge_id}/threads` (`subject?`, `content`,
 * `expects_reply?`) → 201 MeThread opened by the person's human, channel `web`.
 * Errors: `not_found` (outside the person's reach), `invalid_request`, `invalid_cursor`.
 */
export function meThreadRoutes(app: FastifyInstance, { deps }: RouteContext): void {
  const person = (request: Parameters<typeof personSessionOf>[0]) => ({ humanIds: personSessionOf(request).humanIds });
  app.get('/me/threads', async (request) => {
    const query = parseInput(MeThreadListQuery, request.query);
    return listPersonThreads(deps, person(request), { teamId: query.team_id, edgeId: query.edge_id, unreadOnly: query.unread_only, limit: query.limit });
  });
  app.get<Params<'thread_id'>>('/me/threads/:thread_id', async (request) => {
    const query = parseInput(MeThreadPageQuery, request.query);
    return readPersonThread(deps, person(request), request.params.thread_id, query);
  });
  app.get<Params<'thread_id'>>('/me/threads/:thread_id/tool-calls', async (request) => {
    const query = parseInput(ToolCallListQuery, request.query);
    return listPersonThreadToolCalls(deps, person(request), request.params.thread_id, query);
  });
  app.post<Params<'thread_id'>>('/me/threads/:thread_id/read', async (request) => {
    const body = parseOptionalBody(MarkReadBody, request.body);
    return markPersonThreadRead(deps, person(request), request.params.thread_id, body.message_id);
  });
  app.post<Params<'thread_id'>>('/me/threads/:thread_id/messages', async (request, reply) => {
    const body = parseInput(MeAppendMessageBody, request.body);
    return reply.code(201).send(await postPersonMessage(deps, person(request), request.params.thread_id, body));
  });
  app.get('/me/edges', async (request) => ({ edges: await listPersonEdges(deps, person(request)) }));
  app.post<Params<'edge_id'>>('/me/edges/:edge_id/threads', async (request, reply) => {
    const body = parseInput(MeOpenThreadBody, request.body);
    return reply.code(201).send(await openPersonThread(deps, person(request), request.params.edge_id, body));
  });
}

import type { FastifyInstance } from 'fastify';
import { ToolCallListQuery } from '../../../api/agent-tools.ts';
import { AppendMessageBody, OpenThreadBody, ThreadPageQuery } from '../../../api/schemas.ts';
import { ServiceError } from '../../../errors/catalogue.ts';
import { appendMessage, getThreadPage, listThreads, openThread } from '../../domain/threads.ts';
import { listThreadToolCalls } from '../../domain/tool-calls.ts';
import { callerOf } from '../auth.ts';
import { parseInput } from '../validate.ts';
import type { Params, RouteContext } from './context.ts';
import { HeldWaitKinds } from '../../events/held-waits.ts';

/**
 * Thread and message routes (contract §5): `POST /edges/{id}/threads` → 201 Thread;
 * `GET /edges/{id}/threads` → 200 `{threads}` newest first; `GET /threads/{id}?after&limit&wait`
 * → 200 thread page (long poll up to `wait` seconds); `POST /threads/{id}/messages` → 201 Message;
 * `GET /threads/{id}/tool-calls?after&limit` → 200 `{tool_calls, next_after}` (contract §11: the
 * tool calls of the agents' turns on the thread, oldest first).
 * Errors: `not_found`, `not_a_participant`, `invalid_cursor`, `unknown_reference`, `invalid_request`,
 * `too_many_waits` (a long poll past the bounds of held waits).
 */
export function threadRoutes(app: FastifyInstance, { deps, shutdown, heldWaits }: RouteContext): void {
  app.post<Params<'edge_id'>>('/edges/:edge_id/threads', async (request, reply) => {
    const body = parseInput(OpenThreadBody, request.body);
    return reply.code(201).send(await openThread(deps, callerOf(request), request.params.edge_id, body));
  });
  app.get<Params<'edge_id'>>('/edges/:edge_id/threads', async (request) => ({
    threads: await listThreads(deps, callerOf(request), request.params.edge_id),
  }));
  app.get<Params<'thread_id'> & { Querystring: Record<string, unknown> }>('/threads/:thread_id', async (request) => {
    const { after, ...rest } = request.query;
    // `after` is a cursor: any value that names no message of the thread, UUID or not, is an
    // invalid cursor rather than a malformed request (contract §2).
    if (after !== undefined && typeof after !== 'string') {
      throw new ServiceError('invalid_cursor', 'after must be given once');
    }
    const query = parseInput(ThreadPageQuery, rest);
    const caller = callerOf(request);
    // A long poll holds a place among the key's, its organization's and the process's held waits (429 past them).
    const release = query.wait > 0 ? heldWaits.acquire(caller, 1, HeldWaitKinds.thread_poll) : () => {};
    try {
      return await getThreadPage(deps, caller, request.params.thread_id, { ...query, after }, shutdown);
    } finally {
      release();
    }
  });
  app.get<Params<'thread_id'>>('/threads/:thread_id/tool-calls', async (request) => {
    const query = parseInput(ToolCallListQuery, request.query);
    return listThreadToolCalls(deps, callerOf(request), request.params.thread_id, query);
  });
  app.post<Params<'thread_id'>>('/threads/:thread_id/messages', async (request, reply) => {
    const body = parseInput(AppendMessageBody, request.body);
    return reply.code(201).send(await appendMessage(deps, callerOf(request), request.params.thread_id, body));
  });
}

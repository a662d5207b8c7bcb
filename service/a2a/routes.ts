/**
 * The A2A routes of acs-server (contract §12): every agent at `/a2a/v1/agents/{agent_id}` —
 * JSON-RPC at that URL, HTTP+JSON under it, its Agent Card at
 * `/a2a/v1/agents/{agent_id}/.well-known/agent-card.json` — answered by `@a2a-js/sdk`'s own
 * handlers (a2a-server.ts) once the service's checks passed here:
 *
 * - **The MCP key** (`x-api-key`, the scheme the card declares) is resolved before the body is
 *   read, as on the MCP endpoint (contract §3, §7): none is 401 `unauthenticated`, an unknown or
 *   revoked one 401 `invalid_api_key`, an organization key 403 `wrong_key_type` (problem+json:
 *   nothing of A2A has run).
 * - **The edge**: a caller that shares no edge with the agent (or calls another team's agent, or
 *   one that does not exist) gets A2A's error for an unknown task (JSON-RPC -32001, HTTP+JSON
 *   404), and its card 404; nothing is written (request-handler.ts).
 * - **Bodies** are JSON (`application/json`, `application/a2a+json`) up to the server's 1 MiB; a
 *   body that is not JSON reaches the SDK as text, which answers A2A's parse error; another media
 *   type is refused by the SDK (`ContentTypeNotSupportedError`).
 * - **Held requests**: a streaming call and a send that waits for its task hold a place among the
 *   held waits of the MCP key, its organization and the process (contract §14; 429
 *   `too_many_waits` past them) for as long as they last, and give their place among requests in
 *   progress back (they wait, they do not work); a stream gets a comment line every 15 s so that
 *   no idle timeout ends it; every wait ends when the client goes away or the server stops.
 *
 * These routes are outside the OpenAPI document (`apiDocument: false`): their requests and answers
 * are the A2A protocol's (its specification and each agent's card describe them), not the
 * service's REST API.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { a2aAgentsPath } from '../../api/a2a.ts';
import { authenticateMcp } from '../domain/authentication.ts';
import { yieldTurn } from '../domain/request-turn.ts';
import { HeldWaitKinds, type HeldWaitKind } from '../events/held-waits.ts';
import type { RouteContext } from '../http/routes/context.ts';
import { resolveA2aCaller, type A2aCaller } from './a2a-caller.ts';
import type { A2aServer } from './a2a-server.ts';

/** Keep-alive comments of an A2A stream, every 15 s unless the server sets another period. */
const defaultKeepAliveMs = 15_000;

const callers = new WeakMap<FastifyRequest, A2aCaller>();

/** A2A methods (JSON-RPC, 1.0 and 0.3) whose answer is a stream. */
const streamingMethods = new Set(['SendStreamingMessage', 'SubscribeToTask', 'message/stream', 'tasks/resubscribe']);
/** A2A methods (JSON-RPC, 1.0 and 0.3) that may wait for their task. */
const sendingMethods = new Set(['SendMessage', 'message/send']);

/** Whether a send asks to be answered at once: A2A 1.0's `returnImmediately`, 0.3's `blocking: false`. */
function returnsAtOnce(params: unknown): boolean {
  const configuration = (params as { configuration?: { returnImmediately?: unknown; blocking?: unknown } } | undefined)?.configuration;
  return configuration?.returnImmediately === true || configuration?.blocking === false;
}

/**
 * How an A2A request holds its connection while nothing happens: an event stream (a streaming
 * send, a subscription), a wait for a task (a send that blocks), or not at all (undefined).
 * From the JSON-RPC method, or the HTTP+JSON path (`…/message:stream`, `…:subscribe`,
 * `…/message:send`, A2A 0.3's under `/v1/` alike).
 */
export function heldKind(method: string, rest: string | undefined, body: unknown): HeldWaitKind | undefined {
  if (method !== 'POST') return undefined;
  if (rest === undefined || rest === '') {
    const rpc = body as { method?: unknown; params?: unknown } | undefined;
    if (typeof rpc?.method !== 'string') return undefined;
    if (streamingMethods.has(rpc.method)) return HeldWaitKinds.event_stream;
    return sendingMethods.has(rpc.method) && !returnsAtOnce(rpc.params) ? HeldWaitKinds.thread_poll : undefined;
  }
  if (/(^|\/)message:stream$/.test(rest) || /:subscribe$/.test(rest)) return HeldWaitKinds.event_stream;
  if (/(^|\/)message:send$/.test(rest)) return returnsAtOnce(body) ? undefined : HeldWaitKinds.thread_poll;
  return undefined;
}

/**
 * The A2A server of the process, created at the first A2A request (the SDK and Express load then,
 * not when the server starts); a failed load is not kept, so the next request tries again.
 */
function serverLoader(create: () => Promise<A2aServer>): () => Promise<A2aServer> {
  let server: Promise<A2aServer> | undefined;
  return () => {
    server ??= create().catch((error: unknown) => {
      server = undefined;
      throw error;
    });
    return server;
  };
}

/** Parses a JSON body, keeping text that is not JSON as it is (the SDK answers A2A's parse error for it). */
function parseBody(body: string): unknown {
  if (body === '') return undefined;
  try {
    const parsed: unknown = JSON.parse(body);
    // PostgreSQL text holds no NUL: a body with one is handed on as text, which the SDK refuses.
    return JSON.stringify(parsed).includes('\\u0000') ? body : parsed;
  } catch {
    return body;
  }
}

/**
 * Registers the A2A routes on `app` (an encapsulated plugin at the root; see the module's
 * comment), over `context` (the domain, held waits, shutdown), with cards and URLs at `publicUrl`.
 */
export function a2aRoutes(app: FastifyInstance, context: RouteContext, publicUrl: () => string): void {
  const { deps } = context;
  const loadServer = serverLoader(async () => {
    const { createA2aServer } = await import('./a2a-server.ts');
    return createA2aServer({ deps, publicUrl, webhooks: context.webhooks, logError: (error) => app.log.error({ err: error }, 'A2A: unexpected error') });
  });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser(['application/json', 'application/a2a+json'], { parseAs: 'string' }, (_request, body, done) => done(null, parseBody(body as string)));
  // Another media type: the body is left unread for the SDK, which refuses it in A2A's terms.
  app.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));

  app.addHook('onRequest', async (request) => {
    const header = request.headers['x-api-key'];
    const identity = await authenticateMcp(deps.db, Array.isArray(header) ? header[0] : header);
    const agentId = (request.params as { agentId?: string } | undefined)?.agentId ?? '';
    callers.set(request, await resolveA2aCaller(deps.db, identity, agentId));
  });

  const handler = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const caller = callers.get(request)!;
    const params = request.params as { '*'?: string };
    const held = heldKind(request.method, params['*'], request.body);
    const release = held ? context.heldWaits.acquire({ keyId: caller.identity.keyId, orgId: caller.identity.orgId }, 1, held) : () => {};
    try {
      const server = await loadServer();
      // A call that waits takes no place among requests in progress while it waits.
      if (held) yieldTurn();
      const gone = new AbortController();
      reply.raw.once('close', () => gone.abort());
      reply.hijack();
      // The headers the app set so far (request id, rate limit, security headers): its onSend hook does not run for a hijacked reply.
      for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) reply.raw.setHeader(name, value as string | number | string[]);
      reply.raw.setHeader('x-request-id', request.id);
      const raw = request.raw as IncomingMessage & { body?: unknown };
      if (request.body !== undefined) raw.body = request.body;
      const keepAlive = setInterval(() => {
        const type = String(reply.raw.getHeader('content-type') ?? '');
        if (reply.raw.headersSent && type.startsWith('text/event-stream') && !reply.raw.writableEnded) reply.raw.write(': keep-alive\n\n');
      }, context.streamKeepAliveMs ?? defaultKeepAliveMs);
      try {
        await server.handle(raw, reply.raw, { caller, signal: AbortSignal.any([gone.signal, context.shutdown]) });
      } finally {
        clearInterval(keepAlive);
      }
    } finally {
      release();
    }
  };

  const config = { apiDocument: false };
  for (const url of [`${a2aAgentsPath}/:agentId`, `${a2aAgentsPath}/:agentId/*`]) {
    app.route({ method: ['GET', 'POST', 'DELETE'], url, config, handler });
  }
}

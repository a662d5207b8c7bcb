/**
 * `POST /mcp` (under `/api/v1` and `/v1`; contract §7): MCP over the Streamable HTTP transport of
 * the official SDK, stateless, answering with JSON — or, for a `wait_for_messages` that sends a
 * progress token (§13), with the SSE stream that carries its progress notifications and then its
 * result.
 */
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../../errors/catalogue.ts';
import { McpToolNames } from '../../api/mcp-tools.ts';
import { authenticateMcp } from '../domain/authentication.ts';
import type { AgentIdentity } from '../domain/agent-inbox.ts';
import type { RouteContext } from '../http/routes/context.ts';
import type { createAgentMcpServer } from './server.ts';
import { HeldWaitKinds } from '../events/held-waits.ts';

/** What the route needs of the SDK's server side (see {@link loadSdk}). */
interface McpSdk {
  Transport: typeof WebStandardStreamableHTTPServerTransport;
  createAgentMcpServer: typeof createAgentMcpServer;
}

/**
 * The MCP SDK's server side, loaded at the first MCP request rather than when the server starts:
 * it stays resident once loaded (its schemas and JSON Schema validator), and a server no external
 * agent talks to never needs it. A failed load is not kept, so the next request tries again.
 */
let sdk: Promise<McpSdk> | undefined;
function loadSdk(): Promise<McpSdk> {
  sdk ??= Promise.all([import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'), import('./server.ts')])
    .then(([transport, server]) => ({ Transport: transport.WebStandardStreamableHTTPServerTransport, createAgentMcpServer: server.createAgentMcpServer }))
    .catch((error: unknown) => {
      sdk = undefined;
      throw error;
    });
  return sdk;
}

const agents = new WeakMap<FastifyRequest, AgentIdentity>();

// The request headers the transport reads; the key and everything else stay out of the SDK (it
// hands request headers on to tool handlers, and the key must not travel further than here).
// Host and Origin go along for the transport's DNS-rebinding protection (allowed-hosts.ts).
const forwardedHeaders = ['accept', 'content-type', 'mcp-protocol-version', 'mcp-session-id', 'last-event-id', 'host', 'origin'];

// The origin of the URL the transport is handed. It only parses the URL (into the request info it
// gives tool handlers, which do not read it); the client's Host header is not used, since one that
// is no URL authority ("a b", a port over 65535) would make the URL invalid and the request a 500.
const transportOrigin = 'http://acs-server.invalid';

function toWebRequest(request: FastifyRequest): Request {
  const headers = new Headers();
  for (const name of forwardedHeaders) {
    const value = request.headers[name];
    for (const one of [value ?? []].flat()) headers.append(name, one);
  }
  return new Request(`${transportOrigin}${request.url}`, { method: request.method, headers });
}

/** Whether a JSON-RPC message is a `wait_for_messages` call that may wait (`timeout_seconds` > 0). */
function isWaitingCall(message: unknown): boolean {
  if (typeof message !== 'object' || message === null) return false;
  const { method, params } = message as { method?: unknown; params?: { name?: unknown; arguments?: { timeout_seconds?: unknown } } };
  return method === 'tools/call' && params?.name === McpToolNames.wait_for_messages && Number(params.arguments?.timeout_seconds) > 0;
}

/**
 * Whether a request is one `wait_for_messages` that may wait and asks for progress
 * (`params._meta.progressToken`, §13): its answer is an SSE stream, since notifications cannot
 * travel in a JSON answer (the SDK's transport drops them there).
 */
function wantsProgress(body: unknown): boolean {
  if (Array.isArray(body) || !isWaitingCall(body)) return false;
  const token = (body as { params?: { _meta?: { progressToken?: unknown } } }).params?._meta?.progressToken;
  return typeof token === 'string' || typeof token === 'number';
}

/**
 * How many waits a request holds (issue 21, defect 1): a single message holds one when it is a
 * `wait_for_messages` that may wait. A JSON-RPC batch may hold at most one: all the waits of a
 * batch wait for the same agent's unread messages, which the first to find them takes, and the
 * batch is answered only when its last call ends, so a second wait in a batch can only hold the
 * answer back. Errors: `invalid_request` for a batch with more (nothing of it runs).
 */
export function waitsHeldBy(body: unknown): number {
  if (!Array.isArray(body)) return isWaitingCall(body) ? 1 : 0;
  const waits = body.filter(isWaitingCall).length;
  if (waits > 1) {
    throw new ServiceError(
      'invalid_request',
      `a JSON-RPC batch may hold at most one wait_for_messages with timeout_seconds > 0, this one holds ${waits}; send one wait (it returns every unread message up to its limit)`,
      { errors: [{ path: '(body)', message: `${waits} waiting wait_for_messages calls in one batch; at most 1` }] },
    );
  }
  return waits;
}

/**
 * Registers `POST /mcp` on `app` (an encapsulated plugin under an API prefix).
 *
 * - The MCP key (`x-api-key`) is resolved in an `onRequest` hook, before the body is read or any
 *   JSON-RPC is parsed (contract §2, §7): no key is 401 `unauthenticated`, an unknown or revoked
 *   one 401 `invalid_api_key`, an organization key 403 `wrong_key_type`, all problem+json. MCP
 *   keys are looked up on every request, not cached, so a revoked key is refused at once by every
 *   process.
 * - The body is parsed by the app's JSON parser (1 MiB limit, problem+json for malformed JSON or
 *   another media type) and handed to a fresh SDK server and transport for this request
 *   (`sessionIdGenerator: undefined`, `enableJsonResponse: true`): the answer is the JSON-RPC
 *   response as `application/json`, or 202 without a body for notifications. A single
 *   `wait_for_messages` that may wait and sends a progress token is answered as
 *   `text/event-stream` instead: its `notifications/progress` (a peer's reply being written, §13)
 *   as they come, then its result; the request holds its place among the held waits until the
 *   stream ends. Transport-level
 *   refusals are the SDK's own JSON-RPC errors: 406 when `Accept` does not name both
 *   `application/json` and `text/event-stream`, 400 for a body that is not JSON-RPC or an
 *   unsupported `Mcp-Protocol-Version`.
 * - GET (a server-sent event stream) and DELETE (ending a session) mean nothing without
 *   sessions: like any method a path does not serve, they get 405 `method_not_allowed` with
 *   `Allow: POST` from the app's route registry, as the SDK's stateless examples answer 405.
 * - `wait_for_messages` ends early when the client goes away or the server stops. A request that
 *   may wait holds a place among the held waits of its MCP key, of its agent's organization and
 *   of the process (429 `too_many_waits` past any of them, before anything runs); a batch may
 *   hold one wait ({@link waitsHeldBy}).
 * - `Host` and `Origin` are checked by the SDK's DNS-rebinding protection against the names the
 *   server is reached at (http/allowed-hosts.ts: the listen address, the public URL): another
 *   `Host`, or an `Origin` that is sent and is not one of them, is 403 with a JSON-RPC error, before
 *   any message runs. Requests without `Origin` (clients that are not browsers) pass.
 * - Rate limiting counts JSON-RPC messages, not HTTP requests: a batch of N costs N of the
 *   agent's budget (all its MCP keys share one), charged before any message runs; over the
 *   budget the whole batch is 429 `rate_limited`, and a batch larger than a whole window's budget
 *   is 400 `invalid_request`.
 */
export function mcpRoutes(app: FastifyInstance, { deps, shutdown, heldWaits, rateLimiter, hostPolicy }: RouteContext): void {
  app.addHook('onRequest', async (request) => {
    const header = request.headers['x-api-key'];
    agents.set(request, await authenticateMcp(deps.db, Array.isArray(header) ? header[0] : header));
  });
  app.post('/mcp', async (request, reply) => {
    const agent = agents.get(request)!;
    // Each JSON-RPC message costs one request of the rate limit, so a batch of 100 tool calls
    // costs what 100 requests cost (issue 21, defect 2); refused whole, before any of it runs.
    await rateLimiter?.charge(request, reply, Array.isArray(request.body) ? request.body.length : 1);
    const release = heldWaits.acquire(agent, waitsHeldBy(request.body), HeldWaitKinds.mcp_wait);
    try {
      return await answer(request, reply, agent);
    } finally {
      release();
    }
  });

  async function answer(request: FastifyRequest, reply: FastifyReply, agent: AgentIdentity): Promise<FastifyReply> {
    const gone = new AbortController();
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) gone.abort();
    });
    const { Transport, createAgentMcpServer } = await loadSdk();
    const server = createAgentMcpServer({ deps, agent, signal: AbortSignal.any([gone.signal, shutdown]), log: request.log, requestId: request.id });
    // The SDK's own DNS-rebinding protection: a Host or Origin the server is not reached at is 403.
    const policy = hostPolicy?.();
    // A wait with a progress token is answered as an SSE stream: its notifications go out as they come.
    const streamed = wantsProgress(request.body);
    const transport = new Transport({
      sessionIdGenerator: undefined,
      enableJsonResponse: !streamed,
      ...(policy ? { enableDnsRebindingProtection: true, allowedHosts: policy.hosts, allowedOrigins: policy.origins } : {}),
    });
    try {
      await server.connect(transport);
      const response = await transport.handleRequest(toWebRequest(request), { parsedBody: request.body });
      reply.code(response.status);
      response.headers.forEach((value, name) => void reply.header(name, value));
      if (streamed && response.body && (response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
        // The stream ends after the call's result; the server is closed (finally) only then. A
        // comment goes first, so that the headers leave at once rather than with the first event.
        const events = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
        const body = Readable.from(
          (async function* () {
            yield ': waiting\n\n';
            yield* events;
          })(),
        );
        const ended = new Promise<void>((resolve) => body.once('close', resolve));
        void reply.send(body);
        await ended;
        return reply;
      }
      const text = await response.text();
      return await reply.send(text === '' ? undefined : text);
    } finally {
      await server.close();
    }
  }
}

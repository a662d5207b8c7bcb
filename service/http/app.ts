import { randomUUID } from 'node:crypto';
import fastifyCookie from '@fastify/cookie';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import { ServiceError } from '../../errors/catalogue.ts';
import { loggedUrl } from '../logging.ts';
import type { DomainDeps } from '../domain/caller.ts';
import type { ServiceMetrics } from '../metrics/hooks.ts';
import { isUuid } from '../domain/ids.ts';
import { createHeldWaits, heldWaitRetryAfterSeconds, type HeldWaits } from '../events/held-waits.ts';
import { defaultWebhookSettings, type WebhookRuntime } from '../events/webhooks/webhooks.ts';
import { requireApiKey } from './auth.ts';
import type { HostPolicy } from './allowed-hosts.ts';
import { clientErrorHandler, connectionServerOptions, defaultConnectionLimits, limitConnectionsPerClient, refusalHoldMs, type ConnectionLimits } from './connection-limits.ts';
import { installIdempotency } from './idempotency.ts';
import { installOpenApi } from './openapi/install.ts';
import { everyResponseHeaders, installSecurityHeaders } from './security-headers.ts';
import { installRouteRegistry, type RouteRegistry } from './openapi/route-registry.ts';
import { mcpRoutes } from '../mcp/route.ts';
import { toProblem } from './problem.ts';
import { defaultRateLimit, installRateLimit, type RateLimitOptions } from './rate-limit.ts';
import { createClientResolver } from './client-bucket.ts';
import { createFairQueue, installFairShare, queuedRetryAfterSeconds, type FairQueue } from './fair-share.ts';
import { createMemoryRateLimitStore, type RateLimitStore } from '../storage/rate-limit-store.ts';
import type { RouteContext } from './routes/context.ts';
import { threadStreamRoutes } from './routes/thread-streams.ts';
import { createThreadStreams } from '../events/thread-stream.ts';
import { accessRequestRoutes } from './routes/access-requests.ts';
import { adminPrefix, adminRoutes } from './routes/admin.ts';
import { attachmentRoutes } from './routes/attachments.ts';
import { edgeRoutes } from './routes/edges.ts';
import { eventRoutes } from './routes/events.ts';
import { orgKeyRoutes } from './routes/keys.ts';
import { mcpKeyRoutes } from './routes/mcp-keys.ts';
import { organizationRoutes } from './routes/organizations.ts';
import { participantRoutes } from './routes/participants.ts';
import { providerKeyRoutes, putProviderKeyRoute } from './routes/provider-keys.ts';
import { taskRoutes } from './routes/tasks.ts';
import { teamRoutes } from './routes/teams.ts';
import { threadRoutes } from './routes/threads.ts';
import { usageRoutes } from './routes/usage.ts';
import { meRoutes } from './routes/me/index.ts';
import { browserSignInRoutes, signInLinkRoutes, signInOptionRoutes } from './routes/sign-in.ts';
import { consoleRoutes, type ConsoleAssets } from './console-assets.ts';
import type { ConsoleSettings } from './session-auth.ts';
import type { OidcClient } from '../sessions/oidc.ts';
import { webhookRoutes } from './routes/webhooks.ts';
import { a2aRoutes } from '../a2a/routes.ts';

/** Request bodies over this size get 413 `payload_too_large` (contract §1). */
export const bodyLimitBytes = 1024 * 1024;

/** The prefixes under which every API route is served; `/v1` is an exact alias (contract §1). */
export const apiPrefixes = ['/api/v1', '/v1'] as const;

/** Options of {@link buildApp}. */
export interface AppOptions {
  deps: DomainDeps;
  /** Aborted when the server stops: held long polls then answer at once. */
  shutdown: AbortSignal;
  /** `false` for silence, `true` for JSON logs on stdout, or pino options. */
  logger: boolean | Record<string, unknown>;
  /** Bearer token of the `/admin/v1` routes (contract §6); unset or empty: those routes do not exist. */
  adminToken?: string | undefined;
  /** Per-key rate limit (contract §2); default 1,200 a minute; `false` turns it off. */
  rateLimit?: RateLimitOptions | false | undefined;
  /**
   * Where rate-limit counters live: PostgreSQL when several processes share the database
   * (storage/rate-limit-store.ts); default this process's memory.
   */
  rateLimitStore?: RateLimitStore | undefined;
  /** Request, header and idle timeouts and the cap on connections per client; default {@link defaultConnectionLimits}. */
  connectionLimits?: ConnectionLimits | undefined;
  /** The Host and Origin values the MCP endpoint accepts (known once listening); unset: not checked. */
  hostPolicy?: (() => HostPolicy | undefined) | undefined;
  /** The console's public URL (links, cookies, OpenID redirects), read once the server listens (contract §10). */
  publicUrl: () => string;
  /** Sign-in through OpenID Connect, when configured (contract §10). */
  oidc?: OidcClient | undefined;
  /** Receives the console's files, so that the server can load them at start (http/console-assets.ts). */
  onConsole?: ((assets: ConsoleAssets) => void) | undefined;
  /** The bounds of held waits of this process (default: events/held-waits.ts). */
  heldWaits?: HeldWaits | undefined;
  /** The places of requests in progress and the clients' queues for them (default: http/fair-share.ts); `false` turns fair sharing off. */
  fairQueue?: FairQueue | false | undefined;
  /** Webhook settings and worker (default: contract §9's settings, no worker to tell). */
  webhooks?: WebhookRuntime | undefined;
  /** Keep-alive period of event streams in milliseconds (default 15,000). */
  streamKeepAliveMs?: number | undefined;
  /** The process's metrics: every request is counted by its route's template (service/metrics/); default none. */
  metrics?: ServiceMetrics | undefined;
}

/**
 * Fastify's request logging, reduced to one line per request written when it is answered:
 * method, path, status and milliseconds (`GET /api/v1/organizations 200 2.1 ms`), with the
 * request id beside them in JSON; never a header, so never a key. Errors keep their own lines.
 */
class RequestLineLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const ms = Math.round(reply.elapsedTime * 10) / 10;
    const url = loggedUrl(request.url);
    const fields = { method: request.method, url, status: reply.statusCode, ms, ...(error ? { err: error } : {}) };
    request.log[error ? 'error' : 'info'](fields, `${request.method} ${url} ${reply.statusCode} ${ms} ms`);
  }
}

// What a log line may show of a URL (sign-in tokens, OpenID codes and states redacted): service/logging.ts.
export { loggedUrl };

// A client's request id is echoed only when it is short printable ASCII, so logs stay clean.
const clientRequestId = /^[\x21-\x7e]{1,200}$/;

/**
 * Builds the Fastify app of acs-server: every route of contract §5 in scope under `/api/v1` and
 * `/v1`, the unprefixed provider-key PUT, `/healthz` and `/readyz`; problem+json errors (§2)
 * including `route_not_found`, `method_not_allowed`, `malformed_json`, `payload_too_large` and
 * `unsupported_media_type`; and `X-Request-Id` on every response. Output: the app, not listening.
 *
 * The steps run in this order because Fastify runs hooks in the order they were added: rate
 * limiting first (so every answer carries `RateLimit-*`), then fair sharing (a request takes its
 * place in turn: http/fair-share.ts), then Idempotency-Key claims, then the app's own hooks, then
 * the routes.
 */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const limits = options.connectionLimits ?? defaultConnectionLimits;
  const app = createFastify(options.logger, limits, options.publicUrl);
  // Before anything that may answer, so that every answer carries them (contract §14).
  installSecurityHeaders(app, options.publicUrl);
  // First, so that its hooks reach every route and the 404 handler.
  options.metrics?.instrument(app);
  // Connections over the per-address cap are refused before the HTTP server parses anything of them (contract §14).
  const connectionCap = limitConnectionsPerClient(app.server, limits.maxConnectionsPerClient, { holdMs: refusalHoldMs(limits), everyResponse: () => everyResponseHeaders(options.publicUrl()) });
  // A held refusal would make the server's close wait for it: answered at once instead.
  app.addHook('preClose', (done) => {
    connectionCap.answerHeld();
    done();
  });
  // Cookies are the console's sessions (contract §10); parsed on every request, set by its routes.
  await app.register(fastifyCookie);
  const clientOf = createClientResolver(options.deps.db);
  const rateLimiter =
    options.rateLimit === false
      ? undefined
      : await installRateLimit(app, clientOf, options.rateLimit ?? defaultRateLimit, options.rateLimitStore ?? createMemoryRateLimitStore());
  if (options.fairQueue !== false) installFairShare(app, clientOf, options.fairQueue ?? createFairQueue());
  installIdempotency(app, options.deps);
  installJsonBodies(app);
  installRequestHooks(app, options.shutdown);
  installErrorHandler(app);
  // One registry of every route serves the 405 answers, the query parameter rule and the
  // OpenAPI document, so the three cannot disagree about what exists.
  const registry = installRouteRegistry(app, apiPrefixes);
  // A browser's page request no route takes gets the console's not-found page, once the console is served (below).
  const unroutedPages: { console?: ConsoleAssets } = {};
  installUnroutedAnswers(app, registry, unroutedPages);
  installOpenApi(app, registry);
  installHealth(app, options.deps);
  const context: RouteContext = {
    deps: options.deps,
    shutdown: options.shutdown,
    heldWaits: options.heldWaits ?? createHeldWaits(),
    webhooks: options.webhooks ?? { settings: defaultWebhookSettings, changed: () => {} },
    streamKeepAliveMs: options.streamKeepAliveMs,
    threadStreams: createThreadStreams(options.deps.db, options.deps.events),
    rateLimiter,
    hostPolicy: options.hostPolicy,
  };
  const consoleSettings: ConsoleSettings = { publicUrl: options.publicUrl, adminToken: options.adminToken || undefined };
  await registerRoutes(app, context, consoleSettings, options.oidc);
  if (options.onConsole) options.onConsole((unroutedPages.console = consoleRoutes(app)));
  return app;
}

/**
 * The Fastify instance with the server-wide settings: logging (one line per request, keys
 * redacted), request, header and idle timeouts, body limit, request ids (a client's `X-Request-Id` echoed when it is short printable
 * ASCII), connection handling on close, router options, and problem+json for URLs that fail
 * before routing.
 */
function createFastify(logOptions: AppOptions['logger'], limits: ConnectionLimits, publicUrl: () => string): FastifyInstance {
  const logger: FastifyServerOptions['logger'] =
    logOptions === false
      ? false
      : {
          ...(typeof logOptions === 'object' ? logOptions : {}),
          // Keys never reach a log line, whatever serializers a deployment adds.
          redact: { paths: ['req.headers["x-api-key"]', 'req.headers.authorization', 'req.headers.cookie', 'req.headers["x-csrf-token"]', 'api_key'], censor: '[redacted]' },
        };
  return Fastify({
    logger,
    // Slow or silent clients cannot hold connections (connection-limits.ts); what Node refuses
    // before routing is answered as problem+json too.
    ...connectionServerOptions(limits),
    clientErrorHandler: clientErrorHandler(() => everyResponseHeaders(publicUrl())),
    // One line per request, written when it is answered, instead of Fastify's two.
    logController: new RequestLineLog(),
    bodyLimit: bodyLimitBytes,
    requestIdHeader: false,
    genReqId: (req) => {
      const sent = req.headers['x-request-id'];
      return typeof sent === 'string' && clientRequestId.test(sent) ? sent : randomUUID();
    },
    // In-flight requests finish on close; idle keep-alive sockets are closed so close() returns.
    forceCloseConnections: 'idle',
    // Fastify's own 503 while closing is not problem+json; the onRequest hook answers instead.
    return503OnClosing: false,
    // Long path ids must reach the routes (which answer 404 not_found), not Fastify's raw 414.
    // One rule for a trailing slash on every route: ignored (`/organizations/` is `/organizations`);
    // a redirect would cost a round trip and lose the body of a POST for many clients.
    routerOptions: { maxParamLength: 2048, ignoreTrailingSlash: true },
    // Malformed percent-escapes fail before routing; answer them as problem+json too (contract §2).
    frameworkErrors: (error, request, reply) => {
      const message = `cannot be decoded (${error.code ?? 'bad URL'})`;
      const problemError = new ServiceError('invalid_request', `the request URL ${message}`, { errors: [{ path: 'url', message }] });
      const { problem } = toProblem(problemError, request.id);
      // frameworkErrors' reply is typed for no route at all; send the problem as a plain string.
      const raw = reply as unknown as { code(status: number): typeof raw; header(name: string, value: string): typeof raw; type(t: string): typeof raw; send(body: string): void };
      // No hook runs for these: the headers of every response (HSTS) are set here.
      for (const [name, value] of Object.entries(everyResponseHeaders(publicUrl()))) raw.header(name, value);
      raw.code(problem.status).header('x-request-id', request.id).type('application/problem+json').send(JSON.stringify(problem));
    },
  });
}

/**
 * Bodies are JSON (contract §1): an empty body is no body, malformed JSON is 400
 * `malformed_json`, a NUL character anywhere is 400 `invalid_request` naming its path (PostgreSQL
 * text cannot hold one), and any other Content-Type is 415 `unsupported_media_type`.
 */
function installJsonBodies(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    if (body === '') return done(null, undefined);
    let parsed: unknown;
    try {
      parsed = JSON.parse(body as string);
    } catch {
      return done(new ServiceError('malformed_json', 'the body is not valid JSON'), undefined);
    }
    const nulAt = findNul(parsed);
    if (nulAt !== undefined) {
      const path = nulAt || '(body)';
      return done(new ServiceError('invalid_request', `${path}: must not contain NUL characters`, { errors: [{ path, message: 'must not contain NUL characters' }] }), undefined);
    }
    done(null, parsed);
  });
  app.addContentTypeParser('*', (request, _payload, done) => {
    done(new ServiceError('unsupported_media_type', `Content-Type ${request.headers['content-type'] ?? '(none)'} is not application/json`), undefined);
  });
}

/**
 * Hooks every request goes through: `X-Request-Id` on every answer, 503 `unavailable` once the
 * server stops, and path ids lowercased as the Id schema lowercases ids in bodies.
 */
function installRequestHooks(app: FastifyInstance, shutdown: AbortSignal): void {
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
    // A response finished while the server stops (a held long poll or MCP wait answering early)
    // closes its connection: close() ends idle keep-alive connections only once, when it starts,
    // and one that turns idle later would hold it until the keep-alive timeout (72 s).
    if (shutdown.aborted) reply.header('connection', 'close');
  });
  app.addHook('onRequest', async () => {
    if (shutdown.aborted) throw new ServiceError('unavailable', 'the server is shutting down');
  });
  app.addHook('preValidation', async (request) => {
    const params = request.params as Record<string, string> | undefined;
    for (const [name, value] of Object.entries(params ?? {})) {
      if (typeof value === 'string' && isUuid(value)) params![name] = value.toLowerCase();
    }
  });
}

/** Every error as problem+json (contract §2): unexpected ones logged, 503s with `Retry-After`. */
function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler(async (error, request, reply) => {
    const { problem, unexpected } = toProblem(error, request.id);
    // A 413 is decided from Content-Length before the body is read. Answering at once and leaving
    // the body unread makes clients that are still writing it fail with EPIPE before they read the
    // answer; so read and discard the rest first (lingering close, as nginx does), bounded in time.
    if (problem.status === 413 && !request.raw.complete) await drain(request.raw, 10_000);
    if (unexpected) request.log.error({ err: error }, 'unexpected error');
    // Storage trouble and shutdown are short-lived: tell clients when to retry (contract §2).
    if (problem.status === 503) reply.header('retry-after', '1');
    // A held wait ends within 30 s; past the bound of held waits, come back in a few seconds.
    if (problem.code === 'too_many_waits') reply.header('retry-after', String(heldWaitRetryAfterSeconds));
    if (problem.code === 'too_many_requests_queued') reply.header('retry-after', String(queuedRetryAfterSeconds));
    return reply.code(problem.status).type('application/problem+json').send(problem);
  });
}

/**
 * A request no route takes: 405 `method_not_allowed` with `Allow` when the path exists with other
 * methods (RFC 9110 §15.5.6), else 404 `route_not_found` — or, for a person's browser asking for
 * a page while the console is served (`pages.console`), the console's page with 404, which shows
 * its "Not found" page. Decided before the body is read: otherwise the body's own problems (no
 * Content-Type, malformed JSON, a wrong media type) would hide that the route does not exist.
 */
function installUnroutedAnswers(app: FastifyInstance, registry: RouteRegistry, pages: { console?: ConsoleAssets }): void {
  const refuseUnrouted = (request: FastifyRequest, reply: FastifyReply): never => {
    const path = request.url.split('?')[0] ?? '';
    const allowed = registry.allowedMethods(path);
    if (allowed.length > 0) {
      reply.header('allow', allowed.join(', '));
      throw new ServiceError('method_not_allowed', `${request.method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`);
    }
    throw new ServiceError('route_not_found', `no route ${request.method} ${path}`);
  };
  const answer = async (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0] ?? '';
    if (pages.console && registry.allowedMethods(path).length === 0 && (await pages.console.notFound(request, reply))) return reply;
    return refuseUnrouted(request, reply);
  };
  app.addHook('onRequest', async (request, reply) => {
    if (request.is404) return answer(request, reply);
  });
  app.setNotFoundHandler(answer);
}

/** `GET /healthz` (the process is up) and `GET /readyz` (storage answers), no key (contract §6). */
function installHealth(app: FastifyInstance, deps: DomainDeps): void {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async () => {
    try {
      await deps.db.query('SELECT 1');
    } catch {
      throw new ServiceError('unavailable', 'storage is unreachable');
    }
    return { status: 'ready' };
  });
}

/**
 * The routes: under each API prefix the keyed routes, the access requests (no key) and the MCP
 * endpoint (an MCP key); the admin routes when a token is set; the unprefixed provider-key PUT.
 */
async function registerRoutes(app: FastifyInstance, context: RouteContext, consoleSettings: ConsoleSettings, oidc: OidcClient | undefined): Promise<void> {
  const adminToken = consoleSettings.adminToken;
  for (const prefix of apiPrefixes) {
    await app.register(
      async (api) => {
        requireApiKey(api, context.deps.db);
        for (const routesOf of [organizationRoutes, teamRoutes, participantRoutes, edgeRoutes, threadRoutes, threadStreamRoutes, providerKeyRoutes, attachmentRoutes, orgKeyRoutes, mcpKeyRoutes, usageRoutes, eventRoutes, webhookRoutes, taskRoutes]) {
          routesOf(api, context);
        }
        signInLinkRoutes(api, context, consoleSettings);
      },
      { prefix },
    );
    // Anyone may ask for access: no API key (contract §5); the sign-in page asks what it offers.
    await app.register(
      async (open) => {
        accessRequestRoutes(open, context);
        signInOptionRoutes(open, consoleSettings, oidc);
      },
      { prefix },
    );
    // The MCP endpoint takes an MCP key instead of an organization key (contract §7).
    await app.register(async (mcp) => mcpRoutes(mcp, context), { prefix });
    // The console's routes take a person's session instead (contract §10).
    await app.register(async (me) => meRoutes(me, context, consoleSettings), { prefix });
  }
  // Every agent as an A2A agent, with an MCP key of an agent on an edge with it (contract §12).
  await app.register(async (a2a) => a2aRoutes(a2a, context, consoleSettings.publicUrl));
  // The pages a browser follows to sign in, at the root (contract §10).
  await app.register(async (browser) => browserSignInRoutes(browser, context, consoleSettings, oidc));
  if (adminToken) await app.register(async (admin) => adminRoutes(admin, context, consoleSettings), { prefix: adminPrefix });
  // The interface description gives this one route without a prefix (contract §1).
  await app.register(async (api) => {
    requireApiKey(api, context.deps.db);
    putProviderKeyRoute(api, context);
  });
}

/**
 * The path (`a.b.0`) of the first string or key holding a NUL character in a parsed JSON value,
 * if any. Iterative, so that a body nested thousands deep cannot exhaust the stack.
 */
export function findNul(value: unknown): string | undefined {
  const pending: Array<[unknown, string]> = [[value, '']];
  while (pending.length > 0) {
    const [current, path] = pending.pop()!;
    if (typeof current === 'string') {
      if (current.includes('\u0000')) return path;
    } else if (current !== null && typeof current === 'object') {
      for (const [key, child] of Object.entries(current)) {
        const at = path ? `${path}.${key}` : key;
        if (key.includes('\u0000')) return at;
        pending.push([child, at]);
      }
    }
  }
  return undefined;
}

/** Reads and discards the rest of a request body; resolves when it ended, failed or `ms` passed. */
function drain(raw: NodeJS.ReadableStream & { complete: boolean }, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    const finish = () => {
      clearTimeout(timer);
      resolve();
    };
    raw.once('end', finish);
    raw.once('error', finish);
    raw.once('close', finish);
    raw.resume();
  });
}

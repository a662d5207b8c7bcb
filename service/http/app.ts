import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { ServiceError } from '../../errors/catalogue.ts';
import type { DomainDeps } from '../domain/caller.ts';
import { requireApiKey } from './auth.ts';
import { toProblem } from './problem.ts';
import type { RouteContext } from './routes/context.ts';
import { edgeRoutes } from './routes/edges.ts';
import { organizationRoutes } from './routes/organizations.ts';
import { participantRoutes } from './routes/participants.ts';
import { providerKeyRoutes, putProviderKeyRoute } from './routes/provider-keys.ts';
import { teamRoutes } from './routes/teams.ts';
import { threadRoutes } from './routes/threads.ts';

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
}

// A client's request id is echoed only when it is short printable ASCII, so logs stay clean.
const clientRequestId = /^[\x21-\x7e]{1,200}$/;

/**
 * Builds the Fastify app of acs-server: every route of contract §5 in scope under `/api/v1` and
 * `/v1`, the unprefixed provider-key PUT, `/healthz` and `/readyz`; problem+json errors (§2)
 * including `route_not_found`, `method_not_allowed`, `malformed_json`, `payload_too_large` and
 * `unsupported_media_type`; and `X-Request-Id` on every response. Output: the app, not listening.
 */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const logger: FastifyServerOptions['logger'] =
    options.logger === false
      ? false
      : {
          ...(typeof options.logger === 'object' ? options.logger : {}),
          // Keys never reach a log line, whatever serializers a deployment adds.
          redact: { paths: ['req.headers["x-api-key"]', 'req.headers.authorization', 'api_key'], censor: '[redacted]' },
        };
  const app = Fastify({
    logger,
    bodyLimit: bodyLimitBytes,
    requestIdHeader: false,
    genReqId: (req) => {
      const sent = req.headers['x-request-id'];
      return typeof sent === 'string' && clientRequestId.test(sent) ? sent : randomUUID();
    },
    // In-flight requests finish on close; idle keep-alive sockets are closed so close() returns.
    forceCloseConnections: 'idle',
    // Fastify's own 503 while closing is not problem+json; the onRequest hook below answers instead.
    return503OnClosing: false,
  });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    if (body === '') return done(null, undefined);
    try {
      done(null, JSON.parse(body as string));
    } catch {
      done(new ServiceError('malformed_json', 'the body is not valid JSON'), undefined);
    }
  });
  app.addContentTypeParser('*', (request, _payload, done) => {
    done(new ServiceError('unsupported_media_type', `Content-Type ${request.headers['content-type'] ?? '(none)'} is not application/json`), undefined);
  });

  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.addHook('onRequest', async () => {
    if (options.shutdown.aborted) throw new ServiceError('unavailable', 'the server is shutting down');
  });

  app.setErrorHandler((error, request, reply) => {
    const { problem, unexpected } = toProblem(error, request.id);
    if (unexpected) request.log.error({ err: error }, 'unexpected error');
    // Storage trouble and shutdown are short-lived: tell clients when to retry (contract §2).
    if (problem.status === 503) reply.header('retry-after', '1');
    return reply.code(problem.status).type('application/problem+json').send(problem);
  });

  // Known paths answer 405 for other methods rather than 404 (contract §2).
  const routes: Array<{ methods: string[]; pattern: RegExp }> = [];
  app.addHook('onRoute', (route) => {
    const methods = (Array.isArray(route.method) ? route.method : [route.method]).map(String);
    const pattern = new RegExp(`^${route.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z_]+/g, '[^/]+')}$`);
    routes.push({ methods, pattern });
  });
  app.setNotFoundHandler(async (request) => {
    const path = request.url.split('?')[0] ?? '';
    const allowed = routes.filter((r) => r.pattern.test(path)).flatMap((r) => r.methods);
    if (allowed.length > 0) {
      throw new ServiceError('method_not_allowed', `${request.method} is not allowed on ${path}; allowed: ${[...new Set(allowed)].join(', ')}`);
    }
    throw new ServiceError('route_not_found', `no route ${request.method} ${path}`);
  });

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async () => {
    try {
      await options.deps.db.query('SELECT 1');
    } catch {
      throw new ServiceError('unavailable', 'storage is unreachable');
    }
    return { status: 'ready' };
  });

  const context: RouteContext = { deps: options.deps, shutdown: options.shutdown };
  for (const prefix of apiPrefixes) {
    await app.register(
      async (api) => {
        requireApiKey(api, options.deps.db);
        for (const routesOf of [organizationRoutes, teamRoutes, participantRoutes, edgeRoutes, threadRoutes, providerKeyRoutes]) {
          routesOf(api, context);
        }
      },
      { prefix },
    );
  }
  // The interface description gives this one route without a prefix (contract §1).
  await app.register(async (api) => {
    requireApiKey(api, options.deps.db);
    putProviderKeyRoute(api, context);
  });
  return app;
}

/**
 * Requests of the public app as metrics (`acs_http_requests_total`,
 * `acs_http_request_duration_seconds`, `acs_rate_limited_total`): labelled by the route's
 * template, never by the path a client sent (an id in a path would make a series per thread, and
 * a made-up path a series per attacker).
 */
import type { FastifyInstance } from 'fastify';
import { ServiceError } from '../../errors/catalogue.ts';

/** The label of requests no route took (404 `route_not_found`, 405, a URL that does not decode). */
export const unmatchedRoute = 'unmatched';

/** Methods that are labels as they are; any other is `other`. */
const methods = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * The route label of a request: Fastify's template (`routeOptions.url`, `/api/v1/threads/:thread_id`)
 * in the form the API documents (`/api/v1/threads/{thread_id}`, as in the OpenAPI document), or
 * {@link unmatchedRoute} when no route took it.
 */
export function routeLabel(template: string | undefined): string {
  return template === undefined ? unmatchedRoute : template.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
}

/** What {@link instrumentHttp} reports to. */
export interface HttpMetricsSink {
  /** One answered request: route label, method label, status, seconds from arrival to answer. */
  request(route: string, method: string, status: string, seconds: number): void;
  /** One 429 `rate_limited` refusal. */
  rateLimited(): void;
}

/**
 * Adds to `app` (before its routes: Fastify's hooks of the root reach every route and the 404
 * handler) an `onResponse` hook that reports each answered request, and an `onError` hook that
 * reports each `rate_limited` refusal (the rate limit's and an MCP batch's). A request whose
 * client went away before the answer is reported with the status the answer had.
 */
export function instrumentHttp(app: FastifyInstance, sink: HttpMetricsSink): void {
  // A route's label is computed once per template.
  const labels = new Map<string | undefined, string>();
  app.addHook('onResponse', (request, reply, done) => {
    const template = request.routeOptions.url;
    let route = labels.get(template);
    if (route === undefined) labels.set(template, (route = routeLabel(template)));
    sink.request(route, methods.has(request.method) ? request.method : 'other', String(reply.statusCode), reply.elapsedTime / 1000);
    done();
  });
  app.addHook('onError', (_request, _reply, error, done) => {
    if (error instanceof ServiceError && error.code === 'rate_limited') sink.rateLimited();
    done();
  });
}

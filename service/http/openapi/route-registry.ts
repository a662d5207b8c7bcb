import type { FastifyInstance, preValidationAsyncHookHandler } from 'fastify';
import { rejectUnknownQuery } from '../validate.ts';
import type { RouteDoc } from './route-doc.ts';
import { routeDocs } from './route-docs.ts';

/** One route as Fastify registered it, with the description {@link routeDocs} gives it. */
export interface RegisteredRoute {
  /** Upper case: `GET`, `HEAD` (Fastify adds one for every GET), `POST`, … */
  method: string;
  /** The full URL pattern with `:param`s, e.g. `/v1/teams/:team_id`. */
  url: string;
  /** Which API prefix the route was registered under, or `''` for a route outside them. */
  prefix: string;
  /** `url` without `prefix`: the key of the route's doc and its path in the document. */
  path: string;
  /** Undefined for a route nobody described (a test fails then). HEAD routes share their GET's. */
  doc: RouteDoc | undefined;
  /**
   * False for the pages of the console and of its sign-in flows (`config: { apiDocument: false }`):
   * served, and answered 405 for other methods, but not API operations, so not in the document.
   */
  documented: boolean;
  /** Its answers carry a secret or a CSRF token, and so `Cache-Control: no-store` (`config: { noStore: true }`, http/security-headers.ts). */
  noStore: boolean;
}

/**
 * Every route of an app, collected once by one `onRoute` hook. It is what the server knows about
 * its own surface: the 405 answer's `Allow` list ({@link RouteRegistry.allowedMethods}), the
 * query parameters each route accepts, and the OpenAPI document (openapi/document.ts).
 */
export class RouteRegistry {
  readonly #routes: Array<RegisteredRoute & { pattern: RegExp }> = [];

  /** The API prefixes, canonical first (`/api/v1`, then its aliases). */
  readonly prefixes: readonly string[];

  constructor(prefixes: readonly string[]) {
    this.prefixes = prefixes;
  }

  /** Every route registered so far, in registration order. */
  get routes(): readonly RegisteredRoute[] {
    return this.#routes;
  }

  /** Records one route (called from the `onRoute` hook). Output: the record. */
  add(method: string, url: string, documented = true, noStore = false): RegisteredRoute {
    const prefix = this.prefixes.find((p) => url === p || url.startsWith(`${p}/`)) ?? '';
    const path = url.slice(prefix.length) || '/';
    const doc = routeDocs[`${method} ${path}`] ?? (method === 'HEAD' ? routeDocs[`GET ${path}`] : undefined);
    const escaped = url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z_][A-Za-z0-9_]*/g, '[^/]+');
    const route = { method, url, prefix, path, doc, documented, noStore, pattern: new RegExp(`^${escaped}$`) };
    this.#routes.push(route);
    return route;
  }

  /**
   * The methods served at a concrete request path (no query string), deduplicated in
   * registration order; empty when no route has that path. A trailing slash is ignored, as the
   * router ignores it.
   */
  allowedMethods(path: string): string[] {
    const bare = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
    return [...new Set(this.#routes.filter((r) => r.pattern.test(bare)).map((r) => r.method))];
  }
}

/**
 * Installs the one `onRoute` hook that fills a {@link RouteRegistry} with every route `app`
 * registers from now on, whichever plugin registers it, and gives each route a `preValidation`
 * hook refusing query parameters its doc does not name (400 `invalid_request`, each unknown
 * parameter in `errors`; contract §1 as for body fields). Call it before any route is registered.
 */
export function installRouteRegistry(app: FastifyInstance, prefixes: readonly string[]): RouteRegistry {
  const registry = new RouteRegistry(prefixes);
  app.addHook('onRoute', (options) => {
    const methods = (Array.isArray(options.method) ? options.method : [options.method]).map((m) => String(m).toUpperCase());
    const config = options.config as { apiDocument?: boolean; noStore?: boolean } | undefined;
    const noStore = config?.noStore === true;
    // Pages (the console, its sign-in flows) take whatever query their page reads: no check.
    if (config?.apiDocument === false) {
      for (const method of methods) registry.add(method, options.url, false, noStore);
      return;
    }
    // A route with several methods accepts what any of their docs names.
    const known = methods.flatMap((method) => Object.keys(registry.add(method, options.url, true, noStore).doc?.query?.shape ?? {}));
    const check: preValidationAsyncHookHandler = async (request) => rejectUnknownQuery(request.query, known);
    const existing = options.preValidation;
    options.preValidation = existing === undefined ? [check] : [check, ...(Array.isArray(existing) ? existing : [existing])];
  });
  return registry;
}

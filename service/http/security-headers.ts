/**
 * Response headers that keep secrets out of caches and browsers on plain HTTP (contract §14):
 * `Strict-Transport-Security` on every response when the public URL is https, and
 * `Cache-Control: no-store` on every response of a route that answers a secret or a session's
 * CSRF token (marked with {@link carriesSecret}), its stored Idempotency-Key replays included.
 */
import type { FastifyInstance } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's answers carry a secret (a key, a webhook secret, a sign-in link, a CSRF token): never stored by a cache. */
    noStore?: boolean;
  }
}

/**
 * How long a browser that reached the server over https keeps to https for its host: one year,
 * in seconds — what RFC 6797's deployments, OWASP and the browsers' preload lists ask for, long
 * enough that a person's next visit after months away is still protected. Neither
 * `includeSubDomains` nor `preload`: acs-server owns its host only, not the names beside it.
 */
export const hstsMaxAgeSeconds = 31_536_000;

/** The `Strict-Transport-Security` value sent when the public URL is https. */
export const hstsValue = `max-age=${hstsMaxAgeSeconds}`;

/** Route options of a route whose answers carry a secret or a CSRF token: `Cache-Control: no-store` (contract §14). */
export const carriesSecret: { config: { noStore: true } } = { config: { noStore: true } };

/** The headers every response carries for a server whose public URL is `publicUrl` (HSTS when it is https). */
export function everyResponseHeaders(publicUrl: string): Record<string, string> {
  return publicUrl.startsWith('https:') ? { 'strict-transport-security': hstsValue } : {};
}

/**
 * Adds the hooks of contract §14's headers to `app` (call it before anything else that may answer,
 * so that rate-limit refusals and hijacked event streams carry them too): `onRequest` sets
 * {@link everyResponseHeaders} from `publicUrl()` (read per request: the listen address is known
 * only once listening); `onSend` sets `Cache-Control: no-store` on the answers of routes marked
 * `noStore`, whatever their status. Raises nothing.
 */
export function installSecurityHeaders(app: FastifyInstance, publicUrl: () => string): void {
  app.addHook('onRequest', async (_request, reply) => {
    for (const [name, value] of Object.entries(everyResponseHeaders(publicUrl()))) reply.header(name, value);
  });
  app.addHook('onSend', async (request, reply, payload) => {
    if (request.routeOptions.config?.noStore) reply.header('cache-control', 'no-store');
    return payload;
  });
}

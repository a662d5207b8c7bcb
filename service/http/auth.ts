import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ServiceError } from '../../errors/catalogue.ts';
import type { Queryable } from '../storage/db.ts';
import type { Caller } from '../domain/caller.ts';
import { authenticateCached } from '../domain/key-cache.ts';
import { sessionCookieName } from '../sessions/sessions.ts';

const callers = new WeakMap<FastifyRequest, Caller>();

/**
 * Adds an `onRequest` hook to the routes of `app` (an encapsulated plugin) that resolves the
 * `X-API-Key` header before the body is read (contract §3), so that a request without a valid
 * key learns nothing else. Valid keys are cached for a few seconds per process (see
 * domain/key-cache.ts for how revocation beats the cache). Errors: `unauthenticated`,
 * `wrong_key_type`, `invalid_api_key`; `not_found` for a request with a console session cookie
 * and no key (contract §10).
 */
export function requireApiKey(app: FastifyInstance, db: Queryable): void {
  app.addHook('onRequest', async (request) => {
    const header = request.headers['x-api-key'];
    // A console session reaches the /api/v1/me routes only; everything else is 404 to it, as
    // to another tenant (contract §10), whether the session is live or not.
    if (header === undefined && request.cookies?.[sessionCookieName] !== undefined) {
      throw new ServiceError('not_found', 'not found: a console session reaches only the /api/v1/me routes');
    }
    callers.set(request, await authenticateCached(db, Array.isArray(header) ? header[0] : header));
  });
}

/** The authenticated caller of `request`. Errors: `unauthenticated` on a route without the hook. */
export function callerOf(request: FastifyRequest): Caller {
  const caller = callers.get(request);
  if (!caller) throw new ServiceError('unauthenticated', 'X-API-Key header is required');
  return caller;
}

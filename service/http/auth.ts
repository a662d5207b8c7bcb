import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ServiceError } from '../../errors/catalogue.ts';
import type { Queryable } from '../storage/db.ts';
import type { Caller } from '../domain/caller.ts';
import { authenticateCached } from '../domain/key-cache.ts';

const callers = new WeakMap<FastifyRequest, Caller>();

/**
 * Adds an `onRequest` hook to the routes of `app` (an encapsulated plugin) that resolves the
 * `X-API-Key` header before the body is read (contract §3), so that a request without a valid
 * key learns nothing else. Valid keys are cached for a few seconds per process (see
 * domain/key-cache.ts for how revocation beats the cache). Errors: `unauthenticated`,
 * `wrong_key_type`, `invalid_api_key`.
 */
export function requireApiKey(app: FastifyInstance, db: Queryable): void {
  app.addHook('onRequest', async (request) => {
    const header = request.headers['x-api-key'];
    callers.set(request, await authenticateCached(db, Array.isArray(header) ? header[0] : header));
  });
}

/** The authenticated caller of `request`. Errors: `unauthenticated` on a route without the hook. */
export function callerOf(request: FastifyRequest): Caller {
  const caller = callers.get(request);
  if (!caller) throw new ServiceError('unauthenticated', 'X-API-Key header is required');
  return caller;
}

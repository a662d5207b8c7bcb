import rateLimit from '@fastify/rate-limit';
import ms from 'ms';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ServiceError } from '../../errors/catalogue.ts';
import { findActiveOrgKey, findMcpKey } from '../domain/authentication.ts';
import { cachedCaller } from '../domain/key-cache.ts';
import { hashKey, orgKeyPrefix } from '../domain/key-secrets.ts';
import type { Queryable } from '../storage/db.ts';

/** Rate limit settings (contract §2): at most `max` requests per `windowMs` milliseconds. */
export interface RateLimitOptions {
  max: number;
  windowMs: number;
}

/** The contract's default: 1,200 requests a minute per API key. */
export const defaultRateLimit: RateLimitOptions = { max: 1200, windowMs: 60_000 };

/**
 * Reads `ACS_RATE_LIMIT` (requests per minute, a positive integer) from `env`.
 * Output: the options, or undefined when unset. Errors: throws when set but not a positive integer.
 */
export function rateLimitFromEnv(env: NodeJS.ProcessEnv): RateLimitOptions | undefined {
  const value = env.ACS_RATE_LIMIT;
  if (value === undefined || value === '') return undefined;
  const max = Number(value);
  if (!Number.isInteger(max) || max < 1) throw new Error('ACS_RATE_LIMIT must be a positive integer (requests per minute)');
  return { max, windowMs: 60_000 };
}

// Which bucket a key falls in is cached briefly: the lookup would otherwise double every
// request's authentication query. Only valid keys are cached; the map is bounded.
const bucketTtlMs = 30_000;
const maxCachedKeys = 10_000;

function createBucketResolver(db: Queryable): (request: FastifyRequest) => Promise<string> {
  const cache = new Map<string, { bucket: string; until: number }>();
  async function lookup(secret: string): Promise<string | undefined> {
    if (secret.startsWith(orgKeyPrefix)) {
      const key = await findActiveOrgKey(db, secret);
      return key && `key:${key.id}`;
    }
    const mcp = await findMcpKey(db, secret);
    return mcp && `key:${mcp.keyId}`;
  }
  return async (request) => {
    const header = request.headers['x-api-key'];
    const secret = (Array.isArray(header) ? header[0] : header)?.trim();
    // No valid key: the client's address is the bucket, so made-up keys cannot dodge the limit.
    const byAddress = `ip:${request.ip}`;
    if (!secret || !/^acs_(org|mcp)_[A-Za-z0-9]{32,}$/.test(secret)) return byAddress;
    // A key the authentication hook has just vouched for (domain/key-cache.ts) needs no lookup.
    const known = cachedCaller(db, secret);
    if (known !== undefined) return `key:${known.keyId}`;
    const hash = hashKey(secret);
    const cached = cache.get(hash);
    if (cached && cached.until > Date.now()) return cached.bucket;
    try {
      const bucket = await lookup(secret);
      if (bucket === undefined) return byAddress;
      if (cache.size >= maxCachedKeys) cache.clear();
      cache.set(hash, { bucket, until: Date.now() + bucketTtlMs });
      return bucket;
    } catch {
      // Storage trouble is answered by the route (503); the limiter falls back to the address.
      return byAddress;
    }
  };
}

/**
 * Installs per-key rate limiting (contract §2) on every request of `app`, including 404s: a
 * root `onRequest` hook of `@fastify/rate-limit` (in-process memory store), run before any
 * authentication so that requests with no or a bad key are limited too, by client address.
 * Every response carries `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` (seconds
 * until the window resets); over the limit: 429 `rate_limited` with `Retry-After` (seconds).
 * Call it before any other hook and route.
 */
export async function installRateLimit(app: FastifyInstance, db: Queryable, options: RateLimitOptions): Promise<void> {
  await app.register(rateLimit, {
    global: false,
    max: options.max,
    timeWindow: options.windowMs,
    enableDraftSpec: true,
    keyGenerator: createBucketResolver(db),
    // `context.after` is the time left in the window, not the window: name both for what they are.
    errorResponseBuilder: (_request, context) =>
      new ServiceError(
        'rate_limited',
        `more than ${context.max} requests in ${ms(options.windowMs, { long: true })} with this key; the limit resets in ${Math.max(1, Math.ceil(context.ttl / 1000))} s (Retry-After)`,
      ),
  });
  app.addHook('onRequest', app.rateLimit());
}

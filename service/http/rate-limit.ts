import rateLimit from '@fastify/rate-limit';
import ms from 'ms';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../../errors/catalogue.ts';
import type { RateLimitStore } from '../storage/rate-limit-store.ts';
import type { ClientResolver } from './client-bucket.ts';

/**
 * Rate limit settings (contract §2): at most `max` requests per `windowMs` milliseconds.
 * `repeatDelayMs` (default {@link defaultRepeatDelayMs}): how long a bucket's second and later
 * refusals of one window are held before they are answered (see {@link installRateLimit}).
 */
export interface RateLimitOptions {
  max: number;
  windowMs: number;
  repeatDelayMs?: number;
}

/**
 * How long a refusal is held when its bucket was refused already in the same window: a client
 * that honours `Retry-After` is refused once per window and never waits for this; one that keeps
 * sending is slowed to a request per second per connection.
 */
export const defaultRepeatDelayMs = 1_000;

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

/**
 * The rate limiter of one app, for routes whose requests cost more than one: a JSON-RPC batch of
 * the MCP endpoint costs one per message (issue 21, defect 2).
 */
export interface RateLimiter {
  readonly options: RateLimitOptions;
  /**
   * Charges `cost` in all to the bucket `request` was counted in (its first unit was charged when
   * it arrived, so `cost - 1` more), and updates its `RateLimit-Remaining`.
   * Errors: `invalid_request` when `cost` exceeds a whole window's budget (it could never pass);
   * `rate_limited` (with `Retry-After`) when the bucket has not that much left. Storage trouble
   * lets the request through, as for single requests.
   */
  charge(request: FastifyRequest, reply: FastifyReply, cost: number): Promise<void>;
}

function rateLimited(options: RateLimitOptions, resetInMs: number, cost = 1): ServiceError {
  const what = cost === 1 ? '' : ` (this request counts ${cost})`;
  return new ServiceError(
    'rate_limited',
    `more than ${options.max} requests in ${ms(options.windowMs, { long: true })} with this key${what}; the limit resets in ${Math.max(1, Math.ceil(resetInMs / 1000))} s (Retry-After)`,
  );
}

/**
 * Installs rate limiting (contract §2) on every request of `app`, including 404s, counted in the
 * bucket `resolveBucket` says (http/client-bucket.ts): a root
 * `onRequest` hook of `@fastify/rate-limit` over `store` (this process's memory, or PostgreSQL
 * shared by every process of a deployment: storage/rate-limit-store.ts), run before any
 * authentication so that requests with no or a bad key are limited too, by client address. Every
 * response carries `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` (seconds until
 * the window resets); over the limit: 429 `rate_limited` with `Retry-After` (seconds). A bucket's
 * first refusal in a window is answered at once; later ones of the same window are held
 * `repeatDelayMs` (at most until the window ends) before their 429, whose `Retry-After` then
 * counts from the answer: a client that keeps sending regardless cannot take the cores from
 * everyone else (issue 21, the soak's hostile client). When the
 * store fails, requests pass (the routes answer storage trouble themselves).
 * Call it before any other hook and route. Output: the {@link RateLimiter} of routes that charge more.
 */
export async function installRateLimit(app: FastifyInstance, resolveBucket: ClientResolver, options: RateLimitOptions, store: RateLimitStore): Promise<RateLimiter> {
  // The time left in the window of each refusal the limiter made (ms), to hold repeated ones.
  const refusals = new WeakMap<object, number>();
  // @fastify/rate-limit instantiates its store from a class; this one hands each hit to `store`.
  class SharedStore {
    incr(key: string, callback: (error: Error | null, result?: { current: number; ttl: number }) => void, timeWindow: number, max: number): void {
      store.hit(key, 1, timeWindow, max).then(
        (hit) => callback(null, { current: hit.hits, ttl: hit.resetInMs }),
        (error: unknown) => callback(error as Error),
      );
    }
    child(): SharedStore {
      return this;
    }
  }
  await app.register(rateLimit, {
    global: false,
    max: options.max,
    timeWindow: options.windowMs,
    enableDraftSpec: true,
    store: SharedStore,
    skipOnError: true,
    keyGenerator: (request) => resolveBucket(request),
    // `context.after` is the time left in the window, not the window: name both for what they are.
    errorResponseBuilder: (_request, context) => {
      const error = rateLimited(options, context.ttl);
      refusals.set(error, context.ttl);
      return error;
    },
  });
  const limit = app.rateLimit();
  const repeatDelayMs = options.repeatDelayMs ?? defaultRepeatDelayMs;
  // Buckets refused in their current window: bucket → when that window ends (bounded).
  const refused = new Map<string, number>();
  const maxRefusedBuckets = 10_000;
  app.addHook('onRequest', async (request, reply) => {
    try {
      await limit.call(app, request, reply);
    } catch (error) {
      const ttl = refusals.get(error as object);
      const bucket = resolveBucket.known(request);
      if (ttl === undefined || bucket === undefined || repeatDelayMs <= 0) throw error;
      const now = Date.now();
      const refusedUntil = refused.get(bucket);
      if (refusedUntil === undefined || refusedUntil <= now) {
        if (refused.size >= maxRefusedBuckets) refused.clear();
        refused.set(bucket, now + ttl);
        throw error;
      }
      // A flood that ignores Retry-After is answered slowly: each refusal costs it this delay and
      // the server one timer, instead of the flood taking the cores from everyone else.
      const delay = Math.min(repeatDelayMs, ttl);
      await new Promise((resolve) => setTimeout(resolve, delay));
      const left = Math.max(0, ttl - delay);
      const seconds = Math.ceil(left / 1000);
      reply.header('ratelimit-reset', seconds);
      reply.header('retry-after', Math.max(1, seconds));
      throw rateLimited(options, left);
    }
  });
  return {
    options,
    async charge(request, reply, cost) {
      const bucket = resolveBucket.known(request);
      if (bucket === undefined || cost <= 1) return;
      if (cost > options.max) {
        const message = `counts ${cost} requests of the rate limit (one per JSON-RPC message), more than the ${options.max} a window allows: send at most ${options.max} at once`;
        throw new ServiceError('invalid_request', `body: ${message}`, { errors: [{ path: 'body', message }] });
      }
      let hit;
      try {
        hit = await store.hit(bucket, cost - 1, options.windowMs, options.max);
      } catch {
        return;
      }
      const reset = Math.ceil(hit.resetInMs / 1000);
      reply.header('ratelimit-remaining', Math.max(0, options.max - hit.hits));
      reply.header('ratelimit-reset', reset);
      if (hit.hits > options.max) {
        reply.header('retry-after', Math.max(1, reset));
        throw rateLimited(options, hit.resetInMs, cost);
      }
    },
  };
}

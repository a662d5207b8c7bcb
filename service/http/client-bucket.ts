/**
 * Who a request comes from, as the rate limit (http/rate-limit.ts) and fair sharing
 * (http/fair-share.ts) count it: its "bucket".
 */
import type { FastifyRequest } from 'fastify';
import { findActiveOrgKey, findMcpKey } from '../domain/authentication.ts';
import { cachedCaller } from '../domain/key-cache.ts';
import { hashKey, orgKeyPrefix } from '../domain/key-secrets.ts';
import type { Queryable } from '../storage/db.ts';

/** The bucket of a request (computed once per request). */
export interface ClientResolver {
  (request: FastifyRequest): Promise<string>;
  /** The bucket of `request` when it is known already (resolved earlier), without waiting. */
  known(request: FastifyRequest): string | undefined;
}

// Which bucket a key falls in is cached briefly: the lookup would otherwise double every
// request's authentication query. Only valid keys are cached; the map is bounded.
const bucketTtlMs = 30_000;
const maxCachedKeys = 10_000;

/**
 * The bucket of a request: `key:<id>` for an organization key, `agent:<id>` for an MCP key (an
 * agent's keys share one budget, so more keys buy no more requests), `ip:<address>` without a
 * valid key (so made-up keys cannot dodge the limit). A key is looked up in `db` at most once per
 * 30 s; storage trouble falls back to the address. Output: a resolver that answers each request
 * once and then from memory.
 */
export function createClientResolver(db: Queryable): ClientResolver {
  const cache = new Map<string, { bucket: string; until: number }>();
  const resolved = new WeakMap<FastifyRequest, Promise<string>>();
  const known = new WeakMap<FastifyRequest, string>();
  async function lookup(secret: string): Promise<string | undefined> {
    if (secret.startsWith(orgKeyPrefix)) {
      const key = await findActiveOrgKey(db, secret);
      return key && `key:${key.id}`;
    }
    const mcp = await findMcpKey(db, secret);
    return mcp && `agent:${mcp.agentId}`;
  }
  async function resolve(request: FastifyRequest): Promise<string> {
    const header = request.headers['x-api-key'];
    const secret = (Array.isArray(header) ? header[0] : header)?.trim();
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
      // Storage trouble is answered by the route (503); the bucket falls back to the address.
      return byAddress;
    }
  }
  const resolver = (request: FastifyRequest): Promise<string> => {
    let bucket = resolved.get(request);
    if (bucket === undefined) {
      bucket = resolve(request).then((name) => {
        known.set(request, name);
        return name;
      });
      resolved.set(request, bucket);
    }
    return bucket;
  };
  return Object.assign(resolver, { known: (request: FastifyRequest) => known.get(request) });
}

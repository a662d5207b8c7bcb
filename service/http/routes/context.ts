import type { DomainDeps } from '../../domain/caller.ts';
import type { HostPolicy } from '../allowed-hosts.ts';
import type { RateLimiter } from '../rate-limit.ts';

/**
 * What route handlers get: domain dependencies, the server's shutdown signal (ends long polls),
 * and the rate limiter when limits are on (for requests that cost more than one: MCP batches).
 */
export interface RouteContext {
  deps: DomainDeps;
  shutdown: AbortSignal;
  rateLimiter?: RateLimiter | undefined;
  /** The Host and Origin values the MCP endpoint accepts, once the server listens (undefined: not checked). */
  hostPolicy?: (() => HostPolicy | undefined) | undefined;
}

/** Path parameters as Fastify hands them over. */
export type Params<K extends string> = { Params: Record<K, string> };

import type { DomainDeps } from '../../domain/caller.ts';
import type { HeldWaits } from '../../events/held-waits.ts';
import type { ThreadStreams } from '../../events/thread-stream.ts';
import type { WebhookRuntime } from '../../events/webhooks/webhooks.ts';
import type { HostPolicy } from '../allowed-hosts.ts';
import type { RateLimiter } from '../rate-limit.ts';

/**
 * What route handlers get: domain dependencies, the server's shutdown signal (ends long polls),
 * the counter of held waits (a request that holds its connection while nothing happens takes
 * a place first: events/held-waits.ts), and the rate limiter when limits are on (for requests
 * that cost more than one: MCP batches).
 */
export interface RouteContext {
  deps: DomainDeps;
  shutdown: AbortSignal;
  rateLimiter?: RateLimiter | undefined;
  /** The Host and Origin values the MCP endpoint accepts, once the server listens (undefined: not checked). */
  hostPolicy?: (() => HostPolicy | undefined) | undefined;
  heldWaits: HeldWaits;
  /** Webhook settings, and the worker to tell of a change (events/webhooks/worker.ts). */
  webhooks: WebhookRuntime;
  /** Keep-alive period of event streams in milliseconds (default 15,000). */
  streamKeepAliveMs?: number | undefined;
  /** The readers of threads' streams in this process (events/thread-stream.ts). */
  threadStreams: ThreadStreams;
}

/** Path parameters as Fastify hands them over. */
export type Params<K extends string> = { Params: Record<K, string> };

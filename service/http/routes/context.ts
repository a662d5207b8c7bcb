import type { DomainDeps } from '../../domain/caller.ts';
import type { HeldWaits } from '../../events/held-waits.ts';
import type { WebhookRuntime } from '../../events/webhooks/webhooks.ts';

/**
 * What route handlers get: domain dependencies, the server's shutdown signal (ends long polls)
 * and the counter of held waits (a request that holds its connection while nothing happens takes
 * a place first: events/held-waits.ts).
 */
export interface RouteContext {
  deps: DomainDeps;
  shutdown: AbortSignal;
  heldWaits: HeldWaits;
  /** Webhook settings, and the worker to tell of a change (events/webhooks/worker.ts). */
  webhooks: WebhookRuntime;
  /** Keep-alive period of event streams in milliseconds (default 15,000). */
  streamKeepAliveMs?: number | undefined;
}

/** Path parameters as Fastify hands them over. */
export type Params<K extends string> = { Params: Record<K, string> };

import type { DomainDeps } from '../../domain/caller.ts';
import type { HeldWaits } from '../../events/held-waits.ts';

/**
 * What route handlers get: domain dependencies, the server's shutdown signal (ends long polls)
 * and the counter of held waits (a request that holds its connection while nothing happens takes
 * a place first: events/held-waits.ts).
 */
export interface RouteContext {
  deps: DomainDeps;
  shutdown: AbortSignal;
  heldWaits: HeldWaits;
}

/** Path parameters as Fastify hands them over. */
export type Params<K extends string> = { Params: Record<K, string> };

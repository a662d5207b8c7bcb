import type { DomainDeps } from '../../domain/caller.ts';

/** What route handlers get: domain dependencies and the server's shutdown signal (ends long polls). */
export interface RouteContext {
  deps: DomainDeps;
  shutdown: AbortSignal;
}

/** Path parameters as Fastify hands them over. */
export type Params<K extends string> = { Params: Record<K, string> };

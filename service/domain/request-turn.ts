/**
 * The place a request holds among the requests a process handles at once (http/fair-share.ts),
 * as the domain code a request runs sees it. A request that is about to hold a wait — a long poll
 * with nothing to answer yet, an MCP `wait_for_messages`, an event stream — gives its place back
 * with {@link yieldTurn}: waiting costs no CPU, and a place held for 30 s of waiting would keep
 * others' requests queued for nothing.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** A request's place; `release` is idempotent. */
export interface RequestTurn {
  release(): void;
}

/** The place of the request whose handler is running (set by the HTTP layer around each handler). */
export const requestTurn = new AsyncLocalStorage<RequestTurn>();

/**
 * Gives back the running request's place, if it holds one (outside a request, or with fair
 * sharing off, nothing happens). Call it right before a wait that may last; the rest of the
 * request (its answer) runs without a place.
 */
export function yieldTurn(): void {
  requestTurn.getStore()?.release();
}

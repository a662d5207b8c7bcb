/**
 * Bounds on held waits (issue 21, defect 1): requests that hold a connection while nothing
 * happens — thread and event long polls, MCP `wait_for_messages`, event streams — are counted per
 * API key and per process, and one past either bound is refused at once with 429
 * `too_many_waits` (with `Retry-After`) instead of being held. A single client can then neither
 * exhaust the process's memory and sockets nor crowd out other tenants' waits.
 */
import { ServiceError } from '../../errors/catalogue.ts';

/** The bounds; both are counts of requests held at once. */
export interface HeldWaitLimits {
  /** In the whole process (default 10,000). */
  perProcess: number;
  /** Per API key, organization or MCP key alike (default 1,000). */
  perKey: number;
}

/** Defaults of {@link HeldWaitLimits}. */
export const defaultHeldWaitLimits: HeldWaitLimits = { perProcess: 10_000, perKey: 1_000 };

/** Seconds a refused client is told to wait (`Retry-After`): a held wait ends within 30 s. */
const retryAfterSeconds = 5;

/**
 * What a held wait is, for the metrics (`acs_held_waits{kind}`): a thread long poll
 * (`GET /threads/{id}?wait`), an event long poll (`GET …/events?wait`), an event stream (SSE, the
 * API's and the console's), an MCP `wait_for_messages`.
 */
export const HeldWaitKinds = { thread_poll: 'thread_poll', event_poll: 'event_poll', event_stream: 'event_stream', mcp_wait: 'mcp_wait' } as const;
export type HeldWaitKind = (typeof HeldWaitKinds)[keyof typeof HeldWaitKinds];

/** Which bound refused a wait: the key's or the process's. */
export type HeldWaitRefusal = 'per_key' | 'per_process';

/** Told of every change of the held waits (service/metrics/): places taken and given back, refusals. */
export interface HeldWaitObserver {
  /** `delta` places of `kind` were taken (positive) or given back (negative). */
  held(kind: HeldWaitKind, delta: number): void;
  refused(reason: HeldWaitRefusal): void;
}

/** The counter of held waits of one process. */
export interface HeldWaits {
  /**
   * Takes `count` places of `kind` for `keyId` (default 1 of `thread_poll`) and returns their
   * release (idempotent). Errors: `too_many_waits` (429) when the key or the process would go past
   * its bound; nothing is taken then.
   */
  acquire(keyId: string, count?: number, kind?: HeldWaitKind): () => void;
  /** Waits held now, in all and for one key. */
  held(keyId?: string): number;
  readonly limits: HeldWaitLimits;
}

/** Creates the counter of one process with `limits`; `observer` (the metrics) is told of every change. */
export function createHeldWaits(limits: HeldWaitLimits = defaultHeldWaitLimits, observer?: HeldWaitObserver): HeldWaits {
  const byKey = new Map<string, number>();
  let total = 0;
  return {
    limits,
    acquire(keyId, count = 1, kind = HeldWaitKinds.thread_poll) {
      if (count <= 0) return () => {};
      const mine = byKey.get(keyId) ?? 0;
      if (mine + count > limits.perKey) {
        observer?.refused('per_key');
        throw refusal(`this key already holds ${mine} waiting request${mine === 1 ? '' : 's'} (long polls, MCP waits, event streams); at most ${limits.perKey} are held per key`);
      }
      if (total + count > limits.perProcess) {
        observer?.refused('per_process');
        throw refusal(`the server already holds ${total} waiting requests, its limit (${limits.perProcess})`);
      }
      byKey.set(keyId, mine + count);
      total += count;
      observer?.held(kind, count);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        total -= count;
        observer?.held(kind, -count);
        const left = (byKey.get(keyId) ?? count) - count;
        if (left > 0) byKey.set(keyId, left);
        else byKey.delete(keyId);
      };
    },
    held(keyId) {
      return keyId === undefined ? total : (byKey.get(keyId) ?? 0);
    },
  };
}

function refusal(detail: string): ServiceError {
  return new ServiceError('too_many_waits', `${detail}; retry once one of them has ended`);
}

/** The `Retry-After` (seconds) of a `too_many_waits` refusal. */
export const heldWaitRetryAfterSeconds = retryAfterSeconds;

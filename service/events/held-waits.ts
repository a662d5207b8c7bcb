/**
 * Bounds on held waits (issue 21, defect 1; contract §14): requests that hold a connection while
 * nothing happens — thread and event long polls, MCP `wait_for_messages`, event and thread streams,
 * the console's streams — are counted per key, per organization and per process, and one past any
 * bound is refused at once with 429 `too_many_waits` (with `Retry-After`) instead of being held. A
 * single client can then neither exhaust the process's memory and sockets nor crowd out other
 * tenants' waits, and one organization — however many keys, MCP keys and sessions it has or
 * mints — holds at most its share of the process (issue 41, item 2).
 *
 * The counts are this process's: with several processes on one database, an organization may hold
 * its bound in each. That is the resource the bounds protect (a process's sockets, memory and
 * per-process bound), and counting in the database would cost a write per wait and leave counts
 * behind a process killed with `kill -9`.
 */
import { ServiceError } from '../../errors/catalogue.ts';

/** The bounds; each is a count of requests held at once in this process. */
export interface HeldWaitLimits {
  /** In the whole process (default 10,000). */
  perProcess: number;
  /** Per organization: its keys', its agents' MCP keys' and the sessions' waits about it together (default 2,000). */
  perOrg: number;
  /** Per API key, organization or MCP key alike, and per console session (default 1,000). */
  perKey: number;
}

/** Defaults of {@link HeldWaitLimits}: five organizations fill a process's 10,000. */
export const defaultHeldWaitLimits: HeldWaitLimits = { perProcess: 10_000, perOrg: 2_000, perKey: 1_000 };

/**
 * Who holds a wait: `keyId`, the key or session it is counted under (an organization key's id, an
 * MCP key's id, `session:<id>`), and `orgId`, the organization it counts toward — an
 * organization key's own, an MCP key's agent's, and for a session the organization the request is
 * about (a person's humans may be in several).
 */
export interface HeldWaitHolder {
  keyId: string;
  orgId: string;
}

/** Seconds a refused client is told to wait (`Retry-After`): a held wait ends within 30 s. */
const retryAfterSeconds = 5;

/**
 * What a held wait is, for the metrics (`acs_held_waits{kind}`): a thread long poll
 * (`GET /threads/{id}?wait`), an event long poll (`GET …/events?wait`), an event stream (SSE, the
 * API's and the console's), an MCP `wait_for_messages`.
 */
export const HeldWaitKinds = { thread_poll: 'thread_poll', event_poll: 'event_poll', event_stream: 'event_stream', mcp_wait: 'mcp_wait' } as const;
export type HeldWaitKind = (typeof HeldWaitKinds)[keyof typeof HeldWaitKinds];

/** Which bound refused a wait (`acs_held_waits_refused_total{reason}`): the key's, the organization's or the process's. */
export const HeldWaitRefusals = { per_key: 'per_key', per_org: 'per_org', per_process: 'per_process' } as const;
export type HeldWaitRefusal = (typeof HeldWaitRefusals)[keyof typeof HeldWaitRefusals];

/** Told of every change of the held waits (service/metrics/): places taken and given back, refusals. */
export interface HeldWaitObserver {
  /** `delta` places of `kind` were taken (positive) or given back (negative). */
  held(kind: HeldWaitKind, delta: number): void;
  refused(reason: HeldWaitRefusal): void;
}

/** The counter of held waits of one process. */
export interface HeldWaits {
  /**
   * Takes `count` places of `kind` for `holder` (default 1 of `thread_poll`) and returns their
   * release (idempotent). Errors: `too_many_waits` (429) when the holder's key, its organization
   * or the process would go past its bound (checked in that order; the refusal names the first);
   * nothing is taken then.
   */
  acquire(holder: HeldWaitHolder, count?: number, kind?: HeldWaitKind): () => void;
  /** Waits held now: in all, or of one key (`{ keyId }`) or one organization (`{ orgId }`). */
  held(of?: { keyId: string } | { orgId: string }): number;
  readonly limits: HeldWaitLimits;
}

/** Adds `by` to `map`'s count of `name`, dropping it at 0 (the maps hold only holders that hold something). */
function add(map: Map<string, number>, name: string, by: number): void {
  const value = (map.get(name) ?? 0) + by;
  if (value > 0) map.set(name, value);
  else map.delete(name);
}

const plural = (n: number) => `${n} waiting request${n === 1 ? '' : 's'}`;

/** Creates the counter of one process with `limits`; `observer` (the metrics) is told of every change. */
export function createHeldWaits(limits: HeldWaitLimits = defaultHeldWaitLimits, observer?: HeldWaitObserver): HeldWaits {
  const byKey = new Map<string, number>();
  const byOrg = new Map<string, number>();
  let total = 0;
  return {
    limits,
    acquire({ keyId, orgId }, count = 1, kind = HeldWaitKinds.thread_poll) {
      if (count <= 0) return () => {};
      const mine = byKey.get(keyId) ?? 0;
      if (mine + count > limits.perKey) {
        observer?.refused(HeldWaitRefusals.per_key);
        throw refusal(`this key already holds ${plural(mine)} (long polls, MCP waits, event streams); at most ${limits.perKey} are held per key`);
      }
      const ours = byOrg.get(orgId) ?? 0;
      if (ours + count > limits.perOrg) {
        observer?.refused(HeldWaitRefusals.per_org);
        throw refusal(`this organization already holds ${plural(ours)} on this server (its keys', agents' and sessions' long polls, MCP waits and streams together); at most ${limits.perOrg} are held per organization`);
      }
      if (total + count > limits.perProcess) {
        observer?.refused(HeldWaitRefusals.per_process);
        throw refusal(`the server already holds ${total} waiting requests, its limit (${limits.perProcess})`);
      }
      add(byKey, keyId, count);
      add(byOrg, orgId, count);
      total += count;
      observer?.held(kind, count);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        total -= count;
        add(byKey, keyId, -count);
        add(byOrg, orgId, -count);
        observer?.held(kind, -count);
      };
    },
    held(of) {
      if (of === undefined) return total;
      return 'keyId' in of ? (byKey.get(of.keyId) ?? 0) : (byOrg.get(of.orgId) ?? 0);
    },
  };
}

function refusal(detail: string): ServiceError {
  return new ServiceError('too_many_waits', `${detail}; retry once one of them has ended`);
}

/** The `Retry-After` (seconds) of a `too_many_waits` refusal. */
export const heldWaitRetryAfterSeconds = retryAfterSeconds;

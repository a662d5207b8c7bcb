/**
 * Reading an organization's event log over HTTP (contract §9): a page after a seq, held as a long
 * poll while nothing follows. The wait is fed by the process's event hub, which reads each new
 * event once for all its waiters: a held poll costs no query when it is answered.
 */
import type { EventPage } from '../../api/events.ts';
import type { DomainDeps } from '../domain/caller.ts';
import { allTopic } from './hub.ts';
import { matchesFilter, readEvents, type EventFilter, type StoredEvent } from './log.ts';
import { yieldTurn } from '../domain/request-turn.ts';

/** What a page asks for: after a seq (undefined: from the oldest kept), how many, how long to wait, which events. */
export interface EventPageRequest {
  after: number | undefined;
  limit: number;
  /** Seconds, 0–30. */
  wait: number;
  filter: EventFilter;
}

/**
 * Returns up to `limit` events of `orgId` after `after` that pass the filter, oldest first, and
 * `next_after` (contract §9). With `wait` > 0 and nothing there, holds until such an event is
 * written, `wait` seconds pass or `signal` aborts, then answers with what came (possibly none).
 * No access check: callers check that the organization is reachable.
 * Errors: `events_expired` (410, `oldest_seq`), `invalid_cursor` (after beyond the newest seq).
 */
export async function getEventPage(deps: DomainDeps, orgId: string, request: EventPageRequest, signal?: AbortSignal): Promise<EventPage> {
  // Events committed before this request are numbered first, so a client reads its own writes.
  await deps.events.settle(orgId);
  if (request.wait <= 0 || signal?.aborted) {
    const read = await readEvents(deps.db, orgId, request.after, request.limit, request.filter);
    return { events: read.events, next_after: read.nextAfter };
  }
  // Subscribe before reading: every event after the subscription's head reaches the listener, and
  // the read sees everything up to it (and maybe more: those come twice and are dropped by seq).
  const arrived: StoredEvent[] = [];
  let seen = 0;
  let wake: () => void = () => {};
  const subscription = await deps.events.subscribe(orgId, allTopic, (events) => {
    seen = Math.max(seen, events.at(-1)!.seq);
    for (const event of events) if (matchesFilter(event, request.filter)) arrived.push(event);
    wake();
  });
  try {
    const first = await readEvents(deps.db, orgId, request.after, request.limit, request.filter);
    if (first.events.length > 0) return { events: first.events, next_after: first.nextAfter };
    const from = first.nextAfter;
    const fresh = () => arrived.filter((event) => event.seq > from);
    if (fresh().length === 0) {
      yieldTurn();
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', done);
          resolve();
        };
        const timer = setTimeout(done, request.wait * 1000);
        signal?.addEventListener('abort', done, { once: true });
        wake = () => {
          if (fresh().length > 0) done();
        };
      });
    }
    const events = fresh().slice(0, request.limit);
    const full = events.length === request.limit;
    return { events, next_after: full ? events.at(-1)!.seq : Math.max(from, seen) };
  } finally {
    subscription.unsubscribe();
  }
}

/**
 * An organization's events as Server-Sent Events (contract §9, `…/events/stream`; the WHATWG
 * HTML "Server-sent events" format): each event as `id: <seq>`, `event: <type>`, `data: <the
 * event JSON>`, a comment line at least every 15 s to keep the connection open, and resumption
 * from `Last-Event-ID`.
 *
 * Reusable with a caller-supplied filter: besides the types and team of contract §9, `accept`
 * decides per event (the console streams a person's threads only, contract §10). The stream
 * first reads what it missed from storage (in pages), then goes on with the events the process's
 * event hub hands it, so a live event costs no query per stream.
 */
import type { ServerResponse } from 'node:http';
import { assertCursor, logBounds, matchesFilter, readEvents, type EventFilter, type StoredEvent } from './log.ts';
import { allTopic, type EventHub } from './hub.ts';
import { sseSession } from './sse-session.ts';
import type { Queryable } from '../storage/db.ts';

/** Events read per statement while catching up. */
const catchUpPage = 500;

/** What to stream. */
export interface EventStreamOptions {
  db: Queryable;
  hub: EventHub;
  orgId: string;
  /** The events of contract §9's filters (types, team); applied in storage while catching up. */
  filter: EventFilter;
  /** A further test per event, for callers with a narrower view (the console: a person's threads). */
  accept?: (event: StoredEvent) => boolean;
  /** Start after this seq; undefined: with the events written from now on. */
  after: number | undefined;
  /** Keep-alive period in milliseconds (default 15 s, events/sse-session.ts). */
  keepAliveMs?: number;
  /** Ends the stream (the server stops). */
  signal: AbortSignal;
  /**
   * How an event is written (default {@link sseFrame}: `id: <seq>` and the event as stored); the
   * console's stream writes opaque ids and leaves the seq out (contract §10).
   */
  frame?: (event: StoredEvent) => string;
  /** The comment that opens the stream, given the seq it starts after (default `connected after <seq>`). */
  greeting?: (after: number) => string;
}

/**
 * Checks where a stream may start before anything is sent, so a refusal is still an ordinary
 * error response. Errors: `events_expired` (410, `oldest_seq`), `invalid_cursor`.
 */
export async function checkStreamStart(db: Queryable, orgId: string, after: number | undefined): Promise<void> {
  if (after === undefined) return;
  assertCursor(after, await logBounds(db, orgId));
}

// The hub hands the same event object to every stream of the process: it is serialized once.
const frames = new WeakMap<StoredEvent, string>();

/** One event as an SSE frame (serialized once per event object, however many streams send it). */
export function sseFrame(event: StoredEvent): string {
  let frame = frames.get(event);
  if (frame === undefined) {
    frame = `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
    frames.set(event, frame);
  }
  return frame;
}

/**
 * Streams events on `res`, whose status and headers the caller has written (200,
 * `text/event-stream`). Resolves when the stream ends: the client went away, `signal` aborted, the
 * client read too slowly (more than 4 MiB left unread: closed, to be resumed), or reading failed
 * (the stream is closed; a client resumes from its last id). The skeleton is events/sse-session.ts's.
 */
export function streamEvents(res: ServerResponse, options: EventStreamOptions): Promise<void> {
  const { hub, orgId, filter } = options;
  const accept = (event: StoredEvent) => matchesFilter(event, filter) && (options.accept?.(event) ?? true);
  const frame = options.frame ?? sseFrame;
  // The last seq sent or passed over: a live event at or before it was already read from storage.
  let cursor = 0;
  const live = (event: StoredEvent): string | undefined => {
    if (event.seq <= cursor) return undefined;
    cursor = event.seq;
    return accept(event) ? frame(event) : undefined;
  };
  return sseSession<StoredEvent>(res, { signal: options.signal, keepAliveMs: options.keepAliveMs, frame: live }, async (session) => {
    const subscription = await hub.subscribe(orgId, allTopic, (events) => session.deliver(events));
    session.defer(() => subscription.unsubscribe());
    // How long a client waits before it reconnects, and where the stream starts: a client that
    // saw no event before it was cut off resumes from there (an `id:` without data would not be
    // kept by every parser, so a comment says it).
    // Events committed before the stream began are numbered (and then handed to the subscription).
    await hub.settle(orgId);
    cursor = options.after ?? subscription.head;
    session.write(`retry: 2000\n: ${options.greeting?.(cursor) ?? `connected after ${cursor}`}\n\n`);
    if (options.after === undefined) return;
    for (;;) {
      if (session.ended) return;
      const page = await readEvents(options.db, orgId, cursor, catchUpPage, filter);
      for (const event of page.events) if (options.accept?.(event) ?? true) session.write(frame(event));
      cursor = page.nextAfter;
      if (!page.full) break;
    }
  });
}

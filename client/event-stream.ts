/**
 * Reading an organization's event stream (contract §9, `GET …/events/stream`): Server-Sent Events
 * parsed with `eventsource-parser`, resumed from the last event's id (`Last-Event-ID`) after a
 * dropped connection, as an EventSource does.
 */
import type { Event } from '../api/events.ts';
import { readSse, type StreamTransport } from './sse-reconnect.ts';

/** What to stream and how. */
export interface EventStreamRequest {
  /** Start after this seq; undefined: the events written from now on. */
  after?: number | undefined;
  /** Types to receive (`message.created`, `message.*`); default every type. */
  types?: readonly string[] | undefined;
  /** Only this team's events. */
  teamId?: string | undefined;
  /** Ends the stream (the iterator returns). */
  signal?: AbortSignal | undefined;
  /** Reconnect after a dropped connection, from the last event received (default true). */
  reconnect?: boolean | undefined;
  /** Delay before a reconnect in milliseconds (default 1,000). */
  reconnectMs?: number | undefined;
  /**
   * Called each time a connection is open and the service said where it starts (its `connected
   * after SEQ` comment), with that seq: from then on no event is missed, so a caller may read
   * what happened before (a thread's history) without a gap.
   */
  onConnected?: ((afterSeq: number) => void) | undefined;
  /**
   * Called when a connection is lost and a reconnect follows (after `reconnectMs`): the server
   * ended the stream (it stopped, or this client read too slowly), the connection dropped or was
   * refused, or the service answered 5xx. Input: why, as a person reads it (`connection refused`,
   * `the server ended the stream`, `503 unavailable`). Called again for each failed reconnect;
   * {@link onConnected} says when the stream is back.
   */
  onDisconnected?: ((why: string) => void) | undefined;
}

/**
 * Yields the events of the stream at `transport.url`, in seq order, until `request.signal` aborts.
 * A refusal of the service (a 4xx: `events_expired`, `invalid_cursor`, `not_found`, …) is thrown
 * as {@link AcsApiError}; a dropped connection or a 5xx is retried from the last id received
 * (unless `reconnect` is false: then it is thrown, `network_error` for a dropped connection).
 * The loop and the errors are client/sse-reconnect.ts's.
 */
export function readEventStream(transport: StreamTransport, request: EventStreamRequest = {}): AsyncGenerator<Event> {
  const query = new URLSearchParams();
  if (request.types?.length) query.set('types', request.types.join(','));
  if (request.teamId) query.set('team_id', request.teamId);
  const onConnected = request.onConnected;
  return readSse<Event>(transport, {
    label: 'events/stream',
    query,
    after: request.after === undefined ? undefined : String(request.after),
    position: /\d+/,
    item: (message) => (message.data ? (JSON.parse(message.data) as Event) : undefined),
    positionOf: (event) => String(event.seq),
    signal: request.signal,
    reconnect: request.reconnect,
    reconnectMs: request.reconnectMs,
    onConnected: onConnected && ((position) => onConnected(Number(position))),
    onDisconnected: request.onDisconnected,
  });
}

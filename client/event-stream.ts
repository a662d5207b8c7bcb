/**
 * Reading an organization's event stream (contract §9, `GET …/events/stream`): Server-Sent Events
 * parsed with `eventsource-parser`, resumed from the last event's id (`Last-Event-ID`) after a
 * dropped connection, as an EventSource does.
 */
import { createParser } from 'eventsource-parser';
import type { Event } from '../api/events.ts';
import { AcsApiError, NETWORK_ERROR } from './errors.ts';

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

/** Why a connection failed, as a person reads it: `connection refused`, `503 unavailable`, the error's own words. */
function lostBecause(error: unknown): string {
  if (error instanceof AcsApiError && error.status > 0) return `${error.status} ${error.code}`;
  const cause = (error as { cause?: { cause?: { code?: string; message?: string }; code?: string; message?: string } }).cause;
  const code = cause?.code ?? cause?.cause?.code;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'the connection was cut';
  if (code === 'ENOTFOUND') return 'no such host';
  return code ?? (error instanceof Error ? error.message : String(error));
}

/** How the stream reaches the service (given by {@link AcsClient}; the key stays there). */
export interface StreamTransport {
  fetch: typeof fetch;
  url: string;
  headers: Record<string, string>;
}

/**
 * Yields the events of the stream at `transport.url`, in seq order, until `request.signal` aborts.
 * A refusal of the service (a 4xx: `events_expired`, `invalid_cursor`, `not_found`, …) is thrown
 * as {@link AcsApiError}; a dropped connection or a 5xx is retried from the last id received
 * (unless `reconnect` is false: then it is thrown, `network_error` for a dropped connection).
 */
export async function* readEventStream(transport: StreamTransport, request: EventStreamRequest = {}): AsyncGenerator<Event> {
  let lastId = request.after;
  const reconnect = request.reconnect ?? true;
  for (;;) {
    if (request.signal?.aborted) return;
    const params = new URLSearchParams();
    if (request.types?.length) params.set('types', request.types.join(','));
    if (request.teamId) params.set('team_id', request.teamId);
    if (lastId !== undefined) params.set('after', String(lastId));
    const headers: Record<string, string> = { ...transport.headers, accept: 'text/event-stream' };
    if (lastId !== undefined) headers['last-event-id'] = String(lastId);
    let failure: AcsApiError | undefined;
    try {
      const response = await transport.fetch(`${transport.url}${params.size > 0 ? `?${params}` : ''}`, { headers, signal: request.signal });
      if (!response.ok) {
        const text = await response.text();
        let problem: { code?: string; detail?: string; request_id?: string } = {};
        try {
          problem = JSON.parse(text) as typeof problem;
        } catch {
          // not problem+json
        }
        const error = new AcsApiError({
          status: response.status,
          code: problem.code ?? (response.status >= 500 ? 'unavailable' : 'invalid_request'),
          message: `GET events/stream: ${response.status} ${problem.code ?? ''}${problem.detail ? `: ${problem.detail}` : ''}`,
          requestId: problem.request_id ?? response.headers.get('x-request-id') ?? undefined,
        });
        if (response.status < 500 || !reconnect) throw error;
        failure = error;
        request.onDisconnected?.(lostBecause(error));
      } else {
        const queue: Event[] = [];
        const parser = createParser({
          // The server says where the stream starts: a reconnect before any event resumes there.
          onComment: (comment) => {
            const start = /^\s*connected after (\d+)/.exec(comment);
            if (!start) return;
            if (lastId === undefined) lastId = Number(start[1]);
            request.onConnected?.(Number(start[1]));
          },
          onEvent: (message) => {
            if (!message.data) return;
            const event = JSON.parse(message.data) as Event;
            queue.push(event);
          },
        });
        const decoder = new TextDecoder();
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
          parser.feed(decoder.decode(chunk, { stream: true }));
          while (queue.length > 0) {
            const event = queue.shift()!;
            lastId = event.seq;
            yield event;
          }
        }
        // The server ended the stream (it stopped, or this client read too slowly): resume.
        if (reconnect && !request.signal?.aborted) request.onDisconnected?.('the server ended the stream');
      }
    } catch (error) {
      if (request.signal?.aborted) return;
      if (error instanceof AcsApiError && (error.status < 500 || !reconnect)) throw error;
      failure = error instanceof AcsApiError ? error : new AcsApiError({ status: 0, code: NETWORK_ERROR, message: `GET events/stream: the connection dropped (${(error as Error).message})` });
      if (reconnect && !(error instanceof AcsApiError)) request.onDisconnected?.(lostBecause(error));
    }
    if (!reconnect) {
      if (failure) throw failure;
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, request.reconnectMs ?? 1_000));
  }
}

/**
 * The reconnecting Server-Sent Events reader under both of the client's streams (the
 * organization's events, client/event-stream.ts; a thread's items, client/thread-stream.ts):
 * `eventsource-parser` reads the stream; after a dropped connection, a stream the service ended or
 * a 5xx, it connects again from the last position received (`Last-Event-ID` and `after`), as an
 * EventSource does; the service's `connected after POSITION` comment says where a stream starts.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { AcsApiError, errorFromResponse, NETWORK_ERROR } from './errors.ts';

/** How a stream reaches the service (given by {@link AcsClient}; the key stays there). */
export interface StreamTransport {
  fetch: typeof fetch;
  url: string;
  headers: Record<string, string>;
}

/** What {@link readSse} reads and how; positions are the SSE ids as the service writes them (`12`, `12.3`). */
export interface SseReadOptions<T> {
  /** The stream's name in error messages (`events/stream`: `GET events/stream: 404 not_found: …`). */
  label: string;
  /** Query parameters of every connection; `after` is added after them. */
  query?: URLSearchParams | undefined;
  /** Start after this position; undefined: where the service starts (its `connected after` comment). */
  after: string | undefined;
  /** The form of a position in the `connected after POSITION` comment (`/\d+/`), without anchors or groups. */
  position: RegExp;
  /** The item of an SSE message, or undefined to skip it (no data, a type this client does not know). */
  item: (message: EventSourceMessage) => T | undefined;
  /** An item's position: a reconnect resumes after the last one yielded. */
  positionOf: (item: T) => string;
  /** Ends the stream (the iterator returns), also during the pause before a reconnect. */
  signal?: AbortSignal | undefined;
  /** Reconnect after a dropped connection, an ended stream or a 5xx (default true). */
  reconnect?: boolean | undefined;
  /** Pause before a reconnect in milliseconds (default 1,000). */
  reconnectMs?: number | undefined;
  /** Called each time a connection is open and the service said where it starts, with that position. */
  onConnected?: ((position: string) => void) | undefined;
  /** Called when a connection is lost and a reconnect follows, with why as a person reads it ({@link lostBecause}). */
  onDisconnected?: ((why: string) => void) | undefined;
}

/**
 * Why a connection failed, as a person reads it: `503 unavailable` for an answer, `connection
 * refused`, `the connection was cut`, `no such host`, else the socket's code or the error's own words.
 */
function lostBecause(error: unknown): string {
  if (error instanceof AcsApiError && error.status > 0) return `${error.status} ${error.code}`;
  const cause = (error as { cause?: { cause?: { code?: string; message?: string }; code?: string; message?: string } }).cause;
  const code = cause?.code ?? cause?.cause?.code;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'the connection was cut';
  if (code === 'ENOTFOUND') return 'no such host';
  return code ?? (error instanceof Error ? error.message : String(error));
}

/**
 * The {@link AcsApiError} of a stream's error answer: its body read, then mapped as every other
 * answer of the client is ({@link errorFromResponse}), so that a code means the same whether the
 * request was a stream or not. (The streams had a fallback of their own for an answer without
 * problem+json, `unavailable` for a 5xx else `invalid_request`: a proxy's 404 page was then
 * `invalid_request` on a stream and `not_found` elsewhere, and the CLI printed and hinted by
 * that code. The keyring's retry on 401 tests the status, not the code.) Input: the answer, the
 * stream's label (`events/stream`).
 */
async function streamFailure(response: Response, label: string): Promise<AcsApiError> {
  const text = await response.text();
  return errorFromResponse('GET', label, { status: response.status, statusText: response.statusText, headers: response.headers, text });
}

/**
 * Yields the items of the SSE stream at `transport.url`, in order, until `options.signal` aborts.
 * A refusal of the service (a 4xx) is thrown as {@link AcsApiError}; a dropped connection, a
 * stream the service ended (it stopped, or this reader read too slowly) or a 5xx is resumed from
 * the last position received after `reconnectMs`. With `reconnect` false a failure is thrown
 * instead (`network_error` for a dropped connection) and an ended stream ends the iterator.
 */
export async function* readSse<T>(transport: StreamTransport, options: SseReadOptions<T>): AsyncGenerator<T> {
  let lastId = options.after;
  const reconnect = options.reconnect ?? true;
  const start = new RegExp(`^\\s*connected after (${options.position.source})`);
  for (;;) {
    if (options.signal?.aborted) return;
    const params = new URLSearchParams(options.query);
    if (lastId !== undefined) params.set('after', lastId);
    const headers: Record<string, string> = { ...transport.headers, accept: 'text/event-stream' };
    // The header is what a reconnecting EventSource sends; the service reads it before `after`.
    if (lastId !== undefined) headers['last-event-id'] = lastId;
    let failure: AcsApiError | undefined;
    try {
      const response = await transport.fetch(`${transport.url}${params.size > 0 ? `?${params}` : ''}`, { headers, signal: options.signal });
      if (!response.ok) {
        const error = await streamFailure(response, options.label);
        if (response.status < 500 || !reconnect) throw error;
        failure = error;
        options.onDisconnected?.(lostBecause(error));
      } else {
        const queue: T[] = [];
        const parser = createParser({
          // The service says where the stream starts: a reconnect before any item resumes there.
          onComment: (comment) => {
            const position = start.exec(comment)?.[1];
            if (position === undefined) return;
            lastId ??= position;
            options.onConnected?.(position);
          },
          onEvent: (message) => {
            const item = options.item(message);
            if (item !== undefined) queue.push(item);
          },
        });
        const decoder = new TextDecoder();
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
          parser.feed(decoder.decode(chunk, { stream: true }));
          while (queue.length > 0) {
            const item = queue.shift()!;
            lastId = options.positionOf(item);
            yield item;
          }
        }
        // The service ended the stream (it stopped, or this reader read too slowly): resume.
        if (reconnect && !options.signal?.aborted) options.onDisconnected?.('the server ended the stream');
      }
    } catch (error) {
      if (options.signal?.aborted) return;
      if (error instanceof AcsApiError && (error.status < 500 || !reconnect)) throw error;
      failure = error instanceof AcsApiError ? error : new AcsApiError({ status: 0, code: NETWORK_ERROR, message: `GET ${options.label}: the connection dropped (${(error as Error).message})` });
      if (reconnect && !(error instanceof AcsApiError)) options.onDisconnected?.(lostBecause(error));
    }
    if (!reconnect) {
      if (failure) throw failure;
      return;
    }
    // Abortable: Ctrl-C during the pause ends the iterator at once.
    await sleep(options.reconnectMs ?? 1_000, undefined, { signal: options.signal }).catch(() => {});
  }
}

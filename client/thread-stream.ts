/**
 * Reading a thread's stream (contract §13, `GET /threads/{thread_id}/stream`): the thread's
 * messages and, between them, a reply's deltas as it is written, the steps and restarts of a
 * turn and its tool calls — Server-Sent Events parsed with `eventsource-parser`, resumed after a
 * dropped connection from the last item's position (`Last-Event-ID`), as an EventSource does, so
 * that a reader gets every item once.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createParser } from 'eventsource-parser';
import type { z } from 'zod';
import type { ToolCall } from '../api/agent-tools.ts';
import type { Message } from '../api/schemas.ts';
import type { MessageDelta, TurnRestarted, TurnStep } from '../api/thread-stream.ts';
import { AcsApiError, NETWORK_ERROR } from './errors.ts';
import type { StreamTransport } from './event-stream.ts';

/** One item of a thread's stream, with its position (`id`: `12`, or `12.3` for a live item after message 12). */
export type ThreadStreamItem =
  | { id: string; type: 'message.created'; data: Message }
  | { id: string; type: 'message.delta'; data: MessageDelta }
  | { id: string; type: 'turn.step'; data: z.infer<typeof TurnStep> }
  | { id: string; type: 'turn.restarted'; data: z.infer<typeof TurnRestarted> }
  | { id: string; type: 'tool_call.started' | 'tool_call.finished'; data: ToolCall };

/** The SSE event types {@link readThreadStream} yields (others, from a newer service, are skipped). */
const knownTypes: ReadonlySet<string> = new Set(['message.created', 'message.delta', 'turn.step', 'turn.restarted', 'tool_call.started', 'tool_call.finished']);

/** What to stream and how. */
export interface ThreadStreamRequest {
  /**
   * Start after this position (`12`, `12.3`; `0`: the whole thread). Undefined: after the thread's
   * last message, so a reply being written is seen from its first delta.
   */
  after?: string | undefined;
  /** Ends the stream (the iterator returns). */
  signal?: AbortSignal | undefined;
  /** Reconnect after a dropped connection, from the last item received (default true). */
  reconnect?: boolean | undefined;
  /** Delay before a reconnect in milliseconds (default 1,000). */
  reconnectMs?: number | undefined;
  /**
   * Called each time a connection is open and the service said where it starts (its `connected
   * after POSITION` comment), with that position: from then on nothing of the thread is missed, so
   * a caller may send a message, or read the thread's history, without a gap.
   */
  onConnected?: ((after: string) => void) | undefined;
}

/**
 * Yields the items of the thread stream at `transport.url`, in the thread's order, until
 * `request.signal` aborts. A refusal of the service (a 4xx: `invalid_cursor`, `not_found`,
 * `too_many_waits`, …) is thrown as {@link AcsApiError}; a dropped connection, a stream the
 * service ended (it stopped, or this reader was too slow) or a 5xx is resumed from the last
 * position received (unless `reconnect` is false: then a failure is thrown, `network_error` for a
 * dropped connection, and an ended stream ends the iterator).
 */
export async function* readThreadStream(transport: StreamTransport, request: ThreadStreamRequest = {}): AsyncGenerator<ThreadStreamItem> {
  let lastId = request.after;
  const reconnect = request.reconnect ?? true;
  for (;;) {
    if (request.signal?.aborted) return;
    const headers: Record<string, string> = { ...transport.headers, accept: 'text/event-stream' };
    // The header is what a reconnecting EventSource sends; the service reads it before `after`.
    if (lastId !== undefined) headers['last-event-id'] = lastId;
    const url = lastId === undefined ? transport.url : `${transport.url}?${new URLSearchParams({ after: lastId })}`;
    let failure: AcsApiError | undefined;
    try {
      const response = await transport.fetch(url, { headers, signal: request.signal });
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
          message: `GET threads/stream: ${response.status} ${problem.code ?? ''}${problem.detail ? `: ${problem.detail}` : ''}`,
          requestId: problem.request_id ?? response.headers.get('x-request-id') ?? undefined,
        });
        if (response.status < 500 || !reconnect) throw error;
        failure = error;
      } else {
        const queue: ThreadStreamItem[] = [];
        const parser = createParser({
          // The service says where the stream starts: a reconnect before any item resumes there.
          onComment: (comment) => {
            const start = /^\s*connected after (\d+(?:\.\d+)?)/.exec(comment);
            if (!start) return;
            if (lastId === undefined) lastId = start[1]!;
            request.onConnected?.(start[1]!);
          },
          onEvent: (message) => {
            if (!message.data || !message.event || !knownTypes.has(message.event) || message.id === undefined) return;
            queue.push({ id: message.id, type: message.event, data: JSON.parse(message.data) } as ThreadStreamItem);
          },
        });
        const decoder = new TextDecoder();
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
          parser.feed(decoder.decode(chunk, { stream: true }));
          while (queue.length > 0) {
            const item = queue.shift()!;
            lastId = item.id;
            yield item;
          }
        }
        // The service ended the stream (it stopped, or this reader read too slowly): resume.
      }
    } catch (error) {
      if (request.signal?.aborted) return;
      if (error instanceof AcsApiError && (error.status < 500 || !reconnect)) throw error;
      failure = error instanceof AcsApiError ? error : new AcsApiError({ status: 0, code: NETWORK_ERROR, message: `GET threads/stream: the connection dropped (${(error as Error).message})` });
    }
    if (!reconnect) {
      if (failure) throw failure;
      return;
    }
    // Abortable: Ctrl-C during the pause ends the iterator at once.
    await sleep(request.reconnectMs ?? 1_000, undefined, { signal: request.signal }).catch(() => {});
  }
}

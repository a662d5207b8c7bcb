/**
 * Reading a thread's stream (contract §13, `GET /threads/{thread_id}/stream`): the thread's
 * messages and, between them, a reply's deltas as it is written, the steps and restarts of a
 * turn and its tool calls — Server-Sent Events parsed with `eventsource-parser`, resumed after a
 * dropped connection from the last item's position (`Last-Event-ID`), as an EventSource does, so
 * that a reader gets every item once.
 */
import type { z } from 'zod';
import type { ToolCall } from '../api/agent-tools.ts';
import type { Message } from '../api/schemas.ts';
import type { MessageDelta, TurnRestarted, TurnStep } from '../api/thread-stream.ts';
import { readSse, type StreamTransport } from './sse-reconnect.ts';

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
export function readThreadStream(transport: StreamTransport, request: ThreadStreamRequest = {}): AsyncGenerator<ThreadStreamItem> {
  return readSse<ThreadStreamItem>(transport, {
    label: 'threads/stream',
    after: request.after,
    position: /\d+(?:\.\d+)?/,
    item: (message) =>
      !message.data || !message.event || !knownTypes.has(message.event) || message.id === undefined
        ? undefined
        : ({ id: message.id, type: message.event, data: JSON.parse(message.data) } as ThreadStreamItem),
    positionOf: (item) => item.id,
    signal: request.signal,
    reconnect: request.reconnect,
    reconnectMs: request.reconnectMs,
    onConnected: request.onConnected,
  });
}

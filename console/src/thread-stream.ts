/**
 * A thread's replies as they are written (contract §13): the page follows the thread's stream
 * (`GET /api/v1/me/threads/{id}/stream`, an EventSource) while it is open and visible, and keeps
 * the text of each reply being written — its `message.delta`s joined, started afresh on a
 * `turn.step` (that text was not the reply: the model called tools) or a `turn.restarted` (the
 * reply is written again) — until the reply's `message.created` replaces it.
 *
 * The browser resumes a dropped stream by itself with `Last-Event-ID` (each item's id is its
 * position in the thread). A stream the browser gave up on (an error answer) is opened again after
 * a pause, from the last position seen; so is one closed while the page was hidden (a hidden tab
 * holds no stream: browsers allow few connections per site). Resumed, it brings everything after
 * that position once, so no delta is lost or shown twice; a delta seen already is skipped anyway.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { MessageDelta, TurnRestarted, TurnStep } from './types.ts';
import { applyWritingItem, type WritingReplies } from './writing-replies.ts';

/** How long after an error answer the page opens the stream again, in milliseconds. */
const reopenMs = 5_000;

/**
 * Follows thread `threadId`'s stream while `enabled` (the thread was found) and the page is
 * visible. Output: the replies being written. `onChange` is called (at most every 100 ms) when a
 * message was posted or a tool call started or finished on the thread: the page reads them then.
 */
export function useWritingReplies(threadId: string, enabled: boolean, onChange: () => void): WritingReplies {
  const [replies, setReplies] = useState<WritingReplies>(new Map());
  const latest = useRef(onChange);
  latest.current = onChange;
  useEffect(() => {
    setReplies(new Map());
    if (!enabled || typeof EventSource !== 'function') return;
    let source: EventSource | undefined;
    let lastId: string | undefined;
    let reopen: ReturnType<typeof setTimeout> | undefined;
    let changed: ReturnType<typeof setTimeout> | undefined;
    let ended = false;
    const notify = () => {
      clearTimeout(changed);
      changed = setTimeout(() => latest.current(), 100);
    };
    const connect = () => {
      clearTimeout(reopen);
      source?.close();
      const query = lastId === undefined ? '' : `?after=${encodeURIComponent(lastId)}`;
      const opened = new EventSource(`/api/v1/me/threads/${encodeURIComponent(threadId)}/stream${query}`);
      source = opened;
      const on = (type: string, handle: (data: never) => void) =>
        opened.addEventListener(type, (event) => {
          const message = event as MessageEvent<string>;
          if (message.lastEventId) lastId = message.lastEventId;
          handle(JSON.parse(message.data) as never);
        });
      on('message.delta', (data: MessageDelta) => setReplies((r) => applyWritingItem(r, { type: 'message.delta', data })));
      on('turn.step', (data: TurnStep) => setReplies((r) => applyWritingItem(r, { type: 'turn.step', data })));
      on('turn.restarted', (data: TurnRestarted) => setReplies((r) => applyWritingItem(r, { type: 'turn.restarted', data })));
      // The whole message replaces the text once the page has read it (in its place among the others).
      on('message.created', (data: { message_id: string }) => {
        setReplies((r) => applyWritingItem(r, { type: 'message.created', data }));
        notify();
      });
      on('tool_call.started', () => notify());
      on('tool_call.finished', () => notify());
      opened.addEventListener('error', () => {
        // CONNECTING: the browser resumes by itself (Last-Event-ID). CLOSED: it gave up (an error answer).
        if (opened.readyState !== EventSource.CLOSED || ended || source !== opened) return;
        source = undefined;
        reopen = setTimeout(connect, reopenMs);
      });
    };
    const onVisibility = () => {
      if (document.visibilityState === 'hidden') {
        clearTimeout(reopen);
        source?.close();
        source = undefined;
      } else if (!source) connect();
    };
    if (document.visibilityState !== 'hidden') connect();
    document.addEventListener('visibilitychange', onVisibility);
    return () => {
      ended = true;
      clearTimeout(reopen);
      clearTimeout(changed);
      source?.close();
      document.removeEventListener('visibilitychange', onVisibility);
    };
  }, [threadId, enabled]);
  return replies;
}


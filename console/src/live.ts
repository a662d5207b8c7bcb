/**
 * Keeping a page current: `refresh` runs at once, again when the person's event stream opens,
 * then whenever that stream says something happened in their threads (`GET
 * /api/v1/me/events/stream`, one EventSource per organization of theirs, shared by every page),
 * and on a slow timer besides, in case a stream cannot be held (a proxy that cuts it). When a
 * stream is refused (the session ended), the page refreshes at once, which signs the console out.
 */
import { useEffect, useRef } from 'preact/hooks';
import { usePolling } from './page.ts';
import { useSession } from './session.ts';

type Listener = () => void;

interface Stream {
  source: EventSource;
  listeners: Set<Listener>;
}

const streams = new Map<string, Stream>();

/** How often a page refreshes besides what the streams tell it. */
const fallbackIntervalMs = 30_000;

function notify(stream: Stream): void {
  for (const listener of stream.listeners) listener();
}

function open(orgId: string): Stream {
  const existing = streams.get(orgId);
  if (existing) return existing;
  const source = new EventSource(`/api/v1/me/events/stream?org_id=${encodeURIComponent(orgId)}`);
  const stream: Stream = { source, listeners: new Set() };
  // The tool calls of agents' turns on the person's threads too: a thread page shows them.
  for (const type of ['message.created', 'thread.opened', 'tool_call.started', 'tool_call.finished']) source.addEventListener(type, () => notify(stream));
  // A stream begins at its connection: what happened between a page's first load and that moment
  // (an agent's reply to the message that opened the thread, say) is not on it. Each page looks
  // once more when its stream opens, so nothing waits for the 30 s fallback.
  source.addEventListener('open', () => notify(stream));
  source.addEventListener('error', () => {
    // CONNECTING: the browser reconnects by itself (from the last event id). CLOSED: refused.
    if (source.readyState !== EventSource.CLOSED) return;
    streams.delete(orgId);
    notify(stream);
  });
  streams.set(orgId, stream);
  return stream;
}

/** Calls `listener` whenever something happens in the person's threads of `orgIds`. Output: the unsubscribe. */
export function onPersonEvents(orgIds: readonly string[], listener: Listener): () => void {
  const opened = orgIds.map(open);
  for (const stream of opened) stream.listeners.add(listener);
  return () => {
    for (const stream of opened) {
      stream.listeners.delete(listener);
      if (stream.listeners.size === 0) {
        stream.source.close();
        for (const [orgId, held] of streams) if (held === stream) streams.delete(orgId);
      }
    }
  };
}

/** Closes every stream (sign-out). */
export function closePersonEvents(): void {
  for (const stream of streams.values()) stream.source.close();
  streams.clear();
}

/**
 * Runs `refresh` now, when the person's stream opens, on every event of the person's threads
 * (several at once run it once), and every 30 s; `options.intervalMs` is the timer where the
 * browser has no EventSource.
 */
export function useLiveUpdates(refresh: () => Promise<void>, options: { intervalMs: number }, deps: unknown[] = []): void {
  const { me } = useSession();
  const latest = useRef(refresh);
  latest.current = refresh;
  const orgIds = [...new Set(me.humans.map((h) => h.org_id))].sort();
  const live = typeof EventSource === 'function';
  useEffect(() => {
    if (!live) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const unsubscribe = onPersonEvents(orgIds, () => {
      clearTimeout(timer);
      timer = setTimeout(() => void latest.current().catch(() => {}), 100);
    });
    return () => {
      clearTimeout(timer);
      unsubscribe();
    };
  }, [orgIds.join(','), ...deps]);
  usePolling(() => latest.current(), live ? fallbackIntervalMs : options.intervalMs, deps);
}

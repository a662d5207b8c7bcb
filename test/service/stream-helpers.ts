/**
 * What the tests of replies as they are written (contract §13) share: a thread's stream read as
 * items (`GET /threads/{id}/stream`, or the session's twin), the text of a reply as a reader
 * rebuilds it from its deltas, and a reader that drops and resumes from its last id.
 */
import { openStream, type OpenStream } from '../support/sse.ts';

/** One frame of a thread's stream, its data parsed. */
export interface Item {
  id: string;
  event: string;
  data: any;
}

/** A thread's stream as a test reads it. */
export interface ThreadReader {
  /** The answer's status (200: a stream; errors are read with a plain request instead). */
  status: number;
  /** The items received so far, in order. */
  items(): Item[];
  /** Resolves with the items once one of them satisfies `done`; rejects after `timeoutMs` (default 30 s). */
  until(done: (item: Item) => boolean, what: string, timeoutMs?: number): Promise<Item[]>;
  /** Resolves with the items once `count` were received. */
  count(count: number, timeoutMs?: number): Promise<Item[]>;
  close(): void;
  raw: OpenStream;
}

/** Where a reader starts: `after` (the query), `lastEventId` (the header), or neither. */
export interface StreamStart {
  after?: string;
  lastEventId?: string;
}

/**
 * Opens the stream of `threadId` on the server at `baseUrl` (`/api/v1/threads/{id}/stream`, or
 * `/api/v1/me/threads/{id}/stream` when `me`) with `headers` (the key, or a session cookie).
 */
export async function readThread(baseUrl: string, threadId: string, headers: Record<string, string>, start: StreamStart = {}, me = false): Promise<ThreadReader> {
  const query = start.after === undefined ? '' : `?after=${encodeURIComponent(start.after)}`;
  const url = `${baseUrl}/api/v1${me ? '/me' : ''}/threads/${threadId}/stream${query}`;
  const stream = await openStream(url, { ...headers, ...(start.lastEventId === undefined ? {} : { 'last-event-id': start.lastEventId }) });
  const items = (): Item[] => stream.events.map((e) => ({ id: e.id ?? '', event: e.event ?? 'message', data: JSON.parse(e.data) }));
  const until = async (done: (item: Item) => boolean, what: string, timeoutMs = 30_000): Promise<Item[]> => {
    const deadline = Date.now() + timeoutMs;
    let seen = 0;
    for (;;) {
      const now = items();
      if (now.slice(seen).some(done)) return now;
      seen = now.length;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`thread stream: ${what} did not come within ${timeoutMs} ms; items: ${describe(now)}`);
      await stream.waitForEvents(now.length + 1, left).catch(() => {});
    }
  };
  return {
    status: stream.status,
    items,
    until,
    count: async (count, timeoutMs = 30_000) => {
      await stream.waitForEvents(count, timeoutMs).catch(() => {
        throw new Error(`thread stream: ${count} items did not come within ${timeoutMs} ms; items: ${describe(items())}`);
      });
      return items();
    },
    close: () => stream.close(),
    raw: stream,
  };
}

/** Items in one line each, for failure messages. */
export function describe(items: readonly Item[]): string {
  return items
    .map((i) => `${i.id} ${i.event} ${i.event === 'message.delta' ? `#${i.data.index} ${JSON.stringify(i.data.text)}` : i.event === 'message.created' ? JSON.stringify(String(i.data.content).slice(0, 40)) : ''}`)
    .join('\n');
}

/** The `message.created` item of message `messageId`, if the items hold it. */
export function createdOf(items: readonly Item[], messageId: string): Item | undefined {
  return items.find((i) => i.event === 'message.created' && i.data.message_id === messageId);
}

/** The deltas of reply `messageId`, in stream order. */
export function deltasOf(items: readonly Item[], messageId: string): Item[] {
  return items.filter((i) => i.event === 'message.delta' && i.data.message_id === messageId);
}

/**
 * The text of reply `messageId` as a reader rebuilds it (api.md): its deltas joined, started afresh
 * at each `turn.step` (that step's text was not the reply) and `turn.restarted` of it.
 */
export function rebuiltText(items: readonly Item[], messageId: string): string {
  let text = '';
  for (const item of items) {
    if (item.data?.message_id !== messageId) continue;
    if (item.event === 'message.delta') text += item.data.text;
    else if (item.event === 'turn.step' || item.event === 'turn.restarted') text = '';
  }
  return text;
}

/** A small seeded random source (mulberry32), so a failing run can be told again by its seed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A reader that drops its connection and resumes from the last id it received, again and again:
 * once `begin` holds for what it received (default at once), `drops` times, each after a random
 * pause of `minMs`…`maxMs` (from `random`), reconnecting through `open(lastId)` (which may pick
 * another process, the header or the query); then it stays until `done` holds for what it
 * received. Output: every item received, in order, and the ids it resumed from.
 */
export async function droppingReader(options: {
  open: (lastId: string, attempt: number) => Promise<ThreadReader>;
  from: string;
  drops: number;
  random: () => number;
  minMs: number;
  maxMs: number;
  begin?: (item: Item) => boolean;
  done: (items: readonly Item[]) => boolean;
  timeoutMs?: number;
}): Promise<{ items: Item[]; resumedFrom: string[] }> {
  const received: Item[] = [];
  const resumedFrom: string[] = [];
  let last = options.from;
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (let attempt = 0; ; attempt += 1) {
    resumedFrom.push(last);
    const reader = await options.open(last, attempt);
    if (reader.status !== 200) throw new Error(`resuming from ${last}: ${reader.status}`);
    if (attempt < options.drops) {
      if (attempt === 0 && options.begin) await reader.until(options.begin, 'the first drop\'s moment', Math.max(1, deadline - Date.now()));
      await new Promise((resolve) => setTimeout(resolve, options.minMs + options.random() * (options.maxMs - options.minMs)));
    } else {
      const left = deadline - Date.now();
      await reader.until(() => options.done([...received, ...reader.items()]), 'the last item', Math.max(1, left)).catch((error: unknown) => {
        reader.close();
        throw error;
      });
    }
    // What was parsed before the close is what this connection delivered.
    const got = reader.items();
    reader.close();
    received.push(...got);
    if (got.length > 0) last = got.at(-1)!.id;
    if (attempt >= options.drops && options.done(received)) return { items: received, resumedFrom };
    if (Date.now() > deadline) throw new Error(`the dropping reader did not finish: ${describe(received)}`);
  }
}

/**
 * How a stream request is answered, without waiting on a stream: the status and, for an answer
 * that is no stream (a problem), its parsed body; a 200 stream is closed at once.
 */
export async function streamStart(url: string, headers: Record<string, string>): Promise<{ status: number; body: any }> {
  const controller = new AbortController();
  const response = await fetch(url, { headers, signal: controller.signal });
  if ((response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    controller.abort();
    return { status: response.status, body: undefined };
  }
  const text = await response.text();
  try {
    return { status: response.status, body: JSON.parse(text) };
  } catch {
    return { status: response.status, body: text };
  }
}

/** The text of `senderId`'s deltas after the last `turn.step` or `turn.restarted`: what a reader shows of the reply being written. */
export function writtenSoFar(items: readonly Item[], senderId: string): string {
  let text = '';
  for (const item of items) {
    if (item.event === 'turn.step' || item.event === 'turn.restarted') text = '';
    else if (item.event === 'message.delta' && item.data.sender_id === senderId) text += item.data.text;
  }
  return text;
}

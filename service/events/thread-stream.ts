/**
 * A thread's stream as Server-Sent Events (§13): its messages (`message.created`) and its live
 * items (events/deltas.ts: a reply's `message.delta`s as it is written, `turn.step`,
 * `turn.restarted`, the tool calls of its turns), in one order, each with its position as the SSE
 * id (`12`, `12.3`), resumable from `Last-Event-ID` (or `after`) with no gap and no repeat. A
 * resume after a reply's `message.created` gets the messages that follow, not that reply's deltas.
 *
 * One follower per thread and process reads what is new once, however many readers the process
 * has on that thread (1,000 readers of one streaming reply cost one read per delta, not 1,000),
 * woken by the thread's live signal (any process's writer) and its `message.created` events (the
 * event hub); each reader first catches up from its own position with reads of its own.
 */
import type { ServerResponse } from 'node:http';
import type { Message } from '../../api/schemas.ts';
import { toMessage, type MessageRow } from '../domain/threads.ts';
import type { Queryable } from '../storage/db.ts';
import { liveKey, positionBefore, positionId, type LiveItemType, type StreamPosition } from './deltas.ts';
import { threadTopic, type EventHub, type Subscription } from './hub.ts';
import { sseSession } from './sse-session.ts';

/** One item of a thread's stream: a message, or a live item. */
export type StreamItem =
  | { position: StreamPosition; type: 'message.created'; data: Message }
  | { position: StreamPosition; type: LiveItemType; data: Record<string, unknown> };

/** Items read per statement. */
const pageSize = 500;

interface ItemRow extends Omit<MessageRow, 'seq'> {
  after_seq: number;
  k: number;
  type: LiveItemType | null;
  data: Record<string, unknown> | null;
}

/**
 * The thread's items after `from`, in stream order, at most `limit`, read in one statement (one
 * snapshot: since positions commit in order, what it sees is a prefix of the stream).
 */
export async function readStreamItems(db: Queryable, threadId: string, from: StreamPosition, limit = pageSize): Promise<StreamItem[]> {
  const rows = await db.query<ItemRow>(
    `SELECT * FROM (
       SELECT m.seq AS after_seq, 0 AS k, NULL::text AS type, NULL::jsonb AS data,
              m.id, m.thread_id, m.sender_id, m.content, m.attachments, m.reply_to, m.expects_reply, m.sent_at, m.stopped
         FROM messages m WHERE m.thread_id = $1 AND m.seq > $2
       UNION ALL
       SELECT s.after_seq, s.k, s.type, s.data,
              NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
         FROM thread_stream s WHERE s.thread_id = $1 AND (s.after_seq > $2 OR (s.after_seq = $2 AND s.k > $3))
     ) items
     ORDER BY after_seq, k LIMIT $4`,
    [threadId, from.after, from.k, limit],
  );
  return rows.map((row): StreamItem => {
    const position = { after: row.after_seq, k: row.k };
    if (row.type === null) return { position, type: 'message.created', data: toMessage({ ...row, seq: row.after_seq } as MessageRow) };
    return { position, type: row.type, data: row.data ?? {} };
  });
}

/** Where a thread's stream stands now: its last message, or the last live item after it. */
export async function streamEnd(db: Queryable, threadId: string): Promise<StreamPosition | undefined> {
  const rows = await db.query<{ message_count: number; stream_after: number; stream_k: number }>(`SELECT message_count, stream_after, stream_k FROM threads WHERE id = $1`, [threadId]);
  const row = rows[0];
  if (!row) return undefined;
  return { after: row.message_count, k: row.stream_after === row.message_count ? row.stream_k : 0 };
}

// One item is serialized once, however many readers send it.
const frames = new WeakMap<StreamItem, string>();

/** An item as an SSE frame: `id: <position>`, `event: <type>`, `data: <JSON>`. */
export function streamFrame(item: StreamItem): string {
  let frame = frames.get(item);
  if (frame === undefined) {
    frame = `id: ${positionId(item.position)}\nevent: ${item.type}\ndata: ${JSON.stringify(item.data)}\n\n`;
    frames.set(item, frame);
  }
  return frame;
}

type Reader = (items: readonly StreamItem[]) => void;

interface Follower {
  threadId: string;
  position: StreamPosition;
  readers: Set<Reader>;
  reading: boolean;
  again: boolean;
  /** Until `ready`: subscribing and looking where the stream ends; a wake meanwhile waits for it (`again`). */
  settingUp: boolean;
  /** Resolves once the follower is subscribed and knows its position; rejects when it could not be set up. */
  ready: Promise<void>;
  stop: () => void;
}

/** The followers of one process: the readers of its thread streams. */
export interface ThreadStreams {
  /**
   * Streams thread `threadId` (of organization `orgId`) on `res`, whose status and headers the
   * caller wrote, from after `from` (undefined: after the thread's last message, so a reply being
   * written is seen from its first delta). Resolves when the stream ends: the client went away,
   * `signal` aborted, the client read too slowly (closed, to be resumed), or reading failed.
   */
  stream(res: ServerResponse, options: { orgId: string; threadId: string; from: StreamPosition | undefined; signal: AbortSignal; keepAliveMs?: number | undefined }): Promise<void>;
  /** Readers and followers of this process now (tests, benchmarks). */
  stats(): { followers: number; readers: number };
}

/** Creates the thread streams of one process over `db`, woken through `hub`. */
export function createThreadStreams(db: Queryable, hub: EventHub): ThreadStreams {
  const followers = new Map<string, Follower>();

  async function read(follower: Follower): Promise<void> {
    if (follower.reading || follower.settingUp) {
      follower.again = true;
      return;
    }
    follower.reading = true;
    try {
      do {
        follower.again = false;
        for (;;) {
          const items = await readStreamItems(db, follower.threadId, follower.position);
          if (items.length === 0) break;
          follower.position = items.at(-1)!.position;
          for (const reader of [...follower.readers]) reader(items);
          if (items.length < pageSize) break;
        }
      } while (follower.again && follower.readers.size > 0);
    } catch {
      // A failed read is tried again at the next wake; readers resume from their positions.
    } finally {
      follower.reading = false;
    }
  }

  /**
   * Joins (or starts) the follower of a thread, once it is set up: a reader catches up from its own
   * position after joining, so the follower must know where it stands by then — a reader that
   * joined earlier could catch up before the follower's look at the stream's end, and what was
   * committed between the two looks (heard of only later, from another process) would fall
   * between them. Output: the leave function. Errors: the hub's or the storage's, when the
   * follower could not be set up (it is dropped; the next reader starts another).
   */
  async function follow(orgId: string, threadId: string, reader: Reader): Promise<() => void> {
    let follower = followers.get(threadId);
    if (!follower) {
      const created: Follower = {
        threadId,
        position: { after: 0, k: 0 },
        readers: new Set(),
        reading: false,
        again: false,
        settingUp: true,
        ready: Promise.resolve(),
        stop: () => {},
      };
      followers.set(threadId, created);
      follower = created;
      const wake = () => void read(created);
      const stopSignal = hub.onSignal(liveKey(threadId), wake);
      let subscription: Subscription | undefined;
      let stopped = false;
      created.stop = () => {
        stopped = true;
        stopSignal();
        subscription?.unsubscribe();
      };
      created.ready = (async () => {
        try {
          // Subscribed before the end is read: nothing committed after it can be missed.
          subscription = await hub.subscribe(orgId, threadTopic(threadId), wake);
          if (stopped) subscription.unsubscribe();
          created.position = (await streamEnd(db, threadId)) ?? created.position;
        } catch (error) {
          if (followers.get(threadId) === created) followers.delete(threadId);
          created.stop();
          throw error;
        } finally {
          created.settingUp = false;
        }
        // Woken while it was set up: what came after its position is read now.
        if (created.again) void read(created);
      })();
    }
    await follower.ready;
    follower.readers.add(reader);
    const joined = follower;
    return () => {
      joined.readers.delete(reader);
      if (joined.readers.size === 0 && followers.get(threadId) === joined) {
        followers.delete(threadId);
        joined.stop();
      }
    };
  }

  return {
    stream(res, options) {
      // The last position sent or passed over: a live item at or before it was already read.
      let position: StreamPosition | undefined = options.from;
      const live = (item: StreamItem): string | undefined => {
        if (position !== undefined && !positionBefore(position, item.position)) return undefined;
        position = item.position;
        return streamFrame(item);
      };
      // The catch-up is sseSession's `start`, a function of its own: see there why (74 KiB a stream
      // were kept alive after a reply of 100 deltas when it was done inline: bench/streams.ts).
      return sseSession<StreamItem>(res, { signal: options.signal, keepAliveMs: options.keepAliveMs, frame: live }, async (session) => {
        const leave = await follow(options.orgId, options.threadId, (items) => session.deliver(items));
        session.defer(leave);
        if (position === undefined) {
          // From after the last message: a reply being written shows from its first delta.
          const endNow = await streamEnd(db, options.threadId);
          position = { after: endNow?.after ?? 0, k: 0 };
        }
        session.write(`retry: 2000\n: connected after ${positionId(position)}\n\n`);
        // Sends what came after `position`, page by page.
        for (;;) {
          if (session.ended || position === undefined) return;
          const items = await readStreamItems(db, options.threadId, position);
          for (const item of items) session.send(item);
          if (items.length < pageSize) break;
        }
      });
    },
    stats: () => ({ followers: followers.size, readers: [...followers.values()].reduce((n, f) => n + f.readers.size, 0) }),
  };
}

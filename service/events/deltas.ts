/**
 * The live part of a thread's stream (§13 of the contract this service implements): the deltas of
 * a reply as it is written (`message.delta`), the steps of a turn (`turn.step`), a turn restarted
 * after its process died (`turn.restarted`), and the tool calls of the thread's turns
 * (`tool_call.started`, `tool_call.finished`). They are not events of the organization's durable
 * log: they are kept ten minutes (`thread_stream`, migration `0023_thread_streams`) so that a reader
 * that lost its connection resumes without a gap, and a reply retried after a crash can say it
 * restarted (a logged table: on PGlite the database dies with acs-server, and the crash recovery
 * would empty an unlogged one). Every process learns of them through the event hub's signals
 * (LISTEN/NOTIFY on PostgreSQL, only where a process follows the thread), not a second broker.
 *
 * Positions. A thread's stream orders its messages and these items in one sequence: message `m`
 * (its per-thread `seq`) is at `m`, and the items written after it, before message `m + 1`, at
 * `m.1`, `m.2`, … An item takes its position under the thread's row lock (the one an append takes),
 * so positions are committed in their order: a reader's snapshot always holds a prefix of the
 * stream, and a reader that resumes from a position gets everything after it, once.
 *
 * Writers sit below the domain (a turn, a tool call's transaction write through here); readers
 * (events/thread-stream.ts) above it.
 */
import type { Queryable } from '../storage/db.ts';
import type { EventHub } from './hub.ts';

/** The types of a thread stream's live items. */
export const LiveItemTypes = {
  'message.delta': 'message.delta',
  'turn.step': 'turn.step',
  'turn.restarted': 'turn.restarted',
  'tool_call.started': 'tool_call.started',
  'tool_call.finished': 'tool_call.finished',
} as const;
export type LiveItemType = keyof typeof LiveItemTypes;

/** How long live items are kept for readers that resume, in milliseconds (§13: ten minutes). */
export const liveItemRetentionMs = 10 * 60_000;

/** A position in a thread's stream: after message `after`, the `k`-th live item (0: the message itself). */
export interface StreamPosition {
  after: number;
  k: number;
}

/** A position as SSE ids write it: `12` (message 12) or `12.3` (the third live item after it). */
export function positionId(position: StreamPosition): string {
  return position.k === 0 ? `${position.after}` : `${position.after}.${position.k}`;
}

/** Parses an id of {@link positionId}; undefined when it is not one. */
export function parsePosition(text: string): StreamPosition | undefined {
  const match = /^(\d{1,10})(?:\.(\d{1,10}))?$/.exec(text.trim());
  if (!match) return undefined;
  const after = Number(match[1]);
  const k = match[2] === undefined ? 0 : Number(match[2]);
  return Number.isSafeInteger(after) && Number.isSafeInteger(k) ? { after, k } : undefined;
}

/** Whether `a` comes before `b` in a thread's stream. */
export function positionBefore(a: StreamPosition, b: StreamPosition): boolean {
  return a.after < b.after || (a.after === b.after && a.k < b.k);
}

/** The hub signal key of a stop asked of a thread's turns (domain/replies.ts): the process running one follows it. */
export function stopKey(threadId: string): string {
  return `thread-stop:${threadId}`;
}

/** The hub signal key of a thread's live items: its readers follow it, in every process. */
export function liveKey(threadId: string): string {
  return `thread-stream:${threadId}`;
}

/**
 * The SQL of a live item's write (see {@link writeLiveItem}) in two parts, for callers that put it
 * in a statement of their own (a tool call's event and its live item go together): `slot`, a CTE
 * named `slot` that takes the thread's next position, and `insert`, which inserts the item from
 * it. The numbers are the positions of the thread's id, the type and the data among the statement's
 * parameters.
 */
export function liveItemSql(params: { thread: number; type: number; data: number }): { slot: string; insert: string } {
  return {
    slot: `slot AS (
       UPDATE threads SET stream_k = CASE WHEN stream_after = message_count THEN stream_k + 1 ELSE 1 END, stream_after = message_count
        WHERE id = $${params.thread} RETURNING message_count, stream_k
     )`,
    insert: `INSERT INTO thread_stream (thread_id, after_seq, k, type, data)
     SELECT $${params.thread}, message_count, stream_k, $${params.type}, $${params.data}::jsonb FROM slot`,
  };
}

/**
 * Writes one live item of a thread at the stream's next position, in one statement: the thread's
 * row is locked and its counter moved (so items and messages are committed in their stream order),
 * the item inserted. Inside a caller's transaction (a tool call's change) or on its own. Signal the
 * thread ({@link signalLive}) once it is committed. Output: the item's position, or undefined when
 * the thread is gone.
 */
export async function writeLiveItem(db: Queryable, threadId: string, type: LiveItemType, data: Record<string, unknown>): Promise<StreamPosition | undefined> {
  const sql = liveItemSql({ thread: 1, type: 2, data: 3 });
  const rows = await db.query<{ after_seq: number; k: number }>(`WITH ${sql.slot} ${sql.insert} RETURNING after_seq, k`, [threadId, type, JSON.stringify(data)]);
  const row = rows[0];
  return row ? { after: row.after_seq, k: row.k } : undefined;
}

/** Tells the thread's readers, in every process, that its stream grew (after the commit). */
export function signalLive(hub: EventHub, threadId: string): void {
  hub.signal(liveKey(threadId));
}

/** Deletes live items older than {@link liveItemRetentionMs} (at most `limit`). Output: how many went. */
export async function pruneLiveItems(db: Queryable, limit = 10_000): Promise<number> {
  const rows = await db.query(
    `DELETE FROM thread_stream WHERE (thread_id, after_seq, k) IN (
       SELECT thread_id, after_seq, k FROM thread_stream WHERE created_at < now() - make_interval(secs => $1) LIMIT $2)
     RETURNING 1`,
    [liveItemRetentionMs / 1000, limit],
  );
  return rows.length;
}

/** What a reply's writer needs: storage, the hub, and the thread and reply the deltas belong to. */
export interface DeltaTarget {
  db: Queryable;
  hub: EventHub;
  threadId: string;
  /** The reply's id, fixed when its turn starts (the message posted at the end has it). */
  messageId: string;
  /** Who writes it: the agent. */
  senderId: string;
}

/** The text of a reply streamed so far, and how to add to it. */
export interface DeltaWriter {
  /** Adds text as it comes from the model; written out at most once per `intervalMs`, never held longer (text past `maxChars` is dropped). */
  push(text: string): void;
  /** Writes out what is held (before the reply is posted, or a step ends). Never rejects. */
  flush(): Promise<void>;
  /** Everything pushed since the writer began, or since {@link reset}. */
  text(): string;
  /** Starts a new step: the next delta's text begins a fresh text (the index goes on). */
  reset(): void;
  /** Deltas written so far (the next one's index). */
  written(): number;
}

/**
 * A batching writer of a reply's `message.delta` items: the first text of a quiet period is written
 * at once, later text at most once per `intervalMs` (default 50 ms), so a token is never held longer
 * than that and a fast model costs at most twenty writes a second per reply. Each delta carries the
 * text since the previous one, and `index` 0, 1, … per reply. Text past `maxChars` (UTF-16 code
 * units, as `String.slice` counts; default no limit) is neither written nor kept: a reply is posted
 * cut at the longest message, and its deltas joined stay equal to it. Write failures are logged by
 * the caller's `onError` and do not stop the reply: deltas are a view, the message is the record.
 */
export function createDeltaWriter(
  target: DeltaTarget,
  options: { intervalMs?: number; startIndex?: number; maxChars?: number; onError?: (error: unknown) => void } = {},
): DeltaWriter {
  const intervalMs = options.intervalMs ?? 50;
  const maxChars = options.maxChars ?? Number.POSITIVE_INFINITY;
  let index = options.startIndex ?? 0;
  let pending = '';
  let all = '';
  let lastWrite = 0;
  let timer: NodeJS.Timeout | undefined;
  let chain: Promise<void> = Promise.resolve();

  const writeOut = (): Promise<void> => {
    clearTimeout(timer);
    timer = undefined;
    if (pending === '') return chain;
    const text = pending;
    pending = '';
    lastWrite = Date.now();
    const delta = { thread_id: target.threadId, message_id: target.messageId, sender_id: target.senderId, index: index++, text };
    chain = chain.then(async () => {
      try {
        if (await writeLiveItem(target.db, target.threadId, 'message.delta', delta)) signalLive(target.hub, target.threadId);
      } catch (error) {
        options.onError?.(error);
      }
    });
    return chain;
  };

  return {
    push(piece) {
      const text = piece.slice(0, Math.max(0, maxChars - all.length));
      if (text === '') return;
      pending += text;
      all += text;
      const wait = lastWrite + intervalMs - Date.now();
      if (wait <= 0) void writeOut();
      else timer ??= setTimeout(() => void writeOut(), wait);
    },
    flush: () => writeOut(),
    text: () => all,
    reset() {
      all = '';
    },
    written: () => index,
  };
}

/**
 * Where a reply's deltas go on when its writing starts again (a retried call, a turn resumed by
 * another process): the next index, after the deltas written before; and when the last of them was
 * a delta — text a stopped or failed attempt had written, which the new attempt writes again — a
 * `turn.restarted` item first, so readers drop that text. Output: the index of the next delta (0
 * when none was written). Errors: the storage's.
 */
export async function resumeDeltas(db: Queryable, hub: EventHub, threadId: string, messageId: string, senderId: string): Promise<number> {
  const rows = await db.query<{ type: LiveItemType; max_index: number | null }>(
    `SELECT type, max((data->>'index')::int) OVER () AS max_index FROM thread_stream
      WHERE thread_id = $1 AND data->>'message_id' = $2 AND type IN ('message.delta', 'turn.step', 'turn.restarted')
      ORDER BY after_seq DESC, k DESC LIMIT 1`,
    [threadId, messageId],
  );
  const last = rows[0];
  if (!last) return 0;
  if (last.type === 'message.delta' && (await writeLiveItem(db, threadId, 'turn.restarted', { thread_id: threadId, message_id: messageId, sender_id: senderId }))) {
    signalLive(hub, threadId);
  }
  return (last.max_index ?? -1) + 1;
}

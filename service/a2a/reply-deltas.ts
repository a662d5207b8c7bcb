/**
 * A reply as it is written, on A2A streams (contract §13: "A2A `SendStreamingMessage` and
 * `SubscribeToTask` carry the same deltas as `TaskArtifactUpdateEvent`s with `append: true`").
 *
 * The assignee's reply completes its task with the reply as an artifact whose id is the reply's
 * message id (domain/task-turns.ts), and its deltas (events/deltas.ts) name that message id: so
 * each delta is a chunk of that very artifact. The first chunk of a text opens the artifact
 * (`append: false`: A2A clients, the Python SDK's among them, drop an appended chunk of an artifact
 * they have not seen), the following ones append to it (`append: true`), none is the last chunk
 * (`lastChunk: false`). When the task completes, the artifact comes whole (`append: false`,
 * `lastChunk: true`, task-watch.ts), replacing the chunks with the reply as posted. A `turn.step`
 * (that text was not the reply: the model called tools) or a `turn.restarted` (the reply is being
 * written again) makes the next chunk open the artifact afresh, so a client never holds text that
 * is not in the reply.
 */
import type { TaskArtifactUpdateEvent } from '@a2a-js/sdk';
import type { Task } from '../../api/tasks.ts';
import type { Queryable } from '../storage/db.ts';
import type { StreamPosition } from '../events/deltas.ts';
import { readStreamItems, streamEnd } from '../events/thread-stream.ts';

/** Stream items read per statement. */
const readPage = 500;

/**
 * Where a task's stream of deltas starts when it is followed from now on (`SubscribeToTask`): just
 * after the thread's last message, so the reply being written now comes from its first delta.
 * Output: the position ({after: 0, k: 0} for a thread with no message yet). Errors: storage's.
 */
export async function replyDeltasFromNow(db: Queryable, threadId: string): Promise<StreamPosition> {
  const end = await streamEnd(db, threadId);
  return { after: end?.after ?? 0, k: 0 };
}

/**
 * The deltas of a task's replies after a position of its thread's stream, as A2A artifact updates
 * (see the module's comment). One reader per A2A stream; not shared across calls.
 */
export class ReplyDeltas {
  readonly #db: Queryable;
  readonly #task: Pick<Task, 'task_id' | 'thread_id' | 'assignee_id'>;
  #position: StreamPosition;
  // Replies (by message id) whose artifact a chunk has opened on this stream.
  readonly #open = new Set<string>();

  /** Follows `task`'s thread after `from` (exclusive). */
  constructor(db: Queryable, task: Pick<Task, 'task_id' | 'thread_id' | 'assignee_id'>, from: StreamPosition) {
    this.#db = db;
    this.#task = task;
    this.#position = from;
  }

  /**
   * The assignee's deltas written since the last read, as artifact updates in their order. Output: the events (empty when nothing new). Errors:
   * storage's (the position stays, so the next read tries again).
   */
  async read(): Promise<TaskArtifactUpdateEvent[]> {
    const events: TaskArtifactUpdateEvent[] = [];
    // Page after page until one comes back short: nothing written before this read waits for a later wake.
    for (;;) {
      const items = await readStreamItems(this.#db, this.#task.thread_id, this.#position, readPage);
      this.#take(items, events);
      if (items.length < readPage) return events;
    }
  }

  #take(items: Awaited<ReturnType<typeof readStreamItems>>, events: TaskArtifactUpdateEvent[]): void {
    for (const item of items) {
      this.#position = item.position;
      if (item.type === 'message.created') continue;
      const messageId = item.data['message_id'];
      if (typeof messageId !== 'string' || item.data['sender_id'] !== this.#task.assignee_id) continue;
      if (item.type === 'turn.step' || item.type === 'turn.restarted') {
        this.#open.delete(messageId);
        continue;
      }
      if (item.type !== 'message.delta') continue;
      const text = String(item.data['text'] ?? '');
      if (text === '') continue;
      events.push(this.#chunk(messageId, text, this.#open.has(messageId)));
      this.#open.add(messageId);
    }
  }

  #chunk(messageId: string, text: string, append: boolean): TaskArtifactUpdateEvent {
    return {
      taskId: this.#task.task_id,
      contextId: this.#task.thread_id,
      artifact: {
        artifactId: messageId,
        name: '',
        description: '',
        parts: [{ content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: undefined }],
        metadata: undefined,
        extensions: [],
      },
      append,
      lastChunk: false,
      metadata: undefined,
    };
  }
}

/**
 * Watching one task as it changes (contract §12: "streaming follows task.updated changes until
 * final"), for A2A's `SendStreamingMessage`, `SubscribeToTask` and a blocking `SendMessage`
 * (A2A v1.0 §3.1.2, §3.1.6), and what each change means as A2A update events.
 *
 * The task's events (domain/tasks.ts `followTask`: its `task.updated`, through the process's event
 * hub, whichever process wrote them) only wake the watcher; each wake reads the task again, so the
 * watcher sees the stored task in the order its changes committed, never an older state after a
 * newer one. Changes that commit between two reads are seen together: an intermediate state may
 * be skipped, the last one never is.
 */
import type { TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from '@a2a-js/sdk';
import type { Task } from '../../api/tasks.ts';
import { followTask, isFinalTaskState } from '../domain/tasks.ts';
import type { DomainDeps } from '../domain/caller.ts';
import { liveKey, type StreamPosition } from '../events/deltas.ts';
import { ReplyDeltas } from './reply-deltas.ts';
import { toA2aArtifact, toA2aMessage, toA2aState } from './task-mapping.ts';

/** How often a watcher reads the task again without a wake: a safety net, not the way changes arrive. */
export const watchRecheckMs = 5_000;

/** Options of {@link watchTask}. */
export interface WatchOptions {
  deps: DomainDeps;
  orgId: string;
  taskId: string;
  /** Reads the task as it is stored now (its errors end the watch with that error). */
  load: () => Promise<Task>;
  /** Ends the watch: the client went away, the server stops, the call's wait is over. */
  signal: AbortSignal;
  /** A thread whose live items (a reply's deltas, events/deltas.ts) also wake the watch: the task's, when its deltas are streamed. */
  liveThreadId?: string | undefined;
}

/**
 * Yields the task as stored now, then again after each of its changes (and, with `liveThreadId`,
 * the task as last read after each live item of that thread), until the caller stops
 * iterating or `signal` aborts (then it returns, without an error). Subscribes before the first
 * read, so a change committed between the two is not missed. Errors: whatever `load` throws.
 */
export async function* watchTask(options: WatchOptions): AsyncGenerator<Task, void, undefined> {
  const { deps, orgId, taskId, load, signal, liveThreadId } = options;
  // The task is read again only when it changed (or at the recheck); a live item alone (a delta)
  // yields the task as last read, so that a streaming reply costs no read of its task per chunk.
  let dirty = false;
  let live = false;
  let wake: (() => void) | undefined;
  const subscription = await followTask(deps, orgId, taskId, () => {
    dirty = true;
    wake?.();
  });
  const stopLive =
    liveThreadId === undefined
      ? undefined
      : deps.events.onSignal(liveKey(liveThreadId), () => {
          live = true;
          wake?.();
        });
  const onAbort = () => wake?.();
  signal.addEventListener('abort', onAbort);
  try {
    if (signal.aborted) return;
    let task = await load();
    yield task;
    while (!signal.aborted) {
      if (!dirty && !live) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            dirty = true;
            resolve();
          }, watchRecheckMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
          if (dirty || live || signal.aborted) wake();
        });
        wake = undefined;
      }
      if (signal.aborted) return;
      live = false;
      if (dirty) {
        dirty = false;
        task = await load();
      }
      yield task;
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    subscription.unsubscribe();
    stopLive?.();
  }
}

/** What following a task yields: the task as read (before what changed in it), an artifact update (a chunk of a reply, or a whole artifact), or a status update. */
export type TaskFollowEvent =
  | { kind: 'snapshot'; task: Task }
  | { kind: 'artifact'; event: TaskArtifactUpdateEvent }
  | { kind: 'status'; event: TaskStatusUpdateEvent; task: Task };

/** Options of {@link followTaskUpdates}: a watch's, what the client was told already, and where the reply deltas start. */
export interface FollowOptions extends Omit<WatchOptions, 'liveThreadId'> {
  /** The task as the client last saw it: only what changed since is said. */
  said: Task;
  /** The URL the server is reached at (attachment URLs in parts). */
  publicUrl: string;
  /** Stream the assignee's reply deltas written after this position of the task's thread (reply-deltas.ts); none when undefined. */
  deltasFrom?: StreamPosition | undefined;
}

/**
 * Follows a task for an A2A stream (`SendStreamingMessage`, `SubscribeToTask`): for each read of
 * the task ({@link watchTask}), the snapshot, then the reply deltas written since the last read
 * (when `deltasFrom` is given: chunks of the reply's artifact, read after the task so that a
 * final task's chunks all come before its whole artifact), then its new artifacts, and its new
 * status ({@link TaskUpdates}) — before the chunks when the task is at work, after them otherwise. Ends as {@link watchTask} does; the caller stops iterating when the
 * task is over for it. Errors: storage errors and whatever `load` throws.
 */
export async function* followTaskUpdates(options: FollowOptions): AsyncGenerator<TaskFollowEvent, void, undefined> {
  const { said, publicUrl, deltasFrom, ...watch } = options;
  const updates = new TaskUpdates(said, publicUrl);
  const deltas = deltasFrom && new ReplyDeltas(watch.deps.db, said, deltasFrom);
  for await (const task of watchTask({ ...watch, liveThreadId: deltas ? said.thread_id : undefined })) {
    yield { kind: 'snapshot', task };
    const change = updates.next(task);
    // A reply is written while its task works, and finished before the task completes or asks:
    // a status into work comes before the chunks read with it, any other after them.
    const working = task.state === 'submitted' || task.state === 'working';
    if (working && change.status) yield { kind: 'status', event: change.status, task };
    if (deltas) for (const event of await deltas.read()) yield { kind: 'artifact', event };
    for (const event of change.artifacts) yield { kind: 'artifact', event };
    if (!working && change.status) yield { kind: 'status', event: change.status, task };
  }
}

/** What a change of a task means in A2A (A2A v1.0 §4.2): its new artifacts, then its new status (when the state or status message changed). */
export interface TaskChange {
  artifacts: TaskArtifactUpdateEvent[];
  status: TaskStatusUpdateEvent | undefined;
}

/**
 * Turns successive snapshots of one task into A2A update events, each said once: an artifact when
 * it first appears (whole: `append` false, `lastChunk` true), a status update when the state or
 * the status message differs from the last one said. Starts from what the caller already told its
 * client (`said`: the task event it sent first).
 */
export class TaskUpdates {
  readonly #publicUrl: string;
  readonly #artifacts = new Set<string>();
  #state: string;
  #statusMessage: string | null;

  constructor(said: Task, publicUrl: string) {
    this.#publicUrl = publicUrl;
    for (const artifact of said.artifacts) this.#artifacts.add(artifact.artifact_id);
    this.#state = said.state;
    this.#statusMessage = said.status_message?.message_id ?? null;
  }

  /** The update events `task` calls for since the last snapshot; artifacts first, so that a final status comes after what it finished. */
  next(task: Task): TaskChange {
    const artifacts: TaskArtifactUpdateEvent[] = [];
    for (const artifact of task.artifacts) {
      if (this.#artifacts.has(artifact.artifact_id)) continue;
      this.#artifacts.add(artifact.artifact_id);
      artifacts.push({ taskId: task.task_id, contextId: task.thread_id, artifact: toA2aArtifact(artifact, this.#publicUrl), append: false, lastChunk: true, metadata: undefined });
    }
    const statusMessage = task.status_message?.message_id ?? null;
    let status: TaskStatusUpdateEvent | undefined;
    if (task.state !== this.#state || statusMessage !== this.#statusMessage) {
      this.#state = task.state;
      this.#statusMessage = statusMessage;
      status = statusUpdate(task, this.#publicUrl);
    }
    return { artifacts, status };
  }
}

/** The status of `task` as an A2A status update event (A2A v1.0 §4.2.1). */
export function statusUpdate(task: Task, publicUrl: string): TaskStatusUpdateEvent {
  return {
    taskId: task.task_id,
    contextId: task.thread_id,
    status: {
      state: toA2aState(task.state),
      message: task.status_message ? toA2aMessage(task.status_message, task, publicUrl) : undefined,
      timestamp: task.updated_at,
    },
    metadata: undefined,
  };
}

/** Whether a watch for a message's answer is over at `task`: final, or asking for input by a change seen during the watch. */
export function answered(task: Task, changed: boolean): boolean {
  return isFinalTaskState(task.state) || (changed && task.state === 'input-required');
}

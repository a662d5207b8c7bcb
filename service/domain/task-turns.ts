/**
 * What provider agents' turns do to the task of the thread they answer on (contract §12): a turn
 * of the assignee moves it to `working` when it starts (and again when the answer to its question
 * comes), its reply completes it with the reply as an artifact, and its `ask` back to the requester
 * goes into the task's thread and makes the task `input-required` with the question as status
 * message. Each change writes `task.updated` in the transaction of what caused it
 * (agent-loop/agent-loop.ts, agent-loop/turns/run-turn.ts call these).
 */
import { maxTaskArtifacts, type TaskState } from '../../api/tasks.ts';
import type { Queryable } from '../storage/db.ts';
import type { DomainDeps } from './caller.ts';
import { isFinalTaskState, writeTaskEvent } from './task-records.ts';

/** The task of a thread as a turn needs it: its id, state and requester. */
export interface ThreadTask {
  taskId: string;
  state: TaskState;
  requesterId: string;
}

/**
 * The task of thread `threadId` whose assignee is `agentId`, if any (a turn of that agent on the
 * thread works on it). One indexed read. Output: {@link ThreadTask} or undefined.
 */
export async function taskAssignedOnThread(db: Queryable, threadId: string, agentId: string): Promise<ThreadTask | undefined> {
  const rows = await db.query<{ id: string; state: TaskState; requester_id: string }>(`SELECT id, state, requester_id FROM tasks WHERE thread_id = $1 AND assignee_id = $2`, [
    threadId,
    agentId,
  ]);
  return rows[0] && { taskId: rows[0].id, state: rows[0].state, requesterId: rows[0].requester_id };
}

/**
 * A turn of `agentId` on `threadId` starts, or goes on after the answer to its question came:
 * the thread's task assigned to the agent moves from `submitted` or `input-required` to `working`
 * (no status message), with its `task.updated`, in a transaction of its own; announced. Output:
 * whether the task moved (false: no such task, or working or final already).
 */
export async function startTaskWork(deps: DomainDeps, threadId: string, agentId: string): Promise<boolean> {
  const task = await deps.db.transaction(async (tx) => {
    const moved = await tx.query<{ id: string }>(
      `UPDATE tasks SET state = 'working', status_message_id = NULL, updated_at = now()
        WHERE thread_id = $1 AND assignee_id = $2 AND state IN ('submitted', 'input-required') RETURNING id`,
      [threadId, agentId],
    );
    return moved[0] ? writeTaskEvent(tx, moved[0].id, 'task.updated', false) : undefined;
  });
  if (task) deps.events.announce(task.org_id);
  return task !== undefined;
}

/**
 * In the transaction that posts a turn's reply (`messageId`, by `agentId` in `threadId`): the
 * thread's task assigned to the agent, when not final, is `completed`, with the reply as its
 * status message and as an artifact `{parts: [{text}]}` (none for an empty reply, or past 100
 * artifacts) whose id is the reply's message id — the id its deltas name, so that an A2A stream's
 * chunks of the reply and the artifact are one (§13; a2a/reply-deltas.ts) — and its
 * `task.updated` after the reply's `message.created`. Announce the
 * organization after the commit (the reply's caller does). Output: whether a task was completed.
 */
export async function completeTaskWithReply(tx: Queryable, input: { threadId: string; agentId: string; messageId: string; text: string }): Promise<boolean> {
  const moved = await tx.query<{ id: string }>(
    `UPDATE tasks SET state = 'completed', status_message_id = $3, updated_at = now()
      WHERE thread_id = $1 AND assignee_id = $2 AND state NOT IN ('completed', 'failed', 'canceled', 'rejected') RETURNING id`,
    [input.threadId, input.agentId, input.messageId],
  );
  const id = moved[0]?.id;
  if (id === undefined) return false;
  if (input.text !== '') {
    await tx.query(
      `INSERT INTO task_artifacts (id, task_id, name, parts) SELECT $1, $2, NULL, $3::jsonb WHERE (SELECT count(*) FROM task_artifacts WHERE task_id = $2) < $4`,
      [input.messageId, id, JSON.stringify([{ text: input.text }]), maxTaskArtifacts],
    );
  }
  await writeTaskEvent(tx, id, 'task.updated', true);
  return true;
}

/**
 * The thread a turn's `ask` to `peerId` goes to when it asks back (contract §12): the turn's own
 * thread `threadId`, when its task is assigned to `agentId`, asked by `peerId` and not final — so
 * the question lands in the task's conversation rather than in a new thread. Output: the thread id,
 * or undefined (the ask goes where it names).
 */
export async function askBackThread(db: Queryable, threadId: string, agentId: string, peerId: string): Promise<string | undefined> {
  const task = await taskAssignedOnThread(db, threadId, agentId);
  return task && task.requesterId === peerId && !isFinalTaskState(task.state) ? threadId : undefined;
}

/**
 * In the transaction that writes a turn's question (`messageId`, by `agentId` to `peerId` in
 * `threadId`): when the thread's task is assigned to the agent, asked by that peer and not final,
 * it is `input-required` with the question as its status message, its `task.updated` after the
 * question's `message.created`. Announce after the commit (the turn does). Output: whether it moved.
 */
export async function markTaskInputRequired(tx: Queryable, input: { threadId: string; agentId: string; peerId: string; messageId: string }): Promise<boolean> {
  const moved = await tx.query<{ id: string }>(
    `UPDATE tasks SET state = 'input-required', status_message_id = $4, updated_at = now()
      WHERE thread_id = $1 AND assignee_id = $2 AND requester_id = $3 AND state NOT IN ('completed', 'failed', 'canceled', 'rejected') RETURNING id`,
    [input.threadId, input.agentId, input.peerId, input.messageId],
  );
  if (!moved[0]) return false;
  await writeTaskEvent(tx, moved[0].id, 'task.updated', true);
  return true;
}

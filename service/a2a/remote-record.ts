/**
 * What a remote A2A agent's answers do to our task and thread (contract §12, "A2A participants"),
 * in storage: the exchange with the remote per (agent, thread) (`a2a_exchanges`, migration 0028),
 * and the recording of its messages, artifacts and states, each at most once (`a2a_posted`: the
 * key of what was recorded is inserted in the transaction that records it, so a process that
 * takes the work over after a crash, or a remote that starts over and says the same again, posts
 * nothing twice). Messages are posted as the remote agent; artifacts become the task's; the
 * remote's files (remote-files.ts) are stored as attachments of the organization in the
 * transaction that records what names them, so they are stored at most once too; a state change
 * writes `task.updated` in the same transaction (after the messages' events).
 */
import { maxTaskArtifacts, type TaskPart, type TaskState } from '../../api/tasks.ts';
import type { Queryable } from '../storage/db.ts';
import { insertAttachment } from '../domain/attachments.ts';
import { newId } from '../domain/ids.ts';
import { writeTaskEvent } from '../domain/task-records.ts';
import { insertMessage } from '../domain/threads.ts';

/** The exchange with the remote agent on one thread. */
export interface ExchangeRow {
  remote_task_id: string | null;
  remote_context_id: string | null;
  /** The remote task's last state seen (A2A's names, as ours: `working`, `input-required`, …), or null. */
  remote_state: string | null;
  /** Our message being sent (its answer not recorded yet), or null. */
  message_id: string | null;
}

/** The exchange of `agentId` on `threadId`, if one began. */
export async function readExchange(db: Queryable, agentId: string, threadId: string): Promise<ExchangeRow | undefined> {
  const rows = await db.query<ExchangeRow>(
    `SELECT remote_task_id, remote_context_id, remote_state, message_id FROM a2a_exchanges WHERE agent_id = $1 AND thread_id = $2`,
    [agentId, threadId],
  );
  return rows[0];
}

/**
 * Records, before it is sent, that our message `messageId` goes to the remote (a process that
 * takes over then asks the remote about its task rather than losing it); with `fresh`, the remote
 * task known before is forgotten (the message starts a new one).
 */
export async function noteSending(db: Queryable, agentId: string, threadId: string, messageId: string, fresh: boolean): Promise<void> {
  await db.query(
    `INSERT INTO a2a_exchanges (agent_id, thread_id, message_id) VALUES ($1, $2, $3)
     ON CONFLICT (agent_id, thread_id) DO UPDATE SET message_id = $3, updated_at = now(),
       remote_task_id = CASE WHEN $4 THEN NULL ELSE a2a_exchanges.remote_task_id END,
       remote_state = CASE WHEN $4 THEN NULL ELSE a2a_exchanges.remote_state END`,
    [agentId, threadId, messageId, fresh],
  );
}

/** Records the remote's task for the exchange (its id, context id and state) as soon as it is known. */
export async function noteRemoteTask(db: Queryable, agentId: string, threadId: string, task: { id: string; contextId: string; state: string | null }): Promise<void> {
  await db.query(
    `UPDATE a2a_exchanges SET remote_task_id = $3, remote_context_id = COALESCE(NULLIF($4, ''), remote_context_id), remote_state = COALESCE($5, remote_state), updated_at = now()
      WHERE agent_id = $1 AND thread_id = $2`,
    [agentId, threadId, task.id, task.contextId, task.state],
  );
}

/** A file of the remote to store as an attachment of the organization, under the id fixed when it was read (remote-files.ts). */
export interface PendingFile {
  attachmentId: string;
  filename: string;
  contentType: string;
  data: Buffer;
}

/** A message of the remote to post into the thread, at most once (by `key`). */
export interface RemoteMessage {
  key: string;
  content: string;
  /** The message's id, when it was fixed before (the reply to ours, whose deltas named it: remote-deltas.ts); default a new one. */
  id?: string | undefined;
  /** The message's attachments: ids of the outcome's `files` (stored with the message). */
  attachments?: string[] | undefined;
  /** Our message it answers: set on the final answer and on a question back (`input-required`), one of them per message (unique `(sender_id, reply_to)`). */
  replyTo?: string | undefined;
  /** A question: the requester is awaited (input-required). */
  expectsReply?: boolean | undefined;
}

/** A remote artifact to add to the thread's task, at most once (by `key`). */
export interface RemoteArtifact {
  key: string;
  /** The artifact's id on the task, when it is fixed (the streamed artifact: the reply's id, remote-deltas.ts); default a new one. */
  id?: string | undefined;
  name: string | null;
  parts: TaskPart[];
}

/** What one step of the exchange records, in one transaction. */
export interface Outcome {
  agentId: string;
  threadId: string;
  messages: RemoteMessage[];
  artifacts: RemoteArtifact[];
  /** The files the messages' attachments and the artifacts' file parts name, stored when one of those is recorded. */
  files?: PendingFile[] | undefined;
  /** The state the thread's task moves to (when it has one assigned to the agent that is not final). */
  state?: Exclude<TaskState, 'submitted'> | undefined;
  /** The key (among `messages`) of the message that becomes the task's status message. */
  statusKey?: string | undefined;
  /** The exchange afterwards: the remote task's state, and whether our message's answer is all recorded. */
  exchange?: { remoteState: string | null; settled: boolean } | undefined;
}

/**
 * A message's content as {@link recordOutcome} posts it: cut at 32,768 characters, `(no text)` when
 * empty (the streamed text of a reply is compared with it: remote-deltas.ts).
 */
export function postedContent(content: string): string {
  return content.trim() === '' ? '(no text)' : content.slice(0, 32_768);
}

/** Claims `key` for the exchange; true when it was not recorded before. */
async function claimKey(tx: Queryable, agentId: string, threadId: string, key: string): Promise<boolean> {
  const rows = await tx.query(`INSERT INTO a2a_posted (agent_id, thread_id, remote_key) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING 1`, [agentId, threadId, key.slice(0, 500)]);
  return rows.length > 0;
}

/**
 * Records `outcome` in `tx`: posts each message not posted before (as the agent, with its
 * attachments; the longest message cut at 32,768 characters, an empty one not posted), adds each
 * artifact not added before to the thread's task (at most 100), storing the files either names
 * first (each once, as attachments of the thread's organization), moves the task (not final;
 * assigned to the agent) to `outcome.state` with the status message named, writing `task.updated`
 * once after the messages' events, and updates the exchange. Announce the organization after the
 * commit. Output: how many messages were posted and whether the task changed. Errors:
 * `not_found` (the thread went).
 */
export async function recordOutcome(tx: Queryable, outcome: Outcome): Promise<{ posted: number; taskChanged: boolean }> {
  const { agentId, threadId } = outcome;
  const ids = new Map<string, string>();
  let posted = 0;
  const pending = new Map((outcome.files ?? []).map((file) => [file.attachmentId, file]));
  let orgId: string | undefined;
  /** Stores the files of `attachmentIds` not stored yet (an id of no pending file is one stored before). */
  const store = async (attachmentIds: readonly string[]) => {
    for (const id of attachmentIds) {
      const file = pending.get(id);
      if (!file) continue;
      pending.delete(id);
      orgId ??= (await tx.query<{ org_id: string }>(`SELECT t.org_id FROM threads th JOIN teams t ON t.id = th.team_id WHERE th.id = $1`, [threadId]))[0]?.org_id;
      if (orgId === undefined) return;
      await insertAttachment(tx, { id, orgId, filename: file.filename, contentType: file.contentType, data: file.data });
    }
  };
  for (const message of outcome.messages) {
    const content = postedContent(message.content);
    if (await claimKey(tx, agentId, threadId, message.key)) {
      const attachments = (message.attachments ?? []).slice(0, 100);
      await store(attachments);
      const appended = await insertMessage(tx, threadId, agentId, content, { replyTo: message.replyTo, expectsReply: message.expectsReply, attachments, id: message.id });
      await tx.query(`UPDATE a2a_posted SET message_id = $4 WHERE agent_id = $1 AND thread_id = $2 AND remote_key = $3`, [agentId, threadId, message.key.slice(0, 500), appended.id]);
      ids.set(message.key, appended.id);
      posted += 1;
    } else {
      const earlier = await tx.query<{ message_id: string | null }>(`SELECT message_id FROM a2a_posted WHERE agent_id = $1 AND thread_id = $2 AND remote_key = $3`, [agentId, threadId, message.key.slice(0, 500)]);
      if (earlier[0]?.message_id) ids.set(message.key, earlier[0].message_id);
    }
  }
  // The task's lock after the thread's (taken by the appends above), as a turn's reply takes them.
  const task = await tx.query<{ id: string; state: string }>(
    `SELECT id, state FROM tasks WHERE thread_id = $1 AND assignee_id = $2 AND state NOT IN ('completed', 'failed', 'canceled', 'rejected') FOR UPDATE`,
    [threadId, agentId],
  );
  let taskChanged = false;
  const taskId = task[0]?.id;
  if (taskId !== undefined) {
    for (const artifact of outcome.artifacts) {
      if (!(await claimKey(tx, agentId, threadId, artifact.key))) continue;
      const added = await tx.query(
        `INSERT INTO task_artifacts (id, task_id, name, parts) SELECT $1, $2, $3, $4::jsonb WHERE (SELECT count(*) FROM task_artifacts WHERE task_id = $2) < $5 RETURNING 1`,
        [artifact.id ?? newId(), taskId, artifact.name, JSON.stringify(artifact.parts), maxTaskArtifacts],
      );
      if (added.length > 0) {
        taskChanged = true;
        await store(artifact.parts.flatMap((part) => ('file' in part ? [part.file.attachment_id] : [])));
      }
    }
    const statusId = outcome.statusKey !== undefined ? (ids.get(outcome.statusKey) ?? null) : null;
    if (outcome.state !== undefined && (outcome.state !== task[0]!.state || statusId !== null)) {
      await tx.query(`UPDATE tasks SET state = $2, status_message_id = COALESCE($3, CASE WHEN state = $2 THEN status_message_id END), updated_at = now() WHERE id = $1`, [
        taskId,
        outcome.state,
        statusId,
      ]);
      taskChanged = true;
    } else if (taskChanged) {
      await tx.query(`UPDATE tasks SET updated_at = now() WHERE id = $1`, [taskId]);
    }
    if (taskChanged) await writeTaskEvent(tx, taskId, 'task.updated', true);
  }
  if (outcome.exchange) {
    await tx.query(
      `UPDATE a2a_exchanges SET remote_state = COALESCE($3, remote_state), message_id = CASE WHEN $4 THEN NULL ELSE message_id END, updated_at = now()
        WHERE agent_id = $1 AND thread_id = $2`,
      [agentId, threadId, outcome.exchange.remoteState, outcome.exchange.settled],
    );
  }
  return { posted, taskChanged };
}

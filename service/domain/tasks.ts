/**
 * Tasks (contract §12): a unit of work one participant of an edge (the requester) asks of the
 * other (the assignee), in the shape of the Agent2Agent protocol's (A2A v1.0) Task. Its
 * conversation is a thread on the edge, opened with the task: the requester's parts are its first
 * message. The one implementation that the REST routes (organization key), the MCP tools
 * (tools/task-tools.ts), provider agents' turns (agent-loop/) and the A2A server call.
 *
 * - **States.** `submitted` → any other; `working` ⇄ `input-required`; any state that is not
 *   final → `completed`, `failed`, `canceled` (the requester cancels; the assignee may too) or
 *   `rejected`. A change to the same state that is not final replaces the status message. The
 *   final states (completed, failed, canceled, rejected) change no more: every change of a final
 *   task, artifacts included, is refused with 409 `task_final` and writes nothing.
 * - **Who.** The requester cancels; the assignee sets the state and adds artifacts. An
 *   organization key acts for either (optionally naming the participant with `by`, which is then
 *   checked); a participant (an MCP agent, an A2A caller) acts only on its own tasks: a task it is
 *   not on is `not_found`, worded as an id that does not exist, and the wrong role is `forbidden`.
 * - **Cancel stops the work.** The requester's cancel also stops the assignee's turn in progress
 *   on the task's thread (as §13's stop does) and tells a remote A2A assignee to cancel its task;
 *   no turn of the assignee starts on the thread of a canceled task afterwards (agent-loop/).
 * - **Events.** `task.created` and `task.updated` (data: the Task after the change) are written
 *   in the transaction of the change, after the events of the messages it wrote (the thread's
 *   deferred `thread.opened` and `message.created` are made to fire first), so a reader of the log
 *   meets a task's thread and message before the task that names them.
 * - **Locks.** A change that writes a message into the thread takes the thread's row lock (the
 *   append's) before the task's, as a turn's reply does: two writers never wait for each other in
 *   opposite orders.
 */
import { ServiceError } from '../../errors/catalogue.ts';
import { CreateTaskBody, maxTaskArtifacts, TaskArtifactBody, TaskParts, TaskStatusBody, type Task, type TaskList, type TaskPart, type TaskState } from '../../api/tasks.ts';
import type { Message } from '../../api/schemas.ts';
import { taskTopic, type Subscription } from '../events/hub.ts';
import type { Queryable } from '../storage/db.ts';
import { reaches, type Caller, type DomainDeps } from './caller.ts';
import { getEdge } from './edges.ts';
import { isUuid, newId } from './ids.ts';
import {
  actor,
  assertFilesInOrganization,
  checkInput,
  assertNotFinal,
  composeMessage,
  fromTasks,
  loadTask,
  readTask,
  taskColumns,
  titleOf,
  withArtifacts,
  writeTaskEvent,
  type Scope,
  type TaskParticipant,
  type TaskRow,
} from './task-records.ts';
import { requestStop } from './replies.ts';
import { insertMessage, insertThread, toMessage, type MessageRow } from './threads.ts';

export { composeMessage, isFinalTaskState, type TaskParticipant } from './task-records.ts';

/** What an organization key's change may say about who makes it: a participant of the task, checked for the role. */
export interface ActingAs {
  /** The participant the change is made as (the requester to cancel, the assignee otherwise); checked when given. */
  by?: string | undefined;
}

/** The input of a task's creation: who asks (one of the edge's two participants), a title and what is asked. */
export interface CreateTaskInput {
  requester_id: string;
  title?: string | undefined;
  parts: TaskPart[];
  /** The thread's channel (default `web`); the A2A server names its own. */
  channel?: string | undefined;
}

/** A change of state: the new state and, when there is one to say, a message posted as the assignee. */
export interface TaskStatusInput {
  state: Exclude<TaskState, 'submitted'>;
  message?: string | undefined;
}

/** An artifact to add: its optional name and its parts. */
export interface TaskArtifactInput {
  name?: string | undefined;
  parts: TaskPart[];
}

/** Filters and paging of a participant's tasks. */
export interface ParticipantTaskQuery {
  state?: TaskState | undefined;
  /** Only the tasks where the participant has this role. */
  role?: 'requester' | 'assignee' | undefined;
  /** Only the tasks with this participant at the other end. */
  peer_id?: string | undefined;
  after?: string | undefined;
  limit: number;
}

// ---- create ------------------------------------------------------------------------------------

/**
 * Inserts a task on `edge` in `tx`, with its thread and first message (the requester's, built from
 * the parts, expecting the assignee's reply), and writes `task.created` after the thread's events.
 * Output: the Task (state `submitted`). Errors: `invalid_request` (parts too long),
 * `unknown_reference` (a file part's attachment not of the organization).
 */
async function insertTask(
  tx: Queryable,
  edge: { edge_id: string; team_id: string; org_id: string },
  requesterId: string,
  assigneeId: string,
  input: CreateTaskInput,
): Promise<Task> {
  const parts = checkInput(TaskParts, input.parts, 'parts');
  const message = composeMessage(parts);
  await assertFilesInOrganization(tx, edge.org_id, parts);
  const title = titleOf(input.title === undefined ? undefined : checkInput(CreateTaskBody.shape.title, input.title, 'title'), parts);
  const { threadId } = await insertThread(tx, {
    edgeId: edge.edge_id,
    teamId: edge.team_id,
    senderId: requesterId,
    content: message.content,
    subject: title,
    channel: input.channel,
    expects_reply: true,
    attachments: message.attachments,
  });
  const id = newId();
  await tx.query(
    `INSERT INTO tasks (id, org_id, team_id, edge_id, thread_id, requester_id, assignee_id, title) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [id, edge.org_id, edge.team_id, edge.edge_id, threadId, requesterId, assigneeId, title],
  );
  return writeTaskEvent(tx, id, 'task.created', true);
}

/**
 * Creates a task on an edge (contract §12 `POST /edges/{edge_id}/tasks`): the requester is one of
 * the edge's two participants, the assignee the other. Opens the task's thread (subject: the title)
 * with the requester's first message made of the parts (see {@link composeMessage}), which expects
 * the assignee's reply, and writes `task.created`, in one transaction. The title defaults to the
 * first line of the first text part. Output: the Task, state `submitted`.
 * Errors: `not_found` (edge), `not_a_participant` (requester not on the edge), `unknown_reference`
 * (a file part's attachment), `invalid_request` (the parts make a message over 32,768 characters).
 */
export async function createTask(deps: DomainDeps, caller: Caller, edgeId: string, input: CreateTaskInput): Promise<Task> {
  const task = await deps.db.transaction(async (tx) => {
    const edge = await getEdge(tx, caller, edgeId);
    if (!edge.participants.includes(input.requester_id)) {
      throw new ServiceError('not_a_participant', "requester_id is not one of the edge's two participants", {
        errors: [{ path: 'requester_id', message: "not one of the edge's two participants" }],
      });
    }
    const [team] = await tx.query<{ org_id: string }>(`SELECT org_id FROM teams WHERE id = $1`, [edge.team_id]);
    const assignee = edge.participants.find((p) => p !== input.requester_id)!;
    return insertTask(tx, { edge_id: edge.edge_id, team_id: edge.team_id, org_id: team!.org_id }, input.requester_id, assignee, input);
  });
  deps.events.announce(task.org_id);
  return task;
}

/**
 * Creates a task that `participant` asks of `assigneeId`, on the edge between them (an A2A caller
 * sending a message without a task; an MCP agent): as {@link createTask} with the participant as
 * requester. Output: the Task, state `submitted`. Errors: `not_found` (no edge joins the two:
 * worded as for an unknown participant, nothing written), `unknown_reference`, `invalid_request`.
 */
export async function createTaskAsParticipant(
  deps: DomainDeps,
  participant: TaskParticipant,
  input: { assignee_id: string; title?: string | undefined; parts: TaskPart[]; channel?: string | undefined },
): Promise<Task> {
  const task = await deps.db.transaction(async (tx) => {
    const rows = isUuid(input.assignee_id)
      ? await tx.query<{ edge_id: string; team_id: string; org_id: string }>(
          `SELECT e.id AS edge_id, e.team_id, t.org_id FROM edges e JOIN teams t ON t.id = e.team_id
            WHERE t.org_id = $1 AND LEAST(e.participant_a, e.participant_b) = LEAST($2::uuid, $3::uuid)
              AND GREATEST(e.participant_a, e.participant_b) = GREATEST($2::uuid, $3::uuid)`,
          [participant.orgId, participant.agentId, input.assignee_id],
        )
      : [];
    if (!rows[0] || input.assignee_id === participant.agentId) throw new ServiceError('not_found', 'no participant with this id among those this agent shares an edge with');
    return insertTask(tx, rows[0], participant.agentId, input.assignee_id, { requester_id: participant.agentId, title: input.title, parts: input.parts, channel: input.channel });
  });
  deps.events.announce(task.org_id);
  return task;
}

// ---- read --------------------------------------------------------------------------------------

/** The Task `taskId` (contract §12 `GET /tasks/{task_id}`). Errors: `not_found` (also out of the key's reach). */
export async function getTask(deps: DomainDeps, caller: Caller, taskId: string): Promise<Task> {
  const row = await loadTask(deps.db, { caller }, taskId);
  return (await withArtifacts(deps.db, [row]))[0]!;
}

/** The Task `taskId` when `participant` is its requester or assignee. Errors: `not_found` (otherwise, as for an unknown id). */
export async function getTaskAsParticipant(deps: DomainDeps, participant: TaskParticipant, taskId: string): Promise<Task> {
  const row = await loadTask(deps.db, { participant }, taskId);
  return (await withArtifacts(deps.db, [row]))[0]!;
}

/**
 * A page of tasks newest first: those `where` selects (an SQL predicate over `tk`, its parameters
 * `params` numbered from $1), after the task `after`, which `cursor.where` (over `c`, its
 * parameters numbered from $2: $1 is `after`) must find, at most `limit`.
 * Errors: `invalid_cursor` (`after` names no task there).
 */
async function pageOfTasks(
  db: Queryable,
  where: string,
  params: unknown[],
  after: string | undefined,
  cursor: { where: string; params: unknown[] },
  limit: number,
): Promise<TaskList> {
  let from: string | null = null;
  if (after !== undefined) {
    if (!isUuid(after)) throw new ServiceError('invalid_cursor', 'after names no task of this list');
    const found = await db.query<{ seq: string }>(`SELECT c.seq FROM tasks c WHERE c.id = $1 AND ${cursor.where}`, [after, ...cursor.params]);
    if (!found[0]) throw new ServiceError('invalid_cursor', 'after names no task of this list');
    from = String(found[0].seq);
  }
  // The page's own parameters come first: $1 the cursor's seq, $2 the limit; `where`'s after them.
  const shifted = where.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + 2}`);
  const rows = await db.query<TaskRow>(
    `SELECT ${taskColumns} ${fromTasks} WHERE ${shifted} AND ($1::bigint IS NULL OR tk.seq < $1::bigint) ORDER BY tk.seq DESC LIMIT $2`,
    [from, Math.max(1, Math.min(200, Math.trunc(limit))), ...params],
  );
  const tasks = await withArtifacts(db, rows);
  return { tasks, next_after: tasks.at(-1)?.task_id ?? null };
}

/**
 * A team's tasks, newest first (contract §12 `GET /teams/{team_id}/tasks`): of one `state`, of
 * one `assignee_id`, after the task `after`, at most `limit` (1–200). `next_after` is the last
 * task of the page (null when it is empty). Errors: `not_found` (team), `invalid_cursor` (`after`
 * names no task of the team).
 */
export async function listTeamTasks(
  deps: DomainDeps,
  caller: Caller,
  teamId: string,
  query: { state?: TaskState | undefined; assignee_id?: string | undefined; after?: string | undefined; limit: number },
): Promise<TaskList> {
  if (!isUuid(teamId)) throw new ServiceError('not_found', 'team not found');
  const team = await deps.db.query(`SELECT 1 FROM teams t JOIN organizations o ON o.id = t.org_id WHERE t.id = $2 AND ${reaches('o', 1)}`, [caller.orgId, teamId]);
  if (team.length === 0) throw new ServiceError('not_found', 'team not found');
  return pageOfTasks(
    deps.db,
    `tk.team_id = $1 AND ($2::text IS NULL OR tk.state = $2::text) AND ($3::uuid IS NULL OR tk.assignee_id = $3::uuid)`,
    [teamId, query.state ?? null, query.assignee_id ?? null],
    query.after,
    { where: 'c.team_id = $2', params: [teamId] },
    query.limit,
  );
}

/**
 * The tasks `participant` is the requester or the assignee of (MCP `list_tasks`, A2A `ListTasks`),
 * newest first: of one `state`, one `role`, one `peer_id` (the other participant), after the task
 * `after`, at most `limit` (1–200). Errors: `invalid_cursor` (`after` names none of its tasks),
 * `invalid_request` (a `peer_id` that is no UUID).
 */
export async function listTasksAsParticipant(deps: DomainDeps, participant: TaskParticipant, query: ParticipantTaskQuery): Promise<TaskList> {
  if (query.peer_id !== undefined && !isUuid(query.peer_id)) {
    throw new ServiceError('invalid_request', 'peer_id must be a participant id (a UUID)', { errors: [{ path: 'peer_id', message: 'must be a UUID' }] });
  }
  const mine = `tk.org_id = $1 AND $2::uuid IN (tk.requester_id, tk.assignee_id)`;
  return pageOfTasks(
    deps.db,
    `${mine} AND ($3::text IS NULL OR tk.state = $3::text)
       AND ($4::text IS NULL OR ($4::text = 'requester' AND tk.requester_id = $2::uuid) OR ($4::text = 'assignee' AND tk.assignee_id = $2::uuid))
       AND ($5::uuid IS NULL OR $5::uuid IN (tk.requester_id, tk.assignee_id) AND $5::uuid <> $2::uuid)`,
    [participant.orgId, participant.agentId, query.state ?? null, query.role ?? null, query.peer_id ?? null],
    query.after,
    { where: 'c.org_id = $2 AND $3::uuid IN (c.requester_id, c.assignee_id)', params: [participant.orgId, participant.agentId] },
    query.limit,
  );
}

/** A task's history: its thread's latest messages, at most `limit` (1–200), oldest first. */
async function historyOf(db: Queryable, threadId: string, limit: number): Promise<Message[]> {
  const rows = await db.query<MessageRow>(
    `SELECT id, thread_id, seq, sender_id, content, attachments, reply_to, expects_reply, stopped, sent_at
       FROM messages WHERE thread_id = $1 ORDER BY seq DESC LIMIT $2`,
    [threadId, Math.max(1, Math.min(200, limit))],
  );
  return rows.reverse().map(toMessage);
}

/**
 * The history of a task (A2A's `history`): the latest `limit` (1–200) messages of its thread,
 * oldest first; the first of all is the requester's, made of the parts asked with. Errors: `not_found`.
 */
export async function listTaskHistory(deps: DomainDeps, caller: Caller, taskId: string, limit = 50): Promise<Message[]> {
  const row = await loadTask(deps.db, { caller }, taskId);
  return historyOf(deps.db, row.thread_id, limit);
}

/** {@link listTaskHistory} for one of the task's participants. Errors: `not_found` (not its task). */
export async function listTaskHistoryAsParticipant(deps: DomainDeps, participant: TaskParticipant, taskId: string, limit = 50): Promise<Message[]> {
  const row = await loadTask(deps.db, { participant }, taskId);
  return historyOf(deps.db, row.thread_id, limit);
}

// ---- change ------------------------------------------------------------------------------------

/** Moves a locked task to `state` with `messageId` (or none) as its status message, and writes `task.updated`. */
async function moveTask(tx: Queryable, row: TaskRow, state: TaskState, messageId: string | null): Promise<Task> {
  await tx.query(`UPDATE tasks SET state = $2, status_message_id = $3, updated_at = now() WHERE id = $1`, [row.id, state, messageId]);
  return writeTaskEvent(tx, row.id, 'task.updated', messageId !== null);
}

async function cancel(deps: DomainDeps, scope: Scope, taskId: string, by: string | undefined, message: string | undefined): Promise<Task> {
  const task = await deps.db.transaction(async (tx) => {
    let row = await loadTask(tx, scope, taskId, message === undefined);
    const requester = actor(row, scope, 'requester', by);
    assertNotFinal(row);
    let messageId: string | null = null;
    if (message !== undefined) {
      // The thread's lock before the task's, as a turn's reply takes them.
      messageId = (await insertMessage(tx, row.thread_id, requester, message)).id;
      row = await loadTask(tx, scope, taskId, true);
      assertNotFinal(row);
    }
    return moveTask(tx, row, 'canceled', messageId);
  });
  deps.events.announce(task.org_id);
  await stopWorkOn(deps, task);
  return task;
}

/**
 * What a cancel does to the work on the task (contract §12, with §13's stop), once the task is
 * `canceled` and committed:
 * - a remote A2A assignee is told through `deps.onTaskCanceled` (a2a/remote-cancel.ts sends it A2A
 *   `CancelTask`; best effort, never waited for);
 * - the assignee's turn in progress on the task's thread is asked to stop as
 *   `POST /threads/{id}/stop` asks it (domain/replies.ts), in whichever process runs it: no model
 *   call or tool call not yet started is made, and a turn suspended on `ask` or an approval ends
 *   at once. Only the assignee's: a turn of the requester's on the thread (a provider agent that
 *   cancels with `update_task` in its turn) goes on.
 *
 * The stop comes after the commit, not in its transaction: a turn that its claim finds after it
 * sees the task canceled (the agent loop starts no turn on a canceled task's thread), and a turn
 * claimed before it is flagged. A turn stopped so posts what it wrote so far with `stopped: true`,
 * as a stop does: its deltas were streamed to readers under the reply's id, and the reply closes
 * them; the reply does not complete the task, which is final (task-turns.ts `completeTaskWithReply`
 * moves no final task). Errors: the storage's, after {@link stopAttempts} attempts (the task stays canceled).
 */
async function stopWorkOn(deps: DomainDeps, task: Task): Promise<void> {
  try {
    deps.onTaskCanceled?.(task);
  } catch {
    // The hook is a notification: a listener that throws does not undo or fail the cancel.
  }
  // The task is canceled already: a failed stop is tried again rather than answered as a failed
  // cancel (a retried cancel would be 409 task_final, and the turn would run on unflagged).
  for (let attempt = 1; ; attempt++) {
    try {
      await requestStop(deps, task.thread_id, { agentId: task.assignee_id });
      return;
    } catch (error) {
      if (attempt >= stopAttempts) throw error;
    }
  }
}

/** Attempts at flagging the assignee's turn to stop after a cancel committed (storage errors are rare and brief). */
const stopAttempts = 3;

/**
 * Cancels a task (contract §12 `POST /tasks/{task_id}/cancel`), as its requester (`by`, when
 * given, must be the requester): state `canceled`; with `message`, it is posted to the thread as
 * the requester and kept as the status message (none otherwise); `task.updated`. Then the work
 * stops (see {@link stopWorkOn}): the assignee's turn in progress on the task's thread ends as a
 * stop (§13) ends it, without completing the task, and a remote A2A assignee is sent `CancelTask`
 * for its task. Output: the Task. Errors: `not_found`, `task_final` (409: already final; nothing
 * written), `not_a_participant`, `forbidden` (`by` is the assignee).
 */
export function cancelTask(deps: DomainDeps, caller: Caller, taskId: string, options: ActingAs & { message?: string | undefined } = {}): Promise<Task> {
  return cancel(deps, { caller }, taskId, options.by, options.message);
}

/**
 * {@link cancelTask} by one of the task's participants, which must be its requester (`message`:
 * as there; the work stops as there). The A2A server's `CancelTask`, MCP `update_task` with state
 * `canceled`. Errors: `not_found` (not its task), `forbidden` (its assignee), `task_final`.
 */
export function cancelTaskAsParticipant(deps: DomainDeps, participant: TaskParticipant, taskId: string, options: { message?: string | undefined } = {}): Promise<Task> {
  return cancel(deps, { participant }, taskId, undefined, options.message);
}

async function setStatus(deps: DomainDeps, scope: Scope, taskId: string, unchecked: TaskStatusInput, by: string | undefined): Promise<Task> {
  // `submitted` is refused here: a task never goes back to it.
  const input = checkInput(TaskStatusBody, unchecked, '');
  const task = await deps.db.transaction(async (tx) => {
    let row = await loadTask(tx, scope, taskId);
    const assignee = actor(row, scope, 'assignee', by);
    assertNotFinal(row);
    let messageId: string | null = null;
    if (input.message !== undefined) {
      // The thread's lock before the task's, as a turn's reply takes them.
      const message = await insertMessage(tx, row.thread_id, assignee, input.message);
      messageId = message.id;
    }
    row = await loadTask(tx, scope, taskId, true);
    assertNotFinal(row);
    return moveTask(tx, row, input.state, messageId);
  });
  deps.events.announce(task.org_id);
  return task;
}

/**
 * Sets a task's state as its assignee (contract §12 `POST /tasks/{task_id}/status`; `by`, when
 * given, must be the assignee): any state but `submitted`, from any state that is not final. With
 * `message`, the message is posted to the task's thread as the assignee and kept as the task's
 * `status_message` (a question of input-required, a reason of failed); without, the status message
 * is cleared. `task.updated`, all in one transaction. Output: the Task.
 * Errors: `not_found`, `task_final` (409: the task is final; nothing written), `not_a_participant`,
 * `forbidden` (`by` is the requester), `invalid_request` (`submitted`).
 */
export function setTaskStatus(deps: DomainDeps, caller: Caller, taskId: string, input: TaskStatusInput, options: ActingAs = {}): Promise<Task> {
  return setStatus(deps, { caller }, taskId, input, options.by);
}

/** {@link setTaskStatus} by one of the task's participants, which must be its assignee. Errors: `not_found` (not its task), `forbidden` (its requester), `task_final`. */
export function setTaskStatusAsParticipant(deps: DomainDeps, participant: TaskParticipant, taskId: string, input: TaskStatusInput): Promise<Task> {
  return setStatus(deps, { participant }, taskId, input, undefined);
}

async function addArtifact(deps: DomainDeps, scope: Scope, taskId: string, unchecked: TaskArtifactInput, by: string | undefined): Promise<Task> {
  const input = checkInput(TaskArtifactBody, unchecked, '');
  const task = await deps.db.transaction(async (tx) => {
    const row = await loadTask(tx, scope, taskId, true);
    actor(row, scope, 'assignee', by);
    assertNotFinal(row);
    await assertFilesInOrganization(tx, row.org_id, input.parts);
    const inserted = await tx.query(
      `INSERT INTO task_artifacts (id, task_id, name, parts) SELECT $1, $2, $3, $4::jsonb
        WHERE (SELECT count(*) FROM task_artifacts WHERE task_id = $2) < $5 RETURNING 1`,
      [newId(), row.id, input.name ?? null, JSON.stringify(input.parts), maxTaskArtifacts],
    );
    if (inserted.length === 0) throw new ServiceError('invalid_request', `a task holds at most ${maxTaskArtifacts} artifacts`, { extra: { limit: maxTaskArtifacts } });
    await tx.query(`UPDATE tasks SET updated_at = now() WHERE id = $1`, [row.id]);
    return writeTaskEvent(tx, row.id, 'task.updated', false);
  });
  deps.events.announce(task.org_id);
  return task;
}

/**
 * Adds an artifact to a task as its assignee (contract §12 `POST /tasks/{task_id}/artifacts`; `by`,
 * when given, must be the assignee): `{name?, parts}`, after the artifacts it has (at most 100);
 * the state does not change. `task.updated`. Output: the Task, the new artifact last.
 * Errors: `not_found`, `task_final` (409; nothing written), `not_a_participant`, `forbidden`,
 * `unknown_reference` (a file part's attachment not of the organization, at `parts.N.file.attachment_id`),
 * `invalid_request` (100 artifacts already).
 */
export function addTaskArtifact(deps: DomainDeps, caller: Caller, taskId: string, input: TaskArtifactInput, options: ActingAs = {}): Promise<Task> {
  return addArtifact(deps, { caller }, taskId, input, options.by);
}

/** {@link addTaskArtifact} by one of the task's participants, which must be its assignee. Errors: `not_found` (not its task), `forbidden`, `task_final`, `unknown_reference`, `invalid_request`. */
export function addTaskArtifactAsParticipant(deps: DomainDeps, participant: TaskParticipant, taskId: string, input: TaskArtifactInput): Promise<Task> {
  return addArtifact(deps, { participant }, taskId, input, undefined);
}

/**
 * Posts a message made of `parts` (see {@link composeMessage}) to the thread of one of
 * `participant`'s tasks that is not final, as that participant (an A2A caller's message on its
 * task, such as the answer to an input-required question, which wakes a turn waiting for it). The
 * state does not change: the assignee moves it (a provider agent's turn, when the answer wakes it).
 * Output: the Message. Errors: `not_found` (not its task), `task_final` (409; nothing written),
 * `unknown_reference`, `invalid_request`.
 */
export async function sendTaskMessageAsParticipant(
  deps: DomainDeps,
  participant: TaskParticipant,
  taskId: string,
  input: { parts: TaskPart[]; expects_reply?: boolean | undefined },
): Promise<Message> {
  const parts = checkInput(TaskParts, input.parts, 'parts');
  const message = composeMessage(parts);
  const posted = await deps.db.transaction(async (tx) => {
    const row = await loadTask(tx, { participant }, taskId);
    assertNotFinal(row);
    await assertFilesInOrganization(tx, row.org_id, parts);
    const appended = await insertMessage(tx, row.thread_id, participant.agentId, message.content, { attachments: message.attachments, expectsReply: input.expects_reply });
    // Final meanwhile (the lock is the thread's now, then the task's): nothing was said.
    assertNotFinal(await loadTask(tx, { participant }, taskId, true));
    return appended;
  });
  deps.events.announce(posted.org_id);
  return toMessage(posted);
}

// ---- following ---------------------------------------------------------------------------------

/**
 * Follows a task's events (`task.created`, `task.updated`) from now on, through any process:
 * `listener` gets the Task as each event carries it (the task after its change), in the order of
 * the log. Resolves once subscribed (events/hub.ts): every change committed before the call is in
 * what a read started now sees. No access check: the caller found the task first. Output: the
 * {@link Subscription} (unsubscribe when done).
 */
export function followTask(deps: DomainDeps, orgId: string, taskId: string, listener: (task: Task) => void): Promise<Subscription> {
  return deps.events.subscribe(orgId, taskTopic(taskId), (events) => {
    for (const event of events) if (event.type === 'task.created' || event.type === 'task.updated') listener(event.data);
  });
}

async function waitFor(deps: DomainDeps, scope: Scope, taskId: string, until: (task: Task) => boolean, options: { timeoutMs: number; signal?: AbortSignal | undefined }): Promise<Task> {
  const first = await loadTask(deps.db, scope, taskId);
  let latest: Task | undefined;
  let wake: () => void = () => {};
  const subscription = await followTask(deps, first.org_id, taskId, (task) => {
    latest = task;
    wake();
  });
  try {
    // Read after subscribing: a change between the first read and the subscription is not missed.
    const now = await readTask(deps.db, taskId);
    if (until(now) || options.timeoutMs <= 0 || options.signal?.aborted) return latest && latest.updated_at > now.updated_at ? latest : now;
    const deadline = Date.now() + options.timeoutMs;
    for (;;) {
      if (latest && until(latest)) return latest;
      const remaining = deadline - Date.now();
      if (remaining <= 0 || options.signal?.aborted) return latest ?? now;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          options.signal?.removeEventListener('abort', done);
          wake = () => {};
          resolve();
        };
        const timer = setTimeout(done, remaining);
        options.signal?.addEventListener('abort', done, { once: true });
        wake = done;
      });
    }
  } finally {
    subscription.unsubscribe();
  }
}

/**
 * Waits until the task `taskId` satisfies `until` (say, a final or input-required state: an A2A
 * `SendMessage` that blocks), at most `timeoutMs` or until `signal` aborts; fed by its events, so
 * nothing polls. Output: the Task that satisfied `until`, else the latest seen when the time ran
 * out. Errors: `not_found`.
 */
export function waitForTask(deps: DomainDeps, caller: Caller, taskId: string, until: (task: Task) => boolean, options: { timeoutMs: number; signal?: AbortSignal | undefined }): Promise<Task> {
  return waitFor(deps, { caller }, taskId, until, options);
}

/** {@link waitForTask} for one of the task's participants. Errors: `not_found` (not its task). */
export function waitForTaskAsParticipant(
  deps: DomainDeps,
  participant: TaskParticipant,
  taskId: string,
  until: (task: Task) => boolean,
  options: { timeoutMs: number; signal?: AbortSignal | undefined },
): Promise<Task> {
  return waitFor(deps, { participant }, taskId, until, options);
}

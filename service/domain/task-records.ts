/**
 * Tasks in storage (contract §12; migration `0027_tasks`): the rows and their wire form, the reads
 * every task operation starts with (scoped to an organization key or to one of the task's
 * participants), the checks of who may change a task and whether it is final, the message a
 * task's parts make, and its events. domain/tasks.ts (the operations) and domain/task-turns.ts
 * (what turns do to tasks) build on it.
 */
import { ServiceError, type FieldProblem } from '../../errors/catalogue.ts';
import type { z } from 'zod';
import { finalTaskStates, type Task, type TaskArtifact, type TaskPart, type TaskState } from '../../api/tasks.ts';
import type { Message } from '../../api/schemas.ts';
import { appendEvent } from '../events/log.ts';
import type { Queryable } from '../storage/db.ts';
import type { McpIdentity } from './authentication.ts';
import { reaches, type Caller } from './caller.ts';
import { iso, isUuid } from './ids.ts';
import { toMessage, type MessageRow } from './threads.ts';

/**
 * A participant acting on its own tasks: the agent an MCP key names (an external agent over MCP,
 * an A2A caller). Only `agentId` (the participant) and `orgId` are read.
 */
export type TaskParticipant = Pick<McpIdentity, 'agentId' | 'orgId'>;

const finals = new Set<string>(finalTaskStates);

/** Whether `state` is final (completed, failed, canceled, rejected): a task in it changes no more. */
export function isFinalTaskState(state: string): boolean {
  return finals.has(state);
}

/** The longest message a task's parts may make (contract §1: message content is at most 32,768 characters). */
const maxContent = 32_768;

// ---- rows --------------------------------------------------------------------------------------

/** A task row with its status message joined (`m_*`, null when it has none). */
export interface TaskRow {
  id: string;
  seq: string;
  org_id: string;
  team_id: string;
  edge_id: string;
  thread_id: string;
  requester_id: string;
  assignee_id: string;
  title: string;
  state: TaskState;
  status_message_id: string | null;
  created_at: Date;
  updated_at: Date;
  m_id: string | null;
  m_seq: number;
  m_sender_id: string;
  m_content: string;
  m_attachments: string[];
  m_reply_to: string | null;
  m_expects_reply: boolean;
  m_stopped: boolean;
  m_sent_at: Date;
}

interface ArtifactRow {
  id: string;
  task_id: string;
  name: string | null;
  parts: TaskPart[];
  created_at: Date;
}

/** The columns of a {@link TaskRow}, over `tk` (tasks) and `m` (its status message), for statements that read tasks. */
export const taskColumns = `
  tk.id, tk.seq, tk.org_id, tk.team_id, tk.edge_id, tk.thread_id, tk.requester_id, tk.assignee_id, tk.title, tk.state,
  tk.status_message_id, tk.created_at, tk.updated_at,
  m.id AS m_id, m.seq AS m_seq, m.sender_id AS m_sender_id, m.content AS m_content, m.attachments AS m_attachments,
  m.reply_to AS m_reply_to, m.expects_reply AS m_expects_reply, m.stopped AS m_stopped, m.sent_at AS m_sent_at`;

/** The tasks with their organization (`o`, for reach checks) and their status message (`m`). */
export const fromTasks = `FROM tasks tk JOIN organizations o ON o.id = tk.org_id LEFT JOIN messages m ON m.id = tk.status_message_id`;

function statusMessageOf(row: TaskRow): Message | null {
  if (row.m_id === null) return null;
  const message: MessageRow = {
    id: row.m_id,
    thread_id: row.thread_id,
    seq: row.m_seq,
    sender_id: row.m_sender_id,
    content: row.m_content,
    attachments: row.m_attachments,
    reply_to: row.m_reply_to,
    expects_reply: row.m_expects_reply,
    stopped: row.m_stopped,
    sent_at: row.m_sent_at,
  };
  return toMessage(message);
}

function toArtifact(row: ArtifactRow): TaskArtifact {
  return { artifact_id: row.id, name: row.name, parts: row.parts, created_at: iso(row.created_at) };
}

/** Maps a stored task and its artifacts (in their order) to its wire form (contract §12). */
function toTask(row: TaskRow, artifacts: readonly ArtifactRow[]): Task {
  return {
    task_id: row.id,
    org_id: row.org_id,
    team_id: row.team_id,
    edge_id: row.edge_id,
    thread_id: row.thread_id,
    requester_id: row.requester_id,
    assignee_id: row.assignee_id,
    title: row.title,
    state: row.state,
    status_message: statusMessageOf(row),
    artifacts: artifacts.map(toArtifact),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** The tasks of `rows` with their artifacts, read in one statement, in the order of `rows`. */
export async function withArtifacts(db: Queryable, rows: readonly TaskRow[]): Promise<Task[]> {
  if (rows.length === 0) return [];
  const artifacts = await db.query<ArtifactRow>(
    `SELECT id, task_id, name, parts, created_at FROM task_artifacts WHERE task_id = ANY($1::uuid[]) ORDER BY task_id, seq`,
    [rows.map((row) => row.id)],
  );
  const byTask = new Map<string, ArtifactRow[]>();
  for (const artifact of artifacts) {
    const list = byTask.get(artifact.task_id) ?? [];
    list.push(artifact);
    byTask.set(artifact.task_id, list);
  }
  return rows.map((row) => toTask(row, byTask.get(row.id) ?? []));
}

// ---- scopes ------------------------------------------------------------------------------------

/** Who reads or changes a task: an organization key (reaching the task's organization) or one of the task's participants. */
export type Scope = { caller: Caller; participant?: undefined } | { participant: TaskParticipant; caller?: undefined };

const taskNotFound = 'task not found';
const participantTaskNotFound = "no task with this id among this agent's tasks";

/**
 * The task `taskId` as `scope` may see it, locked `FOR UPDATE` (its row only) when `lock`.
 * Errors: `not_found` (no such task, out of the key's reach, or not one of the participant's).
 */
export async function loadTask(db: Queryable, scope: Scope, taskId: string, lock = false): Promise<TaskRow> {
  const missing = scope.participant ? participantTaskNotFound : taskNotFound;
  if (!isUuid(taskId)) throw new ServiceError('not_found', missing);
  const forUpdate = lock ? 'FOR UPDATE OF tk' : '';
  const rows = scope.participant
    ? await db.query<TaskRow>(`SELECT ${taskColumns} ${fromTasks} WHERE tk.id = $2 AND tk.org_id = $1 AND $3::uuid IN (tk.requester_id, tk.assignee_id) ${forUpdate}`, [
        scope.participant.orgId,
        taskId,
        scope.participant.agentId,
      ])
    : await db.query<TaskRow>(`SELECT ${taskColumns} ${fromTasks} WHERE tk.id = $2 AND ${reaches('o', 1)} ${forUpdate}`, [scope.caller.orgId, taskId]);
  if (!rows[0]) throw new ServiceError('not_found', missing);
  return rows[0];
}

/** Reads the Task `taskId` as stored now (no access check: callers did it). */
export async function readTask(db: Queryable, taskId: string): Promise<Task> {
  const rows = await db.query<TaskRow>(`SELECT ${taskColumns} ${fromTasks} WHERE tk.id = $1`, [taskId]);
  if (!rows[0]) throw new ServiceError('not_found', taskNotFound);
  return (await withArtifacts(db, rows))[0]!;
}

/** The end of a task a change is made from: the requester cancels, the assignee does the rest. */
export type Role = 'requester' | 'assignee';

/**
 * Checks that the change is made in `role`: by the scope's participant, or by `by` when an
 * organization key names one. Output: the participant id the change is made as.
 * Errors: `not_a_participant` (`by` is not one of the task's two participants), `forbidden` (the
 * other participant's role).
 */
export function actor(row: TaskRow, scope: Scope, role: Role, by: string | undefined): string {
  const required = role === 'requester' ? row.requester_id : row.assignee_id;
  const who = scope.participant ? scope.participant.agentId : by;
  if (who === undefined) return required;
  if (who !== row.requester_id && who !== row.assignee_id) {
    throw new ServiceError('not_a_participant', "by is not one of the task's two participants", { errors: [{ path: 'by', message: 'not a participant of this task' }] });
  }
  if (who !== required) {
    throw new ServiceError('forbidden', role === 'requester' ? 'only the requester of a task may cancel it' : "only the assignee of a task may change its state or add artifacts");
  }
  return required;
}

/** Refuses any change of a final task. Errors: `task_final` (409, with `state`). */
export function assertNotFinal(row: Pick<TaskRow, 'state'>): void {
  if (isFinalTaskState(row.state)) {
    throw new ServiceError('task_final', `the task is ${row.state}: a final task changes no more`, { extra: { state: row.state } });
  }
}

// ---- parts -------------------------------------------------------------------------------------

/**
 * `value` parsed with `schema` (one of api/tasks.ts'): the domain's own check of what callers
 * other than the HTTP and MCP layers (which parse first) hand it, such as the A2A server's mapped
 * parts. Errors: `invalid_request` with each problem at its path under `path` (`parts.0.text`).
 */
export function checkInput<S extends z.ZodType>(schema: S, value: unknown, path: string): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const errors: FieldProblem[] = parsed.error.issues.map((issue) => ({ path: [path, ...issue.path.map(String)].filter((p) => p !== '').join('.'), message: issue.message }));
  throw new ServiceError('invalid_request', errors.map((e) => `${e.path}: ${e.message}`).join('; '), { errors });
}

/** A message made of a task's parts: its content and attachments. */
export interface ComposedMessage {
  content: string;
  attachments: string[];
}

/**
 * The message a task's parts make (contract §12: its thread's first message): text parts as they
 * are and data parts as ```json blocks, in their order, separated by a blank line; file parts as
 * the message's attachments (named in the content only when nothing else is). Errors:
 * `invalid_request` when the content would be over 32,768 characters.
 */
export function composeMessage(parts: readonly TaskPart[]): ComposedMessage {
  const pieces: string[] = [];
  const attachments: string[] = [];
  const files: string[] = [];
  for (const part of parts) {
    if ('text' in part) pieces.push(part.text);
    else if ('data' in part) pieces.push(`\`\`\`json\n${JSON.stringify(part.data, null, 2)}\n\`\`\``);
    else {
      if (!attachments.includes(part.file.attachment_id)) attachments.push(part.file.attachment_id);
      files.push(`[file: ${part.file.name ?? part.file.attachment_id}]`);
    }
  }
  const content = pieces.length > 0 ? pieces.join('\n\n') : files.join('\n');
  if (content.length > maxContent) {
    throw new ServiceError('invalid_request', `the parts make a message of ${content.length} characters; at most ${maxContent}`, {
      errors: [{ path: 'parts', message: `the text and data parts together must make at most ${maxContent} characters` }],
    });
  }
  return { content, attachments };
}

/** A title from the parts when none is given: the first line of the first text part, at most 200 characters. */
export function titleOf(title: string | undefined, parts: readonly TaskPart[]): string {
  if (title !== undefined && title.trim() !== '') return title.trim();
  const text = parts.find((part): part is { text: string } => 'text' in part)?.text ?? '';
  const line = text.split(/\r?\n/).map((l) => l.trim()).find((l) => l !== '') ?? '';
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

/**
 * Checks that every file part names an attachment of `orgId`. Errors: `unknown_reference`, each
 * unknown one at its part's path (`parts.N.file.attachment_id`).
 */
export async function assertFilesInOrganization(db: Queryable, orgId: string, parts: readonly TaskPart[]): Promise<void> {
  const named = parts.flatMap((part, index) => ('file' in part ? [{ id: part.file.attachment_id, index }] : []));
  if (named.length === 0) return;
  const found = await db.query<{ id: string }>(`SELECT id FROM attachments WHERE org_id = $1 AND id = ANY($2::uuid[])`, [orgId, named.map((n) => n.id)]);
  const known = new Set(found.map((row) => row.id));
  const errors: FieldProblem[] = named.filter((n) => !known.has(n.id)).map((n) => ({ path: `parts.${n.index}.file.attachment_id`, message: 'no such attachment in this organization' }));
  if (errors.length > 0) throw new ServiceError('unknown_reference', `no attachment of this organization has id ${named.find((n) => !known.has(n.id))!.id}`, { errors });
}

// ---- events ------------------------------------------------------------------------------------

/**
 * Writes `type` with the Task `taskId` as it is now in `tx`, and returns that Task. When the
 * transaction wrote a thread or a message before (`afterMessages`), their deferred events
 * (`thread.opened`, `message.created`: migration 0011) are fired first, so the log has them before
 * the task's event. Announce the organization after the commit.
 */
export async function writeTaskEvent(tx: Queryable, taskId: string, type: 'task.created' | 'task.updated', afterMessages: boolean): Promise<Task> {
  if (afterMessages) await tx.query(`SET CONSTRAINTS threads_event, messages_event IMMEDIATE`);
  const task = await readTask(tx, taskId);
  await appendEvent(tx, { orgId: task.org_id, teamId: task.team_id, type, data: task });
  return task;
}

/**
 * The service's task (contract §12, api/tasks.ts) as an A2A v1.0 Task (A2A v1.0 §4.1, "Core
 * Objects"), and A2A message parts as the service's parts: one object, two spellings.
 *
 * - Task: `id` = `task_id`, `contextId` = `thread_id`, `status.state` = the state (A2A's own
 *   names), `status.message` = `status_message`, `status.timestamp` = `updated_at`, `artifacts`
 *   = the artifacts, `history` = the thread's messages, oldest first; `metadata` carries the
 *   service's own fields (title, edge, requester, assignee).
 * - Message: `messageId` = `message_id`; role `user` for the requester's messages, `agent` for
 *   the assignee's; its content as a text part and each attachment as a file part by URL.
 * - Parts: `{text}` ↔ text, `{data}` ↔ data (JSON), `{file: {attachment_id}}` → a file part whose
 *   URL is the attachment's content route (`GET /api/v1/attachments/{id}/content`, an
 *   organization key reads it); inbound file parts carry their bytes (`raw`), stored as an
 *   attachment of the organization before the task is asked; file parts by URL are refused (the
 *   service fetches nothing on a caller's say-so).
 *
 * Pure functions over the SDK's types. Loaded with the rest of the A2A server at the first A2A
 * request (routes.ts), not when the server starts.
 */
import { Role, TaskState as A2aTaskState, type Message as A2aMessage, type Part as A2aPart, type Task as A2aTask, type Artifact as A2aArtifact } from '@a2a-js/sdk';
import { maxTaskParts, TaskParts, type Task, type TaskArtifact, type TaskPart, type TaskState } from '../../api/tasks.ts';
import type { Message } from '../../api/schemas.ts';

/** A2A's state of each of the service's task states (the same names, A2A v1.0 §4.1.3 TaskState). */
export function toA2aState(state: TaskState): A2aTaskState {
  const s = A2aTaskState;
  switch (state) {
    case 'submitted':
      return s.TASK_STATE_SUBMITTED;
    case 'working':
      return s.TASK_STATE_WORKING;
    case 'input-required':
      return s.TASK_STATE_INPUT_REQUIRED;
    case 'completed':
      return s.TASK_STATE_COMPLETED;
    case 'failed':
      return s.TASK_STATE_FAILED;
    case 'canceled':
      return s.TASK_STATE_CANCELED;
    case 'rejected':
      return s.TASK_STATE_REJECTED;
  }
}

/** The service's state of an A2A state, or undefined for one it has no such task in (unspecified, auth-required). */
export function fromA2aState(state: A2aTaskState): TaskState | undefined {
  const states: TaskState[] = ['submitted', 'working', 'input-required', 'completed', 'failed', 'canceled', 'rejected'];
  return states.find((s) => toA2aState(s) === state);
}

/** Where an attachment's bytes are read: `{publicUrl}/api/v1/attachments/{id}/content`. */
export function attachmentUrl(publicUrl: string, attachmentId: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/api/v1/attachments/${attachmentId}/content`;
}

/** One of the service's parts as an A2A part (A2A v1.0 §4.1.6 Part). */
export function toA2aPart(part: TaskPart, publicUrl: string): A2aPart {
  if ('text' in part) return { content: { $case: 'text', value: part.text }, mediaType: 'text/plain', filename: '', metadata: undefined };
  if ('data' in part) return { content: { $case: 'data', value: part.data }, mediaType: 'application/json', filename: '', metadata: undefined };
  return {
    content: { $case: 'url', value: attachmentUrl(publicUrl, part.file.attachment_id) },
    mediaType: part.file.media_type ?? '',
    filename: part.file.name ?? '',
    metadata: { attachment_id: part.file.attachment_id },
  };
}

/** An artifact of a task as an A2A artifact (A2A v1.0 §4.1.7 Artifact); an unnamed one has name `''`. */
export function toA2aArtifact(artifact: TaskArtifact, publicUrl: string): A2aArtifact {
  return {
    artifactId: artifact.artifact_id,
    name: artifact.name ?? '',
    description: '',
    parts: artifact.parts.map((part) => toA2aPart(part, publicUrl)),
    metadata: { created_at: artifact.created_at },
    extensions: [],
  };
}

/**
 * A message of a task's thread as an A2A message (A2A v1.0 §4.1.4 Message): role `user` when the
 * requester wrote it, `agent` when the assignee did; its text as a text part (none when empty) and
 * each attachment as a file part by URL; `metadata` names the sender and when it was sent.
 */
export function toA2aMessage(message: Message, task: Pick<Task, 'task_id' | 'thread_id' | 'requester_id'>, publicUrl: string): A2aMessage {
  const parts: A2aPart[] = [];
  if (message.content !== '') parts.push(toA2aPart({ text: message.content }, publicUrl));
  for (const attachment of message.attachments) parts.push(toA2aPart({ file: { attachment_id: attachment } }, publicUrl));
  return {
    messageId: message.message_id,
    contextId: task.thread_id,
    taskId: task.task_id,
    role: message.sender_id === task.requester_id ? Role.ROLE_USER : Role.ROLE_AGENT,
    parts,
    metadata: { sender_id: message.sender_id, sent_at: message.sent_at },
    extensions: [],
    referenceTaskIds: [],
  };
}

/**
 * A task as an A2A Task (A2A v1.0 §4.1.1), with `history` (the thread's messages, oldest first;
 * empty when not read). `metadata` holds the service's fields A2A has no place for.
 */
export function toA2aTask(task: Task, history: readonly Message[], publicUrl: string): A2aTask {
  return {
    id: task.task_id,
    contextId: task.thread_id,
    status: {
      state: toA2aState(task.state),
      message: task.status_message ? toA2aMessage(task.status_message, task, publicUrl) : undefined,
      timestamp: task.updated_at,
    },
    artifacts: task.artifacts.map((artifact) => toA2aArtifact(artifact, publicUrl)),
    history: history.map((message) => toA2aMessage(message, task, publicUrl)),
    metadata: {
      title: task.title,
      edge_id: task.edge_id,
      requester_id: task.requester_id,
      assignee_id: task.assignee_id,
      created_at: task.created_at,
    },
  };
}

/** A file part of an incoming message whose bytes become an attachment before the task is asked. */
export interface PendingFile {
  /** Where it stands among the message's parts. */
  index: number;
  name: string;
  mediaType: string;
  data: Buffer;
}

/** The parts of an incoming A2A message as the service's parts: ready ones, and files still to store. */
export interface IncomingParts {
  /** The parts in order; a file's entry has a placeholder attachment id until {@link withAttachments} fills it. */
  parts: TaskPart[];
  files: PendingFile[];
}

/** Why an incoming message cannot be taken: one line per problem, each naming the part (`parts[2]`). */
export class IncomingPartsError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`the message cannot be taken: ${problems.join('; ')}`);
    this.problems = problems;
  }
}

const placeholderId = '00000000-0000-0000-0000-000000000000';

/** The longest text part (a message's content is at most 32,768 characters). */
const maxTextLength = 32_768;

/**
 * Reads an incoming A2A message's parts (A2A v1.0 §4.1.6) as the service's: text → `{text}`,
 * data → `{data}`, bytes (`raw`) → a file to store as an attachment (name and media type kept;
 * `application/octet-stream` when none). Checked against the service's rules (api/tasks.ts
 * `TaskParts`: 1–20 parts, text 1–32,768 characters) before anything is written.
 * Errors: {@link IncomingPartsError} listing every problem (a part by URL, an empty part, too many
 * or too long parts).
 */
export function fromA2aParts(parts: readonly A2aPart[]): IncomingParts {
  const problems: string[] = [];
  const out: TaskPart[] = [];
  const files: PendingFile[] = [];
  parts.forEach((part, index) => {
    const content = part.content;
    const at = `parts[${index}]`;
    if (content === undefined) problems.push(`${at} has no content (text, data or raw bytes)`);
    else if (content.$case === 'text') {
      if (content.value.length < 1 || content.value.length > maxTextLength) problems.push(`${at}.text: must be 1–${maxTextLength} characters, is ${content.value.length}`);
      else out.push({ text: content.value });
    }
    else if (content.$case === 'data') {
      if (content.value === undefined) problems.push(`${at}: data must be a JSON value`);
      else out.push({ data: content.value });
    } else if (content.$case === 'raw') {
      const name = part.filename.trim() || 'attachment';
      const mediaType = part.mediaType.trim() || 'application/octet-stream';
      files.push({ index: out.length, name, mediaType, data: Buffer.from(content.value) });
      out.push({ file: { name: name.slice(0, 255), media_type: mediaType.slice(0, 255), attachment_id: placeholderId } });
    } else problems.push(`${at}: a file by URL is not fetched by the service; send its bytes (raw) instead`);
  });
  if (parts.length < 1 || parts.length > maxTaskParts) problems.push(`parts: a message has 1–${maxTaskParts} parts, this one ${parts.length}`);
  if (problems.length === 0) {
    const checked = TaskParts.safeParse(out);
    if (!checked.success) {
      for (const issue of checked.error.issues) {
        const path = issue.path.map((step) => (typeof step === 'number' ? `[${step}]` : `.${String(step)}`)).join('');
        problems.push(`parts${path}: ${issue.message}`);
      }
    }
  }
  if (problems.length > 0) throw new IncomingPartsError(problems);
  return { parts: out, files };
}

/** The parts with each stored file's attachment id in its place (`ids` in the order of `incoming.files`). */
export function withAttachments(incoming: IncomingParts, ids: readonly string[]): TaskPart[] {
  const parts = [...incoming.parts];
  incoming.files.forEach((file, i) => {
    const part = parts[file.index];
    if (part && 'file' in part) parts[file.index] = { file: { ...part.file, attachment_id: ids[i]! } };
  });
  return parts;
}

/**
 * The text of parts as one message's content, as a task's first message shows them (text parts
 * joined by blank lines; data parts as a fenced JSON block), for a message posted to a task's
 * thread. File parts become the message's attachments instead.
 */
export function partsAsContent(parts: readonly TaskPart[]): { content: string; attachments: string[] } {
  const texts: string[] = [];
  const attachments: string[] = [];
  for (const part of parts) {
    if ('text' in part) texts.push(part.text);
    else if ('data' in part) texts.push(`\`\`\`json\n${JSON.stringify(part.data, null, 2)}\n\`\`\``);
    else attachments.push(part.file.attachment_id);
  }
  return { content: texts.join('\n\n'), attachments };
}

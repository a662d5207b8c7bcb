import { ServiceError } from '../../errors/catalogue.ts';
import type { Message, Thread, ThreadPage } from '../../api/schemas.ts';
import type { Queryable } from '../storage/db.ts';
import { assertAttachmentsInOrganization } from './attachments.ts';
import { reaches, type Caller, type DomainDeps } from './caller.ts';
import { getEdge } from './edges.ts';
import { iso, isUuid, newId } from './ids.ts';
import { participantTopic } from './notifier.ts';

// unread_count: messages from the other participant after the opener's read mark (contract §4),
// kept as a counter by insertMessage. The MCP tools move read marks (domain/agent-inbox.ts) and
// recompute the counter when the reader is the opener.
const selectThread = `
  SELECT th.id, th.edge_id, th.team_id, th.opener_id, th.subject, th.channel, th.message_count, th.created_at,
    th.opener_unread AS unread_count, th.awaiting_reply_from
  FROM threads th JOIN teams t ON t.id = th.team_id JOIN organizations o ON o.id = t.org_id`;

/** A stored thread with the unread count of whoever it is read for. */
export interface ThreadRow {
  id: string;
  edge_id: string;
  team_id: string;
  opener_id: string;
  subject: string;
  channel: string;
  message_count: number;
  created_at: Date;
  unread_count: number;
  /** The participant whose answer the thread awaits (migration 0016), null when none. */
  awaiting_reply_from: string | null;
}

/** A stored message row; `reply_to` is set on answers written by the agent loop. */
export interface MessageRow {
  id: string;
  thread_id: string;
  seq: number;
  sender_id: string;
  content: string;
  attachments: string[];
  reply_to: string | null;
  /** Whether the writer waits for the other participant's answer (migration 0016). */
  expects_reply: boolean;
  sent_at: Date;
}

/** Maps a stored thread to its wire form (contract §4); `unread_count` as the row carries it. */
export function toThread(row: ThreadRow): Thread {
  return {
    thread_id: row.id,
    edge_id: row.edge_id,
    team_id: row.team_id,
    subject: row.subject,
    message_count: row.message_count,
    unread_count: row.unread_count,
    channel: row.channel,
    awaiting_reply_from: row.awaiting_reply_from,
    created_at: iso(row.created_at),
  };
}

/** Maps a stored message to its wire form (contract §4). */
export function toMessage(row: MessageRow): Message {
  return {
    message_id: row.id,
    thread_id: row.thread_id,
    sender_id: row.sender_id,
    content: row.content,
    attachments: row.attachments,
    expects_reply: row.expects_reply,
    sent_at: iso(row.sent_at),
  };
}

async function getThreadRow(db: Queryable, caller: Caller, threadId: string): Promise<ThreadRow> {
  if (!isUuid(threadId)) throw new ServiceError('not_found', 'thread not found');
  const rows = await db.query<ThreadRow>(`${selectThread} WHERE th.id = $2 AND ${reaches('o', 1)}`, [caller.orgId, threadId]);
  if (!rows[0]) throw new ServiceError('not_found', 'thread not found');
  return rows[0];
}

function assertParticipant(participants: readonly string[], senderId: string): void {
  if (!participants.includes(senderId)) {
    throw new ServiceError('not_a_participant', 'sender_agent_id is not one of the edge\'s two participants');
  }
}

interface AppendOutcome {
  outcome: 'ok' | 'invalid_api_key' | 'not_found' | 'not_a_participant' | 'unknown_reference';
  message_seq: number | null;
  message_sent_at: Date | null;
  thread_org: string | null;
}

/**
 * Who an append is checked for: the caller's organization reaches the thread and, when `keyId`
 * is not null, that organization key is still active.
 */
interface AppendChecks {
  orgId: string;
  keyId: string | null;
}

/** What an append may carry besides its content. */
export interface AppendOptions {
  attachments?: readonly string[] | undefined;
  /** Set on the agent loop's answers: the message answered. */
  replyTo?: string | undefined;
  /** The writer waits for the other participant's answer (the thread then awaits it). */
  expectsReply?: boolean | undefined;
}

/**
 * Runs `acs_append_message` (migrations `0007_append_function`, `0016_expects_reply`): checks (when `checks` is given)
 * and appends in one statement, so one round trip. The per-thread sequence number is the thread
 * row's `message_count` after its increment under the row lock, so messages of one thread have
 * one total order, commit in that order, and the opener's unread counter moves with them.
 * Errors: `not_found` (thread), `not_a_participant`, `unknown_reference` (attachments, listing
 * each), `invalid_api_key` (the key was revoked or expired since it was cached).
 */
async function runAppend(
  db: Queryable,
  threadId: string,
  senderId: string,
  content: string,
  options: AppendOptions,
  checks: AppendChecks | undefined,
): Promise<MessageRow> {
  if (!isUuid(threadId)) throw new ServiceError('not_found', 'thread not found');
  const id = newId();
  const attachments = [...(options.attachments ?? [])];
  const rows = await db.query<AppendOutcome>(`SELECT * FROM acs_append_message($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9)`, [
    id,
    threadId,
    senderId,
    content,
    JSON.stringify(attachments),
    options.replyTo ?? null,
    checks?.orgId ?? null,
    checks?.keyId ?? null,
    options.expectsReply ?? false,
  ]);
  const result = rows[0];
  switch (result?.outcome) {
    case 'ok':
      return {
        id,
        thread_id: threadId,
        seq: result.message_seq!,
        sender_id: senderId,
        content,
        attachments,
        reply_to: options.replyTo ?? null,
        expects_reply: options.expectsReply ?? false,
        sent_at: result.message_sent_at!,
      };
    case 'invalid_api_key':
      throw new ServiceError('invalid_api_key', 'the API key is not valid');
    case 'not_a_participant':
      throw new ServiceError('not_a_participant', 'sender_agent_id is not one of the edge\'s two participants');
    case 'unknown_reference':
      // Name each unknown attachment, as before the append became one statement.
      await assertAttachmentsInOrganization(db, result.thread_org!, attachments);
      throw new ServiceError('unknown_reference', 'an attachment is not of this thread\'s organization');
    default:
      throw new ServiceError('not_found', 'thread not found');
  }
}

/**
 * Appends a message inside `tx` and returns the stored row (agent loop, thread opening). The
 * per-thread sequence number is taken from the thread row's `message_count` under its row lock,
 * so messages of one thread have one total order even with concurrent writers. No access or
 * participant check: callers do them. Errors: `not_found` (no such thread), `unknown_reference`.
 */
export async function insertMessage(
  tx: Queryable,
  threadId: string,
  senderId: string,
  content: string,
  options: AppendOptions = {},
): Promise<MessageRow> {
  return runAppend(tx, threadId, senderId, content, options, undefined);
}

/**
 * Opens a thread on an edge and posts its first message in one transaction (contract §5);
 * `subject` defaults to "", `channel` to "web". Returns the Thread (message_count 1, unread_count 0).
 * Errors: `not_found` (edge), `not_a_participant` (sender not on the edge), `unknown_reference`
 * (attachments).
 */
export async function openThread(
  deps: DomainDeps,
  caller: Caller,
  edgeId: string,
  input: { sender_agent_id: string; content: string; subject?: string | undefined; channel?: string | undefined; expects_reply?: boolean | undefined },
): Promise<Thread> {
  const { threadId, participants } = await deps.db.transaction(async (tx) => {
    const edge = await getEdge(tx, caller, edgeId);
    assertParticipant(edge.participants, input.sender_agent_id);
    const id = newId();
    await tx.query(`INSERT INTO threads (id, edge_id, team_id, opener_id, subject, channel) VALUES ($1, $2, $3, $4, $5, $6)`, [
      id,
      edgeId,
      edge.team_id,
      input.sender_agent_id,
      input.subject ?? '',
      input.channel ?? 'web',
    ]);
    await insertMessage(tx, id, input.sender_agent_id, input.content, { expectsReply: input.expects_reply });
    return { threadId: id, participants: edge.participants };
  });
  deps.notifier.publish(threadId);
  // The peer's waiters (MCP wait_for_messages) do not know this thread yet: tell them by participant.
  const peer = input.sender_agent_id === participants[0] ? participants[1] : participants[0];
  deps.notifier.publish(participantTopic(peer));
  return toThread(await getThreadRow(deps.db, caller, threadId));
}

/** Lists the threads of an edge, newest first. Errors: `not_found` (edge). */
export async function listThreads(deps: DomainDeps, caller: Caller, edgeId: string): Promise<Thread[]> {
  await getEdge(deps.db, caller, edgeId);
  const rows = await deps.db.query<ThreadRow>(`${selectThread} WHERE th.edge_id = $2 AND ${reaches('o', 1)} ORDER BY th.seq DESC`, [
    caller.orgId,
    edgeId,
  ]);
  return rows.map(toThread);
}

/**
 * Appends a message to a thread (contract §5 POST /threads/{id}/messages) and wakes long polls on
 * it. One statement, one round trip: access, participant, attachment and key checks and the insert
 * run together in `acs_append_message`, which also re-checks the caller's key, so a key revoked by
 * another process cannot append even while this process still has it cached (http/auth.ts).
 * Output: the Message. Errors: `not_found` (thread), `not_a_participant`, `unknown_reference`
 * (attachments), `invalid_api_key` (key revoked or expired meanwhile).
 */
export async function appendMessage(
  deps: DomainDeps,
  caller: Caller,
  threadId: string,
  input: { sender_agent_id: string; content: string; attachments?: string[] | undefined; expects_reply?: boolean | undefined },
): Promise<Message> {
  const row = await runAppend(deps.db, threadId, input.sender_agent_id, input.content, { attachments: input.attachments, expectsReply: input.expects_reply }, caller);
  deps.notifier.publish(threadId);
  return toMessage(row);
}

/**
 * Appends a message written by a participant itself (contract §7 `send_message`: the agent of an
 * MCP key), with the checks of {@link appendMessage} in the same one statement: the thread within
 * `orgId`'s reach, the sender one of its edge's two participants, the attachments of its
 * organization. No organization key is re-checked: the request was authenticated by an MCP key,
 * which is looked up (uncached) on every request. Wakes long polls on the thread.
 * Output: the Message. Errors: `not_found` (thread), `not_a_participant`, `unknown_reference`.
 */
export async function appendMessageAsParticipant(
  deps: DomainDeps,
  orgId: string,
  threadId: string,
  input: { sender_agent_id: string; content: string; attachments?: string[] | undefined; expects_reply?: boolean | undefined },
): Promise<Message> {
  const checks: AppendChecks = { orgId, keyId: null };
  const row = await runAppend(deps.db, threadId, input.sender_agent_id, input.content, { attachments: input.attachments, expectsReply: input.expects_reply }, checks);
  deps.notifier.publish(threadId);
  return toMessage(row);
}

/** Query of a thread page (contract §5): cursor, page size 1–200, long-poll seconds 0–30. */
export interface PageRequest {
  after?: string | undefined;
  limit: number;
  wait: number;
}

async function readPage(db: Queryable, caller: Caller, threadId: string, request: PageRequest): Promise<ThreadPage> {
  const thread = await getThreadRow(db, caller, threadId);
  let afterSeq = 0;
  if (request.after !== undefined) {
    const cursor = isUuid(request.after)
      ? await db.query<{ seq: number }>(`SELECT seq FROM messages WHERE id = $1 AND thread_id = $2`, [request.after, threadId])
      : [];
    if (!cursor[0]) throw new ServiceError('invalid_cursor', 'after names no message of this thread');
    afterSeq = cursor[0].seq;
  }
  const rows = await db.query<MessageRow>(`SELECT * FROM messages WHERE thread_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, [
    threadId,
    afterSeq,
    request.limit + 1,
  ]);
  const messages = rows.slice(0, request.limit).map(toMessage);
  return {
    ...toThread(thread),
    messages,
    has_more: rows.length > request.limit,
    next_after: messages.at(-1)?.message_id ?? request.after ?? null,
  };
}

/**
 * Returns a page of a thread: the Thread plus up to `limit` messages after `after`, oldest
 * first, `has_more` and `next_after` (contract §5). With `wait` > 0 and nothing after `after`,
 * holds until a message is appended, `wait` seconds pass or `signal` aborts (server shutdown),
 * then answers with what is there (possibly an empty page).
 * Errors: `not_found` (thread), `invalid_cursor` (`after` names no message of this thread).
 */
export async function getThreadPage(deps: DomainDeps, caller: Caller, threadId: string, request: PageRequest, signal?: AbortSignal): Promise<ThreadPage> {
  if (request.wait <= 0 || signal?.aborted) return readPage(deps.db, caller, threadId, request);
  // Subscribe before the first read so an append between read and wait is not missed.
  let wake: () => void = () => {};
  let appended = false;
  const woken = new Promise<void>((resolve) => {
    wake = resolve;
  });
  const unsubscribe = deps.notifier.subscribe(threadId, () => {
    appended = true;
    wake();
  });
  const timer = setTimeout(wake, request.wait * 1000);
  signal?.addEventListener('abort', wake, { once: true });
  try {
    const first = await readPage(deps.db, caller, threadId, request);
    if (first.messages.length > 0) return first;
    if (!appended) await woken;
    return await readPage(deps.db, caller, threadId, request);
  } finally {
    clearTimeout(timer);
    unsubscribe();
    signal?.removeEventListener('abort', wake);
  }
}

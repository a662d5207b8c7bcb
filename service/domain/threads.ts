import { setImmediate } from 'node:timers/promises';
import { ServiceError } from '../../errors/catalogue.ts';
import type { Message, Thread, ThreadPage } from '../../api/schemas.ts';
import type { Queryable } from '../storage/db.ts';
import { assertAttachmentsInOrganization } from './attachments.ts';
import { reaches, type Caller, type DomainDeps } from './caller.ts';
import { getEdge } from './edges.ts';
import { iso, isUuid, newId } from './ids.ts';
import { threadTopic, type Subscription } from '../events/hub.ts';
import { yieldTurn } from './request-turn.ts';

// unread_count: messages from the other participant after the opener's read mark (contract §4),
// kept as a counter by insertMessage. The MCP tools move read marks (domain/agent-inbox.ts) and
// recompute the counter when the reader is the opener.
// `log_head` (where the organization's event log stood in the same snapshot) lets a long poll tell
// whether it subscribed late (getThreadPage).
const selectThread = `
  SELECT th.id, th.edge_id, th.team_id, th.opener_id, th.subject, th.channel, th.message_count, th.created_at,
    th.opener_unread AS unread_count, th.awaiting_reply_from, t.org_id,
    (SELECT c.last_seq FROM event_counters c WHERE c.org_id = t.org_id) AS log_head
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
  /** The thread's organization (only where the statement selects it). */
  org_id?: string;
  /** Where the organization's event log stood when the row was read (only where selected). */
  log_head?: string | number | null;
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
  /** A reply stopped while it was written (migration 0023); absent where a statement does not select it (false). */
  stopped?: boolean;
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
    stopped: row.stopped ?? false,
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
  thread_unread: number | null;
  thread_awaiting: string | null;
}

/**
 * A message just appended, with its thread's organization (whose event log got its
 * `message.created`) and the thread's counters as the append left them (migration 0018).
 */
export type AppendedMessage = MessageRow & { org_id: string; thread_unread: number; thread_awaiting: string | null };

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
  /** The message's id, when it was fixed before (a reply's, when its turn started); default a new one. */
  id?: string | undefined;
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
): Promise<AppendedMessage> {
  if (!isUuid(threadId)) throw new ServiceError('not_found', 'thread not found');
  const id = options.id ?? newId();
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
        org_id: result.thread_org!,
        thread_unread: result.thread_unread!,
        thread_awaiting: result.thread_awaiting,
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
 * Appends a message inside `tx` and returns the stored row (agent loop, thread opening); with
 * `stopped`, a reply stopped while it was written (§13), which its event says. The
 * per-thread sequence number is taken from the thread row's `message_count` under its row lock,
 * so messages of one thread have one total order even with concurrent writers. No access or
 * participant check: callers do them. Its `message.created` event is written when `tx` commits
 * (migration `0011_events`): announce it then (`deps.events.announce(org_id)`).
 * Errors: `not_found` (no such thread), `unknown_reference`.
 */
export async function insertMessage(
  tx: Queryable,
  threadId: string,
  senderId: string,
  content: string,
  options: AppendOptions & { stopped?: boolean | undefined } = {},
): Promise<AppendedMessage> {
  const row = await runAppend(tx, threadId, senderId, content, options, undefined);
  if (!options.stopped) return row;
  // Set in the same transaction: its message.created event, written at the commit, reads the flag.
  await tx.query(`UPDATE messages SET stopped = true WHERE id = $1`, [row.id]);
  return { ...row, stopped: true };
}

/**
 * Inserts a thread on an edge and its first message inside `tx` (no access or participant check:
 * callers do them); `subject` defaults to "", `channel` to "web". Its `thread.opened` and
 * `message.created` events are written at the commit (migration 0011_events): announce the
 * organization then. Output: the thread's id and the first message as stored.
 * Errors: `not_found` (the edge went meanwhile), `unknown_reference`.
 */
export async function insertThread(
  tx: Queryable,
  input: {
    edgeId: string;
    teamId: string;
    senderId: string;
    content: string;
    subject?: string | undefined;
    channel?: string | undefined;
    expects_reply?: boolean | undefined;
    /** Attachments of the first message (a task's file parts, domain/tasks.ts); the organization's, checked by the append. */
    attachments?: readonly string[] | undefined;
  },
): Promise<{ threadId: string; first: AppendedMessage }> {
  const id = newId();
  await tx.query(`INSERT INTO threads (id, edge_id, team_id, opener_id, subject, channel) VALUES ($1, $2, $3, $4, $5, $6)`, [
    id,
    input.edgeId,
    input.teamId,
    input.senderId,
    input.subject ?? '',
    input.channel ?? 'web',
  ]);
  const first = await insertMessage(tx, id, input.senderId, input.content, { expectsReply: input.expects_reply, attachments: input.attachments });
  return { threadId: id, first };
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
  const { threadId, orgId } = await deps.db.transaction(async (tx) => {
    const edge = await getEdge(tx, caller, edgeId);
    assertParticipant(edge.participants, input.sender_agent_id);
    const { threadId: id, first } = await insertThread(tx, { edgeId, teamId: edge.team_id, senderId: input.sender_agent_id, ...input });
    return { threadId: id, orgId: first.org_id };
  });
  deps.events.announce(orgId);
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
 * Announces an append through the API (events/hub.ts): its `message.created` event, and first a
 * hint to this process's long polls of the thread, which may answer with the message at once
 * (getThreadPage). When one was woken, this yields a turn of the event loop before the append
 * answers, so that the waiting reader is answered first: the wake does not wait behind the
 * append's own response (issue 19).
 */
async function announceAppend(deps: DomainDeps, row: AppendedMessage): Promise<void> {
  if (deps.events.announce(row.org_id, [{ topic: threadTopic(row.thread_id), detail: row }])) await setImmediate();
}

/**
 * Appends a message to a thread (contract §5 POST /threads/{id}/messages) and announces its
 * `message.created` event, which wakes the thread's long polls. One statement, one round trip: access, participant, attachment and key checks and the insert
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
  await announceAppend(deps, row);
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
  await announceAppend(deps, row);
  return toMessage(row);
}

/** Query of a thread page (contract §5): cursor, page size 1–200, long-poll seconds 0–30. */
export interface PageRequest {
  after?: string | undefined;
  limit: number;
  wait: number;
}

/** A page read, with what a long poll needs to wait on its thread. */
interface ReadPage {
  page: ThreadPage;
  orgId: string;
  /** Where the organization's log stood when the thread row was read. */
  logHead: number;
  /** The per-thread seq of the message named by `after`, null without `after`. */
  cursorSeq: number | null;
}

// A page in one statement, so one round trip (a woken long poll answers after it): the thread
// row (with where the organization's log stands), the cursor's seq, and the messages after it,
// one row per message (the thread's columns repeated), or one row without a message when none.
const pageSql = `
  WITH th AS (${selectThread} WHERE th.id = $2 AND ${reaches('o', 1)}),
       cur AS (SELECT m.seq FROM messages m WHERE $3::uuid IS NOT NULL AND m.id = $3::uuid AND m.thread_id = $2)
  SELECT th.*, (SELECT seq FROM cur) AS cursor_seq,
         m.id AS m_id, m.seq AS m_seq, m.sender_id AS m_sender_id, m.content AS m_content, m.attachments AS m_attachments,
         m.reply_to AS m_reply_to, m.expects_reply AS m_expects_reply, m.stopped AS m_stopped, m.sent_at AS m_sent_at
    FROM th LEFT JOIN LATERAL (
      SELECT * FROM messages m
       WHERE m.thread_id = th.id AND ($3::uuid IS NULL OR EXISTS (SELECT 1 FROM cur))
         AND m.seq > COALESCE((SELECT seq FROM cur), 0)
       ORDER BY m.seq LIMIT $4
    ) m ON true
   ORDER BY m.seq`;

type PageRow = ThreadRow & { cursor_seq: number | null; m_id: string | null; m_seq: number; m_sender_id: string; m_content: string; m_attachments: string[]; m_reply_to: string | null; m_expects_reply: boolean; m_stopped: boolean; m_sent_at: Date };

async function readPage(db: Queryable, caller: Caller, threadId: string, request: PageRequest): Promise<ReadPage> {
  if (!isUuid(threadId)) throw new ServiceError('not_found', 'thread not found');
  if (request.after !== undefined && !isUuid(request.after)) throw new ServiceError('invalid_cursor', 'after names no message of this thread');
  const rows = await db.query<PageRow>(pageSql, [caller.orgId, threadId, request.after ?? null, request.limit + 1]);
  const thread = rows[0];
  if (!thread) throw new ServiceError('not_found', 'thread not found');
  if (request.after !== undefined && thread.cursor_seq === null) throw new ServiceError('invalid_cursor', 'after names no message of this thread');
  const found = rows.filter((row) => row.m_id !== null);
  const messages = found.slice(0, request.limit).map((row) =>
    toMessage({
      id: row.m_id!,
      thread_id: threadId,
      seq: row.m_seq,
      sender_id: row.m_sender_id,
      content: row.m_content,
      attachments: row.m_attachments,
      reply_to: row.m_reply_to,
      expects_reply: row.m_expects_reply,
      stopped: row.m_stopped,
      sent_at: row.m_sent_at,
    }),
  );
  return {
    page: {
      ...toThread(thread),
      messages,
      has_more: found.length > request.limit,
      next_after: messages.at(-1)?.message_id ?? request.after ?? null,
    },
    orgId: thread.org_id!,
    logHead: Number(thread.log_head ?? 0),
    cursorSeq: thread.cursor_seq,
  };
}

// Long polls of one thread woken by the same event and asking for the same page share one read
// (per storage, since tests run several servers in one process): 2,000 polls of a thread cost one
// query per append, not 2,000. A read may be shared only by polls woken no later than it started,
// so none of them gets a page read before the change that woke it: wakes (events and hints) are
// numbered in the order they happen, and a read carries the number of the last wake before it.
const sharedReads = new WeakMap<object, Map<string, { wake: number; read: Promise<ReadPage> }>>();
let wakes = 0;

function readShared(deps: DomainDeps, caller: Caller, threadId: string, request: PageRequest, wokenBy: number): Promise<ReadPage> {
  let reads = sharedReads.get(deps.db);
  if (!reads) sharedReads.set(deps.db, (reads = new Map()));
  const key = `${caller.orgId} ${threadId} ${request.after ?? ''} ${request.limit}`;
  const running = reads.get(key);
  if (running && running.wake >= wokenBy) return running.read;
  const entry = { wake: wakes, read: readPage(deps.db, caller, threadId, request) };
  reads.set(key, entry);
  const forget = () => {
    if (reads.get(key) === entry) reads.delete(key);
  };
  entry.read.then(forget, forget);
  return entry.read;
}

/**
 * Returns a page of a thread: the Thread plus up to `limit` messages after `after`, oldest
 * first, `has_more` and `next_after` (contract §5). With `wait` > 0 and nothing after `after`,
 * holds until a message is appended, `wait` seconds pass or `signal` aborts (server shutdown),
 * then answers with what is there (possibly an empty page).
 *
 * The wait is fed by the event log: the poll subscribes to its thread's events at the process's
 * event hub (events/hub.ts), which reads each new event once for every waiter, and polls woken by
 * the same event share one page read. Appends through any process wake it.
 * Errors: `not_found` (thread), `invalid_cursor` (`after` names no message of this thread).
 */
export async function getThreadPage(deps: DomainDeps, caller: Caller, threadId: string, request: PageRequest, signal?: AbortSignal): Promise<ThreadPage> {
  const first = await readPage(deps.db, caller, threadId, request);
  if (request.wait <= 0 || signal?.aborted || first.page.messages.length > 0) return first.page;
  const deadline = Date.now() + request.wait * 1000;
  let wokenBy = 0;
  let wake: () => void = () => {};
  // The page an append through this process left (the hint's message is the next after the
  // cursor): it is what a read right after that append's commit returns, so it is answered as is.
  let appended: ThreadPage | undefined;
  const woken = () => {
    wokenBy = ++wakes;
    wake();
  };
  // An append through this process hints before its event is numbered, with the message and the
  // thread's counters; appends through other processes wake the poll by their events.
  const stopHints = deps.events.onHint(first.orgId, threadTopic(threadId), (detail) => {
    const message = detail as AppendedMessage | undefined;
    if (!appended && message && first.cursorSeq !== null && message.seq === first.cursorSeq + 1 && request.limit >= 1) {
      appended = {
        ...first.page,
        message_count: message.seq,
        unread_count: message.thread_unread,
        awaiting_reply_from: message.thread_awaiting,
        messages: [toMessage(message)],
        has_more: false,
        next_after: message.id,
      };
    }
    woken();
  });
  let subscription: Subscription;
  try {
    subscription = await deps.events.subscribe(first.orgId, threadTopic(threadId), (events) => {
      if (events.some((event) => event.type === 'message.created')) woken();
    });
  } catch (error) {
    stopHints();
    throw error;
  }
  try {
    // Events up to the subscription's head were committed before it; if the log moved since the
    // first read, one of them may be this thread's: read again rather than wait for nothing.
    if (subscription.head > first.logHead && wokenBy === 0) {
      const again = await readPage(deps.db, caller, threadId, request);
      if (again.page.messages.length > 0) return again.page;
    }
    for (;;) {
      if (appended) return appended;
      const remaining = deadline - Date.now();
      if (wokenBy === 0) {
        if (remaining <= 0 || signal?.aborted) return (await readPage(deps.db, caller, threadId, request)).page;
        yieldTurn();
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            signal?.removeEventListener('abort', done);
            wake = () => {};
            resolve();
          };
          const timer = setTimeout(done, remaining);
          signal?.addEventListener('abort', done, { once: true });
          wake = done;
        });
        continue;
      }
      const seq = wokenBy;
      wokenBy = 0;
      const page = (await readShared(deps, caller, threadId, request, seq)).page;
      // A message of this thread up to the cursor (appended before the poll began) wakes it too.
      if (page.messages.length > 0) return page;
    }
  } finally {
    stopHints();
    subscription.unsubscribe();
  }
}

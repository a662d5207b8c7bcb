/**
 * What one agent sees and does through the MCP endpoint (contract §7): its identity, its edges,
 * the threads on them with its own unread counts, reading (which moves its read mark), writing,
 * opening threads and waiting for messages. Everything is scoped to the agent's own edges: a
 * thread or edge it is not on is `not_found`, worded exactly as for an id that does not exist,
 * so nothing about another team's or organization's threads leaks. Writes go through the same
 * operations as the REST routes (threads.ts), so the two surfaces cannot disagree.
 *
 * Read state: `thread_reads` holds one high-water mark per (thread, participant), the `seq` of
 * the last message the participant has read there. A participant's unread messages in a thread
 * are its peer's messages after that mark. The opener's unread count is also kept as a counter
 * on the thread (`opener_unread`, the REST `unread_count`), recomputed here when the opener reads.
 */
import { ServiceError } from '../../errors/catalogue.ts';
import type { AgentEdge, ListThreadsResult, WaitForMessagesResult, WhoamiResult } from '../../api/mcp-tools.ts';
import type { Message, Thread, ThreadPage } from '../../api/schemas.ts';
import type { Queryable } from '../storage/db.ts';
import type { McpIdentity } from './authentication.ts';
import type { Caller, DomainDeps } from './caller.ts';
import { toEdge, type EdgeRow } from './edges.ts';
import { recipientTopic } from '../events/hub.ts';
import { getAgent } from './participants.ts';
import { appendMessageAsParticipant, getThreadPage, openThread, toMessage, toThread, type MessageRow, type ThreadRow } from './threads.ts';
import { yieldTurn } from './request-turn.ts';

/** The agent an MCP key acts as: fixed by the key, never by the request (contract §7). */
export type AgentIdentity = McpIdentity;

const threadNotFound = "no thread with this id on this agent's edges";
const edgeNotFound = "no edge with this id among this agent's edges";

// The domain operations shared with REST take an organization-key caller; for an agent that is
// its own organization. Reach checks there are wider than the agent's (an organization reaches
// the ones it provisioned), so every operation below checks the agent's own edges first.
function callerOf(agent: AgentIdentity): Caller {
  return { orgId: agent.orgId, keyId: agent.keyId };
}

/**
 * SQL of a participant's unread count of thread `th`, whose read mark for the participant
 * (`agent`: a SQL expression of its id) is `r` (LEFT JOINed). The opener's is the thread's
 * counter; anyone else's is counted from the mark, which costs one index range over the unread
 * messages only. Used for agents here and for the console's humans (person-reach.ts).
 */
export const agentUnreadCount = (agent: string) => `
  CASE WHEN th.opener_id = ${agent} THEN th.opener_unread
       ELSE (SELECT count(*)::int FROM messages m WHERE m.thread_id = th.id AND m.sender_id <> ${agent} AND m.seq > COALESCE(r.read_seq, 0))
  END`;

const onAgentEdge = (agent: string) => `${agent} IN (e.participant_a, e.participant_b)`;

/** Checks the thread is on one of the agent's edges; output: whether the agent opened it. Errors: `not_found`. */
async function assertOnThread(db: Queryable, agentId: string, threadId: string): Promise<{ opener: boolean }> {
  const rows = await db.query<{ opener: boolean }>(
    `SELECT th.opener_id = $2::uuid AS opener FROM threads th JOIN edges e ON e.id = th.edge_id WHERE th.id = $1 AND ${onAgentEdge('$2::uuid')}`,
    [threadId, agentId],
  );
  if (!rows[0]) throw new ServiceError('not_found', threadNotFound);
  return rows[0];
}

async function assertOnEdge(db: Queryable, agentId: string, edgeId: string): Promise<void> {
  const rows = await db.query(`SELECT 1 FROM edges e WHERE e.id = $1 AND ${onAgentEdge('$2::uuid')}`, [edgeId, agentId]);
  if (rows.length === 0) throw new ServiceError('not_found', edgeNotFound);
}

// A thread of the agent's that was not found by an operation shared with REST, or on which the
// agent turned out not to be a participant (another team's thread of the same organization),
// reads the same as an unknown id.
function hideForeign(error: unknown, message: string): never {
  if (error instanceof ServiceError && (error.code === 'not_found' || error.code === 'not_a_participant')) throw new ServiceError('not_found', message);
  throw error;
}

/**
 * `whoami` (contract §7): the agent record, its team's and organization's ids and names.
 * Errors: `not_found` when the agent was deleted since its key was checked.
 */
export async function whoami(deps: DomainDeps, agent: AgentIdentity): Promise<WhoamiResult> {
  const record = await getAgent(deps, callerOf(agent), agent.agentId);
  const rows = await deps.db.query<{ team_name: string; org_name: string }>(
    `SELECT t.name AS team_name, o.name AS org_name FROM teams t JOIN organizations o ON o.id = t.org_id WHERE t.id = $1`,
    [agent.teamId],
  );
  if (!rows[0]) throw new ServiceError('not_found', 'agent not found');
  return { agent: record, team_id: agent.teamId, team_name: rows[0].team_name, org_id: agent.orgId, org_name: rows[0].org_name };
}

/**
 * `list_edges` (contract §7): the agent's edges, oldest first, each with the peer's id, kind
 * (`agent` or `human`) and name. Errors: none of its own.
 */
export async function listAgentEdges(deps: DomainDeps, agent: AgentIdentity): Promise<AgentEdge[]> {
  const rows = await deps.db.query<EdgeRow & { peer_id: string; peer_kind: 'agent' | 'human'; peer_name: string }>(
    `SELECT e.*, p.id AS peer_id, p.kind AS peer_kind, p.name AS peer_name
       FROM edges e JOIN participants p ON p.id = CASE WHEN e.participant_a = $1::uuid THEN e.participant_b ELSE e.participant_a END
      WHERE ${onAgentEdge('$1::uuid')}
      ORDER BY e.created_at, e.id`,
    [agent.agentId],
  );
  return rows.map((row) => ({ ...toEdge(row), peer: { participant_id: row.peer_id, kind: row.peer_kind, name: row.peer_name } }));
}

/**
 * `list_threads` (contract §7): the threads on the agent's edges (or on one of them), newest
 * first, each with this agent's `unread_count`; with `unread_only`, only those above 0.
 * Errors: `not_found` (an `edge_id` that is not one of the agent's edges).
 */
export async function listAgentThreads(
  deps: DomainDeps,
  agent: AgentIdentity,
  input: { edge_id?: string | undefined; unread_only?: boolean | undefined },
): Promise<ListThreadsResult> {
  if (input.edge_id !== undefined) await assertOnEdge(deps.db, agent.agentId, input.edge_id);
  const rows = await deps.db.query<ThreadRow & { seq: string }>(
    `SELECT * FROM (
       SELECT th.id, th.edge_id, th.team_id, th.opener_id, th.subject, th.channel, th.message_count, th.created_at, th.seq,
              th.awaiting_reply_from, ${agentUnreadCount('$1::uuid')} AS unread_count
         FROM threads th JOIN edges e ON e.id = th.edge_id
         LEFT JOIN thread_reads r ON r.thread_id = th.id AND r.participant_id = $1::uuid
        WHERE ${onAgentEdge('$1::uuid')} AND ($2::uuid IS NULL OR th.edge_id = $2::uuid)
     ) listed
     WHERE NOT $3::boolean OR unread_count > 0
     ORDER BY seq DESC`,
    [agent.agentId, input.edge_id ?? null, input.unread_only === true],
  );
  return { threads: rows.map(toThread) };
}

// Moves the agent's read mark of each thread forward (never back) to the `seq` of the message
// named, skipping a message that no longer exists. Parameters: $1 thread ids, $2 message ids,
// $3 the agent.
const upsertReadMarks = `
  INSERT INTO thread_reads (thread_id, participant_id, read_seq)
  SELECT m.thread_id, $3, m.seq
    FROM unnest($1::uuid[], $2::uuid[]) AS mark(thread_id, message_id)
    JOIN messages m ON m.id = mark.message_id AND m.thread_id = mark.thread_id
   ORDER BY m.thread_id
  ON CONFLICT (thread_id, participant_id) DO UPDATE SET read_seq = GREATEST(thread_reads.read_seq, EXCLUDED.read_seq)`;

/**
 * Moves the agent's read marks forward to the given messages, one per thread, and recomputes the
 * opener's unread counter of the threads the agent opened. Run inside `tx`. (Any participant's
 * marks, in fact: the console moves a human's with it, domain/person-reach.ts.) Output: the agent's
 * unread count of each thread it opened among them, after the move.
 *
 * The threads the agent opened are locked first (in id order, so two markers cannot deadlock):
 * an append increments the counter under the same row lock, so once the lock is held every
 * append that counted a message has committed, and the recount (a new statement, so a new
 * snapshot) sees each of those messages. A recount in the statement that takes the lock would
 * count with a snapshot older than the lock and lose a racing append's message.
 */
export async function markRead(tx: Queryable, agentId: string, marks: ReadonlyArray<{ threadId: string; messageId: string }>): Promise<Map<string, number>> {
  const sorted = [...marks].sort((a, b) => (a.threadId < b.threadId ? -1 : a.threadId > b.threadId ? 1 : 0));
  const threadIds = sorted.map((m) => m.threadId);
  const opened = await tx.query<{ id: string }>(`SELECT id FROM threads WHERE id = ANY($1::uuid[]) AND opener_id = $2 ORDER BY id FOR UPDATE`, [threadIds, agentId]);
  await tx.query(upsertReadMarks, [threadIds, sorted.map((m) => m.messageId), agentId]);
  if (opened.length === 0) return new Map();
  const counts = await tx.query<{ id: string; opener_unread: number }>(
    `UPDATE threads th
        SET opener_unread = (SELECT count(*)::int FROM messages m WHERE m.thread_id = th.id AND m.sender_id <> th.opener_id AND m.seq > r.read_seq)
       FROM thread_reads r
      WHERE th.id = ANY($1::uuid[]) AND th.opener_id = $2 AND r.thread_id = th.id AND r.participant_id = $2
     RETURNING th.id, th.opener_unread`,
    [opened.map((row) => row.id), agentId],
  );
  return new Map(counts.map((row) => [row.id, row.opener_unread]));
}

/**
 * Moves the agent's read mark of a thread it did not open to `messageId` and counts its peer's
 * messages after the mark, in one statement (no counter to keep: only the opener has one).
 * Output: the agent's unread count of the thread.
 */
export async function markReadAsPeer(db: Queryable, agentId: string, threadId: string, messageId: string): Promise<number> {
  const rows = await db.query<{ unread_count: number }>(
    `WITH marked AS (${upsertReadMarks} RETURNING read_seq)
     SELECT count(*)::int AS unread_count FROM messages m
      WHERE m.thread_id = $1[1] AND m.sender_id <> $3 AND m.seq > (SELECT read_seq FROM marked)`,
    [[threadId], [messageId], agentId],
  );
  return rows[0]?.unread_count ?? 0;
}

async function agentUnreadOf(db: Queryable, agentId: string, threadId: string): Promise<number> {
  const rows = await db.query<{ unread_count: number }>(
    `SELECT ${agentUnreadCount('$2::uuid')} AS unread_count
       FROM threads th LEFT JOIN thread_reads r ON r.thread_id = th.id AND r.participant_id = $2::uuid
      WHERE th.id = $1`,
    [threadId, agentId],
  );
  return rows[0]?.unread_count ?? 0;
}

/**
 * `read_thread` (contract §7): a page of one of the agent's threads as `GET /threads/{id}` gives
 * it (§5, no long poll), after which the agent's read mark moves to the last message returned;
 * `unread_count` is the agent's, after that. Errors: `not_found` (not on the agent's edges, or no
 * such thread), `invalid_cursor` (`after` names no message of this thread).
 */
export async function readAgentThread(
  deps: DomainDeps,
  agent: AgentIdentity,
  input: { thread_id: string; after?: string | undefined; limit: number },
): Promise<ThreadPage> {
  const { opener } = await assertOnThread(deps.db, agent.agentId, input.thread_id);
  const page = await getThreadPage(deps, callerOf(agent), input.thread_id, { after: input.after, limit: input.limit, wait: 0 }).catch((error: unknown) =>
    hideForeign(error, threadNotFound),
  );
  const last = page.messages.at(-1);
  let unread: number | undefined;
  if (last && opener) {
    const mark = { threadId: input.thread_id, messageId: last.message_id };
    unread = (await deps.db.transaction((tx) => markRead(tx, agent.agentId, [mark]))).get(input.thread_id);
  } else if (last) {
    unread = await markReadAsPeer(deps.db, agent.agentId, input.thread_id, last.message_id);
  }
  // Nothing returned (or the message vanished meanwhile): the mark did not move; count as it is.
  return { ...page, unread_count: unread ?? (await agentUnreadOf(deps.db, agent.agentId, input.thread_id)) };
}

/**
 * `send_message` (contract §7): appends a message from the agent to one of its threads, as
 * `POST /threads/{id}/messages` does with the agent as `sender_agent_id`. Output: the Message.
 * Errors: `not_found` (not on the agent's edges, or no such thread; nothing written),
 * `unknown_reference` (an attachment not of the thread's organization).
 */
export async function sendAgentMessage(
  deps: DomainDeps,
  agent: AgentIdentity,
  input: { thread_id: string; content: string; attachments?: string[] | undefined; expects_reply?: boolean | undefined },
): Promise<Message> {
  // One statement checks the agent is on the thread's edge and appends (threads.ts).
  const { thread_id, content, attachments, expects_reply } = input;
  return appendMessageAsParticipant(deps, agent.orgId, thread_id, { sender_agent_id: agent.agentId, content, attachments, expects_reply }).catch(
    (error: unknown) => hideForeign(error, threadNotFound),
  );
}

/**
 * `open_thread` (contract §7): opens a thread on one of the agent's edges with its first message
 * from the agent, as `POST /edges/{id}/threads` does. Output: the Thread (`message_count` 1,
 * `unread_count` 0). Errors: `not_found` (not one of the agent's edges; nothing written).
 */
export async function openAgentThread(
  deps: DomainDeps,
  agent: AgentIdentity,
  input: { edge_id: string; content: string; subject?: string | undefined; channel?: string | undefined; expects_reply?: boolean | undefined },
): Promise<Thread> {
  await assertOnEdge(deps.db, agent.agentId, input.edge_id);
  return openThread(deps, callerOf(agent), input.edge_id, {
    sender_agent_id: agent.agentId,
    content: input.content,
    subject: input.subject,
    channel: input.channel,
    expects_reply: input.expects_reply,
  }).catch((error: unknown) => hideForeign(error, edgeNotFound));
}

// The agent's unread messages from its peers, on one thread or all of its threads, at most
// `limit + 1`, oldest first. Ordered by the latest `sent_at` so far in each thread rather than by
// `sent_at` itself: two appends racing on one thread may commit in the opposite order of their
// timestamps, and this order keeps each thread's messages in sequence, so a page cut at `limit`
// always takes a prefix of each thread's unread messages and the read mark skips nothing.
const unreadSql = `
  SELECT id, thread_id, seq, sender_id, content, attachments, reply_to, expects_reply, stopped, sent_at FROM (
    SELECT m.*, max(m.sent_at) OVER (PARTITION BY m.thread_id ORDER BY m.seq) AS arrived_at
      FROM threads th JOIN edges e ON e.id = th.edge_id
      LEFT JOIN thread_reads r ON r.thread_id = th.id AND r.participant_id = $1::uuid
      JOIN messages m ON m.thread_id = th.id AND m.seq > COALESCE(r.read_seq, 0) AND m.sender_id <> $1::uuid
     WHERE ${onAgentEdge('$1::uuid')} AND ($2::uuid IS NULL OR th.id = $2::uuid)
  ) unread
  ORDER BY arrived_at, thread_id, seq
  LIMIT $3`;

/**
 * Takes the agent's unread messages: returns up to `limit` and marks them read. Concurrent takes
 * by one agent (two clients with its key, in any processes) are serialised by an advisory lock
 * on the agent, so each message is returned to one of them only. Looks without the lock first:
 * a wait that finds nothing costs one query. Errors: `invalid_api_key` when the MCP key was
 * revoked (or the agent deleted) since the request was authenticated: a wait may have been held
 * for up to 30 s, and a revoked key takes nothing, leaving the messages unread.
 */
async function takeUnread(db: DomainDeps['db'], agent: AgentIdentity, threadId: string | undefined, limit: number): Promise<WaitForMessagesResult> {
  const agentId = agent.agentId;
  const params = [agentId, threadId ?? null, limit + 1];
  const peek = await db.query<MessageRow>(unreadSql, params);
  if (peek.length === 0) return { messages: [], has_more: false };
  return db.transaction(async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`acs-mcp-inbox:${agentId}`]);
    const key = await tx.query(`SELECT 1 FROM mcp_keys WHERE id = $1 AND revoked_at IS NULL`, [agent.keyId]);
    if (key.length === 0) throw new ServiceError('invalid_api_key', 'the MCP key is not valid (revoked while this request waited)');
    const rows = await tx.query<MessageRow>(unreadSql, params);
    const taken = rows.slice(0, limit);
    if (taken.length > 0) {
      const lastOfThread = new Map<string, string>();
      for (const row of taken) lastOfThread.set(row.thread_id, row.id);
      await markRead(tx, agentId, [...lastOfThread].map(([id, messageId]) => ({ threadId: id, messageId })));
    }
    return { messages: taken.map(toMessage), has_more: rows.length > limit };
  });
}

/**
 * `wait_for_messages` (contract §7): the agent's unread messages from its peers — on one of its
 * threads, or on all of them — at once when there are any, else the first that arrive within
 * `timeout_seconds` (0–30), else none; at most `limit`, oldest first, `has_more` when more are
 * unread. Returned messages are marked read for the agent.
 *
 * Fed by the event log (events/hub.ts): the wait joins its agent's queue of waits, which the
 * process's event hub feeds with the `message.created` events sent to the agent (a thread opened
 * with the agent meanwhile included), through any process. However many waits of one agent are
 * held, an event wakes only the oldest that wants it (events/wake-one.ts): a message is taken by
 * one of them, and the others would read in vain (issue 21: 2,000 waits woken at once stalled the
 * server). One that takes part of what is unread (`has_more`) wakes the next. The wait joins
 * before it reads, so an append between the read and the wait is not missed. `signal` (the
 * client went away, the server stops) ends the wait early with what is there.
 * Errors: `not_found` (a `thread_id` not on the agent's edges); `invalid_api_key` when messages
 * are there to take but the MCP key was revoked meanwhile (nothing is taken).
 */
export async function waitForAgentMessages(
  deps: DomainDeps,
  agent: AgentIdentity,
  input: { timeout_seconds: number; thread_id?: string | undefined; limit: number },
  signal?: AbortSignal,
): Promise<WaitForMessagesResult> {
  const threadId = input.thread_id;
  if (threadId !== undefined) await assertOnThread(deps.db, agent.agentId, threadId);
  if (input.timeout_seconds <= 0 || signal?.aborted) return takeUnread(deps.db, agent, threadId, input.limit);
  const deadline = Date.now() + input.timeout_seconds * 1000;
  const member = await deps.inboxes.join(
    agent.orgId,
    recipientTopic(agent.agentId),
    (event) => event.type === 'message.created' && (threadId === undefined || event.data.thread_id === threadId),
  );
  let leftBehind = false;
  try {
    for (;;) {
      const taken = await takeUnread(deps.db, agent, threadId, input.limit);
      if (taken.messages.length > 0) {
        leftBehind = taken.has_more;
        return taken;
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0 || signal?.aborted) return taken;
      yieldTurn();
      await member.wait(remaining, signal);
    }
  } finally {
    member.leave(leftBehind);
  }
}

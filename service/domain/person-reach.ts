/**
 * What a person signed in to the console reaches (contract §10), and nothing more: the teams of
 * the humans their session acts as (read-only graphs), the threads on those humans' edges (list
 * with the human's unread counts, read, mark read, post as that human, open), and the MCP keys
 * of those teams' external agents. Anything else — another team's thread, an agent with a
 * provider, an id that does not exist — is `not_found`, worded the same whichever it is, so
 * nothing of what lies outside the person's reach leaks.
 *
 * Writes go through the same operations as the REST routes and the MCP tools (threads.ts,
 * mcp-keys.ts), with the sender fixed here, never taken from the request. Read marks are the
 * participants' own (`thread_reads`, as for agents over MCP: agent-inbox.ts).
 */
import type { ToolCallList } from '../../api/agent-tools.ts';
import { listToolCalls } from './tool-calls.ts';
import { ServiceError } from '../../errors/catalogue.ts';
import type { CreatedMcpKey, McpKey, Message, Thread } from '../../api/schemas.ts';
import { MeTeamGraph, type MeEdge, type MeHuman, type MeThread, type MeThreadPage } from '../../api/session-schemas.ts';
import type { Queryable } from '../storage/db.ts';
import { agentUnreadCount, markRead, markReadAsPeer } from './agent-inbox.ts';
import type { Caller, DomainDeps } from './caller.ts';
import { iso, isUuid } from './ids.ts';
import { createMcpKey, listMcpKeys, revokeMcpKey } from './mcp-keys.ts';
import { getTeamGraph } from './team-graph.ts';
import { appendMessageAsParticipant, getThreadPage, openThread, toThread, type ThreadRow } from './threads.ts';

/** Who a console session acts as: one or more humans (possibly of several teams and organizations). */
export interface Person {
  humanIds: readonly string[];
}

const threadNotFound = "no thread with this id on this person's edges";
const edgeNotFound = "no edge with this id among this person's edges";
const teamNotFound = "no team with this id among this person's teams";
const agentNotFound = "no external agent with this id in this person's teams";

// The domain operations shared with REST take an organization caller; for a person that is the
// organization of the resource, checked to be theirs first. No key is involved: keyId is unused
// by the reads and by appendMessageAsParticipant.
const callerIn = (orgId: string): Caller => ({ orgId, keyId: '' });

/**
 * The humans a session acts as, with their teams and organizations, in a stable order
 * (organization, team, human name). Humans deleted meanwhile are left out.
 */
export async function describePerson(db: Queryable, person: Person): Promise<MeHuman[]> {
  return db.query<MeHuman>(
    `SELECT p.id AS human_id, p.name, p.email, t.id AS team_id, t.name AS team_name, o.id AS org_id, o.name AS org_name
       FROM participants p JOIN teams t ON t.id = p.team_id JOIN organizations o ON o.id = t.org_id
      WHERE p.id = ANY($1::uuid[]) AND p.kind = 'human'
      ORDER BY o.name, t.name, p.name, p.id`,
    [[...person.humanIds]],
  );
}

/** The organization of team `teamId` when one of the person's humans is in it. Errors: `not_found`. */
async function personTeamOrg(db: Queryable, person: Person, teamId: string): Promise<string> {
  if (!isUuid(teamId)) throw new ServiceError('not_found', teamNotFound);
  const rows = await db.query<{ org_id: string }>(
    `SELECT t.org_id FROM teams t WHERE t.id = $1 AND EXISTS (SELECT 1 FROM participants p WHERE p.team_id = t.id AND p.id = ANY($2::uuid[]))`,
    [teamId, [...person.humanIds]],
  );
  if (!rows[0]) throw new ServiceError('not_found', teamNotFound);
  return rows[0].org_id;
}

/**
 * The graph of one of the person's teams as a member sees it (read-only: a session changes no
 * team): the team, its agents and humans by name, its edges — `GET /teams/{id}`'s graph cut to
 * {@link MeTeamGraph}, which leaves out the agents' instructions, tools and budgets, the humans'
 * emails and the count of threads between others (docs/console.md, "What a session learns").
 * Errors: `not_found` (not one of the person's teams).
 */
export async function getPersonTeamGraph(deps: DomainDeps, person: Person, teamId: string): Promise<MeTeamGraph> {
  const orgId = await personTeamOrg(deps.db, person, teamId);
  // The schema keeps only its own fields (Zod objects drop the others): one place says what a member sees.
  return MeTeamGraph.parse(await getTeamGraph(deps, callerIn(orgId), teamId));
}

interface EdgeOfPersonRow {
  edge_id: string;
  team_id: string;
  org_id: string;
  human_id: string;
  peer_id: string;
  peer_kind: 'agent' | 'human';
  peer_name: string;
  created_at: Date;
}

// The person's edges, one row per (edge, person's human on it): `me` is the human, `peer` the
// other end. $1 is the person's human ids.
const personEdgesSql = `
  SELECT e.id AS edge_id, e.team_id, t.org_id, me.id AS human_id, peer.id AS peer_id, peer.kind AS peer_kind, peer.name AS peer_name, e.created_at
    FROM edges e
    JOIN teams t ON t.id = e.team_id
    JOIN participants me ON me.id IN (e.participant_a, e.participant_b) AND me.id = ANY($1::uuid[])
    JOIN participants peer ON peer.id = CASE WHEN e.participant_a = me.id THEN e.participant_b ELSE e.participant_a END`;

/** The person's edges, oldest first, each with the human of theirs on it and the peer. */
export async function listPersonEdges(deps: DomainDeps, person: Person): Promise<MeEdge[]> {
  const rows = await deps.db.query<EdgeOfPersonRow>(`${personEdgesSql} ORDER BY e.created_at, e.id, me.id`, [[...person.humanIds]]);
  return rows.map((row) => ({
    edge_id: row.edge_id,
    team_id: row.team_id,
    human_id: row.human_id,
    peer: { participant_id: row.peer_id, kind: row.peer_kind, name: row.peer_name },
    created_at: iso(row.created_at),
  }));
}

type PersonThreadRow = ThreadRow & {
  seq: string;
  mine_on_behalf: boolean | null;
  human_id: string;
  peer_id: string;
  peer_kind: 'agent' | 'human';
  peer_name: string;
  last_id: string | null;
  last_sender_id: string | null;
  last_content: string | null;
  last_sent_at: Date | null;
};

// The person's threads with the unread count of their human on each, the peer and the newest
// message, and whether the human's latest message there was written in their name (asking the
// peer, not from a console session: `mine_on_behalf`). A thread between two of the person's own
// humans is listed once, as the human who did not write its newest message (the one who would
// answer). $1 human ids, $2 a thread id or null, $3 an edge id or null, $4 a team id or null.
const personThreadsSql = `
  SELECT DISTINCT ON (th.id) th.*, me.id AS human_id, ${agentUnreadCount('me.id')} AS unread_count,
         peer.id AS peer_id, peer.kind AS peer_kind, peer.name AS peer_name,
         last.id AS last_id, last.sender_id AS last_sender_id, last.content AS last_content, last.sent_at AS last_sent_at,
         mine.on_behalf AS mine_on_behalf
    FROM threads th
    JOIN edges e ON e.id = th.edge_id
    JOIN participants me ON me.id IN (e.participant_a, e.participant_b) AND me.id = ANY($1::uuid[])
    JOIN participants peer ON peer.id = CASE WHEN e.participant_a = me.id THEN e.participant_b ELSE e.participant_a END
    LEFT JOIN thread_reads r ON r.thread_id = th.id AND r.participant_id = me.id
    LEFT JOIN LATERAL (
      SELECT m.id, m.sender_id, left(m.content, 280) AS content, m.sent_at FROM messages m WHERE m.thread_id = th.id ORDER BY m.seq DESC LIMIT 1
    ) last ON true
    LEFT JOIN LATERAL (
      SELECT m.expects_reply AND NOT m.via_session AS on_behalf FROM messages m WHERE m.thread_id = th.id AND m.sender_id = me.id ORDER BY m.seq DESC LIMIT 1
    ) mine ON true
   WHERE ($2::uuid IS NULL OR th.id = $2::uuid) AND ($3::uuid IS NULL OR th.edge_id = $3::uuid) AND ($4::uuid IS NULL OR th.team_id = $4::uuid)
   ORDER BY th.id, (last.sender_id = me.id), me.id`;

function toPersonThread(row: PersonThreadRow): MeThread {
  const thread: Thread = toThread(row);
  return {
    ...thread,
    human_id: row.human_id,
    peer: { participant_id: row.peer_id, kind: row.peer_kind, name: row.peer_name },
    last_message:
      row.last_id && row.last_sender_id && row.last_sent_at
        ? { message_id: row.last_id, sender_id: row.last_sender_id, content: row.last_content ?? '', sent_at: iso(row.last_sent_at) }
        : null,
    awaiting_reply: thread.awaiting_reply_from === row.human_id,
    // Once the thread awaits the human (the peer asked back), it is the person's to answer.
    sent_on_behalf: row.mine_on_behalf === true && thread.awaiting_reply_from !== row.human_id,
  };
}

/** Marks messages as written by the person in the console (`via_session`, migration 0026), which {@link listPersonThreads} tells from messages written in the human's name. */
async function markViaSession(db: Queryable, where: { messageId: string } | { threadId: string }): Promise<void> {
  if ('messageId' in where) await db.query(`UPDATE messages SET via_session = true WHERE id = $1`, [where.messageId]);
  else await db.query(`UPDATE messages SET via_session = true WHERE thread_id = $1 AND seq = 1`, [where.threadId]);
}

/** How many threads an inbox lists at most by default, and at most when asked (`limit`). */
export const personThreadLimit = { default: 200, max: 500 } as const;

/**
 * The threads on the person's edges (optionally of one team or one edge; with `unreadOnly`
 * only those with unread messages), most recently active first (the newest message's time, else
 * the thread's creation), at most `limit`, each with the unread count of the person's human on
 * it, the peer, the newest message, whether it awaits that human's answer, and whether the
 * human's latest message there was written in their name (`sent_on_behalf`: asking the peer,
 * through an organization key — a pipeline step — not in the console). Output: the threads
 * and whether more follow. Errors: none (a filter naming something not theirs finds nothing).
 */
export async function listPersonThreads(
  deps: DomainDeps,
  person: Person,
  filters: { teamId?: string | undefined; edgeId?: string | undefined; unreadOnly?: boolean | undefined; limit?: number | undefined } = {},
): Promise<{ threads: MeThread[]; has_more: boolean }> {
  const limit = filters.limit ?? personThreadLimit.default;
  const rows = await deps.db.query<PersonThreadRow>(
    `SELECT * FROM (${personThreadsSql}) listed
      WHERE NOT $5::boolean OR listed.unread_count > 0
      ORDER BY COALESCE(listed.last_sent_at, listed.created_at) DESC, listed.id DESC
      LIMIT $6`,
    [[...person.humanIds], null, filters.edgeId ?? null, filters.teamId ?? null, filters.unreadOnly === true, limit + 1],
  );
  return { threads: rows.slice(0, limit).map(toPersonThread), has_more: rows.length > limit };
}

/** One of the person's threads as {@link listPersonThreads} shows it, with the org it lives in. Errors: `not_found`. */
async function personThread(db: Queryable, person: Person, threadId: string): Promise<MeThread & { orgId: string }> {
  if (!isUuid(threadId)) throw new ServiceError('not_found', threadNotFound);
  const rows = await db.query<PersonThreadRow & { org_id: string }>(
    `SELECT listed.*, t.org_id FROM (${personThreadsSql}) listed JOIN teams t ON t.id = listed.team_id`,
    [[...person.humanIds], threadId, null, null],
  );
  if (!rows[0]) throw new ServiceError('not_found', threadNotFound);
  return { ...toPersonThread(rows[0]), orgId: rows[0].org_id };
}

/**
 * A page of one of the person's threads: up to `limit` messages after `after`, oldest first,
 * with `has_more` and `next_after` as `GET /threads/{id}` gives them, and the thread as
 * {@link listPersonThreads} shows it. Reading moves no read mark (that is a change, made by
 * {@link markPersonThreadRead}). Errors: `not_found`, `invalid_cursor`.
 */
export async function readPersonThread(
  deps: DomainDeps,
  person: Person,
  threadId: string,
  request: { after?: string | undefined; limit: number },
): Promise<MeThreadPage> {
  const { orgId, ...thread } = await personThread(deps.db, person, threadId);
  const page = await getThreadPage(deps, callerIn(orgId), threadId, { after: request.after, limit: request.limit, wait: 0 });
  return { ...thread, messages: page.messages, has_more: page.has_more, next_after: page.next_after };
}

/**
 * The organization of one of the person's threads, and how many messages it holds (a stream or a
 * stop of it, §13). Errors: `not_found` (outside the person's reach).
 */
export async function personThreadOrg(db: Queryable, person: Person, threadId: string): Promise<{ orgId: string; messageCount: number }> {
  const thread = await personThread(db, person, threadId);
  const rows = await db.query<{ message_count: number }>(`SELECT message_count FROM threads WHERE id = $1`, [threadId]);
  return { orgId: thread.orgId, messageCount: rows[0]?.message_count ?? 0 };
}

/**
 * The tool calls of the agents' turns on one of the person's threads (contract §11: a session for
 * its own threads), as `GET /threads/{thread_id}/tool-calls` gives them. Errors: `not_found`
 * (outside the person's reach), `invalid_cursor`.
 */
export async function listPersonThreadToolCalls(
  deps: DomainDeps,
  person: Person,
  threadId: string,
  query: { after?: string | undefined; limit: number },
): Promise<ToolCallList> {
  await personThread(deps.db, person, threadId);
  return listToolCalls(deps.db, threadId, query.after, query.limit);
}

/**
 * Moves the read mark of the person's human on a thread forward to `messageId` (default: the
 * newest message), never back. Output: the thread id and that human's unread count after.
 * Errors: `not_found` (the thread, or a message not of it).
 */
export async function markPersonThreadRead(
  deps: DomainDeps,
  person: Person,
  threadId: string,
  messageId: string | undefined,
): Promise<{ thread_id: string; unread_count: number }> {
  const thread = await personThread(deps.db, person, threadId);
  const target = messageId ?? thread.last_message?.message_id;
  if (target === undefined) return { thread_id: threadId, unread_count: thread.unread_count };
  const found = await deps.db.query(`SELECT 1 FROM messages WHERE id = $1 AND thread_id = $2`, [target, threadId]);
  if (found.length === 0) throw new ServiceError('not_found', 'no message with this id in this thread');
  const openerRows = await deps.db.query<{ opener_id: string }>(`SELECT opener_id FROM threads WHERE id = $1`, [threadId]);
  let unread: number;
  if (openerRows[0]?.opener_id === thread.human_id) {
    const counts = await deps.db.transaction((tx) => markRead(tx, thread.human_id, [{ threadId, messageId: target }]));
    unread = counts.get(threadId) ?? 0;
  } else {
    unread = await markReadAsPeer(deps.db, thread.human_id, threadId, target);
  }
  return { thread_id: threadId, unread_count: unread };
}

/**
 * Posts a message to one of the person's threads as the person's human on its edge (the
 * sender is fixed here, contract §10). Output: the Message. Errors: `not_found`.
 */
export async function postPersonMessage(
  deps: DomainDeps,
  person: Person,
  threadId: string,
  input: { content: string; expects_reply?: boolean | undefined },
): Promise<Message> {
  const thread = await personThread(deps.db, person, threadId);
  const body = { sender_agent_id: thread.human_id, content: input.content, expects_reply: input.expects_reply };
  const message = await appendMessageAsParticipant(deps, thread.orgId, threadId, body).catch((error: unknown) => {
    if (error instanceof ServiceError && (error.code === 'not_found' || error.code === 'not_a_participant')) throw new ServiceError('not_found', threadNotFound);
    throw error;
  });
  await markViaSession(deps.db, { messageId: message.message_id });
  return message;
}

/**
 * Opens a thread on one of the person's edges, its first message from the person's human there,
 * on channel `web` (contract §10). Output: the thread as {@link listPersonThreads} shows it.
 * Errors: `not_found` (not one of the person's edges).
 */
export async function openPersonThread(
  deps: DomainDeps,
  person: Person,
  edgeId: string,
  input: { subject?: string | undefined; content: string; expects_reply?: boolean | undefined },
): Promise<MeThread> {
  if (!isUuid(edgeId)) throw new ServiceError('not_found', edgeNotFound);
  const edges = await deps.db.query<EdgeOfPersonRow>(`${personEdgesSql} WHERE e.id = $2 ORDER BY me.id LIMIT 1`, [[...person.humanIds], edgeId]);
  const edge = edges[0];
  if (!edge) throw new ServiceError('not_found', edgeNotFound);
  const body = {
    sender_agent_id: edge.human_id,
    content: input.content,
    subject: input.subject,
    channel: 'web',
    expects_reply: input.expects_reply,
  };
  const opened = await openThread(deps, callerIn(edge.org_id), edgeId, body).catch((error: unknown) => {
    if (error instanceof ServiceError && (error.code === 'not_found' || error.code === 'not_a_participant')) throw new ServiceError('not_found', edgeNotFound);
    throw error;
  });
  await markViaSession(deps.db, { threadId: opened.thread_id });
  const { orgId: _org, ...thread } = await personThread(deps.db, person, opened.thread_id);
  return thread;
}

/** The organization of an external agent (no provider) of one of the person's teams. Errors: `not_found`. */
async function personExternalAgentOrg(db: Queryable, person: Person, agentId: string): Promise<string> {
  if (!isUuid(agentId)) throw new ServiceError('not_found', agentNotFound);
  const rows = await db.query<{ org_id: string }>(
    `SELECT t.org_id FROM participants a JOIN teams t ON t.id = a.team_id
      WHERE a.id = $1 AND a.kind = 'agent' AND a.provider IS NULL
        AND EXISTS (SELECT 1 FROM participants h WHERE h.team_id = a.team_id AND h.id = ANY($2::uuid[]))`,
    [agentId, [...person.humanIds]],
  );
  if (!rows[0]) throw new ServiceError('not_found', agentNotFound);
  return rows[0].org_id;
}

/**
 * Creates an MCP key for an external agent of one of the person's teams ("Connect an agent").
 * Output: the key with its secret, shown only here. Errors: `not_found` (not such an agent).
 */
export async function createPersonAgentKey(deps: DomainDeps, person: Person, agentId: string): Promise<CreatedMcpKey> {
  return createMcpKey(deps, callerIn(await personExternalAgentOrg(deps.db, person, agentId)), agentId);
}

/** The unrevoked MCP keys of an external agent of the person's teams, without secrets. Errors: `not_found`. */
export async function listPersonAgentKeys(deps: DomainDeps, person: Person, agentId: string): Promise<McpKey[]> {
  return listMcpKeys(deps, callerIn(await personExternalAgentOrg(deps.db, person, agentId)), agentId);
}

/** Revokes an MCP key of an external agent of the person's teams. Errors: `not_found` (agent or key). */
export async function revokePersonAgentKey(deps: DomainDeps, person: Person, agentId: string, keyId: string): Promise<void> {
  await revokeMcpKey(deps, callerIn(await personExternalAgentOrg(deps.db, person, agentId)), agentId, keyId);
}

/**
 * The threads the person may follow live: their ids, for filtering the organization's event
 * stream to them (contract §10).
 */
export async function personThreadIds(db: Queryable, person: Person): Promise<string[]> {
  const rows = await db.query<{ id: string }>(
    `SELECT th.id FROM threads th JOIN edges e ON e.id = th.edge_id WHERE e.participant_a = ANY($1::uuid[]) OR e.participant_b = ANY($1::uuid[])`,
    [[...person.humanIds]],
  );
  return rows.map((row) => row.id);
}

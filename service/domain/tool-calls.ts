/**
 * Tool-call records (contract §11): a row per call an agent's turn makes (agent-loop/turns/), each
 * change of its state one conditional UPDATE with its `tool_call.*` event in the same transaction,
 * and the listing of a thread's calls (`GET /threads/{thread_id}/tool-calls`, and a session's).
 */
import { finalToolCallStatuses, type ToolCall, type ToolCallList, type ToolCallStatus } from '../../api/agent-tools.ts';
import type { EventType } from '../../api/events.ts';
import { ServiceError } from '../../errors/catalogue.ts';
import { liveItemSql } from '../events/deltas.ts';
import type { Queryable } from '../storage/db.ts';
import { reaches, type Caller, type DomainDeps } from './caller.ts';
import { iso, isoOrNull, isUuid } from './ids.ts';

/** A stored tool call (the record of contract §11 and what the turn needs to go on). */
export interface ToolCallRow {
  id: string;
  seq: string | number;
  turn_id: string;
  org_id: string;
  team_id: string;
  agent_id: string;
  thread_id: string;
  message_id: string;
  step: number;
  idx: number;
  /** The model's id of the call: its result names it. */
  model_call_id: string;
  /** The name the model called it by. */
  model_name: string;
  tool: string;
  server: string | null;
  arguments: unknown;
  status: ToolCallStatus;
  result: unknown;
  error: string | null;
  wait_participant: string | null;
  wait_thread: string | null;
  wait_message: string | null;
  wait_after_seq: number | null;
  wait_deadline: Date | null;
  attempts: number;
  started_at: Date;
  finished_at: Date | null;
}

/** The record as the API shows it (api/agent-tools.ts `ToolCall`). */
export function toToolCall(row: ToolCallRow): ToolCall {
  return {
    tool_call_id: row.id,
    agent_id: row.agent_id,
    thread_id: row.thread_id,
    message_id: row.message_id,
    turn_id: row.turn_id,
    step: row.step,
    tool: row.tool,
    server: row.server,
    arguments: row.arguments,
    status: row.status,
    result: row.result ?? null,
    error: row.error,
    waiting_on:
      row.wait_participant !== null && row.wait_thread !== null && row.wait_message !== null
        ? { participant_id: row.wait_participant, thread_id: row.wait_thread, message_id: row.wait_message }
        : null,
    started_at: iso(row.started_at),
    finished_at: isoOrNull(row.finished_at),
  };
}

/**
 * Writes the `tool_call.*` events of a call as it now is, inside the transaction that changed it,
 * in one statement: each in the organization's log, and the last as a live item of its turn's
 * thread stream (§13; signal the thread after the commit, events/deltas.ts `signalLive`). Two
 * types when a call started and ended in one change (a read-only tool run before its record).
 */
export async function writeEvents(tx: Queryable, row: ToolCallRow, types: ReadonlyArray<'tool_call.started' | 'tool_call.finished'>): Promise<void> {
  // One statement: a call's change is a few of them, and each round trip counts (docs/performance.md).
  const call = toToolCall(row);
  // A call that started and ended in one change shows, in its started event, as it was running.
  const asOf = (type: string) =>
    JSON.stringify(type === 'tool_call.started' && call.status !== 'running' && call.status !== 'awaiting_approval' ? { ...call, status: 'running', result: null, error: null, finished_at: null } : call);
  const params: unknown[] = [row.org_id, row.team_id, row.thread_id];
  const events = types.map((type) => {
    params.push(type, asOf(type));
    return `acs_append_event($1, $2, $${params.length - 1}, $${params.length}::json)`;
  });
  const live = liveItemSql({ thread: 3, type: params.length - 1, data: params.length });
  await tx.query(`WITH events AS (SELECT ${events.map((e, i) => `${e} AS e${i}`).join(', ')}), ${live.slot} ${live.insert} CROSS JOIN events`, params);
}

/** Writes the one `tool_call.*` event of a call's change (see {@link writeEvents}). */
export async function writeEvent(tx: Queryable, row: ToolCallRow, type: 'tool_call.started' | 'tool_call.finished'): Promise<void> {
  await writeEvents(tx, row, [type]);
}

/** A change of a tool call's state: the state it goes to and what else changes with it. */
export interface CallChange {
  status: ToolCallStatus;
  result?: unknown;
  error?: string | null;
  wait?: { participant: string; thread: string; message: string; afterSeq: number; deadline: Date } | null;
  attempts?: number;
}

/**
 * Moves a tool call from the state `from` to `change.status` inside `tx`, with its event:
 * `tool_call.finished` for a final state, `tool_call.started` when it starts to run or to wait for
 * its approval; no event when it goes back to `pending` (an approval given: the start that follows
 * writes one). Output: the call as now stored, or undefined when it was not in state `from` any
 * more (another process moved it: nothing is written then).
 */
export async function moveCall(tx: Queryable, call: Pick<ToolCallRow, 'id'>, from: ToolCallStatus, change: CallChange): Promise<ToolCallRow | undefined> {
  const final = finalToolCallStatuses.includes(change.status);
  const wait = change.wait;
  const rows = await tx.query<ToolCallRow>(
    `UPDATE tool_calls SET status = $3,
        result = CASE WHEN $4::boolean THEN $5::jsonb ELSE result END,
        error = CASE WHEN $6::boolean THEN $7 ELSE error END,
        wait_participant = CASE WHEN $8::boolean THEN $9::uuid ELSE wait_participant END,
        wait_thread = CASE WHEN $8::boolean THEN $10::uuid ELSE wait_thread END,
        wait_message = CASE WHEN $8::boolean THEN $11::uuid ELSE wait_message END,
        wait_after_seq = CASE WHEN $8::boolean THEN $12::integer ELSE wait_after_seq END,
        wait_deadline = CASE WHEN $8::boolean THEN $13::timestamptz ELSE wait_deadline END,
        attempts = COALESCE($14::integer, attempts),
        finished_at = CASE WHEN $15::boolean THEN now() ELSE finished_at END
      WHERE id = $1 AND status = $2 RETURNING *`,
    [
      call.id,
      from,
      change.status,
      change.result !== undefined,
      change.result === undefined ? null : JSON.stringify(change.result),
      change.error !== undefined,
      change.error ?? null,
      wait !== undefined,
      wait?.participant ?? null,
      wait?.thread ?? null,
      wait?.message ?? null,
      wait?.afterSeq ?? null,
      wait?.deadline.toISOString() ?? null,
      change.attempts ?? null,
      final,
    ],
  );
  const row = rows[0];
  if (!row) return undefined;
  if (final) await writeEvent(tx, row, 'tool_call.finished');
  else if (change.status === 'running' || change.status === 'awaiting_approval') await writeEvent(tx, row, 'tool_call.started');
  return row;
}

/**
 * The tool calls of a thread's turns (`GET /threads/{thread_id}/tool-calls`, contract §11), oldest
 * first, after the call `after` (a tool call id of the thread), at most `limit`. No access check:
 * callers check the thread. Errors: `invalid_cursor` (`after` names no tool call of this thread).
 */
export async function listToolCalls(db: Queryable, threadId: string, after: string | undefined, limit: number): Promise<ToolCallList> {
  let afterSeq = 0;
  if (after !== undefined) {
    const rows = isUuid(after) ? await db.query<{ seq: string }>(`SELECT seq FROM tool_calls WHERE id = $1 AND thread_id = $2`, [after, threadId]) : [];
    if (!rows[0]) throw new ServiceError('invalid_cursor', 'after names no tool call of this thread');
    afterSeq = Number(rows[0].seq);
  }
  const rows = await db.query<ToolCallRow>(`SELECT * FROM tool_calls WHERE thread_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, [threadId, afterSeq, limit]);
  return { tool_calls: rows.map(toToolCall), next_after: rows.at(-1)?.id ?? after ?? null };
}

/**
 * `GET /threads/{thread_id}/tool-calls` (contract §11): the tool calls of the agents' turns on a
 * thread the caller's organization reaches. Errors: `not_found` (the thread, or one the key does
 * not reach), `invalid_cursor`.
 */
export async function listThreadToolCalls(deps: DomainDeps, caller: Caller, threadId: string, query: { after?: string | undefined; limit: number }): Promise<ToolCallList> {
  if (!isUuid(threadId)) throw new ServiceError('not_found', 'thread not found');
  const rows = await deps.db.query(
    `SELECT 1 FROM threads th JOIN teams t ON t.id = th.team_id JOIN organizations o ON o.id = t.org_id WHERE th.id = $2 AND ${reaches('o', 1)}`,
    [caller.orgId, threadId],
  );
  if (rows.length === 0) throw new ServiceError('not_found', 'thread not found');
  return listToolCalls(deps.db, threadId, query.after, query.limit);
}

/**
 * Ends the open turns of an agent whose tools were removed (a PATCH to `tools: null`): their calls
 * not yet final fail with `reason` (each with its `tool_call.finished` event) and the turns fail,
 * so the messages they answered are answered the way an agent without tools answers (§8).
 * Inside the PATCH's transaction. Output: the threads of those turns (signal their streams after
 * the commit: their calls' live items were written).
 */
export async function abandonOpenTurns(tx: Queryable, agentId: string, reason: string): Promise<string[]> {
  const open = await tx.query<ToolCallRow>(
    `SELECT c.* FROM tool_calls c JOIN agent_turns t ON t.id = c.turn_id
      WHERE t.agent_id = $1 AND t.state IN ('running', 'suspended') AND c.status IN ('pending', 'awaiting_approval', 'running')
      ORDER BY c.seq`,
    [agentId],
  );
  for (const call of open) await moveCall(tx, call, call.status, { status: 'failed', error: reason });
  const turns = await tx.query<{ thread_id: string }>(
    `UPDATE agent_turns SET state = 'failed', error = $2, updated_at = now(), finished_at = now() WHERE agent_id = $1 AND state IN ('running', 'suspended') RETURNING thread_id`,
    [agentId, reason],
  );
  return [...new Set(turns.map((t) => t.thread_id))];
}

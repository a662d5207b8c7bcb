/**
 * Turns and their tool calls in storage (migration 0022; contract §11). A turn answers one incoming
 * message of a provider agent with tools; its finished steps (the model's messages) and every tool
 * call are rows, written as they happen, so a turn outlives the process that ran it. Each change of
 * a tool call's state is one conditional UPDATE (`WHERE status = <the state it leaves>`) with its
 * `tool_call.*` event in the same transaction: two processes can never both start one call, which
 * is what makes a call with side effects run at most once.
 */
import { ServiceError } from '../../../errors/catalogue.ts';
import { newId } from '../../domain/ids.ts';
import { writeEvent, type ToolCallRow } from '../../domain/tool-calls.ts';
import type { Queryable } from '../../storage/db.ts';

/** A turn's states: running (steps to take or calls to make), suspended (waiting for an answer), and the final two. */
export const TurnStates = { running: 'running', suspended: 'suspended', completed: 'completed', failed: 'failed' } as const;
export type TurnState = (typeof TurnStates)[keyof typeof TurnStates];

/** A stored turn. `transcript[i]` holds the model's messages of step i + 1. */
export interface TurnRow {
  id: string;
  agent_id: string;
  thread_id: string;
  message_id: string;
  message_seq: number;
  org_id: string;
  team_id: string;
  state: TurnState;
  steps: number;
  transcript: unknown[][];
  reply_id: string | null;
}

/** The open turn (running or suspended) of an agent on a thread, if any. */
export async function openTurnOf(db: Queryable, agentId: string, threadId: string): Promise<TurnRow | undefined> {
  const rows = await db.query<TurnRow>(`SELECT * FROM agent_turns WHERE agent_id = $1 AND thread_id = $2 AND state IN ('running', 'suspended') ORDER BY created_at LIMIT 1`, [
    agentId,
    threadId,
  ]);
  return rows[0];
}

/**
 * Starts the turn that answers `message` (or finds the one that does: at most one per agent and
 * message, across processes). Output: the turn, which may be finished already.
 */
export async function startTurn(
  db: Queryable,
  turn: { agentId: string; threadId: string; messageId: string; messageSeq: number; orgId: string; teamId: string },
): Promise<TurnRow> {
  const rows = await db.query<TurnRow>(
    `WITH made AS (
       INSERT INTO agent_turns (id, agent_id, thread_id, message_id, message_seq, org_id, team_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (agent_id, message_id) DO NOTHING RETURNING *
     )
     SELECT * FROM made UNION ALL SELECT * FROM agent_turns WHERE agent_id = $2 AND message_id = $4 AND NOT EXISTS (SELECT 1 FROM made)`,
    [newId(), turn.agentId, turn.threadId, turn.messageId, turn.messageSeq, turn.orgId, turn.teamId],
  );
  return rows[0]!;
}

/** Sets an open turn's state (running ⇄ suspended); finished turns are left as they are. */
export async function setTurnState(db: Queryable, turnId: string, state: 'running' | 'suspended'): Promise<void> {
  await db.query(`UPDATE agent_turns SET state = $2, updated_at = now() WHERE id = $1 AND state IN ('running', 'suspended') AND state <> $2`, [turnId, state]);
}

/** Ends a turn: `completed` with the reply it posted, or `failed` with why. */
export async function finishTurn(tx: Queryable, turnId: string, outcome: { replyId: string } | { error: string }): Promise<void> {
  await tx.query(`UPDATE agent_turns SET state = $2, reply_id = $3, error = $4, updated_at = now(), finished_at = now() WHERE id = $1`, [
    turnId,
    'replyId' in outcome ? 'completed' : 'failed',
    'replyId' in outcome ? outcome.replyId : null,
    'error' in outcome ? outcome.error : null,
  ]);
}

/** The calls of one step of a turn, in the model's order. */
export async function callsOfStep(db: Queryable, turnId: string, step: number): Promise<ToolCallRow[]> {
  return db.query<ToolCallRow>(`SELECT * FROM tool_calls WHERE turn_id = $1 AND step = $2 ORDER BY idx`, [turnId, step]);
}

/** Every call of a turn, by step and order: the results the model is given back. */
export async function callsOfTurn(db: Queryable, turnId: string): Promise<ToolCallRow[]> {
  return db.query<ToolCallRow>(`SELECT * FROM tool_calls WHERE turn_id = $1 ORDER BY step, idx`, [turnId]);
}

/** A tool call as a step records it. */
export interface NewToolCall {
  modelCallId: string;
  modelName: string;
  tool: string;
  server: string | null;
  arguments: unknown;
  status: 'pending' | 'awaiting_approval' | 'failed';
  error?: string | undefined;
}

/**
 * Records a finished step inside `tx`: the model's messages appended to the turn's transcript, its
 * step count moved, and its tool calls inserted (calls refused at once — an unknown tool, arguments
 * that do not fit, one too many — are `failed` from the start, with their `tool_call.finished`
 * event). Output: the turn as it now is and the calls as stored.
 * Errors: `conflict` when the turn is no longer at the step this one follows (another process
 * recorded it: this process's claim was taken over).
 */
export async function recordStep(tx: Queryable, turn: TurnRow, assistant: unknown[], calls: NewToolCall[]): Promise<{ turn: TurnRow; calls: ToolCallRow[] }> {
  const step = turn.steps + 1;
  const updated = await tx.query<TurnRow>(
    `UPDATE agent_turns SET steps = $2, transcript = transcript || jsonb_build_array($3::jsonb), state = 'running', updated_at = now()
      WHERE id = $1 AND steps = $4 AND state IN ('running', 'suspended') RETURNING *`,
    [turn.id, step, JSON.stringify(assistant), turn.steps],
  );
  if (!updated[0]) throw new ServiceError('conflict', 'the turn moved on in another process');
  const stored: ToolCallRow[] = [];
  for (const [idx, call] of calls.entries()) {
    const rows = await tx.query<ToolCallRow>(
      `INSERT INTO tool_calls (id, turn_id, org_id, team_id, agent_id, thread_id, message_id, step, idx, model_call_id, model_name, tool, server, arguments, status, error, finished_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14::jsonb, $15, $16, CASE WHEN $15 = 'failed' THEN now() END)
       RETURNING *`,
      [
        newId(),
        turn.id,
        turn.org_id,
        turn.team_id,
        turn.agent_id,
        turn.thread_id,
        turn.message_id,
        step,
        idx,
        call.modelCallId,
        call.modelName,
        call.tool,
        call.server,
        JSON.stringify(call.arguments ?? null),
        call.status,
        call.error ?? null,
      ],
    );
    const row = rows[0]!;
    if (row.status === 'failed') await writeEvent(tx, row, 'tool_call.finished');
    stored.push(row);
  }
  return { turn: updated[0], calls: stored };
}


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
import { writeEvents, type ToolCallRow } from '../../domain/tool-calls.ts';
import { liveItemSql } from '../../events/deltas.ts';
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
  /** The reply's id, fixed when the turn starts (§13: its deltas name it before it is posted). */
  reply_id: string | null;
  /** A stop was asked of the turn (POST …/stop): it ends at its next step with what was written. */
  stop_requested: boolean;
  /** Set by {@link startTurn} only: whether this call made the turn (else it was there already). */
  fresh?: boolean;
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
 * message, across processes), with its reply's id fixed now. Output: the turn (`fresh` when this
 * call made it), which may be finished already.
 */
export async function startTurn(
  db: Queryable,
  turn: { agentId: string; threadId: string; messageId: string; messageSeq: number; orgId: string; teamId: string },
): Promise<TurnRow> {
  const rows = await db.query<TurnRow>(
    `WITH made AS (
       INSERT INTO agent_turns (id, agent_id, thread_id, message_id, message_seq, org_id, team_id, reply_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (agent_id, message_id) DO NOTHING RETURNING *
     )
     SELECT *, true AS fresh FROM made
     UNION ALL SELECT *, false AS fresh FROM agent_turns WHERE agent_id = $2 AND message_id = $4 AND NOT EXISTS (SELECT 1 FROM made)`,
    [newId(), turn.agentId, turn.threadId, turn.messageId, turn.messageSeq, turn.orgId, turn.teamId, newId()],
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

/**
 * A tool call as a step records it: to be made (`pending`), waiting for its approval, refused at
 * once (`failed`), or already made (`completed`/`failed` with `ran`: a tool that only reads, run
 * before the record because making it twice could change nothing).
 */
export interface NewToolCall {
  /** Its id, fixed before the record (a tool run first is traced under it). */
  id: string;
  modelCallId: string;
  modelName: string;
  tool: string;
  server: string | null;
  arguments: unknown;
  status: 'pending' | 'awaiting_approval' | 'failed' | 'completed';
  error?: string | undefined;
  result?: unknown;
  /** It ran before this record (a read-only tool): it starts and ends in the record. */
  ran?: boolean | undefined;
}

/**
 * Records a finished step inside `tx`, in three statements whatever its number of calls: its tool
 * calls inserted (one statement; calls refused at once — an unknown tool, arguments that do not
 * fit, one too many — are `failed` from the start, read-only calls made already are final), the
 * events of those already final (`tool_call.started` for those that ran, `tool_call.finished`), and
 * the turn moved on — the model's messages appended to its transcript, its step count moved — with,
 * given `stream`, the stream's `turn.step` item (§13: the text streamed in the step was not the
 * reply, whose id `stream.replyId` is; none for a turn's last step, whose text is). Output: the turn as it now is and the calls as
 * stored. Errors: `conflict` when the turn is no longer at the step this one follows (another
 * process recorded it: this process's claim was taken over).
 */
export async function recordStep(
  tx: Queryable,
  turn: TurnRow,
  assistant: unknown[],
  calls: NewToolCall[],
  stream: { replyId: string } | undefined,
): Promise<{ turn: TurnRow; calls: ToolCallRow[] }> {
  const step = turn.steps + 1;
  const stored =
    calls.length === 0
      ? []
      : await tx.query<ToolCallRow>(
          `INSERT INTO tool_calls (id, turn_id, org_id, team_id, agent_id, thread_id, message_id, step, idx, model_call_id, model_name, tool, server, arguments, status, error, result, finished_at)
           SELECT c.id, $2, $3, $4, $5, $6, $7, $8, c.idx, c.model_call_id, c.model_name, c.tool, c.server, c.arguments, c.status, c.error, c.result,
                  CASE WHEN c.status IN ('failed', 'completed') THEN now() END
             FROM jsonb_to_recordset($1::jsonb) AS c(id uuid, idx integer, model_call_id text, model_name text, tool text, server text, arguments jsonb, status text, error text, result jsonb)
           RETURNING *`,
          [
            JSON.stringify(
              calls.map((call, idx) => ({
                id: call.id,
                idx,
                model_call_id: call.modelCallId,
                model_name: call.modelName,
                tool: call.tool,
                server: call.server,
                arguments: call.arguments ?? null,
                status: call.status,
                error: call.error ?? null,
                result: call.result === undefined ? null : call.result,
              })),
            ),
            turn.id,
            turn.org_id,
            turn.team_id,
            turn.agent_id,
            turn.thread_id,
            turn.message_id,
            step,
          ],
        );
  stored.sort((a, b) => a.idx - b.idx);
  for (const row of stored) {
    const ran = calls[row.idx]?.ran === true;
    if (row.status === 'failed' || row.status === 'completed') await writeEvents(tx, row, ran ? ['tool_call.started', 'tool_call.finished'] : ['tool_call.finished']);
  }
  const move = `UPDATE agent_turns SET steps = $2, transcript = transcript || jsonb_build_array($3::jsonb), state = 'running', updated_at = now()
        WHERE id = $1 AND steps = $4 AND state IN ('running', 'suspended') RETURNING *`;
  const params = [turn.id, step, JSON.stringify(assistant), turn.steps];
  const live = liveItemSql({ thread: 5, type: 6, data: 7 });
  const updated = stream
    ? await tx.query<TurnRow>(`WITH moved AS (${move}), ${live.slot}, item AS (${live.insert} WHERE EXISTS (SELECT 1 FROM moved) RETURNING 1) SELECT * FROM moved`, [
        ...params,
        turn.thread_id,
        'turn.step',
        JSON.stringify({ thread_id: turn.thread_id, message_id: stream.replyId, sender_id: turn.agent_id, step, tool_call_ids: stored.map((c) => c.id) }),
      ])
    : await tx.query<TurnRow>(move, params);
  if (!updated[0]) throw new ServiceError('conflict', 'the turn moved on in another process');
  return { turn: updated[0], calls: stored };
}

/** The reply id of a turn started before ids were fixed at the start: fixed now, once. Output: the id. */
export async function fixTurnReplyId(db: Queryable, turn: TurnRow): Promise<string> {
  if (turn.reply_id !== null) return turn.reply_id;
  const rows = await db.query<{ reply_id: string }>(`UPDATE agent_turns SET reply_id = COALESCE(reply_id, $2) WHERE id = $1 RETURNING reply_id`, [turn.id, newId()]);
  return rows[0]!.reply_id;
}

/** Whether a stop was asked of the turn, read now. */
export async function turnStopRequested(db: Queryable, turnId: string): Promise<boolean> {
  const rows = await db.query<{ stop_requested: boolean }>(`SELECT stop_requested FROM agent_turns WHERE id = $1`, [turnId]);
  return rows[0]?.stop_requested === true;
}

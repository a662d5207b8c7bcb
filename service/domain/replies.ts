/**
 * Replies as they are written (§13 of the contract this service implements), as the domain sees
 * them: which thread a caller may stream, and the stop a person or a program asks of the turns in
 * progress on a thread. The stream itself is read above the domain (events/thread-stream.ts); the
 * turns that write it run in the agent loop, which is told of a stop by the hub's signal.
 */
import { ServiceError } from '../../errors/catalogue.ts';
import { stopKey } from '../events/deltas.ts';
import { reaches, type Caller, type DomainDeps } from './caller.ts';
import { isUuid } from './ids.ts';

/** A thread as a stream or a stop needs it: its organization and how many messages it holds. */
export interface StreamableThread {
  threadId: string;
  orgId: string;
  messageCount: number;
}

/**
 * The thread `threadId` if the caller's organization reaches it. Errors: `not_found` (no such
 * thread, or one the key does not reach: existence is not revealed).
 */
export async function threadForCaller(deps: DomainDeps, caller: Caller, threadId: string): Promise<StreamableThread> {
  if (!isUuid(threadId)) throw new ServiceError('not_found', 'thread not found');
  const rows = await deps.db.query<{ org_id: string; message_count: number }>(
    `SELECT t.org_id, th.message_count FROM threads th JOIN teams t ON t.id = th.team_id JOIN organizations o ON o.id = t.org_id
      WHERE th.id = $2 AND ${reaches('o', 1)}`,
    [caller.orgId, threadId],
  );
  if (!rows[0]) throw new ServiceError('not_found', 'thread not found');
  return { threadId, orgId: rows[0].org_id, messageCount: rows[0].message_count };
}

/**
 * Asks the turns in progress on a thread to stop (§13): every open turn of an agent with tools on
 * it, waiting or running, and every plain reply being written (a work row under a claim). The flag
 * is stored, the rows are woken (a waiting turn is taken up at once and ends), and the processes
 * running them are told through the hub's signal; each posts the text written so far as its reply,
 * with `stopped: true`, and makes no tool call not yet started. With `options.agentId`, only that
 * agent's work on the thread is asked to stop (a task's cancel stops its assignee's turn, not one
 * of its requester's: domain/tasks.ts). Output: how many agents were asked to stop (0: nothing was
 * in progress). Errors: none of its own (the storage's).
 */
export async function requestStop(deps: DomainDeps, threadId: string, options: { agentId?: string | undefined } = {}): Promise<number> {
  const only = options.agentId ?? null;
  const agents = await deps.db.transaction(async (tx) => {
    const turns = await tx.query<{ agent_id: string }>(
      `UPDATE agent_turns SET stop_requested = true, updated_at = now()
        WHERE thread_id = $1 AND state IN ('running', 'suspended') AND ($2::uuid IS NULL OR agent_id = $2::uuid) RETURNING agent_id`,
      [threadId, only],
    );
    const withTurns = turns.map((row) => row.agent_id);
    const rows = await tx.query<{ agent_id: string }>(
      `UPDATE agent_work w SET stop_requested = true,
              due_at = CASE WHEN w.lease_token IS NULL THEN now() ELSE w.due_at END, woken = w.lease_token IS NOT NULL
        WHERE w.thread_id = $1 AND (w.lease_token IS NOT NULL OR w.agent_id = ANY($2::uuid[])) AND ($3::uuid IS NULL OR w.agent_id = $3::uuid)
        RETURNING w.agent_id`,
      [threadId, withTurns, only],
    );
    return new Set([...withTurns, ...rows.map((row) => row.agent_id)]);
  });
  if (agents.size > 0) deps.events.signal(stopKey(threadId));
  return agents.size;
}

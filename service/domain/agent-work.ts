/**
 * The agent loop's work rows (`agent_work`, migration 0009) as other domain operations touch them:
 * a change to an agent or to a provider key may give parked work back to the loop at once.
 */
import type { Queryable } from '../storage/db.ts';

// Wakes the matched rows: one that no claim holds becomes due now; one a process holds under a
// claim (its `due_at` is the lease's end, and the holder will set it) is marked `woken`, so that the
// holder, which may have read the agent or its key before this change committed, makes it due now
// when it parks it (agent-loop.ts). Updating a held row also makes the holder's park wait for this
// transaction, so the flag is seen. Rows with work that are already due are touched too: the
// change then holds their locks until it commits, so no claim takes them in between (claims skip
// locked rows), and a claim that takes them afterwards finds the change committed when the loop
// looks again before parking (agent-loop.ts). Rows without work are left alone.
const wakeSet = `due_at = CASE WHEN w.lease_token IS NULL THEN now() ELSE w.due_at END, woken = w.lease_token IS NOT NULL`;
const wakeable = `(w.lease_token IS NOT NULL OR w.due_at > now() OR w.latest_seq > w.handled_seq)`;

/**
 * Makes an agent's parked work due now (a paused agent made active, a budget raised, a provider or
 * model changed), also rows a process holds under a claim at this moment (they become due when it
 * parks them). With `backfill`, first gives the agent a row for every thread on its edges (it just
 * got a provider: messages that came while it had none are answered too, as they were before the
 * loop kept marks). Input: the transaction of the change and the agent's id. Output: none; no
 * error of its own.
 */
export async function wakeAgentWork(tx: Queryable, agentId: string, options: { backfill: boolean }): Promise<void> {
  if (options.backfill) {
    // A message appended, or a thread opened, while this change is uncommitted found the agent
    // without a provider (its insert trigger gave no work), and the backfill below would not see
    // it either: it would stay unanswered until the next message. So the backfill first waits for
    // those: the agent's edges locked against new threads (a thread insert takes KEY SHARE on its
    // edge), then its threads against appends (an append updates its thread's row). Later appends
    // wait for this commit and then see the provider. Edges before threads, as deletions go.
    await tx.query(`SELECT 1 FROM edges e WHERE e.participant_a = $1 OR e.participant_b = $1 ORDER BY e.id FOR UPDATE`, [agentId]);
    await tx.query(
      `SELECT 1 FROM edges e JOIN threads th ON th.edge_id = e.id WHERE e.participant_a = $1 OR e.participant_b = $1 ORDER BY th.id FOR SHARE OF th`,
      [agentId],
    );
    await tx.query(
      `INSERT INTO agent_work (agent_id, thread_id, latest_seq)
       SELECT $1, th.id, th.message_count FROM edges e JOIN threads th ON th.edge_id = e.id
        WHERE e.participant_a = $1 OR e.participant_b = $1
       ON CONFLICT (agent_id, thread_id) DO UPDATE SET latest_seq = GREATEST(agent_work.latest_seq, EXCLUDED.latest_seq)`,
      [agentId],
    );
  }
  await tx.query(`UPDATE agent_work w SET ${wakeSet} WHERE w.agent_id = $1 AND ${wakeable}`, [agentId]);
}

/**
 * Makes due now the parked work of an organization's agents of one provider (rows held under a
 * claim as in {@link wakeAgentWork}): its key was set or replaced, so agents parked for a missing
 * or refused key run again. Input: the organization and the provider name. Output: none; no
 * error of its own.
 */
export async function wakeProviderWork(tx: Queryable, orgId: string, provider: string): Promise<void> {
  await tx.query(
    `UPDATE agent_work w SET ${wakeSet}
       FROM participants p JOIN teams t ON t.id = p.team_id
      WHERE w.agent_id = p.id AND t.org_id = $1 AND p.provider = $2 AND ${wakeable}`,
    [orgId, provider],
  );
}

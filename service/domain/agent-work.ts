/**
 * The agent loop's work rows (`agent_work`, migration 0009) as other domain operations touch them:
 * a change to an agent or to a provider key may give parked work back to the loop at once.
 */
import type { Queryable } from '../storage/db.ts';

/**
 * Makes an agent's parked work due now (a paused agent made active, a budget raised, a provider or
 * model changed), except rows a process holds under a claim. With `backfill`, first gives the
 * agent a row for every thread on its edges (it just got a provider: messages that came while it
 * had none are answered too, as they were before the loop kept marks). Input: the transaction of
 * the change and the agent's id. Output: none; no error of its own.
 */
export async function wakeAgentWork(tx: Queryable, agentId: string, options: { backfill: boolean }): Promise<void> {
  if (options.backfill) {
    await tx.query(
      `INSERT INTO agent_work (agent_id, thread_id, latest_seq)
       SELECT $1, th.id, th.message_count FROM edges e JOIN threads th ON th.edge_id = e.id
        WHERE e.participant_a = $1 OR e.participant_b = $1
       ON CONFLICT (agent_id, thread_id) DO UPDATE SET latest_seq = GREATEST(agent_work.latest_seq, EXCLUDED.latest_seq)`,
      [agentId],
    );
  }
  await tx.query(`UPDATE agent_work SET due_at = now() WHERE agent_id = $1 AND lease_token IS NULL AND due_at > now()`, [agentId]);
}

/**
 * Makes due now the parked work of an organization's agents of one provider: its key was set or
 * replaced, so agents parked for a missing or refused key run again. Input: the organization and
 * the provider name. Output: none; no error of its own.
 */
export async function wakeProviderWork(tx: Queryable, orgId: string, provider: string): Promise<void> {
  await tx.query(
    `UPDATE agent_work w SET due_at = now()
       FROM participants p JOIN teams t ON t.id = p.team_id
      WHERE w.agent_id = p.id AND t.org_id = $1 AND p.provider = $2 AND w.lease_token IS NULL AND w.due_at > now()`,
    [orgId, provider],
  );
}

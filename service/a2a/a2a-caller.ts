/**
 * Who calls an agent over A2A, and whether it may (contract §12, "A2A server"): the caller
 * presents the MCP key of an agent (header `x-api-key`, the scheme the Agent Card declares), and
 * may reach the called agent only when the two share an edge of their team. An edge is the
 * permission, as for the team tools (§11): the task the caller starts lives on that edge, with the
 * caller as its requester and the called agent as its assignee.
 *
 * A caller without an edge to the agent — another team's agent, an agent of the same team on no
 * edge with it, an agent id that does not exist — learns nothing about it: the A2A server answers
 * as for an unknown task (A2A v1.0 §3.3.2, `TaskNotFoundError`), and nothing is written.
 */
import type { Queryable } from '../storage/db.ts';
import type { McpIdentity } from '../domain/authentication.ts';
import type { Caller } from '../domain/caller.ts';
import { isUuid } from '../domain/ids.ts';

/** The calling agent and the agent it calls, with the edge that joins them (null: none; the call is refused). */
export interface A2aCaller {
  /** The caller's MCP key, its agent, team and organization. */
  identity: McpIdentity;
  /** The agent called (the path's `{agent_id}`, lowercased). */
  agentId: string;
  /** The edge between the caller and the called agent, or null when they share none (or the agent is not of the caller's team). */
  edgeId: string | null;
}

/** The domain caller of an A2A call: the caller's organization, as MCP tools act (domain/agent-inbox.ts). */
export function domainCaller(caller: A2aCaller): Caller {
  return { orgId: caller.identity.orgId, keyId: caller.identity.keyId };
}

/**
 * The edge between the agent of `identity` and the agent `agentId` of the same team, if any.
 * Output: its id, or null when `agentId` is no agent of the caller's team (or not a UUID, or the
 * caller itself) or the two share no edge. One indexed query.
 */
export async function edgeBetween(db: Queryable, identity: McpIdentity, agentId: string): Promise<string | null> {
  if (!isUuid(agentId)) return null;
  const rows = await db.query<{ id: string }>(
    `SELECT e.id FROM edges e JOIN participants p ON p.id = $2 AND p.kind = 'agent' AND p.team_id = $3
      WHERE (e.participant_a = $1 AND e.participant_b = $2) OR (e.participant_a = $2 AND e.participant_b = $1)`,
    [identity.agentId, agentId.toLowerCase(), identity.teamId],
  );
  return rows[0]?.id ?? null;
}

/**
 * Resolves an authenticated MCP identity and the path's agent id to an {@link A2aCaller}
 * (`edgeId` null when the call must be refused as for an unknown task).
 */
export async function resolveA2aCaller(db: Queryable, identity: McpIdentity, agentId: string): Promise<A2aCaller> {
  return { identity, agentId: agentId.toLowerCase(), edgeId: await edgeBetween(db, identity, agentId) };
}

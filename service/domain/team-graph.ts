import type { TeamGraph } from '../../api/schemas.ts';
import type { Caller, DomainDeps } from './caller.ts';
import { listEdgesOfTeam } from './edges.ts';
import { listAgentsOfTeam, listHumansOfTeam } from './participants.ts';
import { getTeam } from './teams.ts';

// The whole graph of a team sits above teams.ts: participants and edges look their team up
// through teams.ts, so teams.ts cannot list them in turn.

/**
 * Returns the team with its graph: agents, humans, edges and `active_thread_count` (every
 * thread is active in v1, contract §4). Errors: `not_found`.
 */
export async function getTeamGraph(deps: DomainDeps, caller: Caller, teamId: string): Promise<TeamGraph> {
  const team = await getTeam(deps.db, caller, teamId);
  const [agents, humans, edges, threads] = await Promise.all([
    listAgentsOfTeam(deps.db, teamId),
    listHumansOfTeam(deps.db, teamId),
    listEdgesOfTeam(deps.db, teamId),
    deps.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM threads WHERE team_id = $1`, [teamId]),
  ]);
  return { ...team, agents, humans, edges, active_thread_count: threads[0]?.n ?? 0 };
}

/** Names of a team's participants, for showing ids as names and finding ids by name. */
import type { TeamGraph } from '../api/schemas.ts';

/** The team's participants by id: agent and human names. Input: a team graph. Raises nothing. */
export function participantNames(team: Pick<TeamGraph, 'agents' | 'humans'>): Map<string, string> {
  return new Map<string, string>([...team.agents.map((a) => [a.agent_id, a.name] as const), ...team.humans.map((h) => [h.human_id, h.name] as const)]);
}

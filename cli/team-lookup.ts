/** Finding teams and participants by name, for the commands that take names. */
import type { Agent, TeamGraph } from '../api/schemas.ts';
import type { AcsClient } from '../client/acs-client.ts';
import { suggestion } from '../definitions/did-you-mean.ts';
import { ToolkitError } from '../errors/catalogue.ts';

/** Finds a team by name among the organizations the key reaches (optionally one organization). */
export async function findTeam(client: AcsClient, teamName: string, orgName?: string): Promise<TeamGraph> {
  const orgs = (await client.listOrganizations()).filter((o) => !orgName || o.org_name === orgName);
  if (orgName && orgs.length === 0) throw new ToolkitError('invalid_usage', `no organization named "${orgName}" is reachable with this key`);
  const matches = [];
  const names: string[] = [];
  for (const org of orgs) {
    for (const team of await client.listTeams(org.org_id)) {
      names.push(team.team_name);
      if (team.team_name === teamName) matches.push({ org, team });
    }
  }
  if (matches.length === 0) throw new ToolkitError('invalid_usage', `no team named "${teamName}"${orgName ? ` in ${orgName}` : ''}${suggestion(teamName, [...new Set(names)])}`);
  if (matches.length > 1) throw new ToolkitError('invalid_usage', `team "${teamName}" exists in several organizations (${matches.map((m) => m.org.org_name).join(', ')}); pass --org`);
  return client.getTeam(matches[0]!.team.team_id);
}

/** The id of a participant (agent or human) of the team by name. Raises `invalid_usage` when absent. */
export function participantId(team: TeamGraph, name: string): string {
  const agent = team.agents.find((a) => a.name === name);
  const human = team.humans.find((h) => h.name === name);
  const id = agent?.agent_id ?? human?.human_id;
  if (!id) throw new ToolkitError('invalid_usage', `team ${team.team_name} has no participant named "${name}"`);
  return id;
}

export { participantNames } from '../client/team-names.ts';

/**
 * The agent of the team named `name` (agents only: MCP keys belong to agents). Raises
 * `invalid_usage` when there is none, with a did-you-mean among the team's agents, or saying so
 * when `name` is a human of the team.
 */
export function findAgent(team: TeamGraph, name: string): Agent {
  const agent = team.agents.find((a) => a.name === name);
  if (agent) return agent;
  if (team.humans.some((h) => h.name === name)) throw new ToolkitError('invalid_usage', `"${name}" is a human of team ${team.team_name}, not an agent; MCP keys are for agents`);
  throw new ToolkitError('invalid_usage', `team ${team.team_name} has no agent named "${name}"${suggestion(name, team.agents.map((a) => a.name))}`);
}

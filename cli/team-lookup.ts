/**
 * Finding organizations, teams and participants by name, for every command that takes names
 * (`--team`, `--from`, `--to`, `--between`, `--org`, …). A name that is not there is
 * `name_not_found`, with the closest existing name as a did-you-mean (`--to trigaer` → did you
 * mean "triager"?), or the names there are when none is close. A new command that takes such a
 * name looks it up here, or reports a miss through {@link unknownName}.
 */
import type { Agent, Organization, TeamGraph } from '../api/schemas.ts';
import type { AcsClient } from '../client/acs-client.ts';
import { closestMatch } from '../definitions/did-you-mean.ts';
import { ToolkitError } from '../errors/catalogue.ts';
import { participantNames } from '../client/team-names.ts';

/** Longest list of existing names quoted in a message. */
const MAX_LISTED = 10;

/**
 * The error for a name that is not among `known`: `no team named "x" in acme (did you mean
 * "y"?)`, or `(its teams: a, b, c)` when nothing is close, or `(there are none)`.
 * Input: what was looked for (`team`, `participant`, `organization`), the name, the existing
 * names, where it was looked (`in team intake`, or empty), and the noun of the list
 * (`its participants`). Output: a `name_not_found` {@link ToolkitError} to throw.
 */
export function unknownName(kind: string, name: string, known: readonly string[], where: string, listNoun: string): ToolkitError {
  const place = where ? ` ${where}` : '';
  const match = closestMatch(name, known);
  let detail: string;
  if (match !== undefined) detail = `did you mean ${JSON.stringify(match)}?`;
  else if (known.length === 0) detail = 'there are none';
  else detail = `${listNoun}: ${known.slice(0, MAX_LISTED).join(', ')}${known.length > MAX_LISTED ? `, … (${known.length} in all)` : ''}`;
  return new ToolkitError('name_not_found', `no ${kind} named ${JSON.stringify(name)}${place} (${detail})`);
}

/**
 * The organizations the key reaches, or only the one named `orgName`.
 * Errors: `name_not_found` (with did-you-mean) when `orgName` is not among them.
 */
export async function findOrganizations(client: AcsClient, orgName?: string): Promise<Organization[]> {
  const all = await client.listOrganizations();
  if (!orgName) return all;
  const org = all.filter((o) => o.org_name === orgName);
  if (org.length === 0) throw unknownName('organization', orgName, all.map((o) => o.org_name), 'reachable with this key', 'the organizations it reaches');
  return org;
}

/**
 * Finds a team by name among the organizations the key reaches (optionally one organization).
 * Output: its graph (participants and edges). Errors: `name_not_found` for an unknown team or
 * organization (did-you-mean across every team name seen); `invalid_usage` when the name is
 * in several organizations and no `--org` was given.
 */
export async function findTeam(client: AcsClient, teamName: string, orgName?: string): Promise<TeamGraph> {
  const orgs = await findOrganizations(client, orgName);
  const matches = [];
  const names = new Set<string>();
  for (const org of orgs) {
    for (const team of await client.listTeams(org.org_id)) {
      names.add(team.team_name);
      if (team.team_name === teamName) matches.push({ org, team });
    }
  }
  if (matches.length === 0) throw unknownName('team', teamName, [...names], orgName ? `in ${orgName}` : '', orgName ? 'its teams' : 'the teams this key reaches');
  if (matches.length > 1) throw new ToolkitError('invalid_usage', `team "${teamName}" exists in several organizations (${matches.map((m) => m.org.org_name).join(', ')}); pass --org`);
  return client.getTeam(matches[0]!.team.team_id);
}

/**
 * The id of a participant (agent or human) of the team by name.
 * Errors: `name_not_found` naming the team, with did-you-mean among its participants.
 */
export function participantId(team: TeamGraph, name: string): string {
  const agent = team.agents.find((a) => a.name === name);
  const human = team.humans.find((h) => h.name === name);
  const id = agent?.agent_id ?? human?.human_id;
  if (!id) throw unknownName('participant', name, [...participantNames(team).values()], `in team ${team.team_name}`, 'its participants');
  return id;
}

export { participantNames };

/** The other teams of an organization looked into for a name missing from its team (a miss costs one request per team). */
const MAX_TEAMS_LOOKED_INTO = 50;

/** Where a name missing from a team is in its organization: the teams that have a participant of that name, and what it is there. */
interface FoundElsewhere {
  team: string;
  kind: 'agent' | 'human';
}

/**
 * The other teams of `team`'s organization that have a participant named `name` (of `kinds`),
 * reading at most {@link MAX_TEAMS_LOOKED_INTO} of them. Raises nothing: a read that fails finds nothing.
 */
async function foundElsewhere(client: AcsClient, team: TeamGraph, name: string, kinds: ReadonlyArray<'agent' | 'human'>): Promise<FoundElsewhere[]> {
  try {
    const others = (await client.listTeams(team.org_id)).filter((t) => t.team_id !== team.team_id).slice(0, MAX_TEAMS_LOOKED_INTO);
    const found: FoundElsewhere[] = [];
    for (const other of others) {
      const graph = await client.getTeam(other.team_id);
      if (kinds.includes('agent') && graph.agents.some((a) => a.name === name)) found.push({ team: graph.team_name, kind: 'agent' });
      if (kinds.includes('human') && graph.humans.some((h) => h.name === name)) found.push({ team: graph.team_name, kind: 'human' });
    }
    return found;
  } catch {
    return [];
  }
}

/** How a name missing from a team was asked for: the noun of the message, the kinds that would do, and how its team was chosen. */
export interface LookupOptions {
  /** `participant`, `agent` or `human`. */
  noun: 'participant' | 'agent' | 'human';
  /** The team came from `--team` (the hint names the flag), or from a thread (`thread send`). */
  teamFrom: 'flag' | 'thread';
}

/**
 * Runs a lookup by name in `team` (`find`: {@link participantId}, {@link findAgent}, …); when it
 * misses (`name_not_found`) and the name is a participant of another team of the organization,
 * the error names that team instead of a did-you-mean — `no participant named "scout" in team
 * ops (scout is an agent of team research)` — with the hint `pass --team research` (or, for a
 * thread's team, that the thread is in team ops). Output: what `find` returns. Errors: `find`'s,
 * the `name_not_found` reworded as above.
 */
export async function lookUpIn<T>(client: AcsClient, team: TeamGraph, name: string, find: () => T, options: LookupOptions): Promise<T> {
  try {
    return find();
  } catch (error) {
    if (!(error instanceof ToolkitError) || error.code !== 'name_not_found') throw error;
    const kinds = options.noun === 'participant' ? (['agent', 'human'] as const) : ([options.noun] as const);
    const found = await foundElsewhere(client, team, name, kinds);
    if (found.length === 0) throw error;
    const where = found.map((f) => `${f.kind === 'agent' ? 'an agent' : 'a human'} of team ${f.team}`).join(', and ');
    const teams = [...new Set(found.map((f) => f.team))];
    const hint =
      options.teamFrom === 'flag'
        ? `pass --team ${teams[0]}${teams.length > 1 ? ` (or --team ${teams.slice(1).join(', --team ')})` : ''}; a team's participants are its own`
        : `the thread is in team ${team.team_name}: its participants are the two of its edge there`;
    throw new ToolkitError('name_not_found', `no ${options.noun} named ${JSON.stringify(name)} in team ${team.team_name} (${name} is ${where})`, { hint });
  }
}

/**
 * {@link findAgent} for a name given with `--agent` and the team with `--team`: a name that is an
 * agent of another team of the organization is named there (see {@link lookUpIn}). Errors: as
 * {@link findAgent}'s.
 */
export function agentIn(client: AcsClient, team: TeamGraph, name: string): Promise<Agent> {
  return lookUpIn(client, team, name, () => findAgent(team, name), { noun: 'agent', teamFrom: 'flag' });
}

/**
 * The agent of the team named `name` (agents only: MCP keys belong to agents). Raises
 * `name_not_found` when there is none, with a did-you-mean among the team's agents, or
 * `invalid_usage` when `name` is a human of the team.
 */
export function findAgent(team: TeamGraph, name: string): Agent {
  const agent = team.agents.find((a) => a.name === name);
  if (agent) return agent;
  if (team.humans.some((h) => h.name === name)) throw new ToolkitError('invalid_usage', `"${name}" is a human of team ${team.team_name}, not an agent; MCP keys are for agents`);
  throw unknownName('agent', name, team.agents.map((a) => a.name), `in team ${team.team_name}`, 'its agents');
}

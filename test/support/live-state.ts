/** The live state of one organization, by names only (ids differ between runs), for comparisons. */
import { expect } from 'vitest';
import type { AcsClient } from '../../client/acs-client.ts';
import { participantNames } from '../../client/team-names.ts';

/** A comparable picture of an organization: teams with agents, humans and edges by name, and provider keys by hint. */
export async function snapshot(client: AcsClient, orgName: string) {
  const orgs = (await client.listOrganizations()).filter((o) => o.org_name === orgName);
  expect(orgs, `organizations named ${orgName}`).toHaveLength(1);
  const org = orgs[0]!;
  const teams = [];
  for (const team of await client.listTeams(org.org_id)) {
    const graph = await client.getTeam(team.team_id);
    const names = participantNames(graph);
    teams.push({
      name: graph.team_name,
      description: graph.description,
      agents: graph.agents.map(({ name, provider, model, description, instructions, status }) => ({ name, provider, model, description, instructions, status })).sort((a, b) => a.name.localeCompare(b.name)),
      humans: graph.humans.map(({ name, email }) => ({ name, email })).sort((a, b) => a.name.localeCompare(b.name)),
      edges: graph.edges.map((e) => e.participants.map((p) => names.get(p)).sort().join('<->')).sort(),
    });
  }
  teams.sort((a, b) => a.name.localeCompare(b.name));
  const providerKeys = (await client.listProviderKeys(org.org_id)).map((k) => `${k.provider}:${k.key_hint}`);
  return { org: org.org_name, teams, providerKeys };
}

/** {@link snapshot} with the organization's name left out, to compare two organizations. */
export async function shape(client: AcsClient, orgName: string) {
  const { org: _org, ...rest } = await snapshot(client, orgName);
  return rest;
}

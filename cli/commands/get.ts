/**
 * `teamctl get organizations|teams|agents|humans|edges|threads [--org O] [--team T] [-o
 * table|json|yaml]`: the live state, by name. A new kind is one {@link GetResource} and one
 * `addGetResource` line in {@link registerGet}.
 */
import type { Command } from 'commander';
import type { Agent, Edge, Human, Organization, Team, TeamGraph, Thread } from '../../api/schemas.ts';
import type { AcsClient } from '../../client/acs-client.ts';
import { participantNames } from '../../client/team-names.ts';
import type { CliIo } from '../io.ts';
import { findOrganizations, unknownName } from '../team-lookup.ts';
import { addGetResource } from './get-resource.ts';
import type { GetFilter, GetResource } from './get-resource.ts';
import type { Runner } from './runner.ts';

/** Names of what holds a row, added to the service's record. */
interface Held {
  org_name: string;
  team_name: string;
}

/** The organizations the key reaches, narrowed to `--org`. Errors: `name_not_found` (did-you-mean) for an `--org` it does not reach. */
async function organizations(client: AcsClient, filter: GetFilter): Promise<Organization[]> {
  return findOrganizations(client, filter.org);
}

/** The teams of those organizations, narrowed to `--team`. Errors: `name_not_found` (did-you-mean) for a `--team` that matches none. */
async function teams(client: AcsClient, filter: GetFilter): Promise<Array<Team & { org_name: string }>> {
  const rows = [];
  const names = new Set<string>();
  for (const org of await organizations(client, filter)) {
    for (const team of await client.listTeams(org.org_id)) {
      names.add(team.team_name);
      if (filter.team === undefined || team.team_name === filter.team) rows.push({ ...team, org_name: org.org_name });
    }
  }
  if (filter.team !== undefined && rows.length === 0) {
    throw unknownName('team', filter.team, [...names], filter.org ? `in ${filter.org}` : '', filter.org ? 'its teams' : 'the teams this key reaches');
  }
  return rows;
}

/** Those teams with their graphs. */
async function graphs(client: AcsClient, filter: GetFilter): Promise<Array<{ graph: TeamGraph; held: Held }>> {
  const rows = [];
  for (const team of await teams(client, filter)) rows.push({ graph: await client.getTeam(team.team_id), held: { org_name: team.org_name, team_name: team.team_name } });
  return rows;
}

const orgColumn = { header: 'ORG', cell: (r: { org_name: string }) => r.org_name, dropWhenUniform: true };
const teamColumn = { header: 'TEAM', cell: (r: { team_name: string }) => r.team_name };
const idColumn = <R>(cell: (r: R) => string) => ({ header: 'ID', cell });
const protectedCell = (r: { deletion_protection: boolean }) => (r.deletion_protection ? 'yes' : 'no');
const text = (value: string | null, max = 40) => (value === null ? '-' : value.length > max ? `${value.slice(0, max - 1)}…` : value);

const organizationsResource: GetResource<Organization> = {
  name: 'organizations',
  aliases: ['organization', 'orgs', 'org'],
  description: 'List the organizations the key reaches: teams, humans (of its teams, and its creator), deletion protection, id.',
  read: organizations,
  columns: [
    { header: 'NAME', cell: (o) => o.org_name },
    { header: 'TEAMS', cell: (o) => String(o.team_count) },
    // The service's human_count counts the organization's creator too (contract §4): said so.
    { header: 'HUMANS', cell: (o) => (o.human_count >= 1 ? `${o.human_count - 1} + creator` : String(o.human_count)) },
    { header: 'PROTECTED', cell: (o) => protectedCell(o) },
    { header: 'CREATED', cell: (o) => o.created_at },
    idColumn((o) => o.org_id),
  ],
  note: 'HUMANS: the humans of the organization\'s teams, + creator: the person who created the organization, whom the service counts among its humans too (human_count in -o json is one more).',
};

const teamsResource: GetResource<Team & { org_name: string }> = {
  name: 'teams',
  aliases: ['team'],
  description: 'List teams: agents, edges, description, deletion protection, id.',
  read: teams,
  columns: [
    orgColumn,
    { header: 'NAME', cell: (t) => t.team_name },
    { header: 'AGENTS', cell: (t) => String(t.agent_count) },
    { header: 'EDGES', cell: (t) => String(t.edge_count) },
    { header: 'DESCRIPTION', cell: (t) => text(t.description) },
    { header: 'PROTECTED', cell: (t) => protectedCell(t) },
    idColumn((t) => t.team_id),
  ],
};

/**
 * An agent as `get agents` lists it: with `waiting_for_key`, the provider whose key its
 * organization lacks (an agent with a provider and no key for it never answers: the agent loop
 * waits for the key), else null.
 */
type ListedAgent = Agent & Held & { waiting_for_key: string | null };

const agentsResource: GetResource<ListedAgent> = {
  name: 'agents',
  aliases: ['agent'],
  description: 'List agents: provider, model, status (and whether it waits for its provider\'s key), id.',
  read: async (client, filter) => {
    const rows: ListedAgent[] = [];
    // The providers each organization has a key for, read once per organization.
    const keyed = new Map<string, Promise<Set<string>>>();
    for (const { graph, held } of await graphs(client, filter)) {
      if (!keyed.has(graph.org_id)) keyed.set(graph.org_id, client.listProviderKeys(graph.org_id).then((keys) => new Set(keys.map((k) => k.provider))));
      const providers = await keyed.get(graph.org_id)!;
      for (const a of graph.agents) rows.push({ ...a, ...held, waiting_for_key: a.provider !== null && !providers.has(a.provider) ? a.provider : null });
    }
    return rows;
  },
  columns: [
    orgColumn,
    teamColumn,
    { header: 'NAME', cell: (a) => a.name },
    { header: 'PROVIDER', cell: (a) => a.provider ?? '- (external)' },
    { header: 'MODEL', cell: (a) => text(a.model) },
    { header: 'STATUS', cell: (a) => (a.waiting_for_key ? `${a.status}, waiting for ${/^[aeiou]/.test(a.waiting_for_key) ? 'an' : 'a'} ${a.waiting_for_key} key` : a.status) },
    idColumn((a) => a.agent_id),
  ],
};

const humansResource: GetResource<Human & Held> = {
  name: 'humans',
  aliases: ['human'],
  description: 'List humans: email, id.',
  read: async (client, filter) => (await graphs(client, filter)).flatMap(({ graph, held }) => graph.humans.map((h) => ({ ...h, ...held }))),
  columns: [orgColumn, teamColumn, { header: 'NAME', cell: (h) => h.name }, { header: 'EMAIL', cell: (h) => text(h.email) }, idColumn((h) => h.human_id)],
};

/** An edge or thread with its two participants by name. */
type Between = Held & { participant_names: [string, string] };

const edgesResource: GetResource<Edge & Between> = {
  name: 'edges',
  aliases: ['edge'],
  description: 'List edges: the two participants by name, id.',
  read: async (client, filter) =>
    (await graphs(client, filter)).flatMap(({ graph, held }) => {
      const names = participantNames(graph);
      return graph.edges.map((e) => ({ ...e, ...held, participant_names: [names.get(e.participants[0]) ?? '?', names.get(e.participants[1]) ?? '?'] as [string, string] }));
    }),
  columns: [orgColumn, teamColumn, { header: 'BETWEEN', cell: (e) => e.participant_names.join(',') }, idColumn((e) => e.edge_id)],
};

const threadsResource: GetResource<Thread & Between> = {
  name: 'threads',
  aliases: ['thread'],
  description: 'List threads, newest first per edge: between whom, subject, messages, id.',
  read: async (client, filter) => {
    const rows = [];
    for (const { graph, held } of await graphs(client, filter)) {
      const names = participantNames(graph);
      for (const edge of graph.edges) {
        const between: [string, string] = [names.get(edge.participants[0]) ?? '?', names.get(edge.participants[1]) ?? '?'];
        for (const thread of await client.listThreads(edge.edge_id)) rows.push({ ...thread, ...held, participant_names: between });
      }
    }
    return rows;
  },
  columns: [
    orgColumn,
    teamColumn,
    { header: 'BETWEEN', cell: (t) => t.participant_names.join(',') },
    { header: 'SUBJECT', cell: (t) => text(t.subject || '-') },
    { header: 'MESSAGES', cell: (t) => String(t.message_count) },
    { header: 'CREATED', cell: (t) => t.created_at },
    idColumn((t) => t.thread_id),
  ],
};

/**
 * Registers `teamctl get` and its resources; returns the `get` command. Each resource is one
 * `addGetResource` call (`get-resource.ts`).
 */
export function registerGet(program: Command, io: CliIo, run: Runner): Command {
  const get = program.command('get').description('Read the live state by name: organizations, teams, agents, humans, edges, threads (-o table|json|yaml), and the usage of provider agents.');
  addGetResource(get, organizationsResource, io, run);
  addGetResource(get, teamsResource, io, run);
  addGetResource(get, agentsResource, io, run);
  addGetResource(get, humansResource, io, run);
  addGetResource(get, edgesResource, io, run);
  addGetResource(get, threadsResource, io, run);
  return get;
}

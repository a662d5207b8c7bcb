/**
 * The plan: a pure function of the desired and observed states, with no I/O.
 *
 * It runs inside Temporal workflows, so it must stay deterministic and free of Node imports.
 */
import type { Agent, Edge, Human } from '../api/schemas.ts';
import { edgeAddress, ORGANIZATION_ADDRESS, participantAddress, providerKeyAddress, teamAddress } from './addresses.ts';
import { SENSITIVE } from './types.ts';
import type { Change, Desired, DesiredState, DesiredTeam, FieldDiff, ObservedState, ObservedTeam, Plan } from './types.ts';

export { SENSITIVE } from './types.ts';

/** The name of an edge in plans and logs: its two participant names. */
export function edgeName(pair: readonly [string, string]): string {
  return `${pair[0]}<->${pair[1]}`;
}

/** The fields of `desired` whose values differ from `live`; empty when in sync. */
export function diffFields(live: object, desired: object): Record<string, FieldDiff> {
  const diff: Record<string, FieldDiff> = {};
  for (const [key, to] of Object.entries(desired)) {
    const from = (live as Record<string, unknown>)[key];
    if (to !== undefined && from !== to) diff[key] = { from, to };
  }
  return diff;
}

/** The fields of `desired` that `diff` names: the PATCH body that brings a live resource in line. */
export function patchOf<T extends object>(desired: T, diff: Record<string, FieldDiff>): Partial<T> {
  // Entries of `desired` itself, filtered: each keeps its key's type, which Object.entries forgets.
  return Object.fromEntries(Object.entries(desired).filter(([key]) => Object.hasOwn(diff, key))) as Partial<T>;
}

/** Whether two edges join the same unordered pair. */
function samePair(a: readonly [string, string], b: readonly [string, string]): boolean {
  return (a[0] === b[0] && a[1] === b[1]) || (a[0] === b[1] && a[1] === b[0]);
}

/**
 * Computes the changes that make `observed` match `desired`, in dependency order: the
 * organization, its provider keys, each team, then its participants, then its edges.
 * Resources in sync produce no change.
 */
export function computePlan(desired: DesiredState, observed: ObservedState): Plan {
  const changes: Change[] = [];
  const org = desired.organization;
  if (!observed.organization) {
    changes.push({ action: 'create', kind: 'organization', name: org.name, address: ORGANIZATION_ADDRESS, fields: org.fields });
  }
  for (const { provider, secretRef } of org.providerKeys) {
    const live = observed.providerKeys.find((k) => k.provider === provider);
    const base = { kind: 'provider_key', name: provider, address: providerKeyAddress(provider), fields: { api_key: SENSITIVE }, secretRef } as const;
    if (!live) changes.push({ action: 'create', ...base });
    else if (live.matchesDesired === false) changes.push({ action: 'update', ...base, id: provider, diff: { api_key: { from: SENSITIVE, to: SENSITIVE } } });
  }
  for (const team of desired.teams) {
    const live = observed.teams.find((t) => t.team.team_name === team.name);
    changes.push(...planTeam(team, live));
  }
  return { changes };
}

function planTeam(team: DesiredTeam, live: ObservedTeam | undefined): Change[] {
  const changes: Change[] = [];
  const address = teamAddress(team.name);
  if (!live) changes.push({ action: 'create', kind: 'team', name: team.name, address, fields: team.fields });
  else {
    const diff = diffFields(live.team, team.fields);
    if (Object.keys(diff).length > 0) changes.push({ action: 'update', kind: 'team', name: team.name, address, id: live.team.team_id, fields: patchOf(team.fields, diff), diff });
  }
  const inTeam = { team: team.name };
  for (const agent of team.agents) {
    const at = { ...inTeam, name: agent.name, address: participantAddress(team.name, 'agent', agent.name) };
    const existing = live?.agents.find((a) => a.name === agent.name);
    if (!existing) changes.push({ action: 'create', kind: 'agent', ...at, fields: agent.fields });
    else {
      const diff = update(existing, agent);
      if (diff) changes.push({ action: 'update', kind: 'agent', ...at, id: existing.agent_id, fields: patchOf(agent.fields, diff), diff });
    }
  }
  for (const human of team.humans) {
    const at = { ...inTeam, name: human.name, address: participantAddress(team.name, 'human', human.name) };
    const existing = live?.humans.find((h) => h.name === human.name);
    if (!existing) changes.push({ action: 'create', kind: 'human', ...at, fields: human.fields });
    else {
      const diff = update(existing, human);
      if (diff) changes.push({ action: 'update', kind: 'human', ...at, id: existing.human_id, fields: patchOf(human.fields, diff), diff });
    }
  }
  const liveEdges = (live?.edges ?? []).map((e) => edgeNames(live, e));
  for (const pair of team.edges) {
    if (liveEdges.some((e) => samePair(e, pair))) continue;
    const participants: [string, string] = [pair[0], pair[1]];
    changes.push({ action: 'create', kind: 'edge', ...inTeam, name: edgeName(pair), address: edgeAddress(team.name, pair), fields: { participants } });
  }
  return changes;
}

/** The diff of a live participant against the desired one, or undefined when in sync. */
function update(live: Agent | Human, desired: Desired<object>): Record<string, FieldDiff> | undefined {
  const diff = diffFields(live, desired.fields);
  return Object.keys(diff).length > 0 ? diff : undefined;
}

/** A live edge's participants by name ('' for an id the team does not hold). */
function edgeNames(live: ObservedTeam | undefined, edge: Edge): [string, string] {
  const name = (id: string) => live?.agents.find((a) => a.agent_id === id)?.name ?? live?.humans.find((h) => h.human_id === id)?.name ?? '';
  return [name(edge.participants[0]), name(edge.participants[1])];
}

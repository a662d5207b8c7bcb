/**
 * The plan: a pure function of the desired and observed states, with no I/O.
 *
 * It runs inside Temporal workflows, so it must stay deterministic and free of Node imports.
 */
import type { Agent, Human, Team } from '../api/schemas.ts';
import type { Change, DesiredAgent, DesiredHuman, DesiredState, DesiredTeam, FieldDiff, ObservedState, ObservedTeam, Plan } from './types.ts';

/** The value shown in place of a secret. */
export const SENSITIVE = '(sensitive)';

/** The name of an edge in plans and logs: its two participant names. */
export function edgeName(pair: readonly [string, string]): string {
  return `${pair[0]}<->${pair[1]}`;
}

/** The fields the service should hold for a desired team (omitted description is `""`). */
export function teamFields(team: DesiredTeam): { team_name: string; description: string } {
  return { team_name: team.name, description: team.description ?? '' };
}

/**
 * The fields the service should hold for a desired agent; `status` and `max_tokens_per_day` only
 * when the definition sets them (so a definition without a budget plans the same against a
 * service that has no budgets, and running apply workflows replay as before).
 */
export function agentFields(agent: DesiredAgent): {
  name: string;
  description: string;
  provider: DesiredAgent['provider'];
  model: string | null;
  instructions: string;
  max_tokens_per_day?: number | null;
  status?: DesiredAgent['status'];
} {
  return {
    name: agent.name,
    description: agent.description ?? '',
    provider: agent.provider ?? null,
    model: agent.model ?? null,
    instructions: agent.instructions ?? '',
    ...(agent.maxTokensPerDay !== undefined ? { max_tokens_per_day: agent.maxTokensPerDay } : {}),
    ...(agent.status ? { status: agent.status } : {}),
  };
}

/** The fields the service should hold for a desired human. */
export function humanFields(human: DesiredHuman): { name: string; email: string | null } {
  return { name: human.name, email: human.email ?? null };
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

/** The desired value of each differing field, as a PATCH body. */
export function patchOf(diff: Record<string, FieldDiff>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(diff).map(([key, d]) => [key, d.to]));
}

/** Whether two edges join the same unordered pair. */
function samePair(a: readonly [string, string], b: readonly [string, string]): boolean {
  return (a[0] === b[0] && a[1] === b[1]) || (a[0] === b[1] && a[1] === b[0]);
}

/**
 * Computes the changes that make `observed` match `desired`, in dependency order: the
 * organization, its provider keys, each team, then its participants, then its edges.
 * Resources in sync produce no change; nothing is ever deleted.
 */
export function computePlan(desired: DesiredState, observed: ObservedState): Plan {
  const changes: Change[] = [];
  const org = desired.organization;
  if (!observed.organization) {
    changes.push({ action: 'create', kind: 'organization', name: org.name, fields: { org_name: org.name } });
  }
  for (const provider of Object.keys(org.providerKeys ?? {}).sort()) {
    const live = observed.providerKeys.find((k) => k.provider === provider);
    if (!live) {
      changes.push({ action: 'create', kind: 'provider_key', name: provider, fields: { api_key: SENSITIVE } });
    } else if (live.matchesDesired === false) {
      changes.push({
        action: 'update',
        kind: 'provider_key',
        name: provider,
        fields: { api_key: SENSITIVE },
        diff: { api_key: { from: SENSITIVE, to: SENSITIVE } },
      });
    }
  }
  for (const team of desired.teams) {
    const live = observed.teams.find((t) => t.team.team_name === team.name);
    changes.push(...planTeam(team, live));
  }
  return { changes };
}

function planTeam(team: DesiredTeam, live: ObservedTeam | undefined): Change[] {
  const changes: Change[] = [];
  const fields = teamFields(team);
  if (!live) {
    changes.push({ action: 'create', kind: 'team', name: team.name, fields });
  } else {
    changes.push(...updateChange('team', team.name, undefined, live.team.team_id, live.team as Team, fields));
  }
  const liveAgents = new Map((live?.agents ?? []).map((a) => [a.name, a]));
  const liveHumans = new Map((live?.humans ?? []).map((h) => [h.name, h]));
  for (const agent of team.agents) {
    const fieldsOf = agentFields(agent);
    const existing = liveAgents.get(agent.name);
    if (!existing) changes.push({ action: 'create', kind: 'agent', name: agent.name, team: team.name, fields: fieldsOf });
    else changes.push(...updateChange('agent', agent.name, team.name, existing.agent_id, existing as Agent, fieldsOf));
  }
  for (const human of team.humans) {
    const fieldsOf = humanFields(human);
    const existing = liveHumans.get(human.name);
    if (!existing) changes.push({ action: 'create', kind: 'human', name: human.name, team: team.name, fields: fieldsOf });
    else changes.push(...updateChange('human', human.name, team.name, existing.human_id, existing as Human, fieldsOf));
  }
  const nameOf = new Map<string, string>();
  for (const a of live?.agents ?? []) nameOf.set(a.agent_id, a.name);
  for (const h of live?.humans ?? []) nameOf.set(h.human_id, h.name);
  const liveEdges = (live?.edges ?? []).map((e) => [nameOf.get(e.participants[0]) ?? '', nameOf.get(e.participants[1]) ?? ''] as const);
  for (const pair of team.edges) {
    if (liveEdges.some((e) => samePair(e, pair))) continue;
    changes.push({ action: 'create', kind: 'edge', name: edgeName(pair), team: team.name, fields: { participants: [pair[0], pair[1]] } });
  }
  return changes;
}

function updateChange(
  kind: Change['kind'],
  name: string,
  team: string | undefined,
  id: string,
  live: object,
  desired: object,
): Change[] {
  const diff = diffFields(live, desired);
  if (Object.keys(diff).length === 0) return [];
  return [{ action: 'update', kind, name, ...(team ? { team } : {}), id, fields: patchOf(diff), diff }];
}

/**
 * The plan: a pure function of the desired and observed states, with no I/O.
 *
 * The definition owns its organization, as a Terraform configuration owns its state: what the
 * organization holds and the definition does not name is deleted — teams, agents, humans, edges,
 * provider keys and webhooks (schedules: `plan/schedules.ts`). A resource with `renamedFrom` is matched to
 * the live one of its old name and renamed (an update: its id and threads are kept).
 *
 * It runs inside Temporal workflows, so it must stay deterministic and free of Node imports.
 */
import type { Edge, Human } from '../api/schemas.ts';
import { hideHeaders, toolsDiff } from './agent-tools.ts';
import { A2A_HEADERS, a2aDiff } from './remote-a2a.ts';
import { edgeAddress, ORGANIZATION_ADDRESS, participantAddress, providerKeyAddress, teamAddress, webhookAddress } from './addresses.ts';
import { SENSITIVE } from './types.ts';
import type {
  AgentWire,
  Change,
  DeleteChange,
  Desired,
  DesiredState,
  DesiredTeam,
  DesiredWebhook,
  FieldDiff,
  ObservedAgent,
  ObservedState,
  ObservedTeam,
  ObservedWebhook,
  Plan,
} from './types.ts';

export { SENSITIVE } from './types.ts';

/** The name of an edge in plans and logs: its two participant names. */
export function edgeName(pair: readonly [string, string]): string {
  return `${pair[0]}<->${pair[1]}`;
}

/**
 * Whether a live value is the desired one: scalars by identity, lists (a webhook's `events`) by
 * their members in any order, as the service treats them.
 */
function sameValue(live: unknown, desired: unknown): boolean {
  if (Array.isArray(live) && Array.isArray(desired)) {
    const members = new Set(live.map((v) => JSON.stringify(v)));
    return live.length === desired.length && desired.every((v) => members.has(JSON.stringify(v)));
  }
  return live === desired;
}

/** The fields of `desired` whose values differ from `live`; empty when in sync. */
export function diffFields(live: object, desired: object): Record<string, FieldDiff> {
  const diff: Record<string, FieldDiff> = {};
  for (const [key, to] of Object.entries(desired)) {
    const from = (live as Record<string, unknown>)[key];
    if (to !== undefined && !sameValue(from, to)) diff[key] = { from, to };
  }
  return diff;
}

/**
 * The fields of an agent that differ from the live one: its scalar fields as {@link diffFields}
 * compares them, and `tools` as `agent-tools.ts` does (servers by name, lists as sets, header
 * values by the live agent's `headerMatches`), and `a2a` as `remote-a2a.ts` does (URL, header
 * names, header values by `headerMatches`). A desired agent without `tools` or `a2a` (a state
 * recorded before they were managed) leaves the live ones out of the comparison. Raises nothing.
 */
export function agentDiff(live: ObservedAgent, desired: Partial<AgentWire>): Record<string, FieldDiff> {
  const { tools, a2a, ...fields } = desired;
  const diff = diffFields(live, fields);
  if (tools !== undefined) {
    const drift = toolsDiff(live.tools, tools, live.headerMatches);
    if (drift) diff['tools'] = drift;
  }
  if (a2a !== undefined) {
    const drift = a2aDiff(live.a2a, a2a, live.headerMatches?.[A2A_HEADERS]);
    if (drift) diff['a2a'] = drift;
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

/** A desired resource and the live one it is matched to (by name, else by `renamedFrom`). */
export interface Matched<D, L> {
  desired: D;
  live: L | undefined;
}

/** A desired team with its live team and its participants matched. */
export interface TeamMatch extends Matched<DesiredTeam, ObservedTeam> {
  agents: Array<Matched<DesiredTeam['agents'][number], ObservedAgent>>;
  humans: Array<Matched<DesiredTeam['humans'][number], Human>>;
}

/** How a definition's resources map onto the live ones. */
export interface Matching {
  teams: TeamMatch[];
  /** Live teams the definition does not name. */
  unmatchedTeams: ObservedTeam[];
}

/**
 * Matches desired resources to live ones: by name first, else by `renamedFrom` when a live one of
 * that name is left (a stale `renamedFrom`, naming nothing left, is harmless). Each live resource
 * matches at most one desired one, of the same kind.
 */
function matchAll<D extends { name: string; renamedFrom?: string | undefined }, L>(desired: readonly D[], live: readonly L[], nameOf: (l: L) => string): Array<Matched<D, L>> {
  const byName = new Map(live.map((l) => [nameOf(l), l]));
  const taken = new Set<L>();
  const first = desired.map((d) => {
    const found = byName.get(d.name);
    if (found) taken.add(found);
    return found;
  });
  return desired.map((d, i) => {
    let found = first[i];
    if (!found && d.renamedFrom !== undefined) {
      const old = byName.get(d.renamedFrom);
      if (old && !taken.has(old)) {
        taken.add(old);
        found = old;
      }
    }
    return { desired: d, live: found };
  });
}

/** Matches a definition's teams and participants to the live ones (see {@link matchAll}). Pure. */
export function matchState(desired: DesiredState, observed: ObservedState): Matching {
  const teams = matchAll(desired.teams, observed.teams, (t) => t.team.team_name).map(
    ({ desired: team, live }): TeamMatch => ({
      desired: team,
      live,
      agents: matchAll(team.agents, live?.agents ?? [], (a) => a.name),
      humans: matchAll(team.humans, live?.humans ?? [], (h) => h.name),
    }),
  );
  const matched = new Set(teams.map((t) => t.live));
  return { teams, unmatchedTeams: observed.teams.filter((t) => !matched.has(t)) };
}

/**
 * The ids of the live resources a definition names, by their names in the definition: a renamed
 * team or participant is found under its new name (the orchestration needs them so).
 */
export function knownIds(matching: Matching): { teams: Map<string, string>; participants: Map<string, string> } {
  const teams = new Map<string, string>();
  const participants = new Map<string, string>();
  for (const t of matching.teams) {
    if (!t.live) continue;
    teams.set(t.desired.name, t.live.team.team_id);
    for (const a of t.agents) if (a.live) participants.set(participantKey(t.desired.name, a.desired.name), a.live.agent_id);
    for (const h of t.humans) if (h.live) participants.set(participantKey(t.desired.name, h.desired.name), h.live.human_id);
  }
  return { teams, participants };
}

/** The key of a participant in {@link knownIds}: team and name. */
export function participantKey(team: string, name: string): string {
  return `${team}\u0000${name}`;
}

/**
 * Computes the changes that make `observed` match `desired`, in the order they can run: the
 * organization's create (or update: its deletion protection); then deletes — edges before participants, participants before teams,
 * then provider keys; then provider keys set, and each team with its participants and edges
 * (creates and updates). Resources in sync produce no change. Deletes carry no `cascade` yet
 * (the service's counts are read by the CLI, `withCascades`).
 */
export function computePlan(desired: DesiredState, observed: ObservedState): Plan {
  const org = desired.organization;
  const matching = matchState(desired, observed);
  const head: Change[] = [];
  if (!observed.organization) {
    head.push({ action: 'create', kind: 'organization', name: org.name, address: ORGANIZATION_ADDRESS, fields: org.fields });
  } else {
    const update = updateOf(observed.organization, org, observed.organization.org_name);
    if (update) head.push({ action: 'update', kind: 'organization', name: org.name, address: ORGANIZATION_ADDRESS, id: observed.organization.org_id, ...update });
  }
  const deletes = { edges: [] as DeleteChange[], participants: [] as DeleteChange[], teams: [] as DeleteChange[], keys: [] as DeleteChange[], webhooks: [] as DeleteChange[] };
  for (const live of observed.providerKeys) {
    if (!org.providerKeys.some((k) => k.provider === live.provider)) {
      deletes.keys.push({ action: 'delete', kind: 'provider_key', name: live.provider, address: providerKeyAddress(live.provider), id: live.provider });
    }
  }
  const body: Change[] = [];
  for (const { provider, secretRef } of org.providerKeys) {
    const live = observed.providerKeys.find((k) => k.provider === provider);
    const base = { kind: 'provider_key', name: provider, address: providerKeyAddress(provider), fields: { api_key: SENSITIVE }, secretRef } as const;
    if (!live) body.push({ action: 'create', ...base });
    else if (live.matchesDesired === false) body.push({ action: 'update', ...base, id: provider, diff: { api_key: { from: SENSITIVE, to: SENSITIVE } } });
  }
  // A desired state without webhooks (an apply recorded before they were managed) leaves them be.
  if (org.webhooks) body.push(...planWebhooks(org.webhooks, observed.webhooks ?? [], deletes.webhooks));
  for (const team of matching.teams) body.push(...planTeam(team, deletes));
  for (const live of matching.unmatchedTeams) {
    deletes.teams.push({ action: 'delete', kind: 'team', name: live.team.team_name, address: teamAddress(live.team.team_name), id: live.team.team_id });
  }
  return { changes: [...head, ...deletes.edges, ...deletes.participants, ...deletes.teams, ...deletes.keys, ...deletes.webhooks, ...body] };
}

/**
 * The creates and updates of the organization's webhooks; their deletes go to `deletes`. A
 * desired webhook is matched to the live one of its name (else of its `renamedFrom`); one that
 * matches none adopts a live webhook *without* a name and with the same URL (a webhook made by hand
 * before the definition named it: the update gives it its name). Fields are compared as teams'
 * are; the secret by the live fingerprint (`secretMatches`, judged where the secret is resolved):
 * a secret that differs is an update with `secretRef`, which apply rotates.
 */
function planWebhooks(desired: readonly DesiredWebhook[], live: readonly ObservedWebhook[], deletes: DeleteChange[]): Change[] {
  const named = live.filter((w) => w.name !== null);
  const matched = matchAll(desired, named, (w) => w.name!);
  const taken = new Set(matched.flatMap((m) => (m.live ? [m.live] : [])));
  for (const m of matched) {
    if (m.live) continue;
    const unnamed = live.find((w) => w.name === null && !taken.has(w) && w.url === m.desired.fields.url);
    if (unnamed) {
      taken.add(unnamed);
      m.live = unnamed;
    }
  }
  const changes: Change[] = [];
  for (const { desired: hook, live: existing } of matched) {
    const address = webhookAddress(hook.name);
    if (!existing) {
      changes.push({ action: 'create', kind: 'webhook', name: hook.name, address, fields: { ...hook.fields, secret: SENSITIVE }, secretRef: hook.secretRef });
      continue;
    }
    const diff = diffFields(existing, hook.fields);
    const secretDiffers = existing.secretMatches === false;
    if (secretDiffers) diff['secret'] = { from: SENSITIVE, to: SENSITIVE };
    if (Object.keys(diff).length === 0) continue;
    changes.push({
      action: 'update',
      kind: 'webhook',
      name: hook.name,
      address,
      id: existing.webhook_id,
      diff,
      fields: patchOf(hook.fields, diff),
      ...(existing.name !== null && existing.name !== hook.name ? { renamedFrom: existing.name } : {}),
      ...(secretDiffers ? { secretRef: hook.secretRef } : {}),
    });
  }
  for (const w of live) {
    if (taken.has(w)) continue;
    const name = w.name ?? w.webhook_id;
    deletes.push({ action: 'delete', kind: 'webhook', name, address: webhookAddress(name), id: w.webhook_id });
  }
  return changes;
}

/** An update of a matched live resource, when its fields differ (a rename included). */
function updateOf<F extends object>(live: object, desired: Desired<F>, liveName: string): { diff: Record<string, FieldDiff>; fields: Partial<F>; renamedFrom?: string } | undefined {
  const diff = diffFields(live, desired.fields);
  if (Object.keys(diff).length === 0) return undefined;
  return { diff, fields: patchOf(desired.fields, diff), ...(liveName !== desired.name ? { renamedFrom: liveName } : {}) };
}

/** The creates and updates of one team, its participants and edges; its deletes go to `deletes`. */
function planTeam(match: TeamMatch, deletes: { edges: DeleteChange[]; participants: DeleteChange[] }): Change[] {
  const { desired: team, live } = match;
  const changes: Change[] = [];
  const address = teamAddress(team.name);
  if (!live) changes.push({ action: 'create', kind: 'team', name: team.name, address, fields: team.fields });
  else {
    const update = updateOf(live.team, team, live.team.team_name);
    if (update) changes.push({ action: 'update', kind: 'team', name: team.name, address, id: live.team.team_id, ...update });
  }
  const inTeam = { team: team.name };
  for (const { desired: agent, live: existing } of match.agents) {
    const at = { ...inTeam, name: agent.name, address: participantAddress(team.name, 'agent', agent.name) };
    // Header values travel as templates in `headerRefs`; the change shows them as (sensitive).
    if (!existing) changes.push({ action: 'create', kind: 'agent', ...at, ...hideHeaders(agent.fields) });
    else {
      const diff = agentDiff(existing, agent.fields);
      if (Object.keys(diff).length > 0) {
        const renamed = existing.name !== agent.name ? { renamedFrom: existing.name } : {};
        changes.push({ action: 'update', kind: 'agent', ...at, id: existing.agent_id, diff, ...hideHeaders(patchOf(agent.fields, diff)), ...renamed });
      }
    }
  }
  for (const { desired: human, live: existing } of match.humans) {
    const at = { ...inTeam, name: human.name, address: participantAddress(team.name, 'human', human.name) };
    if (!existing) changes.push({ action: 'create', kind: 'human', ...at, fields: human.fields });
    else {
      const update = updateOf(existing, human, existing.name);
      if (update) changes.push({ action: 'update', kind: 'human', ...at, id: existing.human_id, ...update });
    }
  }
  if (!live) {
    for (const pair of team.edges) changes.push(edgeCreate(team.name, pair));
    return changes;
  }

  // Live participants by id, under the names the definition gives them (a renamed one by its new name).
  const names = new Map<string, string>();
  const kept = new Set<string>();
  const keep = (id: string, name: string) => {
    kept.add(id);
    names.set(id, name);
  };
  for (const { desired: d, live: l } of match.agents) if (l) keep(l.agent_id, d.name);
  for (const { desired: d, live: l } of match.humans) if (l) keep(l.human_id, d.name);
  for (const p of [...live.agents.map((a) => [a.agent_id, a.name] as const), ...live.humans.map((h) => [h.human_id, h.name] as const)]) {
    if (!kept.has(p[0])) names.set(p[0], p[1]);
  }

  const liveEdges: Array<{ edge: Edge; pair: [string, string] }> = live.edges.map((edge) => ({
    edge,
    pair: [names.get(edge.participants[0]) ?? edge.participants[0], names.get(edge.participants[1]) ?? edge.participants[1]],
  }));
  // An edge stays when the definition names its pair and both its participants stay: an edge on
  // a participant that is deleted goes first (the service refuses to delete one still on an edge).
  const staying = liveEdges.filter(({ edge, pair }) => edge.participants.every((p) => kept.has(p)) && team.edges.some((e) => samePair(e, pair)));
  for (const { edge, pair } of liveEdges) {
    if (staying.some((s) => s.edge === edge)) continue;
    deletes.edges.push({ action: 'delete', kind: 'edge', ...inTeam, name: edgeName(pair), address: edgeAddress(team.name, pair), id: edge.edge_id, participants: pair });
  }
  for (const a of live.agents) {
    if (!kept.has(a.agent_id)) deletes.participants.push({ action: 'delete', kind: 'agent', ...inTeam, name: a.name, address: participantAddress(team.name, 'agent', a.name), id: a.agent_id });
  }
  for (const h of live.humans) {
    if (!kept.has(h.human_id)) deletes.participants.push({ action: 'delete', kind: 'human', ...inTeam, name: h.name, address: participantAddress(team.name, 'human', h.name), id: h.human_id });
  }
  for (const pair of team.edges) {
    if (!staying.some((s) => samePair(s.pair, pair))) changes.push(edgeCreate(team.name, pair));
  }
  return changes;
}

function edgeCreate(team: string, pair: readonly [string, string]): Change {
  return { action: 'create', kind: 'edge', team, name: edgeName(pair), address: edgeAddress(team, pair), fields: { participants: [pair[0], pair[1]] } };
}

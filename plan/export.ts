/**
 * `teamctl export`: a definition of a live organization such that `plan` on it finds nothing to
 * change — how a team that started by hand moves to code. Each resource's fields come back under
 * their definition keys by the one declaration of its fields (`fromWire`), leaving out what holds
 * its default (a paused agent keeps `status: paused`, an active one leaves `status` unmanaged).
 * Provider keys, webhook secrets and agents' MCP header values, which the service never returns,
 * become `${env:NAME}` references to variables the user fills in.
 */
import { defaultAskTimeoutSeconds, defaultToolTimeoutSeconds, type AgentTools } from '../api/agent-tools.ts';
import { WebhookFields } from '../api/events.ts';
import { AgentFields, HumanFields, OrganizationFields, TeamFields } from '../api/schemas.ts';
import type { Provider } from '../api/schemas.ts';
import { participantNames } from '../client/team-names.ts';
import type { A2aParticipant } from '../api/remote-a2a.ts';
import { formatSeconds } from '../definitions/durations.ts';
import { A2A_HEADERS } from './remote-a2a.ts';
import type { ObservedState } from './types.ts';

/** A provider key as exported: the variable chosen for it and the hint of the live key. */
export interface ExportedProviderKey {
  provider: Provider;
  variable: string;
  /** The last characters of the live key (`key_hint`), so the user can tell which key to put there. */
  keyHint: string;
}

/** The variable an exported definition names for a provider's key: `OPENAI_PROVIDER_KEY`. */
export function providerKeyVariable(provider: Provider): string {
  return `${provider.toUpperCase()}_PROVIDER_KEY`;
}

/** A webhook as exported: its name in the definition, the variable chosen for its secret, and whether the live one had no name. */
export interface ExportedWebhook {
  name: string;
  variable: string;
  /** The live webhook had no name: the definition gives it this one, which the next apply sets (adopted by its URL). */
  named: boolean;
}

/** The variable an exported definition names for a webhook's secret: `OPS_FEED_WEBHOOK_SECRET`. */
export function webhookSecretVariable(name: string): string {
  const base = name.toUpperCase().replace(/[^A-Z0-9]+/g, '_').replace(/^_+|_+$/g, '');
  return `${/^[A-Z]/.test(base) ? '' : 'WEBHOOK_'}${base}${base ? '_' : ''}WEBHOOK_SECRET`;
}

/** A name for a live webhook without one, from its URL's host (`hooks-example-com`), unique among `taken`. */
function webhookName(url: string, taken: Set<string>): string {
  let host = 'webhook';
  try {
    host = new URL(url).hostname.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 90) || 'webhook';
  } catch {
    // Not a URL the service would hold; the generic name does.
  }
  let name = host;
  for (let n = 2; taken.has(name); n++) name = `${host}-${n}`;
  return name;
}

/** An MCP header value as exported: whose it is and the variable its reference names (`server` `@a2a`: a remote A2A agent's header). */
export interface ExportedToolHeader {
  team: string;
  agent: string;
  server: string;
  header: string;
  variable: string;
}

/** A name as part of an environment variable's: upper case, each run of other characters one `_`. */
function variablePart(name: string): string {
  return name.toUpperCase().replace(/[^A-Z0-9]+/g, '_').replace(/^_+|_+$/g, '');
}

/**
 * The variable an exported definition names for an MCP header's value: the server and the header
 * (`tracker`, `Authorization` → `TRACKER_AUTHORIZATION`); with `owner` (team and agent, when
 * several agents have a server and header of those names, whose values may differ) prefixed by
 * them: `DESK_LEAD_TRACKER_AUTHORIZATION`. Always a valid variable name.
 */
export function toolHeaderVariable(server: string, header: string, owner?: { team: string; agent: string }): string {
  const parts = [...(owner ? [variablePart(owner.team), variablePart(owner.agent)] : []), variablePart(server), variablePart(header)].filter(Boolean);
  const name = parts.join('_');
  return /^[A-Z_]/.test(name) ? name : `MCP_${name}`;
}

/**
 * An agent's live `tools` as a definition writes them: members holding their defaults left out
 * (`team: false`, the timeouts 86400 and 60 s, `mcp: []`, `approval: null`, a server's `allow`
 * null or headers none), timeouts as durations in their largest exact unit (`24h` is written
 * `1d`, `90s` stays `90s`), each header value a reference `${env:VARIABLE}` (`variableOf`).
 * Tools holding only defaults are `{}`. Raises nothing.
 */
export function toolsFromWire(tools: AgentTools, variableOf: (server: string, header: string) => string): Record<string, unknown> {
  const mcp = tools.mcp.map((server) => {
    const headers = Object.keys(server.header_fingerprints);
    return {
      name: server.name,
      url: server.url,
      ...(headers.length > 0 ? { headers: Object.fromEntries(headers.map((header) => [header, `\${env:${variableOf(server.name, header)}}`])) } : {}),
      ...(server.allow !== null ? { allow: [...server.allow] } : {}),
    };
  });
  return {
    ...(tools.team ? { team: true } : {}),
    ...(tools.ask_timeout_seconds !== defaultAskTimeoutSeconds ? { askTimeout: formatSeconds(tools.ask_timeout_seconds) } : {}),
    ...(tools.tool_timeout_seconds !== defaultToolTimeoutSeconds ? { toolTimeout: formatSeconds(tools.tool_timeout_seconds) } : {}),
    ...(mcp.length > 0 ? { mcp } : {}),
    ...(tools.approval !== null ? { approval: { by: tools.approval.by, tools: [...tools.approval.tools] } } : {}),
  };
}

/**
 * A remote agent's live `a2a` as a definition writes it: its URL, and its headers (when it has
 * any) each a reference `${env:VARIABLE}` (`variableOf`), never a value. Raises nothing.
 */
export function a2aFromWire(a2a: A2aParticipant, variableOf: (header: string) => string): Record<string, unknown> {
  const headers = Object.keys(a2a.header_fingerprints);
  return { url: a2a.url, ...(headers.length > 0 ? { headers: Object.fromEntries(headers.map((header) => [header, `\${env:${variableOf(header)}}`])) } : {}) };
}

/**
 * The variables of every MCP header value of the live agents (and of remote A2A agents' header
 * values, as of a server named `@a2a`: `A2A_AUTHORIZATION`), in team, agent, server and header
 * order: named after server and header, or also after team and agent when several agents have a
 * server and header of those names; a name still taken gets `_2`, `_3`, ….
 */
function toolHeaderVariables(teams: ObservedState['teams']): ExportedToolHeader[] {
  const headers = teams.flatMap(({ team, agents }) =>
    agents.flatMap((agent) => [
      ...(agent.tools?.mcp ?? []).flatMap((server) => Object.keys(server.header_fingerprints).map((header) => ({ team: team.team_name, agent: agent.name, server: server.name, header }))),
      ...Object.keys(agent.a2a?.header_fingerprints ?? {}).map((header) => ({ team: team.team_name, agent: agent.name, server: A2A_HEADERS, header })),
    ]),
  );
  const uses = new Map<string, number>();
  for (const h of headers) uses.set(toolHeaderVariable(h.server, h.header), (uses.get(toolHeaderVariable(h.server, h.header)) ?? 0) + 1);
  const taken = new Set<string>();
  return headers.map((h) => {
    const plain = toolHeaderVariable(h.server, h.header);
    const base = uses.get(plain)! > 1 ? toolHeaderVariable(h.server, h.header, h) : plain;
    let variable = base;
    for (let n = 2; taken.has(variable); n++) variable = `${base}_${n}`;
    taken.add(variable);
    return { ...h, variable };
  });
}

/**
 * The definition (as plain data, in the file's layout) of an observed organization, and the
 * variables it names for provider keys, webhook secrets and agents' MCP header values. Input: the
 * organization's observed state (it must exist). Output: `{ definition, providerKeys, webhooks,
 * toolHeaders }`; teams, agents and humans in the service's order, edges as pairs of participant
 * names, an agent's `maxSteps` when not 10, its `tools` (`toolsFromWire`) and its `a2a`
 * (`a2aFromWire`, header values as references); a webhook without
 * a name gets one from its URL's host. Raises nothing.
 */
export function exportDefinition(observed: ObservedState & { organization: NonNullable<ObservedState['organization']> }): {
  definition: Record<string, unknown>;
  providerKeys: ExportedProviderKey[];
  webhooks: ExportedWebhook[];
  toolHeaders: ExportedToolHeader[];
} {
  const providerKeys = [...observed.providerKeys]
    .sort((a, b) => (a.provider < b.provider ? -1 : 1))
    .map((k) => ({ provider: k.provider, variable: providerKeyVariable(k.provider), keyHint: k.key_hint }));
  const live = observed.webhooks ?? [];
  const taken = new Set(live.flatMap((w) => (w.name === null ? [] : [w.name])));
  const webhooks: ExportedWebhook[] = [];
  const hookEntries = live.map((w) => {
    const name = w.name ?? webhookName(w.url, taken);
    taken.add(name);
    const exported = { name, variable: webhookSecretVariable(name), named: w.name === null };
    webhooks.push(exported);
    return { ...WebhookFields.fromWire({ ...w, name }), secret: `\${env:${exported.variable}}` };
  });
  const organization = {
    ...OrganizationFields.fromWire(observed.organization),
    ...(providerKeys.length > 0 ? { providerKeys: Object.fromEntries(providerKeys.map((k) => [k.provider, `\${env:${k.variable}}`])) } : {}),
    ...(hookEntries.length > 0 ? { webhooks: hookEntries } : {}),
  };
  const toolHeaders = toolHeaderVariables(observed.teams);
  const variableOf = (team: string, agent: string) => (server: string, header: string) =>
    toolHeaders.find((h) => h.team === team && h.agent === agent && h.server === server && h.header === header)!.variable;
  const teams = observed.teams.map(({ team, agents, humans, edges }) => {
    const names = participantNames({ agents, humans });
    const agentEntry = (a: (typeof agents)[number]) => ({
      ...AgentFields.fromWire(a),
      ...(a.tools ? { tools: toolsFromWire(a.tools, variableOf(team.team_name, a.name)) } : {}),
      ...(a.a2a ? { a2a: a2aFromWire(a.a2a, (header) => variableOf(team.team_name, a.name)(A2A_HEADERS, header)) } : {}),
    });
    return {
      ...TeamFields.fromWire(team),
      ...(agents.length > 0 ? { agents: agents.map(agentEntry) } : {}),
      ...(humans.length > 0 ? { humans: humans.map((h) => HumanFields.fromWire(h)) } : {}),
      ...(edges.length > 0 ? { edges: edges.map((e) => e.participants.map((id) => names.get(id) ?? id)) } : {}),
    };
  });
  return { definition: { apiVersion: 'teamctl/v1', organization, teams }, providerKeys, webhooks, toolHeaders };
}

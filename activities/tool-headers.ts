/**
 * The MCP header values of agents' `tools` (and a remote A2A agent's `a2a` headers, under
 * `@a2a`) inside the apply activities, the only place they are
 * resolved: the definition's templates (`Bearer ${env:TRACKER_TOKEN}`) become values here, at the
 * moment of the call, and are either sent to the service (a create or a PATCH) or checked against
 * the live `header_fingerprints` (a read, `api/webhook-fingerprint.ts`). No resolved value leaves
 * these functions but in a request body: results carry verdicts (`HeaderMatches`), errors name
 * variables, servers and headers, never a value.
 */
import { HeaderValue, type AgentTools } from '../api/agent-tools.ts';
import { fingerprintMatches } from '../api/webhook-fingerprint.ts';
import { resolveSecretTemplate, templateVariables } from '../definitions/secrets.ts';
import { ToolkitError } from '../errors/catalogue.ts';
import type { Agent } from '../api/schemas.ts';
import { fieldHeaderRefs, type AgentHeaderRefs } from '../plan/agent-tools.ts';
import { A2A_HEADERS } from '../plan/remote-a2a.ts';
import type { AgentWire, HeaderMatches, HeaderRefs, ObservedTeam } from '../plan/types.ts';

/** Resolved header values: server name → header name → value. Never returned, logged or put in an error. */
export type ResolvedHeaders = Record<string, Record<string, string>>;

/** The environment templates resolve against. */
type Env = Readonly<Record<string, string | undefined>>;

/**
 * Resolves the header templates of an agent's servers. Every template is resolved before the
 * caller sends anything. Errors: `unresolved_secret` naming the first variable unset or empty;
 * `invalid_usage` when a resolved value is no header value (empty, over 8,192 characters, or with
 * CR, LF or NUL), naming the server, the header and the variables, not the value;
 * `invalid_definition` for a template of the wrong form.
 */
export function resolveHeaders(refs: HeaderRefs, env: Env): ResolvedHeaders {
  const resolved: ResolvedHeaders = {};
  for (const [server, headers] of Object.entries(refs)) {
    resolved[server] = {};
    for (const [header, template] of Object.entries(headers)) {
      const value = resolveSecretTemplate(template, env);
      if (!HeaderValue.safeParse(value).success) {
        const variables = templateVariables(template).join(', ');
        throw new ToolkitError('invalid_usage', `header ${header} of ${server === A2A_HEADERS ? 'the remote A2A agent' : `MCP server ${server}`}: the value made of ${variables} is not a header value (1 to 8,192 characters, without CR, LF or NUL)`);
      }
      resolved[server][header] = value;
    }
  }
  return resolved;
}

/**
 * An agent's fields with each MCP (and A2A) header template replaced by its value, for the body of
 * a create or a PATCH, and the values by server (`@a2a` for the remote A2A agent's; to compare
 * with a live agent when a create adopts one). Fields without `tools` or `a2a` come back as they are. Errors: as {@link resolveHeaders}.
 */
export function resolveToolFields<F extends Partial<AgentWire>>(fields: F, env: Env): { fields: F; resolved: ResolvedHeaders } {
  const { tools, a2a } = fields;
  if (!tools && !a2a) return { fields, resolved: {} };
  const resolved = resolveHeaders(fieldHeaderRefs(fields), env);
  const body = { ...fields };
  if (tools) body.tools = { ...tools, mcp: tools.mcp.map((server) => ({ ...server, headers: resolved[server.name] ?? {} })) };
  if (a2a) body.a2a = { ...a2a, headers: resolved[A2A_HEADERS] ?? {} };
  return { fields: body, resolved };
}

/**
 * Whether each live header value of an agent — its MCP servers' ({@link headerMatchesOf}) and,
 * under `@a2a`, its remote A2A agent's — is the resolved one. Undefined when nothing is compared.
 * Raises nothing.
 */
export function agentHeaderMatches(live: Pick<Agent, 'tools' | 'a2a'>, resolved: ResolvedHeaders): HeaderMatches | undefined {
  const matches: HeaderMatches = { ...headerMatchesOf(live.tools, resolved) };
  const values = resolved[A2A_HEADERS];
  if (live.a2a && values) {
    const a2a: Record<string, boolean> = {};
    for (const [header, fingerprint] of Object.entries(live.a2a.header_fingerprints)) {
      const value = values[header];
      if (value !== undefined) a2a[header] = fingerprintMatches(fingerprint, value);
    }
    if (Object.keys(a2a).length > 0) matches[A2A_HEADERS] = a2a;
  }
  return Object.keys(matches).length > 0 ? matches : undefined;
}

/**
 * Whether each live header value is the resolved one, for the headers both name (server name →
 * header name → verdict), by the live fingerprints. Undefined when the live agent has no tools or
 * nothing is compared. Raises nothing.
 */
export function headerMatchesOf(live: AgentTools | null | undefined, resolved: ResolvedHeaders): HeaderMatches | undefined {
  const matches: HeaderMatches = {};
  for (const server of live?.mcp ?? []) {
    const values = resolved[server.name];
    if (!values) continue;
    for (const [header, fingerprint] of Object.entries(server.header_fingerprints)) {
      const value = values[header];
      if (value === undefined) continue;
      (matches[server.name] ??= {})[header] = fingerprintMatches(fingerprint, value);
    }
  }
  return Object.keys(matches).length > 0 ? matches : undefined;
}

/** One desired agent's resolved header values, with the names its live agent may have. */
export interface ResolvedAgentHeaders {
  teams: string[];
  agents: string[];
  headers: ResolvedHeaders;
}

/** Resolves the header templates of the desired agents a read compares with. Errors: as {@link resolveHeaders}. */
export function resolveAgentHeaders(refs: readonly AgentHeaderRefs[], env: Env): ResolvedAgentHeaders[] {
  return refs.map((entry) => ({ teams: entry.teams, agents: entry.agents, headers: resolveHeaders(entry.headers, env) }));
}

/**
 * A team's graph with each agent's `headerMatches` (see `plan/types.ts` `ObservedAgent`), judged
 * against the desired agent of its name — or, for a rename, of its old name — in a team of its
 * name or old name. Agents with nothing to compare are returned as they are. Raises nothing.
 */
export function judgeHeaders(graph: ObservedTeam, desired: readonly ResolvedAgentHeaders[]): ObservedTeam {
  if (desired.length === 0) return graph;
  const team = graph.team.team_name;
  const agents = graph.agents.map((agent) => {
    // The agent's own name first: a renamed entry's old name is only a fallback.
    const entry =
      desired.find((d) => d.teams[0] === team && d.agents[0] === agent.name) ?? desired.find((d) => d.teams.includes(team) && d.agents.includes(agent.name));
    const headerMatches = entry && agentHeaderMatches(agent, entry.headers);
    return headerMatches ? { ...agent, headerMatches } : agent;
  });
  return { ...graph, agents };
}

/**
 * An agent's `tools` (contract §11) in the plan: how the live tools (the service's form, with
 * `header_fingerprints`) compare with the definition's (wire names, header values as templates
 * such as `Bearer ${env:TRACKER_TOKEN}`), how a plan shows them (every header value as
 * {@link SENSITIVE}), and which header templates the read and change activities resolve.
 *
 * Header values are compared without being read: the read activities resolve the definition's
 * templates and check them against the live fingerprints (`ObservedAgent.headerMatches`); this
 * module only reads those verdicts. Pure, deterministic and free of Node imports: the apply
 * workflow plans with it in Temporal's sandbox.
 */
import type { AgentTools, McpServer } from '../api/agent-tools.ts';
import { A2A_HEADERS } from './remote-a2a.ts';
import { SENSITIVE } from './types.ts';
import type { AgentWire, DesiredAgentTools, DesiredMcpServer, DesiredState, FieldDiff, HeaderMatches, HeaderRefs } from './types.ts';

/** An MCP server as plans show it: its headers by name, each value {@link SENSITIVE}. */
export interface ShownMcpServer {
  name: string;
  url: string;
  headers: Record<string, typeof SENSITIVE>;
  allow: string[] | null;
}

/** `tools` as plans show them, live or desired: the same members, header values hidden. */
export interface ShownAgentTools extends Omit<DesiredAgentTools, 'mcp'> {
  mcp: ShownMcpServer[];
}

/** The same strings, in any order, each once (an `allow` list, an approval's tools: sets to the service). */
function sameMembers(a: readonly string[], b: readonly string[]): boolean {
  const members = new Set(a);
  return a.length === b.length && b.every((item) => members.has(item)) && new Set(b).size === members.size;
}

/** Header names → {@link SENSITIVE}, in the order given. */
function hidden(names: readonly string[]): Record<string, typeof SENSITIVE> {
  return Object.fromEntries(names.map((name) => [name, SENSITIVE]));
}

/** Desired tools as plans show them (header values hidden). Raises nothing. */
export function shownTools(tools: DesiredAgentTools): ShownAgentTools {
  return { ...tools, mcp: tools.mcp.map((server) => ({ ...server, headers: hidden(Object.keys(server.headers)) })) };
}

/** Live tools as plans show them: `header_fingerprints` become `headers`, each value hidden. Raises nothing. */
export function shownLiveTools(tools: AgentTools): ShownAgentTools {
  return {
    team: tools.team,
    ask_timeout_seconds: tools.ask_timeout_seconds,
    tool_timeout_seconds: tools.tool_timeout_seconds,
    mcp: tools.mcp.map((server: McpServer) => ({ name: server.name, url: server.url, headers: hidden(Object.keys(server.header_fingerprints)), allow: server.allow })),
    approval: tools.approval,
  };
}

/** Whether a live server is the desired one in all but its header values (name, URL, `allow`, header names). */
function sameServer(live: McpServer, desired: DesiredMcpServer): boolean {
  const allowSame = live.allow === null || desired.allow === null ? live.allow === desired.allow : sameMembers(live.allow, desired.allow);
  return live.url === desired.url && allowSame && sameMembers(Object.keys(live.header_fingerprints), Object.keys(desired.headers));
}

/**
 * The header values that differ between live and desired servers of the same name and header
 * name, as paths under `tools` (`mcp[tracker].headers.Authorization`), by `matches` (a header not
 * judged there counts as the same: it could not be compared).
 */
function differingHeaders(live: AgentTools, desired: DesiredAgentTools, matches: HeaderMatches | undefined): string[] {
  const paths: string[] = [];
  for (const server of desired.mcp) {
    const liveServer = live.mcp.find((s) => s.name === server.name);
    if (!liveServer) continue;
    for (const header of Object.keys(server.headers)) {
      if (Object.hasOwn(liveServer.header_fingerprints, header) && matches?.[server.name]?.[header] === false) paths.push(`mcp[${server.name}].headers.${header}`);
    }
  }
  return paths;
}

/**
 * The drift of an agent's `tools`, or undefined when the live tools are the desired ones: `team`,
 * the timeouts, `approval` (its tools as a set), the MCP servers by name (URL, `allow` as a set,
 * which header names), and each header value by `matches` (`sensitiveChanges` names those that
 * differ). Input: the live tools (undefined: a service that does not return them, read as null),
 * the desired tools, and the verdicts on header values. Output: `{from, to}` as plans show them
 * (header values {@link SENSITIVE}). Raises nothing.
 */
export function toolsDiff(live: AgentTools | null | undefined, desired: DesiredAgentTools | null, matches: HeaderMatches | undefined): FieldDiff | undefined {
  const current = live ?? null;
  if (current === null || desired === null) {
    return current === desired ? undefined : { from: current && shownLiveTools(current), to: desired && shownTools(desired) };
  }
  const approvalSame =
    current.approval === null || desired.approval === null
      ? current.approval === desired.approval
      : current.approval.by === desired.approval.by && sameMembers(current.approval.tools, desired.approval.tools);
  const serversSame =
    current.mcp.length === desired.mcp.length &&
    desired.mcp.every((server) => {
      const liveServer = current.mcp.find((s) => s.name === server.name);
      return liveServer !== undefined && sameServer(liveServer, server);
    });
  const sensitiveChanges = differingHeaders(current, desired, matches);
  const same =
    current.team === desired.team &&
    current.ask_timeout_seconds === desired.ask_timeout_seconds &&
    current.tool_timeout_seconds === desired.tool_timeout_seconds &&
    approvalSame &&
    serversSame &&
    sensitiveChanges.length === 0;
  if (same) return undefined;
  return { from: shownLiveTools(current), to: shownTools(desired), ...(sensitiveChanges.length > 0 ? { sensitiveChanges } : {}) };
}

/** The header templates of desired tools, by server; empty when no server has headers. */
export function headerRefsOf(tools: DesiredAgentTools | null | undefined): HeaderRefs {
  const refs: HeaderRefs = {};
  for (const server of tools?.mcp ?? []) if (Object.keys(server.headers).length > 0) refs[server.name] = { ...server.headers };
  return refs;
}

/**
 * The header templates of an agent's fields: its MCP servers' ({@link headerRefsOf}) and, under
 * {@link A2A_HEADERS}, its remote A2A agent's; empty when none has headers. Raises nothing.
 */
export function fieldHeaderRefs(fields: Partial<AgentWire>): HeaderRefs {
  const refs = headerRefsOf(fields.tools);
  const a2a = fields.a2a?.headers ?? {};
  if (Object.keys(a2a).length > 0) refs[A2A_HEADERS] = { ...a2a };
  return refs;
}

/**
 * An agent's fields as a change carries them: `tools` and `a2a` with each header value
 * {@link SENSITIVE}, and the templates apart in `headerRefs` (absent when nothing has headers).
 * Fields without `tools` or `a2a` come back as they are. Raises nothing.
 */
export function hideHeaders<F extends Partial<AgentWire>>(fields: F): { fields: F; headerRefs?: HeaderRefs } {
  const { tools, a2a } = fields;
  if (!tools && !a2a) return { fields };
  const refs = fieldHeaderRefs(fields);
  const masked = { ...fields };
  if (tools) masked.tools = { ...tools, mcp: tools.mcp.map((server) => ({ ...server, headers: hidden(Object.keys(server.headers)) })) };
  if (a2a) masked.a2a = { ...a2a, headers: hidden(Object.keys(a2a.headers)) };
  return { fields: masked, ...(Object.keys(refs).length > 0 ? { headerRefs: refs } : {}) };
}

/**
 * The fields a change sends, with each hidden header value put back as its template from
 * `headerRefs` (the inverse of {@link hideHeaders}), for the activity that resolves them.
 * Fields without `tools` or `a2a`, or a change without `headerRefs`, come back as they are.
 * Raises nothing.
 */
export function withHeaderRefs<F extends Partial<AgentWire>>(fields: F, headerRefs: HeaderRefs | undefined): F {
  const { tools, a2a } = fields;
  if ((!tools && !a2a) || headerRefs === undefined) return fields;
  const restored = { ...fields };
  if (tools) restored.tools = { ...tools, mcp: tools.mcp.map((server) => ({ ...server, headers: { ...(headerRefs[server.name] ?? {}) } })) };
  if (a2a) restored.a2a = { ...a2a, headers: { ...(headerRefs[A2A_HEADERS] ?? {}) } };
  return restored;
}

/** The human an agent's fields name as approver (`tools.approval.by`), if any. */
export function approverOf(fields: Partial<AgentWire>): string | undefined {
  return fields.tools?.approval?.by;
}

/**
 * The header templates of one desired agent (its MCP servers' and its remote A2A agent's), with
 * the names under which the read activities find
 * its live agent: the team's and the agent's names, and their old names (`renamedFrom`).
 */
export interface AgentHeaderRefs {
  teams: string[];
  agents: string[];
  headers: HeaderRefs;
}

/**
 * The header templates of every desired agent that has some, for the read activities to judge
 * the live header values with (`ObservedAgent.headerMatches`). Empty when no agent has headers.
 * Raises nothing.
 */
export function agentHeaderRefs(desired: DesiredState): AgentHeaderRefs[] {
  const names = (d: { name: string; renamedFrom?: string | undefined }) => (d.renamedFrom === undefined ? [d.name] : [d.name, d.renamedFrom]);
  return desired.teams.flatMap((team) =>
    team.agents.flatMap((agent) => {
      const headers = fieldHeaderRefs(agent.fields);
      return Object.keys(headers).length === 0 ? [] : [{ teams: names(team), agents: names(agent), headers }];
    }),
  );
}

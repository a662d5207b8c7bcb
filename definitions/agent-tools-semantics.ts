/**
 * The rules of an agent's `tools` (contract §11) that span keys, checked on a definition that
 * passed the schema so that `validate` finds, with their places, what the service would refuse
 * halfway through an apply (400 `invalid_request`, 422 `unknown_reference`,
 * `webhook_url_refused`) — and one thing it checks only when an approval is needed: that the
 * approver shares an edge with the agent.
 */
import { maxMcpHeaders, TeamToolNames } from '../api/agent-tools.ts';
import { suggestion } from './did-you-mean.ts';
import type { PathProblem, PathSegment } from './problems.ts';
import type { AgentDefinition, TeamDefinition } from './schema.ts';

/** The team tools by name, as approvals name them. */
const TEAM_TOOLS = Object.keys(TeamToolNames);

/**
 * Whether a URL's host is the machine itself: `localhost`, an address of 127.0.0.0/8, or `::1`.
 * Plain http is accepted for those only, as a development convenience (the service then needs
 * `--webhook-allow-private` as well).
 */
export function isLoopbackUrl(url: string): boolean {
  if (!URL.canParse(url)) return false;
  const host = new URL(url).hostname;
  return host === 'localhost' || host === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * Checks the `tools` of every agent of a team. Problems (paths into the document, did-you-mean
 * hints where a name is involved): `tools` on an agent without a provider; an MCP server named
 * twice; a URL that is not https (plain http is allowed for a loopback host); a header named twice
 * in another case, or more than {@link maxMcpHeaders} headers; an `approval.by` that is no human
 * of the team, or one that shares no edge with the agent; an approval tool that is no team tool,
 * a team tool while `team` is not true, a `SERVER.TOOL` whose server is none of `mcp` or whose
 * tool is not in that server's `allow`. Input: the team and its index. Raises nothing.
 */
export function checkAgentTools(team: TeamDefinition, teamIndex: number, problems: PathProblem[]): void {
  team.agents.forEach((agent, i) => {
    if (agent.tools === undefined) return;
    const at = (...rest: PathSegment[]): PathSegment[] => ['teams', teamIndex, 'agents', i, 'tools', ...rest];
    // A remote A2A agent's tools are refused by checkRemoteAgents (a2a-semantics.ts), with its own reason.
    if (agent.provider === undefined && agent.a2a === undefined) {
      problems.push({ path: at(), target: 'key', message: 'only an agent with a provider calls tools; an agent without one is external and acts over MCP with its own tools (add provider: …, or remove tools)' });
    }
    checkServers(agent, at, problems);
    checkApproval(team, agent, at, problems);
  });
}

/** Server names unique, URLs https (or http on a loopback host), headers unique without regard to case. */
function checkServers(agent: AgentDefinition, at: (...rest: PathSegment[]) => PathSegment[], problems: PathProblem[]): void {
  const first = new Map<string, number>();
  (agent.tools?.mcp ?? []).forEach((server, s) => {
    const seen = first.get(server.name);
    if (seen !== undefined) problems.push({ path: at('mcp', s, 'name'), target: 'value', message: `duplicate MCP server name ${JSON.stringify(server.name)} (first used by mcp[${seen}])` });
    else first.set(server.name, s);
    if (server.url.startsWith('http:') && !isLoopbackUrl(server.url)) {
      problems.push({
        path: at('mcp', s, 'url'),
        target: 'value',
        message: 'must be https: plain http is accepted only for a loopback host (localhost, 127.0.0.0/8, ::1), for development, with a server run with --webhook-allow-private',
      });
    }
    const headers = Object.keys(server.headers ?? {});
    if (headers.length > maxMcpHeaders) problems.push({ path: at('mcp', s, 'headers'), target: 'key', message: `at most ${maxMcpHeaders} headers per server, got ${headers.length}` });
    const byLowerCase = new Map<string, string>();
    for (const header of headers) {
      const other = byLowerCase.get(header.toLowerCase());
      if (other !== undefined) {
        problems.push({ path: at('mcp', s, 'headers', header), target: 'key', message: `header ${JSON.stringify(header)} is named twice (also as ${JSON.stringify(other)}; header names are case-insensitive)` });
      } else {
        byLowerCase.set(header.toLowerCase(), header);
      }
    }
  });
}

/** `approval.by` is a human of the team on an edge with the agent; each approval tool is one the agent has. */
function checkApproval(team: TeamDefinition, agent: AgentDefinition, at: (...rest: PathSegment[]) => PathSegment[], problems: PathProblem[]): void {
  const approval = agent.tools?.approval;
  if (!approval) return;
  const humans = team.humans.map((h) => h.name);
  const by = approval.by;
  if (!humans.includes(by)) {
    const isAgent = team.agents.some((a) => a.name === by);
    problems.push({
      path: at('approval', 'by'),
      target: 'value',
      message: isAgent
        ? `${JSON.stringify(by)} is an agent: approvals are given by a human of team ${team.name}${suggestion(by, humans)}`
        : `unknown human ${JSON.stringify(by)} in team ${team.name}${suggestion(by, humans)}`,
    });
  } else if (!team.edges.some(([a, b]) => (a === by && b === agent.name) || (a === agent.name && b === by))) {
    problems.push({
      path: at('approval', 'by'),
      target: 'value',
      message: `human ${JSON.stringify(by)} shares no edge with agent ${JSON.stringify(agent.name)}: approvals are asked in a thread on their edge (add [${by}, ${agent.name}] to edges)`,
    });
  }
  const servers = agent.tools?.mcp ?? [];
  approval.tools.forEach((ref, k) => {
    const path = at('approval', 'tools', k);
    const dot = ref.indexOf('.');
    if (dot < 0) {
      if (!TEAM_TOOLS.includes(ref)) {
        problems.push({ path, target: 'value', message: `unknown team tool ${JSON.stringify(ref)}${suggestion(ref, TEAM_TOOLS)}; a remote server's tool is SERVER.TOOL` });
      } else if (agent.tools?.team !== true) {
        problems.push({ path, target: 'value', message: `${ref} is a team tool, and the agent has no team tools (set team: true under tools)` });
      }
      return;
    }
    const serverName = ref.slice(0, dot);
    const toolName = ref.slice(dot + 1);
    const server = servers.find((s) => s.name === serverName);
    if (!server) {
      const names = servers.map((s) => s.name);
      const hint = names.length === 0 ? ' (the agent has no MCP servers)' : suggestion(serverName, names);
      problems.push({ path, target: 'value', offset: 0, message: `${JSON.stringify(serverName)} is none of the agent's MCP servers${hint}` });
    } else if (server.allow && !server.allow.includes(toolName)) {
      problems.push({ path, target: 'value', offset: dot + 1, message: `${JSON.stringify(toolName)} is not among the tools allowed on ${serverName}${suggestion(toolName, server.allow)}` });
    }
  });
}

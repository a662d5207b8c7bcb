/**
 * The Agent Card of an agent of a team (contract §12; A2A v1.0 §8, "Agent Discovery: The Agent
 * Card"): who it is (its name, the first line of its instructions), what it can do (skills from
 * its definition: its conversation, its team tools, its remote MCP servers), where it answers (the
 * JSON-RPC and HTTP+JSON bindings at one URL, each at A2A 1.0 and at 0.3 through the SDK's
 * compatibility layer) and how a caller authenticates (an MCP key in `x-api-key`).
 *
 * Built with `@a2a-js/sdk`'s own types and its `duplicateInterfacesForLegacy`. Loaded with the
 * rest of the A2A server at the first A2A request (routes.ts), not when the server starts.
 */
import type { AgentCard, AgentInterface, AgentSkill } from '@a2a-js/sdk';
import { duplicateInterfacesForLegacy } from '@a2a-js/sdk/compat/v0_3';
import type { Agent } from '../../api/schemas.ts';
import { VERSION } from '../../api/version.ts';
import { agentA2aUrl } from '../../api/a2a.ts';

/** The name of the security scheme the card declares (an MCP key in the `x-api-key` header). */
export const mcpKeySchemeName = 'mcpKey';

/** The first non-empty line of `text`, trimmed (at most 300 characters), or `''`. */
export function firstLine(text: string): string {
  const line = text.split(/\r?\n/).find((l) => l.trim() !== '') ?? '';
  const trimmed = line.trim();
  return trimmed.length > 300 ? `${trimmed.slice(0, 299)}…` : trimmed;
}

/**
 * An agent's skills (A2A v1.0 §4.4.5, AgentSkill), from its definition: `conversation` (what every
 * agent does: takes a task, answers it), `team` when it has the team tools (it asks its teammates
 * over its edges and waits for their answers), and `mcp:<server>` for each remote MCP server it
 * may call, tagged with the tools it is allowed (the server's URL and headers stay private).
 */
export function agentSkills(agent: Agent): AgentSkill[] {
  const summary = agent.description.trim() || firstLine(agent.instructions) || `Agent ${agent.name}`;
  const skill = (id: string, name: string, description: string, tags: string[]): AgentSkill => ({
    id,
    name,
    description,
    tags,
    examples: [],
    inputModes: [],
    outputModes: [],
    securityRequirements: [],
  });
  const skills = [
    skill(
      'conversation',
      agent.name,
      agent.provider === null
        ? `${summary} (an external agent: a task waits until it answers through the MCP endpoint)`
        : summary,
      [agent.provider ?? 'external', ...(agent.model ? [agent.model] : [])],
    ),
  ];
  const tools = agent.tools;
  if (tools?.team) {
    skills.push(
      skill('team', 'Delegation over its edges', 'Asks the agents and people it shares an edge with and waits for their answers (ask); reads and writes its threads.', ['team', 'ask']),
    );
  }
  for (const server of tools?.mcp ?? []) {
    const allowed = server.allow ?? [];
    skills.push(
      skill(
        `mcp:${server.name}`,
        `Tools of ${server.name}`,
        `Calls the tools of the remote MCP server ${server.name}${allowed.length > 0 ? `: ${allowed.join(', ')}` : ''}.`,
        ['mcp', ...allowed],
      ),
    );
  }
  return skills;
}

/**
 * The bindings the agent answers, all at its one URL: JSON-RPC (POST to the URL itself) and
 * HTTP+JSON (`{url}/message:send`, `{url}/tasks/{id}`, …, as the SDK lays them out), each
 * declared at A2A 1.0 and, through the SDK's `duplicateInterfacesForLegacy`, at 0.3.
 */
export function agentInterfaces(url: string): AgentInterface[] {
  const bindings = ['JSONRPC', 'HTTP+JSON'];
  return duplicateInterfacesForLegacy(
    bindings.map((protocolBinding) => ({ url, protocolBinding, tenant: '', protocolVersion: '1.0' })),
    bindings,
  );
}

/**
 * The Agent Card of `agent` served at `publicUrl` (contract §12): name; description from the
 * first line of its instructions (else its description); the JSON-RPC and HTTP+JSON interfaces
 * at 1.0 and 0.3; `capabilities.streaming` and `pushNotifications` true (push-configs.ts); one security scheme,
 * an API key in the `x-api-key` header (the MCP key of an agent that shares an edge with this
 * one), required for every call; text and JSON in and out; skills from {@link agentSkills}.
 */
export function buildAgentCard(agent: Agent, publicUrl: string): AgentCard {
  const url = agentA2aUrl(publicUrl, agent.agent_id);
  return {
    name: agent.name,
    description: firstLine(agent.instructions) || agent.description.trim() || `Agent ${agent.name}`,
    supportedInterfaces: agentInterfaces(url),
    provider: { organization: 'acs-server', url: publicUrl.replace(/\/+$/, '') },
    version: VERSION,
    capabilities: { streaming: true, pushNotifications: true, extensions: [], extendedAgentCard: false },
    securitySchemes: {
      [mcpKeySchemeName]: {
        scheme: {
          $case: 'apiKeySecurityScheme',
          value: {
            name: 'x-api-key',
            location: 'header',
            description: 'The MCP key of an agent of the same team that shares an edge with this agent (teamctl mcp config creates one).',
          },
        },
      },
    },
    securityRequirements: [{ schemes: { [mcpKeySchemeName]: { list: [] } } }],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: agentSkills(agent),
    signatures: [],
  };
}

/**
 * The YAML form of an agent's `tools` (contract §11): what the agent may call — the team tools,
 * remote MCP servers, and the tools that need a person's approval.
 *
 * Keys are the definition's camelCase (`askTimeout`, `toolTimeout`), timeouts are durations
 * (`24h`, `60s`: `durations.ts`) of whole seconds, and the values of a server's `headers` are
 * secret templates (`Bearer ${env:TRACKER_TOKEN}`: `secrets.ts`), never secrets. The pieces
 * that are the same on the wire (server and tool names, URLs, header names, `approval`) are the
 * wire's own schemas (`api/agent-tools.ts`), so a file that validates here is not refused by the
 * service for their form. Rules across keys (approval names, duplicate servers, http URLs, a
 * provider) are in `semantics.ts`; the mapping to the wire is `plan/desired.ts`.
 */
import { z } from 'zod';
import {
  defaultAskTimeoutSeconds,
  defaultToolTimeoutSeconds,
  HeaderName,
  maxAskTimeoutSeconds,
  maxMcpServers,
  maxToolTimeoutSeconds,
  McpServerName,
  McpServerUrl,
  McpToolName,
  ToolApproval,
} from '../api/agent-tools.ts';
import { durationSeconds, formatSeconds } from './durations.ts';
import { secretTemplateSchema } from './secrets.ts';

/**
 * A duration of whole seconds between `min` and `max` seconds, written with a unit (`24h`, `90s`).
 * The messages say what is allowed and never quote the value.
 */
function durationSchema(min: number, max: number, example: string, description: string) {
  const bounds = `from ${formatSeconds(min)} to ${formatSeconds(max)}`;
  return z
    .string()
    .superRefine((text, ctx) => {
      const seconds = durationSeconds(text);
      if (seconds === undefined) {
        ctx.addIssue({ code: 'custom', message: `must be a duration of whole seconds with a unit, such as 24h, 30m or 90s (${bounds})` });
      } else if (seconds < min || seconds > max) {
        ctx.addIssue({ code: 'custom', message: `must be ${bounds}, got ${formatSeconds(seconds)}` });
      }
    })
    .meta({ examples: [example] })
    .describe(description);
}

/** A remote MCP server of an agent, as a definition writes it. */
export const McpServerDefinitionSchema = z
  .strictObject({
    name: McpServerName.describe('The server\'s name among the agent\'s servers: SERVER in SERVER.TOOL of approvals, `server` in tool-call records'),
    url: McpServerUrl.describe(
      'The server\'s Streamable HTTP endpoint: https (plain http only for a loopback host — localhost, 127.0.0.0/8, ::1 — with a server run with --webhook-allow-private, which it needs for private addresses too)',
    ),
    headers: z
      .record(HeaderName, secretTemplateSchema())
      .optional()
      .describe('Headers sent with every request to the server, e.g. Authorization: Bearer ${env:TRACKER_TOKEN}; each value holds at least one ${env:NAME} reference, resolved only when apply sets it'),
    allow: z
      .array(McpToolName)
      .min(1, 'must not be empty: leave allow out to allow every tool the server lists')
      .max(200, 'must name at most 200 tools')
      .refine((tools) => new Set(tools).size === tools.length, 'must not name a tool twice')
      .optional()
      .meta({ uniqueItems: true })
      .describe('The tools of this server the agent may call; left out: every tool its tools/list gives'),
  })
  .describe('A remote MCP server whose tools the agent may call (Streamable HTTP)');
export type McpServerDefinition = z.infer<typeof McpServerDefinitionSchema>;

/**
 * `approval`: the wire's own schema (`ToolApproval`: `by` trimmed, 1–100 characters; 1–50 tools,
 * each `SERVER.TOOL` or a team tool's name, none twice), with descriptions for the file's reference.
 */
const Approval = ToolApproval.extend({
  by: ToolApproval.shape.by.describe('The name of a human of the team who approves, on an edge with the agent: asked in a thread on that edge, with the tool and its arguments'),
  tools: ToolApproval.shape.tools.describe('The tools that need approval: a remote server\'s SERVER.TOOL (tracker.create_issue), or a team tool\'s name (send_message, ask, …; with team: true)'),
}).describe('Before calling one of `tools`, the turn asks `by` to approve or reject (a typed reply: decision approve or reject, and a comment); reject is a tool error the model sees');

/** An agent's `tools`, as a definition writes it. */
export const AgentToolsDefinitionSchema = z
  .strictObject({
    team: z
      .boolean()
      .optional()
      .describe('The team tools — whoami, list_edges, list_threads, read_thread, send_message, open_thread and ask — each limited to the agent\'s edges (default false)'),
    askTimeout: durationSchema(
      1,
      maxAskTimeoutSeconds,
      '24h',
      `How long an ask or an approval waits for its answer before the model is told it timed out: a duration of whole seconds (default 24h, i.e. ${defaultAskTimeoutSeconds} s; at most 30d)`,
    ).optional(),
    toolTimeout: durationSchema(
      1,
      maxToolTimeoutSeconds,
      '60s',
      `How long one call of a remote tool may take: a duration of whole seconds (default ${defaultToolTimeoutSeconds}s, from 1s to ${maxToolTimeoutSeconds}s)`,
    ).optional(),
    mcp: z.array(McpServerDefinitionSchema).max(maxMcpServers, `must name at most ${maxMcpServers} servers`).optional().describe(`Remote MCP servers whose tools the agent may call (at most ${maxMcpServers})`),
    approval: Approval.optional(),
  })
  .describe('What the agent may call; only an agent with a provider calls tools. Left out: nothing, the agent answers each message with one completion');
export type AgentToolsDefinition = z.infer<typeof AgentToolsDefinitionSchema>;

/**
 * The MCP server of one request (contract §7). The endpoint is stateless (no session): every
 * HTTP request gets a fresh server for the agent its key names, as the SDK's stateless examples
 * do, so no state is shared between requests, clients or processes.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { registerAgentTools, type ToolContext } from './tools.ts';

/** Name and version the server reports at `initialize`. */
export const mcpServerInfo = { name: 'acs-server', title: 'Agent Collaboration Service', version: '1.0.0' } as const;

// Told to the client at `initialize`; clients pass it on to their model.
const instructions = [
  'You take part in a team of the Agent Collaboration Service as one agent (whoami says which).',
  'You talk with the participants your edges join you to (list_edges), in threads of messages on those edges.',
  'To follow conversations, call wait_for_messages in a loop: it returns your unread messages (and marks them read), waiting up to timeout_seconds for new ones.',
  'Answer with send_message on the message\'s thread_id; start a new conversation with open_thread on an edge; read_thread pages through a whole thread.',
  'Tasks asked of you (list_tasks, get_task) are conversations too: work on them in their thread, say how they stand with update_task and hand in results with add_artifact.',
].join(' ');

// The SDK server's JSON Schema validator (for elicitation, which this server never asks for) is
// an Ajv instance that costs as much to build as the rest of a request's server: one per process.
const jsonSchemaValidator = new AjvJsonSchemaValidator();

/**
 * Creates the MCP server for one request: server info, instructions, and the tools bound to the
 * request's agent (tools.ts). Input: what the tools act with. Output: an unconnected server.
 */
export function createAgentMcpServer(context: ToolContext): McpServer {
  const server = new McpServer(mcpServerInfo, { capabilities: { tools: {} }, instructions, jsonSchemaValidator });
  registerAgentTools(server, context);
  return server;
}

/**
 * The seven tools of the MCP endpoint (contract §7), each a thin wrapper over one operation of
 * `domain/agent-inbox.ts` for the agent the MCP key names. Arguments and results are the Zod
 * schemas of `api/mcp-tools.ts` (derived from the REST schemas); the SDK validates arguments
 * against them before a handler runs and results after. A failure is an MCP tool error
 * (`isError: true`, a JSON-RPC result, not a JSON-RPC error) whose text starts with the stable
 * code of the error catalogue: `not_found: …`, `invalid_cursor: …`, `unknown_reference: …`.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import {
  ListEdgesArgs,
  ListEdgesResult,
  ListThreadsArgs,
  ListThreadsResult,
  McpToolNames,
  OpenThreadArgs,
  OpenThreadResult,
  ReadThreadArgs,
  ReadThreadResult,
  SendMessageArgs,
  SendMessageResult,
  WaitForMessagesArgs,
  WaitForMessagesResult,
  WhoamiArgs,
  WhoamiResult,
} from '../../api/mcp-tools.ts';
import type { DomainDeps } from '../domain/caller.ts';
import {
  listAgentEdges,
  listAgentThreads,
  openAgentThread,
  readAgentThread,
  sendAgentMessage,
  waitForAgentMessages,
  whoami,
  type AgentIdentity,
} from '../domain/agent-inbox.ts';
import { toProblem } from '../http/problem.ts';

/** What the tools of one MCP request act with. */
export interface ToolContext {
  deps: DomainDeps;
  /** The agent the request's MCP key is bound to. */
  agent: AgentIdentity;
  /** Aborted when the HTTP client goes away or the server stops: ends `wait_for_messages` early. */
  signal: AbortSignal;
  /** The request's logger: unexpected errors are logged there (never a key, never arguments). */
  log: FastifyBaseLogger;
  /** The request id, named in the text of an unexpected error so an operator can find its log line. */
  requestId: string;
}

/** A successful result: the value as `structuredContent`, and as JSON text for clients that only read `content`. */
function result(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value };
}

/**
 * A tool error (contract §7): `<code>: <detail>` as text. Errors of the catalogue keep their code
 * and message; anything else is `internal` (logged with the request id) or `unavailable`, with
 * no detail that could reveal internals.
 */
function toolError(error: unknown, context: ToolContext): CallToolResult {
  const { problem, unexpected } = toProblem(error, context.requestId);
  if (unexpected) context.log.error({ err: error }, 'unexpected error in an MCP tool');
  const suffix = unexpected ? ` (request ${context.requestId})` : '';
  return { isError: true, content: [{ type: 'text', text: `${problem.code}: ${problem.detail}${suffix}` }] };
}

// The tool calls of one request (a JSON-RPC batch) run one after another. Run together, a batch of
// 100 send_message calls was 100 statements queued at once for the process's database connections,
// ahead of every other client's requests (issue 21, the soak's hostile client); one after another
// it takes one connection at a time, as one request should.
const lanes = new WeakMap<ToolContext, Promise<unknown>>();

/**
 * Runs a tool's `operation` for the request of `context` and turns its outcome into a tool result
 * (errors as `isError` results, never thrown). Unless `alongside` (a wait, which would hold the
 * rest of its batch for up to 30 s), it runs after the request's previous tool calls have ended.
 */
async function run(context: ToolContext, operation: () => Promise<Record<string, unknown>>, { alongside = false } = {}): Promise<CallToolResult> {
  const attempt = async () => {
    try {
      return result(await operation());
    } catch (error) {
      return toolError(error, context);
    }
  };
  if (alongside) return attempt();
  const turn = (lanes.get(context) ?? Promise.resolve()).then(attempt);
  lanes.set(context, turn);
  return turn;
}

// Where a tool's description says "your", it means the agent the MCP key is bound to.
const onlyYours = 'A thread or edge you are not on is reported as not found, like an id that does not exist.';

/**
 * Registers the seven tools on `server` for the agent of `context` (contract §7): `whoami`,
 * `list_edges`, `list_threads`, `read_thread`, `send_message`, `open_thread`, `wait_for_messages`.
 */
export function registerAgentTools(server: McpServer, context: ToolContext): void {
  const { deps, agent } = context;
  const readOnly = { readOnlyHint: true, openWorldHint: false } as const;

  server.registerTool(
    McpToolNames.whoami,
    {
      title: 'Who am I',
      description: 'Your agent record (name, instructions, status…) and the ids and names of your team and organization.',
      inputSchema: WhoamiArgs,
      outputSchema: WhoamiResult,
      annotations: readOnly,
    },
    () => run(context, () => whoami(deps, agent)),
  );

  server.registerTool(
    McpToolNames.list_edges,
    {
      title: 'List my edges',
      description: 'Your edges, oldest first: the participants you can talk to, each with its id, kind (agent or human) and name. Threads live on edges.',
      inputSchema: ListEdgesArgs,
      outputSchema: ListEdgesResult,
      annotations: readOnly,
    },
    () => run(context, async () => ({ edges: await listAgentEdges(deps, agent) })),
  );

  server.registerTool(
    McpToolNames.list_threads,
    {
      title: 'List my threads',
      description: `Threads on your edges (or on one edge), newest first, each with your own unread_count. ${onlyYours}`,
      inputSchema: ListThreadsArgs,
      outputSchema: ListThreadsResult,
      annotations: readOnly,
    },
    (args) => run(context, () => listAgentThreads(deps, agent, args)),
  );

  server.registerTool(
    McpToolNames.read_thread,
    {
      title: 'Read a thread',
      description:
        'A page of one of your threads: up to limit messages after the message id after (from the start without it), oldest first, ' +
        'with has_more and next_after (pass it as after to read on). Marks the returned messages read for you; unread_count is yours after this read. ' +
        onlyYours,
      inputSchema: ReadThreadArgs,
      outputSchema: ReadThreadResult,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    (args) => run(context, () => readAgentThread(deps, agent, args)),
  );

  server.registerTool(
    McpToolNames.send_message,
    {
      title: 'Send a message',
      description: `Appends a message from you to one of your threads and returns it. ${onlyYours} Nothing is written then.`,
      inputSchema: SendMessageArgs,
      outputSchema: SendMessageResult,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (args) => run(context, () => sendAgentMessage(deps, agent, args)),
  );

  server.registerTool(
    McpToolNames.open_thread,
    {
      title: 'Open a thread',
      description: `Opens a new thread on one of your edges with a first message from you (subject and channel optional; channel defaults to web) and returns it. ${onlyYours} Nothing is written then.`,
      inputSchema: OpenThreadArgs,
      outputSchema: OpenThreadResult,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (args) => run(context, () => openAgentThread(deps, agent, args)),
  );

  server.registerTool(
    McpToolNames.wait_for_messages,
    {
      title: 'Wait for messages',
      description:
        'Your unread messages from your peers, on one thread or on all your threads, oldest first: at once when there are any, ' +
        'otherwise the first ones that arrive within timeout_seconds (0–30), otherwise none. Returned messages are marked read for you. ' +
        `Call it again (it does not busy-wait) to keep listening. ${onlyYours}`,
      inputSchema: WaitForMessagesArgs,
      outputSchema: WaitForMessagesResult,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (args, extra) => run(context, () => waitForAgentMessages(deps, agent, args, AbortSignal.any([context.signal, extra.signal])), { alongside: true }),
  );
}

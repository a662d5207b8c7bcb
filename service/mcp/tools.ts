/**
 * The tools of the MCP endpoint (contract §7, and the task tools of §12), each the one
 * implementation of `tools/team-tools.ts` (over `domain/agent-inbox.ts`) or `tools/task-tools.ts`
 * (over `domain/tasks.ts`) for the agent the MCP key names. Arguments
 * and results are the Zod schemas of `api/mcp-tools.ts` (derived from the REST schemas); the SDK
 * validates arguments against them before a handler runs and results after. A failure is an MCP tool error
 * (`isError: true`, a JSON-RPC result, not a JSON-RPC error) whose text starts with the stable
 * code of the error catalogue: `not_found: …`, `invalid_cursor: …`, `unknown_reference: …`.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import type { AgentIdentity } from '../domain/agent-inbox.ts';
import type { DomainDeps } from '../domain/caller.ts';
import { taskTools } from '../tools/task-tools.ts';
import { teamTools } from '../tools/team-tools.ts';
import { followReplyProgress } from './progress.ts';

/** What the SDK hands a tool handler besides its arguments, as far as the tools use it. */
interface ToolCallExtra {
  signal: AbortSignal;
  _meta?: { progressToken?: string | number } | undefined;
  sendNotification(notification: { method: 'notifications/progress'; params: { progressToken: string | number; progress: number; message?: string } }): Promise<void>;
}
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

/**
 * Registers the seven tools of contract §7 on `server` for the agent of `context`: `whoami`,
 * `list_edges`, `list_threads`, `read_thread`, `send_message`, `open_thread`, `wait_for_messages`,
 * each the one implementation of tools/team-tools.ts (which provider agents' turns call too), and
 * the task tools of §12 (`list_tasks`, `get_task`, `update_task`, `add_artifact`: tools/task-tools.ts).
 */
export function registerAgentTools(server: McpServer, context: ToolContext): void {
  const { deps, agent } = context;
  for (const tool of [...teamTools, ...taskTools]) {
    server.registerTool(
      tool.name,
      { title: tool.title, description: tool.description, inputSchema: tool.input, outputSchema: tool.output, annotations: tool.annotations },
      (args: Record<string, unknown>, extra: ToolCallExtra) =>
        run(
          context,
          async () => {
            const signal = tool.holdsWait ? AbortSignal.any([context.signal, extra.signal]) : context.signal;
            // A wait whose caller sent a progress token is told of replies being written meanwhile (§13).
            const token = extra._meta?.progressToken;
            const stopProgress =
              tool.holdsWait && token !== undefined
                ? await followReplyProgress(deps, agent, typeof args['thread_id'] === 'string' ? args['thread_id'] : undefined, (progress, message) => {
                    void extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress, message } }).catch(() => {});
                  })
                : () => {};
            try {
              return await tool.run({ deps, agent, signal }, args);
            } finally {
              stopProgress();
            }
          },
          { alongside: tool.holdsWait === true },
        ),
    );
  }
}

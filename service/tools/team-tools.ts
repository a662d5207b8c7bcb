/**
 * The team tools (contract §7, §11): what an agent may do in its team — who am I, my edges, my
 * threads, read, write, open a thread, wait — each one implementation over `domain/agent-inbox.ts`,
 * scoped to the agent's own edges there. Two thin callers use them: the MCP endpoint (external
 * agents, `mcp/tools.ts`) and the turns of provider agents (`agent-loop/turns/`), which offer them
 * with `ask` (tools/ask.ts) to the model. Arguments and results are the Zod schemas of
 * `api/mcp-tools.ts`.
 */
import type { z } from 'zod';
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
import type { DomainDeps } from '../domain/caller.ts';

/** What a team tool acts with: the domain, the agent it acts as, and what ends a wait early. */
export interface TeamToolContext {
  deps: DomainDeps;
  /** The agent: fixed by the MCP key, or the agent whose turn runs. */
  agent: AgentIdentity;
  /** Aborted when the caller goes away or the server stops. */
  signal: AbortSignal;
}

/** MCP's tool annotations (hints to clients). */
export interface ToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** One team tool: its name, what a model or client is told, its schemas, and what it does. */
export interface TeamTool<I extends z.ZodObject = z.ZodObject, O extends z.ZodObject = z.ZodObject> {
  name: string;
  title: string;
  description: string;
  input: I;
  output: O;
  annotations: ToolAnnotations;
  /** Holds a wait of up to 30 s (wait_for_messages): MCP runs it beside the rest of a batch, and turns do not offer it. */
  holdsWait?: boolean;
  /**
   * Runs the tool for `context.agent` with validated arguments. Output: the structured result.
   * Errors: the domain's `ServiceError`s — `not_found` for a thread or edge the agent is not on
   * (worded as for an unknown id), `invalid_cursor`, `unknown_reference`, `invalid_api_key`.
   */
  run(context: TeamToolContext, args: z.output<I>): Promise<Record<string, unknown>>;
}

// Where a tool's description says "your", it means the agent acting.
const onlyYours = 'A thread or edge you are not on is refused, worded as for an id that does not exist.';
const readOnly = { readOnlyHint: true, openWorldHint: false } as const;

/** Defines a tool with its argument type checked against its schema. */
function define<I extends z.ZodObject, O extends z.ZodObject>(tool: TeamTool<I, O>): TeamTool {
  return tool as unknown as TeamTool;
}

/** The seven tools of contract §7, in its order. */
export const teamTools: readonly TeamTool[] = [
  define({
    name: McpToolNames.whoami,
    title: 'Who am I',
    description: 'Your agent record (name, instructions, status…) and the ids and names of your team and organization.',
    input: WhoamiArgs,
    output: WhoamiResult,
    annotations: readOnly,
    run: ({ deps, agent }) => whoami(deps, agent),
  }),
  define({
    name: McpToolNames.list_edges,
    title: 'List my edges',
    description: 'Your edges, oldest first: the participants you can talk to, each with its id, kind (agent or human) and name. Threads live on edges.',
    input: ListEdgesArgs,
    output: ListEdgesResult,
    annotations: readOnly,
    run: async ({ deps, agent }) => ({ edges: await listAgentEdges(deps, agent) }),
  }),
  define({
    name: McpToolNames.list_threads,
    title: 'List my threads',
    description: `Threads on your edges (or on one edge), newest first, each with your own unread_count. ${onlyYours}`,
    input: ListThreadsArgs,
    output: ListThreadsResult,
    annotations: readOnly,
    run: ({ deps, agent }, args) => listAgentThreads(deps, agent, args),
  }),
  define({
    name: McpToolNames.read_thread,
    title: 'Read a thread',
    description:
      'A page of one of your threads: up to limit messages after the message id after (from the start without it), oldest first, ' +
      'with has_more and next_after (pass it as after to read on). Marks the returned messages read for you; unread_count is yours after this read. ' +
      onlyYours,
    input: ReadThreadArgs,
    output: ReadThreadResult,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    run: ({ deps, agent }, args) => readAgentThread(deps, agent, args),
  }),
  define({
    name: McpToolNames.send_message,
    title: 'Send a message',
    description: `Appends a message from you to one of your threads and returns it. ${onlyYours} Nothing is written then.`,
    input: SendMessageArgs,
    output: SendMessageResult,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    run: ({ deps, agent }, args) => sendAgentMessage(deps, agent, args),
  }),
  define({
    name: McpToolNames.open_thread,
    title: 'Open a thread',
    description: `Opens a new thread on one of your edges with a first message from you (subject and channel optional; channel defaults to web) and returns it. ${onlyYours} Nothing is written then.`,
    input: OpenThreadArgs,
    output: OpenThreadResult,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    run: ({ deps, agent }, args) => openAgentThread(deps, agent, args),
  }),
  define({
    name: McpToolNames.wait_for_messages,
    title: 'Wait for messages',
    description:
      'Your unread messages from your peers, on one thread or on all your threads, oldest first: at once when there are any, ' +
      'otherwise the first ones that arrive within timeout_seconds (0–30), otherwise none. Returned messages are marked read for you. ' +
      `Call it again (it does not busy-wait) to keep listening. ${onlyYours}`,
    input: WaitForMessagesArgs,
    output: WaitForMessagesResult,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    holdsWait: true,
    run: ({ deps, agent, signal }, args) => waitForAgentMessages(deps, agent, args, signal),
  }),
];

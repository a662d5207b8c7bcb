/**
 * Zod schemas of the MCP endpoint's tools (contract §7, and the task tools of §12): the arguments
 * each tool takes and the `structuredContent` it returns. They are derived from the REST schemas
 * of `schemas.ts` and `tasks.ts` (bodies, query, resources), so a tool accepts exactly what the matching REST route accepts,
 * minus what the MCP key already says (the sender is always the key's agent), and returns the
 * same resources. The server registers them as the tools' input and output schemas; the SDK turns
 * them into the JSON Schemas of `tools/list`.
 */
import { z } from 'zod';
import { Agent, AppendMessageBody, Edge, Id, Message, OpenThreadBody, Thread, ThreadPage, ThreadPageQuery } from './schemas.ts';
import { Task, TaskArtifactBody, TaskList, TaskListQuery, TaskStatusBody } from './tasks.ts';

/**
 * A copy of a named object schema for the root of a tool's output schema. MCP wants an object
 * schema there (`"type": "object"`); a schema named with `.meta({ id })` would be written as a
 * `$ref` to its definition instead. Nested named schemas stay references, which is fine.
 */
function atRoot<T extends z.ZodObject>(schema: T): T {
  return schema.extend({}) as T;
}

// ---- arguments ------------------------------------------------------------------------------

/** `whoami`: no arguments. */
export const WhoamiArgs = z.strictObject({});

/** `list_edges`: no arguments. */
export const ListEdgesArgs = z.strictObject({});

/** `list_threads`: optionally one edge of the agent's, optionally only threads with unread messages. */
export const ListThreadsArgs = z.strictObject({
  edge_id: Id.optional().describe('Only the threads of this edge (one of yours; see list_edges).'),
  unread_only: z.boolean().default(false).describe('Only threads with messages you have not read.'),
});

/** `read_thread`: a thread page as `GET /threads/{thread_id}` gives it (contract §5), without the long poll. */
export const ReadThreadArgs = ThreadPageQuery.pick({ after: true, limit: true }).extend({
  thread_id: Id.describe('The thread (one on your edges; see list_threads).'),
});

/** `send_message`: `POST /threads/{thread_id}/messages` with the agent as sender. */
export const SendMessageArgs = AppendMessageBody.omit({ sender_agent_id: true }).extend({
  thread_id: Id.describe('The thread to write to (one on your edges).'),
});

/** `open_thread`: `POST /edges/{edge_id}/threads` with the agent as sender. */
export const OpenThreadArgs = OpenThreadBody.omit({ sender_agent_id: true }).extend({
  edge_id: Id.describe('The edge to open the thread on (one of yours; see list_edges).'),
});

/**
 * `wait_for_messages`: how long to wait (the long poll's bound, 0–30 seconds), optionally on one
 * thread, and how many messages to return at most (the page size of `read_thread`).
 */
export const WaitForMessagesArgs = z.strictObject({
  timeout_seconds: ThreadPageQuery.shape.wait.unwrap().describe('How long to wait for a message when none is unread, 0–30 seconds.'),
  thread_id: Id.optional().describe('Wait on this thread only (one on your edges); default: every thread on your edges.'),
  limit: ThreadPageQuery.shape.limit.describe('The most messages to return (1–200, default 50); has_more tells when more are unread.'),
});

/**
 * `list_tasks` (contract §12): the tasks the agent asked for or is asked to do, newest first, as
 * `GET /teams/{team_id}/tasks` filters and pages them, by `role` and the other participant
 * (`peer_id`) rather than by assignee.
 */
export const ListTasksArgs = TaskListQuery.omit({ assignee_id: true }).extend({
  role: z.enum(['requester', 'assignee']).optional().describe('Only the tasks you asked for (requester) or are asked to do (assignee).'),
  peer_id: Id.optional().describe('Only the tasks with this participant at the other end (see list_edges).'),
});

/** `get_task`: one of the agent's tasks. */
export const GetTaskArgs = z.strictObject({ task_id: Id.describe('The task (one you asked for or are asked to do; see list_tasks).') });

/**
 * `update_task`: `POST /tasks/{task_id}/status` as the assignee; the requester may only cancel
 * (`state: canceled`), as `POST /tasks/{task_id}/cancel` does.
 */
export const UpdateTaskArgs = TaskStatusBody.extend({
  task_id: Id.describe('The task (one of yours; see list_tasks).'),
});

/** `add_artifact`: `POST /tasks/{task_id}/artifacts` as the assignee. */
export const AddArtifactArgs = TaskArtifactBody.extend({
  task_id: Id.describe('The task you are asked to do.'),
});

// ---- results --------------------------------------------------------------------------------

/** The two kinds of participant an edge joins. */
export const PeerKind = z.enum(['agent', 'human']);

/** An edge of the agent, with who is at its other end. */
export const AgentEdge = Edge.extend({
  peer: z.object({ participant_id: Id, kind: PeerKind, name: z.string() }),
});
export type AgentEdge = z.infer<typeof AgentEdge>;

/** `whoami`: the agent, its team and its organization. */
export const WhoamiResult = z.object({
  agent: Agent,
  team_id: Id,
  team_name: z.string(),
  org_id: Id,
  org_name: z.string(),
});
export type WhoamiResult = z.infer<typeof WhoamiResult>;

/** `list_edges`: the agent's edges, oldest first. */
export const ListEdgesResult = z.object({ edges: z.array(AgentEdge) });
export type ListEdgesResult = z.infer<typeof ListEdgesResult>;

/** `list_threads`: threads on the agent's edges, newest first; `unread_count` is the agent's own. */
export const ListThreadsResult = z.object({ threads: z.array(Thread) });
export type ListThreadsResult = z.infer<typeof ListThreadsResult>;

/** `read_thread`: a thread page (contract §5); `unread_count` is the agent's, after this read. */
export const ReadThreadResult = atRoot(ThreadPage);

/** `send_message`: the message as stored. */
export const SendMessageResult = atRoot(Message);

/** `open_thread`: the new thread (`message_count` 1, `unread_count` 0). */
export const OpenThreadResult = atRoot(Thread);

/** `wait_for_messages`: unread messages from the agent's peers, oldest first, now marked read. */
export const WaitForMessagesResult = z.object({
  messages: z.array(Message),
  has_more: z.boolean(),
});
export type WaitForMessagesResult = z.infer<typeof WaitForMessagesResult>;

/** `list_tasks`: a page of the agent's tasks, newest first; pass `next_after` as `after` to go on. */
export const ListTasksResult = atRoot(TaskList);

/** `get_task`, `update_task`, `add_artifact`: the Task (after the change). */
export const TaskResult = atRoot(Task);

/** The names of the tools (contract §7; the task tools of §12). */
export const McpToolNames = {
  whoami: 'whoami',
  list_edges: 'list_edges',
  list_threads: 'list_threads',
  read_thread: 'read_thread',
  send_message: 'send_message',
  open_thread: 'open_thread',
  wait_for_messages: 'wait_for_messages',
  list_tasks: 'list_tasks',
  get_task: 'get_task',
  update_task: 'update_task',
  add_artifact: 'add_artifact',
} as const;
export type McpToolName = keyof typeof McpToolNames;

/**
 * A JSON-RPC 2.0 message as the OpenAPI document describes the body of `POST /mcp`. The MCP SDK
 * parses the real thing; this is only what the document shows.
 */
export const JsonRpcMessage = z
  .object({
    jsonrpc: z.literal('2.0'),
    id: z.union([z.string(), z.number().int()]).optional().describe('Absent on notifications.'),
    method: z.string().optional().describe('`initialize`, `tools/list`, `tools/call`, `ping`, `notifications/initialized`, …'),
    params: z.record(z.string(), z.unknown()).optional(),
  })
  .loose()
  .meta({ id: 'JsonRpcMessage', description: 'A JSON-RPC 2.0 request or notification of the Model Context Protocol (or an array of them).' });

/** A JSON-RPC 2.0 response, as the OpenAPI document describes the answer of `POST /mcp`. */
export const JsonRpcResponse = z
  .object({
    jsonrpc: z.literal('2.0'),
    id: z.union([z.string(), z.number().int()]).nullable(),
    result: z.record(z.string(), z.unknown()).optional(),
    error: z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }).optional(),
  })
  .loose()
  .meta({ id: 'JsonRpcResponse', description: 'A JSON-RPC 2.0 response (or an array of them, for a batch).' });

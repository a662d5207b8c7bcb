/**
 * Zod schemas of what an agent may call (contract §11): the Agent's `tools` as request bodies take
 * it and as the service returns it, its `max_steps`, and the tool-call records of a turn.
 *
 * The two forms of `tools` differ in one place: a remote MCP server's `headers`. Their values are
 * secrets (a bearer token, say), so a body carries them and the service never returns them: it
 * stores them sealed, as provider keys are, and the Agent shows each header's name with a salted
 * fingerprint of its value (`header_fingerprints`, `api/webhook-fingerprint.ts`), from which nobody
 * recovers the value but by which `teamctl plan` can tell whether the live value is the
 * definition's.
 */
import { z } from 'zod';
import { Id, Timestamp } from './primitives.ts';

/** Default and bounds of `max_steps` (contract §11): model calls of one turn. */
export const defaultMaxSteps = 10;
export const maxMaxSteps = 100;

/** Default and bounds of `ask_timeout_seconds`: how long `ask` and approvals wait (24 h; at most 30 days). */
export const defaultAskTimeoutSeconds = 86_400;
export const maxAskTimeoutSeconds = 30 * 86_400;

/** Default and bounds of `tool_timeout_seconds` (contract §11: 60 s, 1–600). */
export const defaultToolTimeoutSeconds = 60;
export const maxToolTimeoutSeconds = 600;

/** Contract §11's limits of one step and one result. */
export const maxToolCallsPerStep = 32;
export const maxToolResultBytes = 64 * 1024;

/** The most remote MCP servers one agent may name, and headers one server may carry. */
export const maxMcpServers = 10;
export const maxMcpHeaders = 20;

/** The team tools (contract §7's, as an agent sees them, and `ask`): their names as models and approvals name them. */
export const TeamToolNames = {
  whoami: 'whoami',
  list_edges: 'list_edges',
  list_threads: 'list_threads',
  read_thread: 'read_thread',
  send_message: 'send_message',
  open_thread: 'open_thread',
  ask: 'ask',
} as const;
export type TeamToolName = keyof typeof TeamToolNames;
export const TeamToolName = z.enum(TeamToolNames);

/**
 * A remote MCP server's name in an agent's `tools`: what approvals (`tracker.create_issue`) and
 * tool-call records (`server`) call it. Lower case, digits and `-`, no `_` or `.`, so that
 * `SERVER.TOOL` splits at its first dot and the name a model sees (`SERVER__TOOL`) at its first `__`.
 */
export const McpServerName = z
  .string()
  .regex(/^[a-z][a-z0-9-]{0,31}$/, 'must match ^[a-z][a-z0-9-]{0,31}$ (lower case letters, digits and -)')
  .meta({ description: 'Name of the server among the agent\'s servers: `SERVER.TOOL` in approvals, `server` in tool-call records.' });

/** A tool's name as an MCP server lists it (MCP allows 1–128 characters). */
export const McpToolName = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9_.\-/]+$/, 'must be a tool name as MCP servers list them (letters, digits, _ . - /)');

/** An HTTP header's name (RFC 9110 token); headers the MCP transport sets itself are refused. */
export const HeaderName = z
  .string()
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/, 'must be an HTTP header name (RFC 9110 token)')
  .refine((name) => !reservedHeaders.has(name.toLowerCase()), {
    message: 'is set by the MCP transport itself (Host, Content-Type, Content-Length, Accept, Connection, Transfer-Encoding, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID)',
  });
const reservedHeaders = new Set(['host', 'content-type', 'content-length', 'accept', 'connection', 'transfer-encoding', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id', 'te', 'upgrade', 'keep-alive']);

/** A header's value: a secret, 1–8,192 characters, without CR, LF or NUL. */
export const HeaderValue = z
  .string()
  .min(1)
  .max(8192)
  .regex(/^[^\r\n\u0000]*$/, 'must not contain CR, LF or NUL');

const uniqueNames = (items: readonly string[]) => new Set(items).size === items.length;

/**
 * A remote MCP server's URL: http or https, up to 2,048 characters. As webhook URLs (contract §9,
 * §11): https and public unless the server runs with `--webhook-allow-private`.
 */
export const McpServerUrl = z
  .url({ protocol: /^https?$/, normalize: true })
  .max(2048)
  .meta({ pattern: '^[Hh][Tt][Tt][Pp][Ss]?://' })
  .meta({
    description:
      'The server\'s Streamable HTTP endpoint. An https URL whose host resolves to public addresses only, checked when set and at every connection (400 `webhook_url_refused`); a service started with `--webhook-allow-private` also takes http and private addresses.',
  });

/** `allow`: the tools of the server the agent may call; null or absent: every tool its `tools/list` gives. */
const Allow = z
  .array(McpToolName)
  .min(1)
  .max(200)
  .refine(uniqueNames, 'must not name a tool twice')
  .nullable()
  .meta({ uniqueItems: true, description: 'The tools of this server the agent may call (null: every tool its tools/list gives).' });

/** A remote MCP server as a body sets it: with its headers' values. */
export const McpServerBody = z.strictObject({
  name: McpServerName,
  url: McpServerUrl,
  headers: z
    .record(HeaderName, HeaderValue)
    .refine((headers) => Object.keys(headers).length <= maxMcpHeaders, `must have at most ${maxMcpHeaders} headers`)
    .refine((headers) => uniqueNames(Object.keys(headers).map((h) => h.toLowerCase())), 'must not name a header twice (names are case-insensitive)')
    .optional()
    .meta({
      description:
        'Headers sent with every request to the server (secrets: stored encrypted, never returned). Left out in a PATCH: the headers stored for the server of this name are kept; `{}` removes them.',
    }),
  allow: Allow.optional(),
});
export type McpServerBody = z.infer<typeof McpServerBody>;

/** A remote MCP server as the service returns it: each header's name with a fingerprint of its value, never the value. */
export const McpServer = z
  .object({
    name: McpServerName,
    url: z.string(),
    allow: Allow,
    header_fingerprints: z.record(z.string(), z.string()).meta({
      description: 'Each header\'s name and a salted HMAC-SHA256 fingerprint of its value (`hmac-sha256:<salt>:<digest>`); the value itself is never returned.',
    }),
  })
  .meta({ id: 'McpServer' });
export type McpServer = z.infer<typeof McpServer>;

/**
 * A tool an approval names: a team tool (`send_message`, `ask`, …) or `SERVER.TOOL` of one of the
 * agent's MCP servers.
 */
export const ApprovalToolRef = z
  .string()
  .min(1)
  .max(161)
  .regex(/^(?:[a-z_]+|[a-z][a-z0-9-]{0,31}\.[A-Za-z0-9_.\-/]{1,128})$/, 'must be a team tool (send_message, ask, …) or SERVER.TOOL');

/** `approval` (contract §11): the tools that need a person's approval, and who gives it. */
export const ToolApproval = z
  .strictObject({
    by: z
      .string()
      .trim()
      .min(1)
      .max(100)
      .meta({ description: 'The name of a human of the agent\'s team who approves; asked in a thread on their edge with the agent, so they must share one when approval is needed.' }),
    tools: z.array(ApprovalToolRef).min(1).max(50).refine(uniqueNames, 'must not name a tool twice').meta({ uniqueItems: true }),
  })
  .meta({ id: 'ToolApproval', description: 'Before calling one of `tools`, the turn asks `by` to approve or reject (a typed reply `{decision, comment?}`).' });
export type ToolApproval = z.infer<typeof ToolApproval>;

/** What `tools` has in both forms. */
const commonTools = {
  team: z.boolean().meta({ description: 'The team tools: whoami, list_edges, list_threads, read_thread, send_message, open_thread (the MCP endpoint\'s tools) and ask, all limited to the agent\'s edges.' }),
  ask_timeout_seconds: z
    .number()
    .int()
    .min(1)
    .max(maxAskTimeoutSeconds)
    .meta({ description: `How long an ask or an approval waits for its answer before the model is told it timed out (seconds; default ${defaultAskTimeoutSeconds}).` }),
  tool_timeout_seconds: z
    .number()
    .int()
    .min(1)
    .max(maxToolTimeoutSeconds)
    .meta({ description: `How long one call of a remote tool may take (seconds, 1–${maxToolTimeoutSeconds}; default ${defaultToolTimeoutSeconds}).` }),
  approval: ToolApproval.nullable(),
};

/** `tools` as create and PATCH bodies take it; a PATCH replaces the whole object (see `headers` for what is kept). */
export const AgentToolsBody = z
  .strictObject({
    team: commonTools.team.optional(),
    ask_timeout_seconds: commonTools.ask_timeout_seconds.optional(),
    tool_timeout_seconds: commonTools.tool_timeout_seconds.optional(),
    mcp: z
      .array(McpServerBody)
      .max(maxMcpServers)
      .refine((servers) => uniqueNames(servers.map((s) => s.name)), 'must not name a server twice')
      .optional(),
    approval: commonTools.approval.optional(),
  })
  .meta({
    id: 'AgentToolsBody',
    description:
      'What the agent may call. Only an agent with a provider calls tools. Defaults: team false, ask_timeout_seconds 86400, tool_timeout_seconds 60, mcp [], approval null.',
  });
export type AgentToolsBody = z.infer<typeof AgentToolsBody>;

/** `tools` as the service returns it, with every default filled in. */
export const AgentTools = z
  .object({
    team: commonTools.team,
    ask_timeout_seconds: commonTools.ask_timeout_seconds,
    tool_timeout_seconds: commonTools.tool_timeout_seconds,
    mcp: z.array(McpServer),
    approval: commonTools.approval,
  })
  .meta({ id: 'AgentTools', description: 'What the agent may call; null: nothing, the agent answers each message with one completion.' });
export type AgentTools = z.infer<typeof AgentTools>;

// ---- tool calls --------------------------------------------------------------------------------

/** A tool call's states (contract §11). `pending`, `awaiting_approval` and `running` are not final. */
export const ToolCallStatuses = {
  pending: 'pending',
  awaiting_approval: 'awaiting_approval',
  running: 'running',
  completed: 'completed',
  failed: 'failed',
  rejected: 'rejected',
} as const;
export const ToolCallStatus = z.enum(ToolCallStatuses);
export type ToolCallStatus = z.infer<typeof ToolCallStatus>;

/** The final states: a call in one of them changes no more. */
export const finalToolCallStatuses: readonly ToolCallStatus[] = ['completed', 'failed', 'rejected'];

/** One tool call of a turn, as recorded (contract §11) and returned by `GET /threads/{thread_id}/tool-calls`. */
export const ToolCall = z
  .object({
    tool_call_id: Id,
    agent_id: Id,
    thread_id: Id.meta({ description: 'The thread of the turn: where the message being answered is.' }),
    message_id: Id.meta({ description: 'The message the turn answers.' }),
    turn_id: Id,
    step: z.number().int().min(1).meta({ description: 'The model call of the turn that asked for it (1, 2, …).' }),
    tool: z.string().meta({ description: 'The tool: a team tool\'s name, or the MCP tool\'s name on `server`.' }),
    server: z.string().nullable().meta({ description: 'The agent\'s MCP server it runs on; null for team tools.' }),
    arguments: z.unknown().meta({ description: 'The arguments the model gave (JSON).' }),
    status: ToolCallStatus,
    result: z.unknown().meta({
      description: 'The result (JSON) once completed; a result over 64 KiB is cut: `{truncated: true, bytes, text}` with its first 64 KiB as text. null before.',
    }),
    error: z.string().nullable().meta({ description: 'Why it failed or was rejected: `<code>: <detail>` (not_on_your_edges, interrupted, ask_timeout, tool_timeout, rejected, …).' }),
    waiting_on: z
      .object({ participant_id: Id, thread_id: Id, message_id: Id })
      .nullable()
      .meta({ description: 'For ask and approvals: who is asked, in which thread, and the question (null for other tools and before the question is written).' }),
    started_at: Timestamp,
    finished_at: Timestamp.nullable(),
  })
  .meta({ id: 'ToolCall' });
export type ToolCall = z.infer<typeof ToolCall>;

/** `GET /threads/{thread_id}/tool-calls`: oldest first; `after` is a tool call id of the thread. */
export const ToolCallListQuery = z.strictObject({
  after: Id.optional().meta({ description: 'Start after this tool call (its id); default: from the first.' }),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

/** The answer of `GET /threads/{thread_id}/tool-calls`. */
export const ToolCallList = z
  .object({
    tool_calls: z.array(ToolCall),
    next_after: Id.nullable().meta({ description: 'The last tool call of this page (pass it as `after`), or the request\'s `after` when the page is empty.' }),
  })
  .meta({ id: 'ToolCallList' });
export type ToolCallList = z.infer<typeof ToolCallList>;

/** An approval's typed reply (contract §11): what `by` answers. */
export const ApprovalReply = z.strictObject({ decision: z.enum(['approve', 'reject']), comment: z.string().max(4000).optional() });
export type ApprovalReply = z.infer<typeof ApprovalReply>;

import { StopResult, ThreadStreamFrame, ThreadStreamQuery } from '../../../api/thread-stream.ts';
import { ToolCallList, ToolCallListQuery } from '../../../api/agent-tools.ts';
import { z } from 'zod';
import {
  AccessRequest,
  AccessRequestListQuery,
  AccessRequestReceipt,
  Agent,
  AppendMessageBody,
  ApprovedAccessRequest,
  Attachment,
  CreateAccessRequestBody,
  CreateAgentBody,
  CreateAttachmentBody,
  CreatedMcpKey,
  CreatedOrgKey,
  CreateEdgeBody,
  CreateHumanBody,
  CreateMcpKeyBody,
  CreateOrganizationBody,
  CreateOrgKeyBody,
  CreateTeamBody,
  Deleted,
  Edge,
  Human,
  McpKey,
  Message,
  OpenThreadBody,
  Organization,
  OrganizationDeletionPreview,
  OrgKey,
  PatchAgentBody,
  PatchHumanBody,
  PatchOrganizationBody,
  PatchTeamBody,
  Provider,
  ProviderKey,
  PutProviderKeyBody,
  PutVendorProviderKeyBody,
  VendorProvider,
  RejectAccessRequestBody,
  Revoked,
  RotateOrgKeyBody,
  Team,
  TeamDeletionPreview,
  TeamGraph,
  Thread,
  ThreadPage,
  ThreadPageQuery,
  AgentUsage,
  TeamUsage,
  UsageQuery,
} from '../../../api/schemas.ts';
import { JsonRpcMessage, JsonRpcResponse } from '../../../api/mcp-tools.ts';
import type { RouteDoc, SuccessDoc, Tag } from './route-doc.ts';
import { sessionRouteDocs } from './session-route-docs.ts';
import { eventRouteDocs } from './event-route-docs.ts';
import { taskRouteDocs } from './task-route-docs.ts';

// Response shapes that only the routes define. Each is named (`.meta({ id })`), so it becomes a
// component and generated clients get a type named after it.
const list = (id: string, field: string, item: z.ZodType) => z.object({ [field]: z.array(item) }).meta({ id });
const deleted = (id: string, idField: string) => Deleted(idField).meta({ id });

const OrganizationList = list('OrganizationList', 'organizations', Organization);
const TeamList = list('TeamList', 'teams', Team);
const AgentList = list('AgentList', 'agents', Agent);
const HumanList = list('HumanList', 'humans', Human);
const EdgeList = list('EdgeList', 'edges', Edge);
const ThreadList = list('ThreadList', 'threads', Thread);
const ProviderKeyList = list('ProviderKeyList', 'provider_keys', ProviderKey);
const OrgKeyList = list('OrgKeyList', 'keys', OrgKey);
const McpKeyList = list('McpKeyList', 'mcp_keys', McpKey);
const AccessRequestList = list('AccessRequestList', 'access_requests', AccessRequest);

const OrganizationDeleted = deleted('OrganizationDeleted', 'org_id');
const TeamDeleted = deleted('TeamDeleted', 'team_id');
const AgentDeleted = deleted('AgentDeleted', 'agent_id');
const HumanDeleted = deleted('HumanDeleted', 'human_id');
const EdgeDeleted = deleted('EdgeDeleted', 'edge_id');
const ProviderKeyDeleted = z.object({ deleted: z.literal(true), provider: Provider }).meta({ id: 'ProviderKeyDeleted' });

const IssuedOrgKey = CreatedOrgKey.extend({ org_id: z.uuid() }).meta({ id: 'IssuedOrgKey' });
const Health = z.object({ status: z.literal('ok') }).meta({ id: 'Health' });
const Readiness = z.object({ status: z.literal('ready') }).meta({ id: 'Readiness' });
const OpenApiDocument = z.record(z.string(), z.unknown()).meta({ id: 'OpenApiDocument', description: 'An OpenAPI 3.1 document.' });

const ok = (schema: z.ZodType, description: string): SuccessDoc => ({ status: 200, schema, description });
const created = (schema: z.ZodType, description: string): SuccessDoc => ({ status: 201, schema, description });

type Entries = Record<string, Omit<RouteDoc, 'tag'>>;
function tagged(tag: Tag, entries: Entries): Record<string, RouteDoc> {
  return Object.fromEntries(Object.entries(entries).map(([key, doc]) => [key, { ...doc, tag }]));
}

/**
 * The OpenAPI description of every route, and the only place routes are described: keyed by
 * `METHOD path` with Fastify's `:param` syntax and without the `/api/v1` or `/v1` prefix (the
 * unprefixed provider-key PUT shares its entry; health routes and `/admin/v1/…` keep their full
 * path). The schemas are the ones the route handlers parse with. A test fails for a registered
 * route with no entry here and for an entry with no route.
 */
export const routeDocs: Readonly<Record<string, RouteDoc>> = {
  // The console's routes (contract §10) are described beside their schemas.
  ...sessionRouteDocs,
  ...tagged('service', {
    'GET /healthz': { operationId: 'getHealth', summary: 'The process is up', success: ok(Health, 'the process is up'), security: 'none' },
    'GET /readyz': {
      operationId: 'getReadiness',
      summary: 'Storage is reachable',
      description: 'Answers 503 `unavailable` while storage cannot be reached.',
      success: ok(Readiness, 'storage answered'),
      security: 'none',
    },
    'GET /openapi.json': {
      operationId: 'getOpenApiDocument',
      summary: 'This OpenAPI 3.1 document',
      description: 'Generated from the schemas that validate requests.',
      success: ok(OpenApiDocument, 'the OpenAPI 3.1 document'),
      security: 'none',
    },
  }),

  ...tagged('organizations', {
    'GET /organizations': { operationId: 'listOrganizations', summary: 'Organizations the key reaches', success: ok(OrganizationList, 'the organizations') },
    'POST /organizations': {
      operationId: 'createOrganization',
      summary: 'Provision an organization',
      description: 'The calling key reaches the new organization from then on.',
      body: CreateOrganizationBody,
      success: created(Organization, 'the new organization'),
      errors: ['conflict'],
    },
    'GET /organizations/:org_id': { operationId: 'getOrganization', summary: 'An organization', success: ok(Organization, 'the organization') },
    'PATCH /organizations/:org_id': {
      operationId: 'updateOrganization',
      summary: "Set an organization's deletion protection",
      body: PatchOrganizationBody,
      success: ok(Organization, 'the organization'),
    },
    'DELETE /organizations/:org_id': {
      operationId: 'deleteOrganization',
      summary: 'Delete an organization and everything in it',
      description:
        'Cascades to its teams (with their agents, humans, edges, threads and messages), organization keys, MCP keys, ' +
        "provider keys and attachments; its keys stop working. A key's own organization is 403 `forbidden` (the organization " +
        'that provisioned it can delete it). Refused with 409 `deletion_protected` (naming each in `protected`) while the ' +
        'organization, a team or an agent or human of it has deletion protection, and with 409 `in_use` (naming one in ' +
        '`org_id`) while an organization it provisioned exists. A refused deletion deletes nothing.',
      success: ok(OrganizationDeleted, 'the organization is gone, with everything in it'),
      errors: ['forbidden', 'deletion_protected', 'in_use'],
    },
    'GET /organizations/:org_id/deletion-preview': {
      operationId: 'previewOrganizationDeletion',
      summary: 'What deleting the organization would remove',
      description: 'Counts, and why a DELETE would be refused: `protected`, `provisioned_organizations`, `own_organization`.',
      success: ok(OrganizationDeletionPreview, 'counts of what a DELETE would remove'),
    },
  }),

  ...tagged('teams', {
    'POST /organizations/:org_id/teams': {
      operationId: 'createTeam',
      summary: 'Create a team',
      body: CreateTeamBody,
      success: created(Team, 'the new team'),
      errors: ['conflict'],
    },
    'GET /organizations/:org_id/teams': { operationId: 'listTeams', summary: "An organization's teams", success: ok(TeamList, 'the teams') },
    'GET /teams/:team_id': { operationId: 'getTeam', summary: 'A team with its agents, humans and edges', success: ok(TeamGraph, 'the team graph') },
    'PATCH /teams/:team_id': {
      operationId: 'updateTeam',
      summary: 'Rename a team or change its description',
      body: PatchTeamBody,
      success: ok(Team, 'the team'),
      errors: ['conflict'],
    },
    'DELETE /teams/:team_id': {
      operationId: 'deleteTeam',
      summary: 'Delete a team and everything in it',
      description: 'Refused with 409 `deletion_protected` (naming each in `protected`) while the team or one of its agents or humans has deletion protection; then nothing is deleted.',
      success: ok(TeamDeleted, 'the team is gone, with its agents, humans, edges, threads and messages'),
      errors: ['deletion_protected'],
    },
    'GET /teams/:team_id/deletion-preview': {
      operationId: 'previewTeamDeletion',
      summary: 'What deleting the team would remove',
      description: 'Counts, and in `protected` what would make the DELETE refused.',
      success: ok(TeamDeletionPreview, 'counts of what a DELETE would remove'),
    },
  }),

  ...tagged('agents', {
    'POST /teams/:team_id/agents': {
      operationId: 'createAgent',
      summary: 'Create an agent',
      body: CreateAgentBody,
      success: created(Agent, 'the new agent'),
      // unknown_reference: `tools.approval.by` names no human of the team; webhook_url_refused: a remote MCP server's URL.
      errors: ['conflict', 'unknown_reference', 'webhook_url_refused'],
    },
    'GET /teams/:team_id/agents': { operationId: 'listAgents', summary: "A team's agents", success: ok(AgentList, 'the agents') },
    'GET /agents/:agent_id': { operationId: 'getAgent', summary: 'An agent', success: ok(Agent, 'the agent') },
    'PATCH /agents/:agent_id': {
      operationId: 'updateAgent',
      summary: 'Change an agent',
      body: PatchAgentBody,
      success: ok(Agent, 'the agent'),
      errors: ['conflict', 'unknown_reference', 'webhook_url_refused'],
    },
    'DELETE /agents/:agent_id': {
      operationId: 'deleteAgent',
      summary: 'Delete an agent that is on no edge',
      description:
        'An agent with deletion protection is `deletion_protected`; one still on an edge is `in_use` (the problem names the edge in `edge_id`): delete the edge first.',
      success: ok(AgentDeleted, 'the agent is gone, with its MCP keys'),
      errors: ['deletion_protected', 'in_use'],
    },
  }),

  ...tagged('usage', {
    'GET /agents/:agent_id/usage': {
      operationId: 'getAgentUsage',
      summary: "An agent's token usage and budget",
      description:
        'Input and output tokens of the provider calls the agent paid for (each reply, and each empty answer, which is not posted; ' +
        'as each provider reported them), from `since` on ' +
        '(default: the start of the current UTC day), by provider and model; with its daily budget: `tokens_today` and, ' +
        'while the budget is spent, `budget_exhausted_until` (the next UTC day).',
      query: UsageQuery,
      success: ok(AgentUsage, "the agent's usage"),
    },
    'GET /teams/:team_id/usage': {
      operationId: 'getTeamUsage',
      summary: "A team's token usage",
      description:
        'Totals from `since` on (default: the start of the current UTC day) and each agent with a provider or with usage ' +
        '(an agent deleted since has `name` null; its usage stays in the totals).',
      query: UsageQuery,
      success: ok(TeamUsage, "the team's usage"),
    },
  }),

  ...tagged('humans', {
    'POST /teams/:team_id/humans': { operationId: 'createHuman', summary: 'Add a human', body: CreateHumanBody, success: created(Human, 'the new human'), errors: ['conflict'] },
    'GET /teams/:team_id/humans': { operationId: 'listHumans', summary: "A team's humans", success: ok(HumanList, 'the humans') },
    'GET /humans/:human_id': { operationId: 'getHuman', summary: 'A human', success: ok(Human, 'the human') },
    'PATCH /humans/:human_id': { operationId: 'updateHuman', summary: 'Change a human', body: PatchHumanBody, success: ok(Human, 'the human'), errors: ['conflict'] },
    'DELETE /humans/:human_id': {
      operationId: 'deleteHuman',
      summary: 'Delete a human who is on no edge',
      description:
        'A human with deletion protection is `deletion_protected`; one still on an edge is `in_use` (the problem names the edge in `edge_id`): delete the edge first.',
      success: ok(HumanDeleted, 'the human is gone'),
      errors: ['deletion_protected', 'in_use'],
    },
  }),

  ...tagged('edges', {
    'POST /teams/:team_id/edges': {
      operationId: 'createEdge',
      summary: 'Join two participants',
      description:
        'Both participants are agents or humans of the team, distinct (the same id twice is 400 `invalid_request`); ' +
        'one edge at most joins the same unordered pair (409 `conflict` with `existing_id`).',
      body: CreateEdgeBody,
      success: created(Edge, 'the new edge'),
      errors: ['conflict', 'unknown_reference'],
    },
    'GET /teams/:team_id/edges': { operationId: 'listEdges', summary: "A team's edges", success: ok(EdgeList, 'the edges') },
    'GET /edges/:edge_id': { operationId: 'getEdge', summary: 'An edge', success: ok(Edge, 'the edge') },
    'DELETE /edges/:edge_id': { operationId: 'deleteEdge', summary: 'Delete an edge, its threads and messages', success: ok(EdgeDeleted, 'the edge is gone') },
  }),

  ...tagged('threads', {
    'POST /edges/:edge_id/threads': {
      operationId: 'openThread',
      summary: 'Open a thread with its first message',
      body: OpenThreadBody,
      success: created(Thread, 'the new thread (message_count 1, unread_count 0)'),
      errors: ['not_a_participant', 'unknown_reference'],
    },
    'GET /edges/:edge_id/threads': { operationId: 'listThreads', summary: "An edge's threads, newest first", success: ok(ThreadList, 'the threads') },
    'GET /threads/:thread_id': {
      operationId: 'getThreadPage',
      summary: 'A page of a thread (long poll with wait)',
      description:
        'Up to `limit` messages strictly after `after`, oldest first. With `wait`, an empty page is held until a message ' +
        'is appended or `wait` seconds pass. Pass `next_after` as `after` to go on; an `after` that names no message of ' +
        'the thread is 400 `invalid_cursor`. A long poll holds a place among the held waits of its key, of its organization ' +
        'and of the server (429 `too_many_waits` past them).',
      query: ThreadPageQuery,
      success: ok(ThreadPage, 'the thread with a page of its messages'),
      errors: ['invalid_cursor', 'too_many_waits'],
    },
    'GET /threads/:thread_id/tool-calls': {
      operationId: 'listThreadToolCalls',
      summary: "The tool calls of the agents' turns on a thread",
      description:
        'Every tool call an agent with tools made while answering messages of this thread, oldest first: the tool, its arguments, ' +
        'its status (pending, awaiting_approval, running, completed, failed, rejected), result or error, and for ask and approvals whom it waits on. ' +
        'Pass `next_after` as `after` to go on; an `after` that names no tool call of the thread is 400 `invalid_cursor`.',
      query: ToolCallListQuery,
      success: ok(ToolCallList, 'a page of tool calls'),
      errors: ['invalid_cursor'],
    },
    'GET /threads/:thread_id/stream': {
      operationId: 'streamThread',
      summary: "A thread's messages and replies as they are written, as Server-Sent Events",
      description:
        'text/event-stream of the thread in one order: its messages (`message.created`, a Message), the deltas of a reply being written ' +
        '(`message.delta`: its `message_id`, `index` and `text`; the deltas of a reply joined are its text), the steps of a turn that called ' +
        'tools (`turn.step`: the text streamed in that step was not the reply), a reply written again from its start (`turn.restarted`), and ' +
        'the tool calls of its turns (`tool_call.started`, `tool_call.finished`: a ToolCall). Each frame\'s id is its position: a message\'s ' +
        '`seq` (`12`), or a live item after it (`12.3`). Resume with the `Last-Event-ID` header (or `after`), with no gap and no repeat; live ' +
        'items are kept 10 minutes, messages for good, so a resume after a reply\'s `message.created` gets what follows it, not its deltas. ' +
        'Neither: from after the last message, so a reply being written shows from its first delta. A comment line at least every 15 s. ' +
        'The stream holds a place among the held waits of its key, of its organization and of the server (429 `too_many_waits` past them).',
      query: ThreadStreamQuery,
      success: {
        status: 200,
        description: 'The stream of the thread (Server-Sent Events); it ends when the client closes it or the server stops.',
        stream: { event: ThreadStreamFrame, headers: { 'Cache-Control': 'no-store' } },
      },
      errors: ['invalid_cursor', 'too_many_waits'],
    },
    'POST /threads/:thread_id/stop': {
      operationId: 'stopThread',
      summary: 'Stop the replies being written in a thread',
      description:
        'Ends every turn in progress on the thread — an agent writing its reply, or one waiting on a tool call or an answer: tool calls not ' +
        'yet started are not made, and the text written so far is posted as the reply, with `stopped: true`. Answers at once; the replies ' +
        'follow on the stream. `stopping` counts the agents asked to stop (0: nothing was in progress).',
      success: { status: 202, schema: StopResult, description: 'the agents asked to stop' },
    },
    'POST /threads/:thread_id/messages': {
      operationId: 'appendMessage',
      summary: 'Append a message',
      body: AppendMessageBody,
      success: created(Message, 'the new message'),
      errors: ['not_a_participant', 'unknown_reference'],
    },
  }),

  ...taskRouteDocs,

  ...tagged('attachments', {
    'POST /attachments': {
      operationId: 'createAttachment',
      summary: 'Upload an attachment',
      description: "The data is base64, at most 5 MiB decoded (this route's body limit is 8 MiB). `org_id` defaults to the key's own organization.",
      body: CreateAttachmentBody,
      success: created(Attachment, 'the attachment'),
      errors: ['not_found'],
    },
    'GET /attachments/:attachment_id': { operationId: 'getAttachment', summary: "An attachment's metadata", success: ok(Attachment, 'the attachment') },
    'GET /attachments/:attachment_id/content': {
      operationId: 'getAttachmentContent',
      summary: "An attachment's bytes",
      success: {
        status: 200,
        description: 'The bytes, served with the `content_type` given at upload as their Content-Type (any media type), never rendered in place.',
        bytes: {
          mediaType: '*/*',
          headers: {
            'Content-Length': 'Size of the bytes.',
            'Content-Disposition': 'attachment, with the filename (RFC 6266; `filename*` holds the exact UTF-8 name).',
            'X-Content-Type-Options': 'nosniff',
            'Content-Security-Policy': "default-src 'none'; sandbox",
          },
        },
      },
    },
  }),

  ...eventRouteDocs,

  ...tagged('provider-keys', {
    'PUT /organizations/:org_id/api-keys/:provider': {
      operationId: 'putProviderKey',
      summary: "Set an LLM vendor's key (write-only)",
      description:
        'Also served without any prefix: see this operation\'s servers. A vendor\'s key needs at least 8 characters (the `echo` provider, ' +
        'documented at its own path, takes any). `key_hint` is the last 4 characters of a key of at least 12, else `****`.',
      body: PutVendorProviderKeyBody,
      params: { provider: VendorProvider },
      success: ok(ProviderKey, 'the provider key, as a hint'),
      variants: [
        {
          param: 'provider',
          value: 'echo',
          doc: {
            operationId: 'putEchoProviderKey',
            summary: 'Set the key of the built-in echo provider (any non-empty string)',
            description: 'The built-in development provider, which replies `echo: <the message>`: agents with provider `echo` run once it has a key. `key_hint` is `****` for a key under 12 characters.',
            body: PutProviderKeyBody,
            success: ok(ProviderKey, 'the provider key, as a hint'),
          },
        },
      ],
    },
    'GET /organizations/:org_id/api-keys': { operationId: 'listProviderKeys', summary: 'Provider keys, hints only', success: ok(ProviderKeyList, 'the provider keys') },
    'DELETE /organizations/:org_id/api-keys/:provider': {
      operationId: 'deleteProviderKey',
      summary: "Delete an LLM vendor's key",
      params: { provider: VendorProvider },
      success: ok(ProviderKeyDeleted, 'the provider key is gone'),
      variants: [
        { param: 'provider', value: 'echo', doc: { operationId: 'deleteEchoProviderKey', summary: 'Delete the key of the built-in echo provider', success: ok(ProviderKeyDeleted, 'the provider key is gone') } },
      ],
    },
  }),

  ...tagged('org-keys', {
    'POST /organizations/:org_id/keys': {
      operationId: 'createOrgKey',
      summary: 'Create an organization key (secret shown once)',
      description: 'An `expires_at` must lie in the future (else 400 `invalid_request` naming it).',
      body: CreateOrgKeyBody,
      bodyOptional: true,
      success: created(CreatedOrgKey, 'the new key with its secret in api_key (shown only here)'),
      errors: ['key_limit'],
    },
    'GET /organizations/:org_id/keys': { operationId: 'listOrgKeys', summary: "An organization's active keys", success: ok(OrgKeyList, 'the active keys, without secrets') },
    'POST /organizations/:org_id/keys/:key_id/rotate': {
      operationId: 'rotateOrgKey',
      summary: 'Rotate a key: a new key, the old one expires after the grace period',
      body: RotateOrgKeyBody,
      bodyOptional: true,
      success: created(CreatedOrgKey, 'the new key with its secret in api_key (shown only here)'),
      errors: ['key_limit'],
    },
    'DELETE /organizations/:org_id/keys/:key_id': {
      operationId: 'revokeOrgKey',
      summary: 'Revoke a key',
      success: ok(Revoked, 'the key is revoked'),
      errors: ['last_key'],
    },
  }),

  ...tagged('mcp-keys', {
    'POST /agents/:agent_id/mcp-keys': {
      operationId: 'createMcpKey',
      summary: 'Create an MCP key for an agent (secret shown once)',
      description: 'An agent holds at most 10 active MCP keys (409 `mcp_key_limit`): revoke one first.',
      body: CreateMcpKeyBody,
      bodyOptional: true,
      success: created(CreatedMcpKey, 'the new key with its secret in mcp_key (shown only here)'),
      errors: ['mcp_key_limit'],
    },
    'GET /agents/:agent_id/mcp-keys': { operationId: 'listMcpKeys', summary: "An agent's MCP keys", success: ok(McpKeyList, 'the MCP keys, without secrets') },
    'DELETE /agents/:agent_id/mcp-keys/:key_id': { operationId: 'revokeMcpKey', summary: 'Revoke an MCP key', success: ok(Revoked, 'the key is revoked') },
  }),

  ...tagged('mcp', {
    'POST /mcp': {
      operationId: 'mcp',
      summary: 'The MCP endpoint for agents (Streamable HTTP, stateless, JSON responses)',
      description:
        'Model Context Protocol over the Streamable HTTP transport, for an external agent: the `x-api-key` header ' +
        'carries an MCP key, which fixes the agent, and is checked before the body is read. Send `Accept: application/json, ' +
        'text/event-stream`; answers are JSON (`application/json`), except a `wait_for_messages` sent with a progress token ' +
        '(`params._meta.progressToken`), answered as `text/event-stream`: its `notifications/progress` while a peer\'s reply is being ' +
        'written, then its result; a notification gets 202 without a body. ' +
        'No session: `initialize` is optional and no `Mcp-Session-Id` is issued; GET and DELETE are 405. Tools: `whoami`, ' +
        '`list_edges`, `list_threads`, `read_thread`, `send_message`, `open_thread`, `wait_for_messages`, and for tasks `list_tasks`, `get_task`, ' +
        '`update_task`, `add_artifact` (see `tools/list` ' +
        'for their schemas). Refusals of the MCP transport itself (an `Accept` without both types is 406, a body that is not ' +
        'JSON-RPC 400) are JSON-RPC errors, not problem documents.',
      body: JsonRpcMessage,
      success: ok(JsonRpcResponse, 'the JSON-RPC response (a tool error is a result with isError: true)'),
      security: 'mcpKey',
    },
  }),

  ...tagged('access-requests', {
    'POST /access-requests': {
      operationId: 'createAccessRequest',
      summary: 'Ask for access (no API key)',
      description: 'An operator approves (which creates the organization and its first key) or rejects it.',
      body: CreateAccessRequestBody,
      success: { status: 202, schema: AccessRequestReceipt, description: 'the request is pending review' },
      security: 'none',
    },
  }),

  ...tagged('admin', {
    'GET /admin/v1/access-requests': {
      operationId: 'adminListAccessRequests',
      summary: 'Access requests, oldest first',
      query: AccessRequestListQuery,
      success: ok(AccessRequestList, 'the access requests'),
    },
    'POST /admin/v1/access-requests/:request_id/approve': {
      operationId: 'adminApproveAccessRequest',
      summary: 'Approve: creates the organization and its first key (shown once)',
      description: 'A request decided already is `conflict`; so is one whose top-level organization name is taken (with `existing_id`).',
      success: ok(ApprovedAccessRequest, 'the request, its organization and the first key'),
      errors: ['conflict'],
    },
    'POST /admin/v1/access-requests/:request_id/reject': {
      operationId: 'adminRejectAccessRequest',
      summary: 'Reject an access request',
      body: RejectAccessRequestBody,
      bodyOptional: true,
      success: ok(AccessRequest, 'the rejected request'),
      errors: ['conflict'],
    },
    'POST /admin/v1/organizations/:org_id/keys': {
      operationId: 'adminIssueOrgKey',
      summary: 'Issue a key for an existing organization (shown once)',
      description: 'An `expires_at` must lie in the future (else 400 `invalid_request` naming it).',
      body: CreateOrgKeyBody,
      bodyOptional: true,
      success: created(IssuedOrgKey, 'the new key with its secret in api_key (shown only here)'),
      errors: ['key_limit'],
    },
  }),
};

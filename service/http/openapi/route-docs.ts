import { z } from 'zod';
import {
  AccessRequest,
  AccessRequestListQuery,
  AccessRequestReceipt,
  Agent,
  AppendMessageBody,
  ApprovedAccessRequest,
  CreateAccessRequestBody,
  CreateAgentBody,
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
  OrgKey,
  PatchAgentBody,
  PatchHumanBody,
  PatchTeamBody,
  Provider,
  ProviderKey,
  PutProviderKeyBody,
  RejectAccessRequestBody,
  Revoked,
  RotateOrgKeyBody,
  Team,
  TeamGraph,
  Thread,
  ThreadPage,
  ThreadPageQuery,
} from '../../../api/schemas.ts';
import type { RouteDoc } from './route-doc.ts';

const list = (field: string, item: z.ZodType) => z.object({ [field]: z.array(item) });
const ok = (schema: z.ZodType) => ({ status: 200, schema });
const created = (schema: z.ZodType) => ({ status: 201, schema });

const DeletionPreview = z.object({
  team_id: z.uuid(),
  agents: z.number().int(),
  humans: z.number().int(),
  edges: z.number().int(),
  threads: z.number().int(),
  messages: z.number().int(),
  attachments: z.number().int(),
});
const Status = (value: string) => z.object({ status: z.literal(value) });

/**
 * OpenAPI descriptions of the routes that do not carry `config.openapi` themselves, keyed by
 * `METHOD path` with Fastify's `:param` syntax and without the `/api/v1` or `/v1` prefix (admin
 * routes keep `/admin/v1`). The schemas are the ones the route handlers parse with.
 */
export const routeDocs: Readonly<Record<string, RouteDoc>> = {
  'GET /healthz': { summary: 'The process is up', success: ok(Status('ok')), security: 'none' },
  'GET /readyz': { summary: 'Storage is reachable', success: ok(Status('ready')), security: 'none' },

  'GET /organizations': { summary: 'Organizations the key reaches', success: ok(list('organizations', Organization)) },
  'POST /organizations': { summary: 'Provision an organization', body: CreateOrganizationBody, success: created(Organization) },
  'GET /organizations/:org_id': { summary: 'An organization', success: ok(Organization) },

  'POST /organizations/:org_id/teams': { summary: 'Create a team', body: CreateTeamBody, success: created(Team) },
  'GET /organizations/:org_id/teams': { summary: "An organization's teams", success: ok(list('teams', Team)) },
  'GET /teams/:team_id': { summary: 'A team with its agents, humans and edges', success: ok(TeamGraph) },
  'PATCH /teams/:team_id': { summary: 'Rename a team or change its description', body: PatchTeamBody, success: ok(Team) },
  'DELETE /teams/:team_id': { summary: 'Delete a team and everything in it', success: ok(Deleted('team_id')) },
  'GET /teams/:team_id/deletion-preview': { summary: 'What deleting the team would remove', success: ok(DeletionPreview) },

  'POST /teams/:team_id/agents': { summary: 'Create an agent', body: CreateAgentBody, success: created(Agent) },
  'GET /teams/:team_id/agents': { summary: "A team's agents", success: ok(list('agents', Agent)) },
  'GET /agents/:agent_id': { summary: 'An agent', success: ok(Agent) },
  'PATCH /agents/:agent_id': { summary: 'Change an agent', body: PatchAgentBody, success: ok(Agent) },
  'DELETE /agents/:agent_id': { summary: 'Delete an agent that is on no edge', success: ok(Deleted('agent_id')) },

  'POST /teams/:team_id/humans': { summary: 'Add a human', body: CreateHumanBody, success: created(Human) },
  'GET /teams/:team_id/humans': { summary: "A team's humans", success: ok(list('humans', Human)) },
  'GET /humans/:human_id': { summary: 'A human', success: ok(Human) },
  'PATCH /humans/:human_id': { summary: 'Change a human', body: PatchHumanBody, success: ok(Human) },
  'DELETE /humans/:human_id': { summary: 'Delete a human who is on no edge', success: ok(Deleted('human_id')) },

  'POST /teams/:team_id/edges': { summary: 'Join two participants', body: CreateEdgeBody, success: created(Edge) },
  'GET /teams/:team_id/edges': { summary: "A team's edges", success: ok(list('edges', Edge)) },
  'GET /edges/:edge_id': { summary: 'An edge', success: ok(Edge) },
  'DELETE /edges/:edge_id': { summary: 'Delete an edge, its threads and messages', success: ok(Deleted('edge_id')) },

  'POST /edges/:edge_id/threads': { summary: 'Open a thread with its first message', body: OpenThreadBody, success: created(Thread) },
  'GET /edges/:edge_id/threads': { summary: "An edge's threads, newest first", success: ok(list('threads', Thread)) },
  'GET /threads/:thread_id': { summary: 'A page of a thread (long poll with wait)', query: ThreadPageQuery, success: ok(ThreadPage) },
  'POST /threads/:thread_id/messages': { summary: 'Append a message', body: AppendMessageBody, success: created(Message) },

  'PUT /organizations/:org_id/api-keys/:provider': {
    summary: 'Set a provider key (write-only)',
    body: PutProviderKeyBody,
    params: { provider: Provider },
    success: ok(ProviderKey),
  },
  'GET /organizations/:org_id/api-keys': { summary: 'Provider keys, hints only', success: ok(list('provider_keys', ProviderKey)) },
  'DELETE /organizations/:org_id/api-keys/:provider': {
    summary: 'Delete a provider key',
    params: { provider: Provider },
    success: ok(z.object({ deleted: z.literal(true), provider: Provider })),
  },

  'POST /organizations/:org_id/keys': { summary: 'Create an organization key (secret shown once)', body: CreateOrgKeyBody, success: created(CreatedOrgKey) },
  'GET /organizations/:org_id/keys': { summary: "An organization's active keys", success: ok(list('keys', OrgKey)) },
  'POST /organizations/:org_id/keys/:key_id/rotate': {
    summary: 'Rotate a key: a new key, the old one expires after the grace period',
    body: RotateOrgKeyBody,
    success: created(CreatedOrgKey),
  },
  'DELETE /organizations/:org_id/keys/:key_id': { summary: 'Revoke a key', success: ok(Revoked) },

  'POST /agents/:agent_id/mcp-keys': { summary: 'Create an MCP key for an agent (secret shown once)', body: CreateMcpKeyBody, success: created(CreatedMcpKey) },
  'GET /agents/:agent_id/mcp-keys': { summary: "An agent's MCP keys", success: ok(list('mcp_keys', McpKey)) },
  'DELETE /agents/:agent_id/mcp-keys/:key_id': { summary: 'Revoke an MCP key', success: ok(Revoked) },

  'POST /access-requests': {
    summary: 'Ask for access (no API key)',
    body: CreateAccessRequestBody,
    success: { status: 202, schema: AccessRequestReceipt },
    security: 'none',
  },
  'POST /mcp': { summary: 'MCP over Streamable HTTP (JSON-RPC 2.0)', security: 'mcpKey' },

  'GET /admin/v1/access-requests': { summary: 'Access requests', query: AccessRequestListQuery, success: ok(list('access_requests', AccessRequest)) },
  'POST /admin/v1/access-requests/:request_id/approve': {
    summary: 'Approve: creates the organization and its first key (shown once)',
    success: ok(ApprovedAccessRequest),
  },
  'POST /admin/v1/access-requests/:request_id/reject': { summary: 'Reject an access request', body: RejectAccessRequestBody, success: ok(AccessRequest) },
  'POST /admin/v1/organizations/:org_id/keys': {
    summary: 'Issue a key for an existing organization (shown once)',
    body: CreateOrgKeyBody,
    success: created(CreatedOrgKey.extend({ org_id: z.uuid() })),
  },
};

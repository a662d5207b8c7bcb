import type { FastifyInstance } from 'fastify';
import { CreateMcpKeyBody } from '../../../../api/schemas.ts';
import { createPersonAgentKey, listPersonAgentKeys, revokePersonAgentKey } from '../../../domain/person-reach.ts';
import { personSessionOf } from '../../session-auth.ts';
import { carriesSecret } from '../../security-headers.ts';
import { parseOptionalBody } from '../../validate.ts';
import type { Params, RouteContext } from '../context.ts';

/**
 * MCP keys of the external agents (no provider) of the person's teams — "Connect an agent"
 * (contract §10): `POST /me/agents/{agent_id}/mcp-keys` → 201 CreatedMcpKey (the secret shown
 * once, with `Cache-Control: no-store`); `GET /me/agents/{agent_id}/mcp-keys` → 200 `{mcp_keys}`;
 * `DELETE /me/agents/{agent_id}/mcp-keys/{key_id}` → 200 `{revoked: true, key_id}`.
 * Errors: `not_found` (an agent with a provider, of another team, or unknown; an unknown key).
 */
export function meAgentKeyRoutes(app: FastifyInstance, { deps }: RouteContext): void {
  const person = (request: Parameters<typeof personSessionOf>[0]) => ({ humanIds: personSessionOf(request).humanIds });
  app.post<Params<'agent_id'>>('/me/agents/:agent_id/mcp-keys', carriesSecret, async (request, reply) => {
    parseOptionalBody(CreateMcpKeyBody, request.body);
    return reply.code(201).send(await createPersonAgentKey(deps, person(request), request.params.agent_id));
  });
  app.get<Params<'agent_id'>>('/me/agents/:agent_id/mcp-keys', async (request) => ({
    mcp_keys: await listPersonAgentKeys(deps, person(request), request.params.agent_id),
  }));
  app.delete<Params<'agent_id' | 'key_id'>>('/me/agents/:agent_id/mcp-keys/:key_id', async (request) => {
    await revokePersonAgentKey(deps, person(request), request.params.agent_id, request.params.key_id);
    return { revoked: true, key_id: request.params.key_id };
  });
}

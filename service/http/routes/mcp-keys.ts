import type { FastifyInstance } from 'fastify';
import { CreateMcpKeyBody } from '../../../api/schemas.ts';
import { createMcpKey, listMcpKeys, revokeMcpKey } from '../../domain/mcp-keys.ts';
import { callerOf } from '../auth.ts';
import { carriesSecret } from '../security-headers.ts';
import { parseOptionalBody } from '../validate.ts';
import type { Params, RouteContext } from './context.ts';

/**
 * MCP key routes (contract §3, §5): `POST /agents/{agent_id}/mcp-keys` (no body) → 201 MCP key
 * with `mcp_key` (only here, with `Cache-Control: no-store`); `GET /agents/{agent_id}/mcp-keys` → 200 `{mcp_keys}`;
 * `DELETE /agents/{agent_id}/mcp-keys/{key_id}` → 200 `{revoked: true, key_id}`.
 * Errors: `not_found` (agent or key).
 */
export function mcpKeyRoutes(app: FastifyInstance, { deps }: RouteContext): void {
  app.post<Params<'agent_id'>>('/agents/:agent_id/mcp-keys', carriesSecret, async (request, reply) => {
    parseOptionalBody(CreateMcpKeyBody, request.body);
    return reply.code(201).send(await createMcpKey(deps, callerOf(request), request.params.agent_id));
  });
  app.get<Params<'agent_id'>>('/agents/:agent_id/mcp-keys', async (request) => ({
    mcp_keys: await listMcpKeys(deps, callerOf(request), request.params.agent_id),
  }));
  app.delete<Params<'agent_id' | 'key_id'>>('/agents/:agent_id/mcp-keys/:key_id', async (request) => {
    await revokeMcpKey(deps, callerOf(request), request.params.agent_id, request.params.key_id);
    return { revoked: true, key_id: request.params.key_id };
  });
}

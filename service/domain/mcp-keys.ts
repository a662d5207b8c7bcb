import { ServiceError } from '../../errors/catalogue.ts';
import type { CreatedMcpKey, McpKey } from '../../api/schemas.ts';
import type { Queryable } from '../storage/db.ts';
import type { Caller, DomainDeps } from './caller.ts';
import { iso, isoOrNull, isUuid, newId } from './ids.ts';
import { generateSecret, hashKey, mcpKeyPrefix } from './key-secrets.ts';
import { getAgent } from './participants.ts';

interface McpKeyRow {
  id: string;
  agent_id: string;
  prefix: string;
  created_at: Date;
  last_used_at: Date | null;
}

function toMcpKey(row: McpKeyRow): McpKey {
  return {
    key_id: row.id,
    agent_id: row.agent_id,
    prefix: row.prefix,
    created_at: iso(row.created_at),
    last_used_at: isoOrNull(row.last_used_at),
  };
}

/**
 * The most unrevoked MCP keys one agent may hold. Each key is a credential to keep track of and
 * revoke; an agent needs one per client it runs in, not an unbounded number (the rate limit is
 * the agent's, whatever key it uses: http/rate-limit.ts).
 */
export const maxActiveMcpKeys = 10;

/**
 * Creates an MCP key for an agent the caller reaches (contract §5 POST /agents/{agent_id}/mcp-keys).
 * Output: the key with its secret `mcp_key` (`acs_mcp_` + 40 base62), shown only here; only its
 * hash is stored. The count and the insert run under a transaction-scoped advisory lock on the
 * agent's keys, so concurrent creations (in any process) cannot pass the limit together.
 * Errors: `not_found` (agent), `mcp_key_limit` (the agent holds {@link maxActiveMcpKeys}
 * unrevoked keys already; `limit` names the number).
 */
export async function createMcpKey(deps: DomainDeps, caller: Caller, agentId: string): Promise<CreatedMcpKey> {
  await getAgent(deps, caller, agentId);
  const secret = generateSecret(mcpKeyPrefix);
  const row = await deps.db.transaction(async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`mcp-keys:${agentId}`]);
    const held = await tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM mcp_keys WHERE agent_id = $1 AND revoked_at IS NULL`, [agentId]);
    if ((held[0]?.n ?? 0) >= maxActiveMcpKeys) {
      throw new ServiceError('mcp_key_limit', `an agent holds at most ${maxActiveMcpKeys} active MCP keys; revoke one first`, { extra: { limit: maxActiveMcpKeys } });
    }
    const rows = await tx.query<McpKeyRow>(
      // INSERT … SELECT: an agent deleted meanwhile yields no row (404) rather than a foreign-key error.
      `INSERT INTO mcp_keys (id, agent_id, key_hash, prefix)
       SELECT $1, p.id, $3, $4 FROM participants p WHERE p.id = $2 AND p.kind = 'agent'
       RETURNING id, agent_id, prefix, created_at, last_used_at`,
      [newId(), agentId, hashKey(secret), secret.slice(0, 12)],
    );
    return rows[0];
  });
  if (!row) throw new ServiceError('not_found', 'agent not found');
  return { ...toMcpKey(row), mcp_key: secret };
}

/** Lists an agent's unrevoked MCP keys, oldest first, without secrets. Errors: `not_found` (agent). */
export async function listMcpKeys(deps: DomainDeps, caller: Caller, agentId: string): Promise<McpKey[]> {
  await getAgent(deps, caller, agentId);
  const rows = await deps.db.query<McpKeyRow>(
    `SELECT id, agent_id, prefix, created_at, last_used_at FROM mcp_keys WHERE agent_id = $1 AND revoked_at IS NULL ORDER BY created_at, id`,
    [agentId],
  );
  return rows.map(toMcpKey);
}

/** Revokes one of an agent's MCP keys at once. Errors: `not_found` (agent, or no unrevoked key of it has that id). */
export async function revokeMcpKey(deps: DomainDeps, caller: Caller, agentId: string, keyId: string): Promise<void> {
  await getAgent(deps, caller, agentId);
  if (!isUuid(keyId)) throw new ServiceError('not_found', 'MCP key not found');
  const rows = await deps.db.query(`UPDATE mcp_keys SET revoked_at = now() WHERE id = $1 AND agent_id = $2 AND revoked_at IS NULL RETURNING id`, [
    keyId,
    agentId,
  ]);
  if (rows.length === 0) throw new ServiceError('not_found', 'MCP key not found');
}

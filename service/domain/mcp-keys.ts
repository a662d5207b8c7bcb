import { ServiceError } from '../../errors/catalogue.ts';
import type { CreatedMcpKey, McpKey } from '../../api/schemas.ts';
import type { Queryable } from '../storage/db.ts';
import type { Caller, DomainDeps } from './caller.ts';
import { iso, isoOrNull, isUuid, newId } from './ids.ts';
import { findActiveOrgKey, generateSecret, hashKey, lastUsedResolutionSeconds } from './org-keys.ts';
import { getAgent } from './participants.ts';

/** Every MCP key starts with this (contract §3). */
export const mcpKeyPrefix = 'acs_mcp_';

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

/** The agent an MCP key is bound to, with its team and organization (what the MCP endpoint needs). */
export interface McpIdentity {
  keyId: string;
  agentId: string;
  teamId: string;
  orgId: string;
}

/**
 * Looks up an unrevoked MCP key by its secret. Output: its identity, or undefined when the
 * secret is not an MCP key or is unknown or revoked (a deleted agent's keys are gone with it).
 */
export async function findMcpKey(db: Queryable, secret: string): Promise<(McpIdentity & { stale: boolean }) | undefined> {
  if (!secret.startsWith(mcpKeyPrefix)) return undefined;
  const rows = await db.query<{ id: string; agent_id: string; team_id: string; org_id: string; stale: boolean }>(
    `SELECT k.id, k.agent_id, p.team_id, t.org_id,
        (k.last_used_at IS NULL OR k.last_used_at < now() - make_interval(secs => $2)) AS stale
       FROM mcp_keys k JOIN participants p ON p.id = k.agent_id JOIN teams t ON t.id = p.team_id
      WHERE k.key_hash = $1 AND k.revoked_at IS NULL`,
    [hashKey(secret), lastUsedResolutionSeconds],
  );
  const row = rows[0];
  return row && { keyId: row.id, agentId: row.agent_id, teamId: row.team_id, orgId: row.org_id, stale: row.stale };
}

/**
 * Resolves the `x-api-key` value of an MCP request to the agent it is bound to (contract §3, §7)
 * and records `last_used_at` (at most once a minute per key). For the MCP endpoint.
 * Errors: `unauthenticated` (no key), `wrong_key_type` (an organization key),
 * `invalid_api_key` (unknown or revoked).
 */
export async function authenticateMcp(db: Queryable, header: string | undefined): Promise<McpIdentity> {
  if (header === undefined || header.trim() === '') throw new ServiceError('unauthenticated', 'x-api-key header is required');
  const secret = header.trim();
  const found = await findMcpKey(db, secret);
  if (found === undefined) {
    if ((await findActiveOrgKey(db, secret)) !== undefined) {
      throw new ServiceError('wrong_key_type', 'an organization key is for REST routes; the MCP endpoint needs an MCP key');
    }
    throw new ServiceError('invalid_api_key', 'the MCP key is not valid');
  }
  if (found.stale) await db.query(`UPDATE mcp_keys SET last_used_at = now() WHERE id = $1`, [found.keyId]);
  return { keyId: found.keyId, agentId: found.agentId, teamId: found.teamId, orgId: found.orgId };
}

/**
 * Creates an MCP key for an agent the caller reaches (contract §5 POST /agents/{agent_id}/mcp-keys).
 * Output: the key with its secret `mcp_key` (`acs_mcp_` + 40 base62), shown only here; only its
 * hash is stored. Errors: `not_found` (agent).
 */
export async function createMcpKey(deps: DomainDeps, caller: Caller, agentId: string): Promise<CreatedMcpKey> {
  await getAgent(deps, caller, agentId);
  const secret = generateSecret(mcpKeyPrefix);
  const rows = await deps.db.query<McpKeyRow>(
    // INSERT … SELECT: an agent deleted meanwhile yields no row (404) rather than a foreign-key error.
    `INSERT INTO mcp_keys (id, agent_id, key_hash, prefix)
     SELECT $1, p.id, $3, $4 FROM participants p WHERE p.id = $2 AND p.kind = 'agent'
     RETURNING id, agent_id, prefix, created_at, last_used_at`,
    [newId(), agentId, hashKey(secret), secret.slice(0, 12)],
  );
  if (!rows[0]) throw new ServiceError('not_found', 'agent not found');
  return { ...toMcpKey(rows[0]), mcp_key: secret };
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

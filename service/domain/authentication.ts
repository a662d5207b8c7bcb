import { ServiceError } from '../../errors/catalogue.ts';
import type { Queryable } from '../storage/db.ts';
import type { Caller } from './caller.ts';
import { hashKey, lastUsedResolutionSeconds, mcpKeyPrefix, orgKeyPrefix } from './key-secrets.ts';

// Both key kinds are resolved here, side by side: each endpoint must recognise the other kind's
// key to answer `wrong_key_type`, so REST and MCP authentication cannot live with their own key
// management without those modules importing each other.

/** SQL predicate on an `org_keys` alias that holds while the key authenticates (not revoked, not expired). */
export function activeOrgKey(alias: string): string {
  return `(${alias}.revoked_at IS NULL AND (${alias}.expires_at IS NULL OR ${alias}.expires_at > now()))`;
}

/** The agent an MCP key is bound to, with its team and organization (what the MCP endpoint needs). */
export interface McpIdentity {
  keyId: string;
  agentId: string;
  teamId: string;
  orgId: string;
}

/**
 * The active (not revoked, not expired) organization key with this secret, if any: its id,
 * organization, expiry (null: none) and whether its `last_used_at` is older than the recording
 * resolution. One indexed lookup by hash.
 */
export async function findActiveOrgKey(
  db: Queryable,
  secret: string,
): Promise<{ id: string; org_id: string; expires_at: Date | null; stale: boolean } | undefined> {
  if (!secret.startsWith(orgKeyPrefix)) return undefined;
  const rows = await db.query<{ id: string; org_id: string; expires_at: Date | null; stale: boolean }>(
    `SELECT k.id, k.org_id, k.expires_at,
        (k.last_used_at IS NULL OR k.last_used_at < now() - make_interval(secs => $2)) AS stale
       FROM org_keys k WHERE k.key_hash = $1 AND ${activeOrgKey('k')}`,
    [hashKey(secret), lastUsedResolutionSeconds],
  );
  return rows[0];
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
 * Resolves an `X-API-Key` value to its {@link Caller} (contract §3) and records `last_used_at`
 * (at most once a minute per key).
 * Errors: `unauthenticated` when the header is missing or empty; `wrong_key_type` for a valid MCP
 * key; `invalid_api_key` when the key is unknown, revoked or expired.
 */
export async function authenticate(db: Queryable, header: string | undefined): Promise<Caller> {
  return (await authenticateWithExpiry(db, header)).caller;
}

/**
 * {@link authenticate}, also telling when the key expires (null: no expiry), for callers that
 * keep the answer for a while (key-cache.ts). Errors as {@link authenticate}.
 */
export async function authenticateWithExpiry(db: Queryable, header: string | undefined): Promise<{ caller: Caller; expiresAt: Date | null }> {
  if (header === undefined || header.trim() === '') throw new ServiceError('unauthenticated', 'X-API-Key header is required');
  const secret = header.trim();
  if (secret.startsWith(mcpKeyPrefix) && (await findMcpKey(db, secret)) !== undefined) {
    throw new ServiceError('wrong_key_type', 'an MCP key is for the MCP endpoint; REST routes need an organization key');
  }
  const row = await findActiveOrgKey(db, secret);
  if (row === undefined) throw new ServiceError('invalid_api_key', 'the API key is not valid');
  if (row.stale) await db.query(`UPDATE org_keys SET last_used_at = now() WHERE id = $1`, [row.id]);
  return { caller: { orgId: row.org_id, keyId: row.id }, expiresAt: row.expires_at };
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

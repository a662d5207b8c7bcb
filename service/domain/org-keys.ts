import { ServiceError } from '../../errors/catalogue.ts';
import { maxActiveOrgKeys, type CreatedOrgKey, type OrgKey } from '../../api/schemas.ts';
import type { Db, Queryable } from '../storage/db.ts';
import { assertOrganizationReachable } from './access-checks.ts';
import { activeOrgKey } from './authentication.ts';
import type { Caller } from './caller.ts';
import { iso, isoOrNull, isUuid, newId } from './ids.ts';
import { forgetOrgKey } from './key-cache.ts';
import { generateOrgKey, hashKey } from './key-secrets.ts';

interface OrgKeyRow {
  id: string;
  name: string;
  prefix: string;
  created_at: Date;
  last_used_at: Date | null;
  expires_at: Date | null;
}

function toOrgKey(row: OrgKeyRow): OrgKey {
  return {
    key_id: row.id,
    name: row.name,
    prefix: row.prefix,
    created_at: iso(row.created_at),
    last_used_at: isoOrNull(row.last_used_at),
    expires_at: isoOrNull(row.expires_at),
  };
}

/**
 * Stores a new key for `orgId` and returns its id and secret (the only time the secret exists).
 * No limit check: use {@link createOrgKey} for the contract's `key_limit` rule.
 */
export async function issueOrgKey(db: Queryable, orgId: string, name = ''): Promise<{ key_id: string; api_key: string }> {
  const created = await insertOrgKey(db, orgId, name, null);
  return { key_id: created.key_id, api_key: created.api_key };
}

async function insertOrgKey(db: Queryable, orgId: string, name: string, expiresAt: Date | null): Promise<CreatedOrgKey> {
  const secret = generateOrgKey();
  const rows = await db.query<OrgKeyRow>(
    `INSERT INTO org_keys (id, org_id, key_hash, prefix, name, expires_at) VALUES ($1, $2, $3, $4, $5, $6)
     RETURNING id, name, prefix, created_at, last_used_at, expires_at`,
    [newId(), orgId, hashKey(secret), secret.slice(0, 12), name, expiresAt],
  );
  return { ...toOrgKey(rows[0]!), api_key: secret };
}

/**
 * Locks the organization's key set for the rest of the transaction, so that concurrent creations,
 * rotations and revocations cannot together break `key_limit` or `last_key`.
 */
async function lockKeys(tx: Queryable, orgId: string): Promise<void> {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`org-keys:${orgId}`]);
}

async function countActive(tx: Queryable, orgId: string): Promise<number> {
  const rows = await tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM org_keys k WHERE k.org_id = $1 AND ${activeOrgKey('k')}`, [orgId]);
  return rows[0]?.n ?? 0;
}

function keyLimit(): ServiceError {
  return new ServiceError('key_limit', `an organization holds at most ${maxActiveOrgKeys} active keys; revoke one first`, {
    extra: { limit: maxActiveOrgKeys },
  });
}

/** Checks an `expires_at` input. Errors: `invalid_request` naming `expires_at` when it is not in the future. */
function parseExpiry(expiresAt: string | undefined): Date | null {
  if (expiresAt === undefined) return null;
  const at = new Date(expiresAt);
  if (!(at.getTime() > Date.now())) {
    throw new ServiceError('invalid_request', 'expires_at: must be in the future', { errors: [{ path: 'expires_at', message: 'must be in the future' }] });
  }
  return at;
}

/**
 * Creates an organization key (contract §5 POST /organizations/{org_id}/keys) without a reach
 * check: the operator surface uses it directly. Input: `expiresAt` an ISO timestamp in the future
 * (none = no expiry). Output: the key with its secret `api_key`, shown only here.
 * Errors: `not_found` (organization), `invalid_request` (`expires_at` not in the future),
 * `key_limit` (the organization already holds 10 active keys).
 */
export async function createOrgKeyUnchecked(db: Db, orgId: string, input: { name?: string | undefined; expiresAt?: string | undefined }): Promise<CreatedOrgKey> {
  const expiresAt = parseExpiry(input.expiresAt);
  if (!isUuid(orgId)) throw new ServiceError('not_found', 'organization not found');
  return db.transaction(async (tx) => {
    const org = await tx.query(`SELECT 1 FROM organizations WHERE id = $1`, [orgId]);
    if (org.length === 0) throw new ServiceError('not_found', 'organization not found');
    await lockKeys(tx, orgId);
    if ((await countActive(tx, orgId)) >= maxActiveOrgKeys) throw keyLimit();
    return insertOrgKey(tx, orgId, input.name ?? '', expiresAt);
  });
}

/**
 * Creates a key for an organization the caller reaches (contract §5). Output and errors as
 * {@link createOrgKeyUnchecked}; `not_found` also when the organization is out of reach.
 */
export async function createOrgKey(
  db: Db,
  caller: Caller,
  orgId: string,
  input: { name?: string | undefined; expiresAt?: string | undefined },
): Promise<CreatedOrgKey> {
  await assertOrganizationReachable(db, caller, orgId);
  return createOrgKeyUnchecked(db, orgId, input);
}

/**
 * Lists an organization's active keys, oldest first (contract §5 GET /organizations/{org_id}/keys):
 * neither revoked nor expired; never a secret or hash. Errors: `not_found` (organization).
 */
export async function listOrgKeys(db: Queryable, caller: Caller, orgId: string): Promise<OrgKey[]> {
  await assertOrganizationReachable(db, caller, orgId);
  const rows = await db.query<OrgKeyRow>(
    `SELECT k.id, k.name, k.prefix, k.created_at, k.last_used_at, k.expires_at FROM org_keys k
      WHERE k.org_id = $1 AND ${activeOrgKey('k')} ORDER BY k.created_at, k.id`,
    [orgId],
  );
  return rows.map(toOrgKey);
}

async function findActiveKey(tx: Queryable, orgId: string, keyId: string): Promise<OrgKeyRow> {
  if (!isUuid(keyId)) throw new ServiceError('not_found', 'key not found');
  const rows = await tx.query<OrgKeyRow>(
    `SELECT k.id, k.name, k.prefix, k.created_at, k.last_used_at, k.expires_at FROM org_keys k
      WHERE k.id = $1 AND k.org_id = $2 AND ${activeOrgKey('k')}`,
    [keyId, orgId],
  );
  if (!rows[0]) throw new ServiceError('not_found', 'key not found');
  return rows[0];
}

/**
 * Rotates a key (contract §5 POST …/keys/{key_id}/rotate): issues a new key with the old one's
 * name and sets the old key's `expires_at` to now + `graceSeconds` (0–30 days; an earlier expiry
 * is kept, rotation never extends a key's life); 0 revokes the old key at once.
 * Output: the new key with its secret. Errors: `not_found` (organization, or a key of it that is
 * not active), `key_limit` (the new key would make more than 10 active keys).
 */
export async function rotateOrgKey(db: Db, caller: Caller, orgId: string, keyId: string, graceSeconds: number): Promise<CreatedOrgKey> {
  await assertOrganizationReachable(db, caller, orgId);
  const created = await db.transaction(async (tx) => {
    await lockKeys(tx, orgId);
    const old = await findActiveKey(tx, orgId, keyId);
    if (graceSeconds === 0) {
      await tx.query(`UPDATE org_keys SET revoked_at = now() WHERE id = $1`, [old.id]);
    } else {
      await tx.query(
        `UPDATE org_keys SET expires_at = LEAST(COALESCE(expires_at, 'infinity'::timestamptz), now() + make_interval(secs => $2)) WHERE id = $1`,
        [old.id, graceSeconds],
      );
    }
    if ((await countActive(tx, orgId)) >= maxActiveOrgKeys) throw keyLimit();
    return insertOrgKey(tx, orgId, old.name, null);
  });
  // The old key's expiry moved (or it was revoked): this process must not go on trusting it.
  forgetOrgKey(db, keyId);
  return created;
}

/**
 * Revokes a key at once (contract §5 DELETE /organizations/{org_id}/keys/{key_id}); the caller may
 * revoke the key it uses. Errors: `not_found` (organization, or no active key of it has that id),
 * `last_key` (it is the organization's only active key).
 */
export async function revokeOrgKey(db: Db, caller: Caller, orgId: string, keyId: string): Promise<void> {
  await assertOrganizationReachable(db, caller, orgId);
  await db.transaction(async (tx) => {
    await lockKeys(tx, orgId);
    await findActiveKey(tx, orgId, keyId);
    if ((await countActive(tx, orgId)) <= 1) {
      throw new ServiceError('last_key', "this is the organization's last active key; create another before revoking it");
    }
    await tx.query(`UPDATE org_keys SET revoked_at = now() WHERE id = $1`, [keyId]);
  });
  // Refused from the next request on, not after the key cache's TTL (key-cache.ts).
  forgetOrgKey(db, keyId);
}

import { createHash, randomInt } from 'node:crypto';
import { ServiceError } from '../../errors/catalogue.ts';
import type { Queryable } from '../storage/db.ts';
import type { Caller } from './caller.ts';
import { newId } from './ids.ts';

const base62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const orgKeyPrefix = 'acs_org_';

/** A new organization key secret: `acs_org_` and 40 base62 characters (contract §3). */
export function generateOrgKey(): string {
  let secret = orgKeyPrefix;
  // randomInt is uniform (no modulo bias), unlike mapping random bytes onto 62 symbols.
  for (let i = 0; i < 40; i += 1) secret += base62[randomInt(62)];
  return secret;
}

/** The stored form of a key: its SHA-256 in hex; the secret itself is never stored. */
export function hashKey(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/**
 * Stores a new key for `orgId` and returns its id and secret (the only time the secret exists).
 */
export async function issueOrgKey(db: Queryable, orgId: string, name = ''): Promise<{ key_id: string; api_key: string }> {
  const secret = generateOrgKey();
  const keyId = newId();
  await db.query(`INSERT INTO org_keys (id, org_id, key_hash, prefix, name) VALUES ($1, $2, $3, $4, $5)`, [
    keyId,
    orgId,
    hashKey(secret),
    secret.slice(0, 12),
    name,
  ]);
  return { key_id: keyId, api_key: secret };
}

/**
 * Resolves an `X-API-Key` value to its {@link Caller} (contract §3).
 * Errors: `unauthenticated` when the header is missing or empty; `invalid_api_key` when the key
 * is unknown, revoked or expired.
 */
export async function authenticate(db: Queryable, header: string | undefined): Promise<Caller> {
  if (header === undefined || header.trim() === '') throw new ServiceError('unauthenticated', 'X-API-Key header is required');
  const secret = header.trim();
  if (!secret.startsWith(orgKeyPrefix)) throw new ServiceError('invalid_api_key', 'the API key is not valid');
  const rows = await db.query<{ id: string; org_id: string }>(
    `SELECT id, org_id FROM org_keys
      WHERE key_hash = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`,
    [hashKey(secret)],
  );
  const row = rows[0];
  if (row === undefined) throw new ServiceError('invalid_api_key', 'the API key is not valid');
  return { orgId: row.org_id, keyId: row.id };
}

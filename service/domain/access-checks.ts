import { ServiceError } from '../../errors/catalogue.ts';
import type { Queryable } from '../storage/db.ts';
import { reaches, type Caller } from './caller.ts';
import { isUuid } from './ids.ts';

// The organization reach check on its own: every module that owns something of an organization
// (keys, teams, attachments, provider keys) needs it, and organizations.ts itself provisions
// keys, so keeping it there would make those modules import each other.

/**
 * Checks that the caller reaches `orgId` (for operations on its children).
 * Errors: `not_found` when it does not (contract §2, never 403).
 */
export async function assertOrganizationReachable(db: Queryable, caller: Caller, orgId: string): Promise<void> {
  if (!isUuid(orgId)) throw new ServiceError('not_found', 'organization not found');
  const rows = await db.query(`SELECT 1 FROM organizations o WHERE o.id = $2 AND ${reaches('o', 1)}`, [caller.orgId, orgId]);
  if (rows.length === 0) throw new ServiceError('not_found', 'organization not found');
}

/**
 * In a transaction that writes a row naming the caller's own organization (as provisioner or
 * owner): locks that organization's row against deletion until the transaction ends (FOR KEY
 * SHARE, which a deletion's FOR UPDATE waits for) and checks that it still exists. It is gone
 * when another process deleted it while this process's key cache still trusts the key
 * (key-cache.ts): the key went with its organization.
 * Errors: `invalid_api_key` when the caller's organization no longer exists.
 */
export async function lockCallerOrganization(tx: Queryable, caller: Caller): Promise<void> {
  const rows = await tx.query(`SELECT 1 FROM organizations WHERE id = $1 FOR KEY SHARE`, [caller.orgId]);
  if (rows.length === 0) throw new ServiceError('invalid_api_key', 'the API key is not valid');
}

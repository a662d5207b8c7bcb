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

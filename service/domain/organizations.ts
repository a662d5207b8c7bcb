import { ServiceError } from '../../errors/catalogue.ts';
import type { Organization } from '../../api/schemas.ts';
import type { Db, Queryable } from '../storage/db.ts';
import { reaches, type Caller, type DomainDeps } from './caller.ts';
import { iso, isUuid, newId } from './ids.ts';
import { issueOrgKey } from './org-keys.ts';

const selectOrganization = `
  SELECT o.id, o.name, o.created_at,
    (SELECT count(*)::int FROM teams t WHERE t.org_id = o.id) AS team_count,
    (SELECT count(*)::int FROM participants p JOIN teams t ON t.id = p.team_id
      WHERE t.org_id = o.id AND p.kind = 'human') AS human_count
  FROM organizations o`;

interface OrganizationRow {
  id: string;
  name: string;
  created_at: Date;
  team_count: number;
  human_count: number;
}

function toOrganization(row: OrganizationRow): Organization {
  return {
    org_id: row.id,
    org_name: row.name,
    team_count: row.team_count,
    // 1 for the creator, who is not a human of any team (contract §4)
    human_count: 1 + row.human_count,
    is_personal: false,
    created_at: iso(row.created_at),
  };
}

/** Lists every organization the caller reaches, oldest first (contract §5 GET /organizations). */
export async function listOrganizations(deps: DomainDeps, caller: Caller): Promise<Organization[]> {
  const rows = await deps.db.query<OrganizationRow>(`${selectOrganization} WHERE ${reaches('o', 1)} ORDER BY o.created_at, o.id`, [
    caller.orgId,
  ]);
  return rows.map(toOrganization);
}

/**
 * Returns one organization the caller reaches.
 * Errors: `not_found` when it does not exist or is out of reach (contract §2, never 403).
 */
export async function getOrganization(deps: DomainDeps | { db: Queryable }, caller: Caller, orgId: string): Promise<Organization> {
  if (!isUuid(orgId)) throw new ServiceError('not_found', 'organization not found');
  const rows = await deps.db.query<OrganizationRow>(`${selectOrganization} WHERE o.id = $2 AND ${reaches('o', 1)}`, [
    caller.orgId,
    orgId,
  ]);
  const row = rows[0];
  if (row === undefined) throw new ServiceError('not_found', 'organization not found');
  return toOrganization(row);
}

/**
 * Provisions a new organization owned by the caller's organization (contract §5 POST
 * /organizations); the caller's key reaches it from then on.
 * Errors: `conflict` (with `existing_id`) when an organization the caller reaches has that name.
 */
export async function createOrganization(deps: DomainDeps, caller: Caller, name: string): Promise<Organization> {
  const id = await deps.db.transaction(async (tx) => {
    // Serialise creations by one caller so two concurrent requests cannot both pass the check.
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`org-names:${caller.orgId}`]);
    const existing = await tx.query<{ id: string }>(`SELECT o.id FROM organizations o WHERE o.name = $2 AND ${reaches('o', 1)}`, [
      caller.orgId,
      name,
    ]);
    if (existing[0]) {
      throw new ServiceError('conflict', `an organization named "${name}" already exists`, { extra: { existing_id: existing[0].id } });
    }
    const orgId = newId();
    await tx.query(`INSERT INTO organizations (id, name, provisioned_by) VALUES ($1, $2, $3)`, [orgId, name, caller.orgId]);
    return orgId;
  });
  return getOrganization(deps, caller, id);
}

/**
 * Takes the lock of top-level organization names (held until the transaction ends) and checks
 * that `name` is free among them, so two processes cannot create the same name.
 * Errors: `conflict` with `existing_id`.
 */
export async function claimTopLevelName(tx: Queryable, name: string): Promise<void> {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtext('org-names:top-level'))`);
  const existing = await tx.query<{ id: string }>(`SELECT id FROM organizations WHERE name = $1 AND provisioned_by IS NULL`, [name]);
  if (existing[0]) {
    throw new ServiceError('conflict', `a top-level organization named "${name}" already exists`, { extra: { existing_id: existing[0].id } });
  }
}

/**
 * Provisions a top-level organization with one key, without any caller (operator and test use,
 * dev credentials). Returns the organization id and the key secret.
 * Errors: `conflict` (with `existing_id`) when a top-level organization of that name exists.
 */
export async function provisionOrganization(db: Db, name: string): Promise<{ org_id: string; api_key: string }> {
  return db.transaction(async (tx) => {
    await claimTopLevelName(tx, name);
    const orgId = newId();
    await tx.query(`INSERT INTO organizations (id, name) VALUES ($1, $2)`, [orgId, name]);
    const { api_key } = await issueOrgKey(tx, orgId, 'default');
    return { org_id: orgId, api_key };
  });
}

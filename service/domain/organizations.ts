import { ServiceError } from '../../errors/catalogue.ts';
import type { Organization, OrganizationDeletionPreview } from '../../api/schemas.ts';
import type { Db, Queryable } from '../storage/db.ts';
import { assertOrganizationReachable, lockCallerOrganization } from './access-checks.ts';
import { activeOrgKey } from './authentication.ts';
import { reaches, type Caller, type DomainDeps } from './caller.ts';
import { countCascade, lockDeletable, protectedResources } from './deletion.ts';
import { iso, isUuid, newId } from './ids.ts';
import { forgetOrganizationKeys } from './key-cache.ts';
import { issueOrgKey } from './org-keys.ts';

const selectOrganization = `
  SELECT o.id, o.name, o.deletion_protection, o.created_at,
    (SELECT count(*)::int FROM teams t WHERE t.org_id = o.id) AS team_count,
    (SELECT count(*)::int FROM participants p JOIN teams t ON t.id = p.team_id
      WHERE t.org_id = o.id AND p.kind = 'human') AS human_count
  FROM organizations o`;

interface OrganizationRow {
  id: string;
  name: string;
  deletion_protection: boolean;
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
    deletion_protection: row.deletion_protection,
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
 * /organizations); the caller's key reaches it from then on. `deletion_protection` defaults to false.
 * Errors: `conflict` (with `existing_id`) when an organization the caller reaches has that name;
 * `invalid_api_key` when the caller's own organization was deleted meanwhile.
 */
export async function createOrganization(
  deps: DomainDeps,
  caller: Caller,
  input: { org_name: string; deletion_protection?: boolean | undefined },
): Promise<Organization> {
  const name = input.org_name;
  const id = await deps.db.transaction(async (tx) => {
    // Serialise creations by one caller so two concurrent requests cannot both pass the check.
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`org-names:${caller.orgId}`]);
    // The new organization names the caller's as its provisioner, which must outlive this insert.
    await lockCallerOrganization(tx, caller);
    const existing = await tx.query<{ id: string }>(`SELECT o.id FROM organizations o WHERE o.name = $2 AND ${reaches('o', 1)}`, [
      caller.orgId,
      name,
    ]);
    if (existing[0]) {
      throw new ServiceError('conflict', `an organization named "${name}" already exists`, { extra: { existing_id: existing[0].id } });
    }
    const orgId = newId();
    await tx.query(`INSERT INTO organizations (id, name, provisioned_by, deletion_protection) VALUES ($1, $2, $3, $4)`, [
      orgId,
      name,
      caller.orgId,
      input.deletion_protection ?? false,
    ]);
    return orgId;
  });
  return getOrganization(deps, caller, id);
}

/**
 * Changes an organization the caller reaches (contract §5 PATCH /organizations/{org_id}): its
 * `deletion_protection` (contract §4); an empty patch changes nothing. Output: the Organization.
 * Errors: `not_found` (unknown, out of reach, or deleted meanwhile).
 */
export async function updateOrganization(
  deps: DomainDeps,
  caller: Caller,
  orgId: string,
  patch: { deletion_protection?: boolean | undefined },
): Promise<Organization> {
  if (!isUuid(orgId)) throw new ServiceError('not_found', 'organization not found');
  const updated = await deps.db.query(
    `UPDATE organizations o SET deletion_protection = COALESCE($3, o.deletion_protection) WHERE o.id = $2 AND ${reaches('o', 1)} RETURNING o.id`,
    [caller.orgId, orgId, patch.deletion_protection ?? null],
  );
  if (updated.length === 0) throw new ServiceError('not_found', 'organization not found');
  return getOrganization(deps, caller, orgId);
}

/** The organizations `orgId` provisioned, oldest first: they block its deletion (`in_use`). */
async function provisionedBy(db: Queryable, orgId: string, limit?: number): Promise<Array<{ org_id: string; org_name: string }>> {
  return db.query<{ org_id: string; org_name: string }>(
    `SELECT id AS org_id, name AS org_name FROM organizations WHERE provisioned_by = $1 ORDER BY created_at, id${limit ? ` LIMIT ${limit}` : ''}`,
    [orgId],
  );
}

/**
 * Reports what `DELETE /organizations/{org_id}` would remove (contract §5
 * GET /organizations/{org_id}/deletion-preview): its teams and, summed over them, what each team
 * deletion would take (the counts of the team preview), all its attachments, its active keys and
 * provider keys; and why the DELETE would be refused, so a client can say so without trying:
 * `protected` (409 `deletion_protected`), `provisioned_organizations` (409 `in_use`),
 * `own_organization` (403 `forbidden`). Errors: `not_found`.
 */
export async function previewOrganizationDeletion(deps: DomainDeps, caller: Caller, orgId: string): Promise<OrganizationDeletionPreview> {
  const org = await getOrganization(deps, caller, orgId);
  const counts = await countCascade(deps.db, 'organization', orgId);
  const [keys] = await deps.db.query<{ keys: number; provider_keys: number }>(
    `SELECT (SELECT count(*)::int FROM org_keys k WHERE k.org_id = $1 AND ${activeOrgKey('k')}) AS keys,
            (SELECT count(*)::int FROM provider_keys WHERE org_id = $1) AS provider_keys`,
    [orgId],
  );
  return {
    org_id: orgId,
    teams: org.team_count,
    ...counts,
    keys: keys?.keys ?? 0,
    provider_keys: keys?.provider_keys ?? 0,
    protected: (await protectedResources(deps.db, { kind: 'organization', id: orgId }, false)) ?? [],
    provisioned_organizations: await provisionedBy(deps.db, orgId),
    own_organization: orgId === caller.orgId,
  };
}

/**
 * Deletes an organization the caller reaches (contract §5 DELETE /organizations/{org_id}) and,
 * by cascade, its teams (with their agents, humans, edges, threads and messages), its keys, MCP
 * keys, provider keys, attachments, idempotency records, event log and webhooks. Its keys stop working at once in
 * this process (key-cache.ts). Nothing is deleted when any check fails.
 * Errors: `not_found` (unknown or out of reach); `forbidden` for the caller's own organization
 * (a key cannot delete the organization it belongs to: the organization that provisioned it can);
 * `deletion_protected` (with `protected`) when the organization, one of its teams or one of their
 * agents or humans has deletion protection; `in_use` (with `org_id`) while an organization it
 * provisioned exists, which would otherwise be left behind, reachable by no key of its provisioner.
 */
export async function deleteOrganization(deps: DomainDeps, caller: Caller, orgId: string): Promise<{ deleted: true; org_id: string }> {
  if (!isUuid(orgId)) throw new ServiceError('not_found', 'organization not found');
  if (orgId === caller.orgId) {
    throw new ServiceError('forbidden', "a key cannot delete its own organization; use a key of the organization that provisioned it");
  }
  await deps.db.transaction(async (tx) => {
    await assertOrganizationReachable(tx, caller, orgId);
    // Takes the organization's row lock first: creations of teams (and of organizations it would
    // provision) wait for it, then find it gone.
    await lockDeletable(tx, { kind: 'organization', id: orgId });
    const [child] = await provisionedBy(tx, orgId, 1);
    if (child) {
      throw new ServiceError('in_use', `organization "${child.org_name}" (${child.org_id}) was provisioned by this one and still exists; delete it first`, {
        extra: { org_id: child.org_id },
      });
    }
    await tx.query(`DELETE FROM idempotency_keys WHERE scope = $1`, [orgId]);
    await tx.query(`DELETE FROM organizations WHERE id = $1`, [orgId]);
    // The event log has no foreign key (migration 0011_events): it goes here, after the cascade,
    // which waited for any append of the organization still committing.
    await tx.query(`DELETE FROM events WHERE org_id = $1`, [orgId]);
    await tx.query(`DELETE FROM event_counters WHERE org_id = $1`, [orgId]);
  });
  forgetOrganizationKeys(deps.db, orgId);
  return { deleted: true, org_id: orgId };
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

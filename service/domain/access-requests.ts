import { ServiceError } from '../../errors/catalogue.ts';
import type { AccessRequest, AccessRequestStatus, ApprovedAccessRequest } from '../../api/schemas.ts';
import type { Db, Queryable } from '../storage/db.ts';
import { iso, isoOrNull, isUuid, newId } from './ids.ts';
import { issueOrgKey } from './org-keys.ts';
import { claimTopLevelName, getOrganization } from './organizations.ts';

interface AccessRequestRow {
  id: string;
  email: string;
  org_name: string;
  intended_use: string;
  status: AccessRequestStatus;
  reason: string | null;
  org_id: string | null;
  created_at: Date;
  decided_at: Date | null;
}

function toAccessRequest(row: AccessRequestRow): AccessRequest {
  return {
    request_id: row.id,
    email: row.email,
    org_name: row.org_name,
    intended_use: row.intended_use,
    status: row.status,
    reason: row.reason,
    org_id: row.org_id,
    created_at: iso(row.created_at),
    decided_at: isoOrNull(row.decided_at),
  };
}

/**
 * Records an access request for the operator's manual review (contract §5 POST /access-requests,
 * interface §5: keys are provisioned after review). Input already validated (email, org_name
 * 1–100, intended_use 1–2000). Output: `{request_id, status: "pending"}`.
 */
export async function submitAccessRequest(
  db: Queryable,
  input: { email: string; org_name: string; intended_use: string },
): Promise<{ request_id: string; status: 'pending' }> {
  const id = newId();
  await db.query(`INSERT INTO access_requests (id, email, org_name, intended_use) VALUES ($1, $2, $3, $4)`, [
    id,
    input.email,
    input.org_name,
    input.intended_use,
  ]);
  return { request_id: id, status: 'pending' };
}

/** Lists access requests, oldest first, optionally only those in `status` (operator surface, contract §6). */
export async function listAccessRequests(db: Queryable, status?: AccessRequestStatus): Promise<AccessRequest[]> {
  const rows = await db.query<AccessRequestRow>(
    `SELECT * FROM access_requests WHERE ($1::text IS NULL OR status = $1) ORDER BY created_at, id`,
    [status ?? null],
  );
  return rows.map(toAccessRequest);
}

/** Locks a pending request. Errors: `not_found`; `conflict` when it was already decided. */
async function lockPending(tx: Queryable, requestId: string): Promise<AccessRequestRow> {
  if (!isUuid(requestId)) throw new ServiceError('not_found', 'access request not found');
  const rows = await tx.query<AccessRequestRow>(`SELECT * FROM access_requests WHERE id = $1 FOR UPDATE`, [requestId]);
  const row = rows[0];
  if (!row) throw new ServiceError('not_found', 'access request not found');
  if (row.status !== 'pending') throw new ServiceError('conflict', `the access request is already ${row.status}`, { extra: { request_status: row.status } });
  return row;
}

/**
 * Approves a pending access request (operator surface, contract §6): creates the top-level
 * organization named in it with one key named "default". Output: the decided request, the
 * organization and its key secret, shown only here.
 * Errors: `not_found`; `conflict` when the request was already decided, or (with `existing_id`)
 * when a top-level organization of that name exists.
 */
export async function approveAccessRequest(db: Db, requestId: string): Promise<ApprovedAccessRequest> {
  return db.transaction(async (tx) => {
    const request = await lockPending(tx, requestId);
    await claimTopLevelName(tx, request.org_name);
    const orgId = newId();
    await tx.query(`INSERT INTO organizations (id, name) VALUES ($1, $2)`, [orgId, request.org_name]);
    const key = await issueOrgKey(tx, orgId, 'default');
    const decided = await tx.query<AccessRequestRow>(
      `UPDATE access_requests SET status = 'approved', org_id = $2, decided_at = now() WHERE id = $1 RETURNING *`,
      [requestId, orgId],
    );
    const organization = await getOrganization({ db: tx }, { orgId, keyId: key.key_id }, orgId);
    return { request: toAccessRequest(decided[0]!), organization, api_key: key.api_key };
  });
}

/**
 * Rejects a pending access request with an optional reason (operator surface, contract §6).
 * Output: the decided request. Errors: `not_found`; `conflict` when it was already decided.
 */
export async function rejectAccessRequest(db: Db, requestId: string, reason?: string): Promise<AccessRequest> {
  return db.transaction(async (tx) => {
    await lockPending(tx, requestId);
    const rows = await tx.query<AccessRequestRow>(
      `UPDATE access_requests SET status = 'rejected', reason = $2, decided_at = now() WHERE id = $1 RETURNING *`,
      [requestId, reason ?? null],
    );
    return toAccessRequest(rows[0]!);
  });
}

/**
 * The operator actions of `acs-server admin …` (contract §6), run directly against the server's
 * database with the same domain functions as the `/admin/v1` routes. No process handling here:
 * `service/server-cli.ts` parses flags and prints; `bin/acs-server.ts` exits.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { AccessRequestStatus, CreateOrgKeyBody, RejectAccessRequestBody, type AccessRequest, type ApprovedAccessRequest, type CreatedOrgKey } from '../../api/schemas.ts';
import { ErrorCatalogue, ServiceError, ToolkitError } from '../../errors/catalogue.ts';
import { approveAccessRequest, listAccessRequests, rejectAccessRequest } from '../domain/access-requests.ts';
import { createOrgKeyUnchecked } from '../domain/org-keys.ts';
import { parseInput } from '../http/validate.ts';
import { DataDirLockedError } from '../storage/data-dir-lock.ts';
import type { Db } from '../storage/db.ts';
import { openDb } from '../storage/open-db.ts';

/** Which database the admin commands work on: PostgreSQL when `databaseUrl` is set, else PGlite in `dataDir`. */
export interface AdminStorage {
  dataDir: string;
  databaseUrl?: string | undefined;
}

/**
 * Opens the server's database, runs `fn`, closes it. An embedded database is opened only where
 * one exists, so that a mistyped `--data-dir` does not silently create an empty one.
 * Errors: `invalid_usage` (ToolkitError) when `DIR/pglite` does not exist; the driver's error
 * when the database cannot be opened; `DataDirLockedError` naming the holder's pid while a server
 * (or another command) has the data dir open: one process per data dir.
 */
export async function withAdminDb<T>(storage: AdminStorage, fn: (db: Db) => Promise<T>): Promise<T> {
  if (!storage.databaseUrl && !existsSync(join(storage.dataDir, 'pglite'))) {
    throw new ToolkitError('invalid_usage', `no database in ${storage.dataDir} (expected ${join(storage.dataDir, 'pglite')}); pass --data-dir or --database-url`);
  }
  const db = await openDb({ databaseUrl: storage.databaseUrl, dataDir: storage.dataDir });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

/**
 * `admin access-requests list [--status S]`: the access requests, oldest first, optionally only
 * those with status `pending`, `approved` or `rejected`. Output: `{access_requests}`.
 * Errors: `invalid_request` (unknown status).
 */
export async function adminListAccessRequests(storage: AdminStorage, status?: string): Promise<{ access_requests: AccessRequest[] }> {
  const parsed = status === undefined ? undefined : parseInput(AccessRequestStatus, status);
  return withAdminDb(storage, async (db) => ({ access_requests: await listAccessRequests(db, parsed) }));
}

/**
 * `admin access-requests approve ID`: creates the organization named in the request with its first
 * key. Output: `{request, organization, api_key}` (the key is shown only here).
 * Errors: `not_found`, `conflict` (already decided, or a top-level organization of that name exists).
 */
export async function adminApproveAccessRequest(storage: AdminStorage, requestId: string): Promise<ApprovedAccessRequest> {
  return withAdminDb(storage, (db) => approveAccessRequest(db, requestId));
}

/**
 * `admin access-requests reject ID [--reason R]` (reason 1–2000 characters). Output: the request.
 * Errors: `invalid_request` (reason), `not_found`, `conflict` (already decided).
 */
export async function adminRejectAccessRequest(storage: AdminStorage, requestId: string, reason?: string): Promise<AccessRequest> {
  const body = parseInput(RejectAccessRequestBody, reason === undefined ? {} : { reason });
  return withAdminDb(storage, (db) => rejectAccessRequest(db, requestId, body.reason));
}

/**
 * `admin keys issue --org ORG_ID [--name N]`: a new key for an existing organization.
 * Output: `{org_id, …key, api_key}` (the key is shown only here).
 * Errors: `invalid_request` (name), `not_found` (organization), `key_limit`.
 */
export async function adminIssueKey(storage: AdminStorage, orgId: string, name?: string): Promise<CreatedOrgKey & { org_id: string }> {
  const body = parseInput(CreateOrgKeyBody, name === undefined ? {} : { name });
  return withAdminDb(storage, async (db) => ({ org_id: orgId, ...(await createOrgKeyUnchecked(db, orgId, { name: body.name })) }));
}

/**
 * The JSON an admin command prints on stderr when it fails: `{code, title?, detail, errors?, …}`
 * with the catalogue's code; `data_dir_locked` with the `owner` (pid, host, since) when a running
 * server holds the data dir; an unexpected error keeps only its message (drivers put no secret there).
 */
export function adminErrorOutput(error: unknown): Record<string, unknown> {
  if (error instanceof ServiceError) {
    return { code: error.code, title: ErrorCatalogue[error.code].title, detail: error.message, ...(error.errors ? { errors: error.errors } : {}), ...error.extra };
  }
  if (error instanceof ToolkitError) return { code: error.code, detail: error.message };
  // The embedded database is held by a running server (or another admin command): name it.
  if (error instanceof DataDirLockedError) return { code: 'data_dir_locked', detail: error.message, ...(error.owner ? { owner: error.owner } : {}) };
  return { code: 'internal', detail: error instanceof Error ? error.message : String(error) };
}

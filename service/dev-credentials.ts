import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { ServiceError } from '../errors/catalogue.ts';
import type { Db } from './storage/db.ts';
import { authenticate } from './domain/authentication.ts';
import { issueOrgKey } from './domain/org-keys.ts';
import { provisionOrganization } from './domain/organizations.ts';

/**
 * The dev credentials file (contract §6: `base_url`, `api_key`, `org_id`), with two additions:
 * the process that wrote it (`pid`) and its machine (`host`), so that `acs-server wait` tells a
 * file of the server it waits for from one of an earlier run (service/wait-ready.ts).
 */
export interface DevCredentials {
  base_url: string;
  api_key: string;
  org_id: string;
  /** The writing server's process id. */
  pid: number;
  /** The writing server's host name (`os.hostname()`): a pid means something only there. */
  host: string;
}

const devOrgName = 'dev';

async function readExisting(file: string): Promise<Partial<DevCredentials>> {
  try {
    const parsed: unknown = JSON.parse(await readFile(file, 'utf8'));
    return typeof parsed === 'object' && parsed !== null ? (parsed as Partial<DevCredentials>) : {};
  } catch {
    return {};
  }
}

/**
 * Idempotently provisions the top-level organization `dev` with a key (contract §6). The
 * organization is re-used across starts on the same storage; since only key hashes are stored,
 * the key in `file` is re-used when it still authenticates for that organization, otherwise a new
 * key is issued. Output: the organization id and a working key (the file is not written here).
 */
export async function ensureDevCredentials(db: Db, file: string): Promise<{ org_id: string; api_key: string }> {
  const orgs = await db.query<{ id: string }>(`SELECT id FROM organizations WHERE name = $1 AND provisioned_by IS NULL ORDER BY created_at LIMIT 1`, [
    devOrgName,
  ]);
  let orgId = orgs[0]?.id;
  if (orgId === undefined) {
    try {
      return await provisionOrganization(db, devOrgName);
    } catch (error) {
      // Another process on the same database provisioned it first: use theirs.
      if (!(error instanceof ServiceError) || error.code !== 'conflict') throw error;
      orgId = String(error.extra.existing_id);
    }
  }
  const existing = await readExisting(file);
  if (typeof existing.api_key === 'string') {
    const caller = await authenticate(db, existing.api_key).catch(() => undefined);
    if (caller?.orgId === orgId) return { org_id: orgId, api_key: existing.api_key };
  }
  const { api_key } = await issueOrgKey(db, orgId, 'dev-credentials');
  return { org_id: orgId, api_key };
}

/**
 * Writes the dev credentials file as JSON (mode 0600: it holds a key), atomically: the text goes
 * to a temporary file beside it, which is then renamed over FILE, so a reader (`acs-server wait`,
 * a script) sees the old file or the whole new one, never a half-written one.
 */
export async function writeDevCredentials(file: string, credentials: DevCredentials): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    await writeFile(temporary, JSON.stringify(credentials, null, 2) + '\n', { mode: 0o600 });
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

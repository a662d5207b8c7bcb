import { ServiceError } from '../../errors/catalogue.ts';
import { maxAttachmentBytes, type Attachment } from '../../api/schemas.ts';
import type { Queryable } from '../storage/db.ts';
import { assertOrganizationReachable, lockCallerOrganization } from './access-checks.ts';
import { reaches, type Caller, type DomainDeps } from './caller.ts';
import { iso, isUuid, newId } from './ids.ts';

interface AttachmentRow {
  id: string;
  org_id: string;
  filename: string;
  content_type: string;
  size_bytes: number;
  created_at: Date;
}

const columns = 'a.id, a.org_id, a.filename, a.content_type, a.size_bytes, a.created_at';

function toAttachment(row: AttachmentRow): Attachment {
  return {
    attachment_id: row.id,
    org_id: row.org_id,
    filename: row.filename,
    content_type: row.content_type,
    size_bytes: row.size_bytes,
    created_at: iso(row.created_at),
  };
}

// PGlite returns bytea as Uint8Array, pg as Buffer: one shape for the HTTP layer.
function toBuffer(value: unknown): Buffer {
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  throw new Error('attachment data is not binary');
}

/**
 * Stores an uploaded attachment (contract §5 `POST /attachments`). Input: `data_base64` already
 * checked to be padded standard base64 by the schema; `org_id` (default: the key's organization)
 * names the owner. Output: the Attachment (size in bytes of the decoded data).
 * Errors: `payload_too_large` when the decoded data exceeds 5 MiB; `not_found` when `org_id` is
 * not reachable by the caller; `invalid_api_key` when, without `org_id`, the key's own
 * organization was deleted meanwhile (another process may still trust the key, key-cache.ts).
 */
export async function createAttachment(
  deps: DomainDeps,
  caller: Caller,
  input: { filename: string; content_type: string; data_base64: string; org_id?: string | undefined },
): Promise<Attachment> {
  // Cheap bound before decoding: 4 base64 characters carry at most 3 bytes.
  const decodedUpperBound = (input.data_base64.length / 4) * 3;
  const data = decodedUpperBound > maxAttachmentBytes + 2 ? undefined : Buffer.from(input.data_base64, 'base64');
  if (data === undefined || data.length > maxAttachmentBytes) {
    throw new ServiceError('payload_too_large', `data_base64 decodes to more than ${maxAttachmentBytes} bytes (5 MiB)`, {
      errors: [{ path: 'data_base64', message: 'at most 5 MiB once decoded' }],
    });
  }
  const orgId = input.org_id ?? caller.orgId;
  return deps.db.transaction(async (tx) => {
    if (input.org_id !== undefined) await assertOrganizationReachable(tx, caller, orgId);
    else await lockCallerOrganization(tx, caller);
    return insertAttachment(tx, { orgId, filename: input.filename, contentType: input.content_type, data });
  });
}

/**
 * Stores `data` as an attachment of organization `orgId` inside `tx`, under `id` when given (one
 * fixed before, that a message or a task's part names) — no access check: callers make theirs
 * (a remote A2A agent's files, service/a2a/remote-record.ts, are its organization's). `filename`
 * and `contentType` as `POST /attachments` takes them (api/schemas.ts `CreateAttachmentBody`),
 * checked by the caller. Output: the Attachment. Errors: `payload_too_large` (more than 5 MiB).
 */
export async function insertAttachment(
  tx: Queryable,
  input: { id?: string | undefined; orgId: string; filename: string; contentType: string; data: Buffer },
): Promise<Attachment> {
  if (input.data.length > maxAttachmentBytes) {
    throw new ServiceError('payload_too_large', `the attachment holds more than ${maxAttachmentBytes} bytes (5 MiB)`, {
      errors: [{ path: 'data_base64', message: 'at most 5 MiB once decoded' }],
    });
  }
  const rows = await tx.query<AttachmentRow>(
    `INSERT INTO attachments AS a (id, org_id, filename, content_type, size_bytes, data) VALUES ($1, $2, $3, $4, $5, $6)
     RETURNING ${columns}`,
    [input.id ?? newId(), input.orgId, input.filename, input.contentType, input.data.length, input.data],
  );
  return toAttachment(rows[0]!);
}

async function findAttachment<T>(db: Queryable, caller: Caller, attachmentId: string, select: string): Promise<T> {
  if (!isUuid(attachmentId)) throw new ServiceError('not_found', 'attachment not found');
  const rows = await db.query<T>(
    `SELECT ${select} FROM attachments a JOIN organizations o ON o.id = a.org_id WHERE a.id = $2 AND ${reaches('o', 1)}`,
    [caller.orgId, attachmentId],
  );
  if (!rows[0]) throw new ServiceError('not_found', 'attachment not found');
  return rows[0];
}

/**
 * Returns an attachment's metadata (contract §5 `GET /attachments/{id}`).
 * Errors: `not_found` when it does not exist or its organization is out of the caller's reach.
 */
export async function getAttachment(db: Queryable, caller: Caller, attachmentId: string): Promise<Attachment> {
  return toAttachment(await findAttachment<AttachmentRow>(db, caller, attachmentId, columns));
}

/**
 * Returns an attachment's metadata and bytes (contract §5 `GET /attachments/{id}/content`).
 * Errors: `not_found` as {@link getAttachment}.
 */
export async function getAttachmentContent(db: Queryable, caller: Caller, attachmentId: string): Promise<{ attachment: Attachment; data: Buffer }> {
  const row = await findAttachment<AttachmentRow & { data: unknown }>(db, caller, attachmentId, `${columns}, a.data`);
  return { attachment: toAttachment(row), data: toBuffer(row.data) };
}

/**
 * Checks that every id in `attachmentIds` names an attachment of organization `orgId` (the
 * organization of the thread a message goes to, contract §5), so that whoever reads the message
 * can also fetch its attachments. Errors: `unknown_reference` listing each id that does not.
 */
export async function assertAttachmentsInOrganization(db: Queryable, orgId: string, attachmentIds: readonly string[]): Promise<void> {
  if (attachmentIds.length === 0) return;
  const found = await db.query<{ id: string }>(`SELECT id FROM attachments WHERE org_id = $1 AND id = ANY($2::uuid[])`, [orgId, [...attachmentIds]]);
  const known = new Set(found.map((row) => row.id));
  const errors = attachmentIds.flatMap((id, index) => (known.has(id) ? [] : [{ path: `attachments.${index}`, message: 'no such attachment in this organization' }]));
  if (errors.length > 0) {
    const first = attachmentIds.find((id) => !known.has(id));
    throw new ServiceError('unknown_reference', `no attachment of this organization has id ${first}`, { errors });
  }
}

// Attachments named by the team's messages and by no message of another team: deleting the team
// removes them (contract §5 deletion-preview), while one still shown elsewhere stays.
const teamOnlyAttachments = `
  SELECT DISTINCT a.id FROM messages m
    JOIN threads th ON th.id = m.thread_id
    CROSS JOIN LATERAL jsonb_array_elements_text(m.attachments) AS named(id)
    JOIN attachments a ON a.id = named.id::uuid
   WHERE th.team_id = $1
     AND NOT EXISTS (SELECT 1 FROM messages m2 JOIN threads th2 ON th2.id = m2.thread_id
                      WHERE th2.team_id <> $1 AND m2.attachments @> jsonb_build_array(named.id))`;

/** Counts the attachments that deleting team `teamId` would remove (see {@link deleteTeamAttachments}). */
export async function countTeamAttachments(db: Queryable, teamId: string): Promise<number> {
  const rows = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM (${teamOnlyAttachments}) t`, [teamId]);
  return rows[0]?.n ?? 0;
}

/**
 * Deletes the attachments named by messages of team `teamId` and by no message of another team;
 * run it in the team deletion's transaction, before the messages go.
 */
export async function deleteTeamAttachments(tx: Queryable, teamId: string): Promise<void> {
  await tx.query(`DELETE FROM attachments WHERE id IN (${teamOnlyAttachments})`, [teamId]);
}

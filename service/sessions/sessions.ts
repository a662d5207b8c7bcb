/**
 * Server-side sessions of the console (contract §10). A session is a row of `sessions` named by
 * the SHA-256 of its secret, which only the browser holds (in the `acs_session` cookie). A
 * person's session acts as one or more humans (`session_humans`); an operator's reaches the
 * `/admin/v1` routes only. Sessions end 12 hours after their last use and 7 days after they
 * began, at sign-out, when one of their humans is deleted (a trigger of migration
 * `0013_sessions`), and for an operator when the server's admin token changes.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db, Queryable } from '../storage/db.ts';
import { generateSecret, hashKey } from '../domain/key-secrets.ts';
import { iso, newId } from '../domain/ids.ts';

/** The cookie that carries a session's secret (contract §10). */
export const sessionCookieName = 'acs_session';

/** Every session secret starts with this, so a leaked one is recognisable (secret scanners). */
export const sessionSecretPrefix = 'acs_session_';

/** A session ends this long after its last use (contract §10: 12 hours). */
export const sessionIdleMs = 12 * 60 * 60 * 1000;

/** A session ends this long after it began, however much it is used (contract §10: 7 days). */
export const sessionLifetimeMs = 7 * 24 * 60 * 60 * 1000;

// last_used_at is written at most once a minute per session, not on every request; the idle
// expiry is 12 hours, so a minute of slack changes nothing a person notices.
const lastUsedResolutionMs = 60_000;

/** How a session began. */
export const SessionMethods = { link: 'link', oidc: 'oidc', adminToken: 'admin_token' } as const;
export type SessionMethod = (typeof SessionMethods)[keyof typeof SessionMethods];

/** What both kinds of session have. */
interface SessionBase {
  id: string;
  method: SessionMethod;
  /** Must come back as `X-CSRF-Token` on every request that changes something. */
  csrfToken: string;
  createdAt: Date;
  /** The absolute end (7 days after the start). */
  expiresAt: Date;
  /** When the session ends if it is not used before (12 hours after its last use, capped by `expiresAt`). */
  idleExpiresAt: Date;
}

/** A person's session: the humans it acts as (several when an OpenID email names several). */
export interface PersonSession extends SessionBase {
  kind: 'person';
  humanIds: string[];
  /** The verified email of an OpenID Connect sign-in, else null. */
  email: string | null;
}

/** An operator's session (`POST /admin/v1/sign-in`): reaches the `/admin/v1` routes only. */
export interface OperatorSession extends SessionBase {
  kind: 'operator';
}

export type Session = PersonSession | OperatorSession;

interface SessionRow {
  id: string;
  kind: 'person' | 'operator';
  method: SessionMethod;
  csrf_token: string;
  email: string | null;
  admin_token_hash: string | null;
  created_at: Date;
  last_used_at: Date;
  expires_at: Date;
  human_ids: string[] | null;
}

/** The session's idle end: 12 hours after `lastUsed`, never past the absolute end. */
function idleEnd(lastUsed: Date, expiresAt: Date): Date {
  return new Date(Math.min(lastUsed.getTime() + sessionIdleMs, expiresAt.getTime()));
}

function toSession(row: SessionRow, lastUsed: Date): Session {
  const base = {
    id: row.id,
    method: row.method,
    csrfToken: row.csrf_token,
    createdAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
    idleExpiresAt: idleEnd(lastUsed, new Date(row.expires_at)),
  };
  if (row.kind === 'operator') return { ...base, kind: 'operator' };
  return { ...base, kind: 'person', humanIds: [...(row.human_ids ?? [])].sort(), email: row.email };
}

/** A new session secret (`acs_session_` and 40 base62 characters) and a CSRF token (32 random bytes, base64url). */
function newSecrets(): { secret: string; csrfToken: string } {
  return { secret: generateSecret(sessionSecretPrefix), csrfToken: randomBytes(32).toString('base64url') };
}

// Expired rows are deleted when sessions are made, so the tables hold live rows and a few hours
// of dead ones at most; the indexes on expires_at keep it one range scan.
async function pruneExpired(tx: Queryable): Promise<void> {
  await tx.query(`DELETE FROM sessions WHERE expires_at <= now() OR last_used_at <= now() - make_interval(secs => $1)`, [sessionIdleMs / 1000]);
  await tx.query(`DELETE FROM sign_in_links WHERE expires_at <= now() - interval '1 day'`);
  await tx.query(`DELETE FROM oidc_logins WHERE expires_at <= now()`);
}

/**
 * Starts a person's session acting as `humanIds` (at least one), inside `tx` when given (a
 * sign-in link's redemption and the session it starts commit together). Output: the secret for
 * the cookie (shown only here) and the session. Errors: rejects when a human no longer exists
 * (foreign key): callers read the ids in the same transaction.
 */
export async function createPersonSession(
  tx: Queryable,
  input: { humanIds: readonly string[]; method: SessionMethod; email?: string | null },
): Promise<{ secret: string; session: PersonSession }> {
  if (input.humanIds.length === 0) throw new Error('a person session needs at least one human');
  await pruneExpired(tx);
  const { secret, csrfToken } = newSecrets();
  const id = newId();
  const rows = await tx.query<SessionRow>(
    `INSERT INTO sessions (id, token_hash, kind, method, csrf_token, email, expires_at)
     VALUES ($1, $2, 'person', $3, $4, $5, now() + make_interval(secs => $6))
     RETURNING *, NULL::uuid[] AS human_ids`,
    [id, hashKey(secret), input.method, csrfToken, input.email ?? null, sessionLifetimeMs / 1000],
  );
  await tx.query(`INSERT INTO session_humans (session_id, human_id) SELECT $1, unnest($2::uuid[])`, [id, [...new Set(input.humanIds)]]);
  const row = { ...rows[0]!, human_ids: [...new Set(input.humanIds)] };
  return { secret, session: toSession(row, new Date(row.last_used_at)) as PersonSession };
}

/** The stored form of the admin token an operator session was started with. */
function adminTokenHash(token: string): string {
  return createHash('sha256').update(`acs-admin-token:${token}`, 'utf8').digest('hex');
}

/**
 * Starts an operator's session (contract §10 `POST /admin/v1/sign-in`); the caller has checked
 * the admin token. The session remembers a hash of that token and ends when the server's token
 * changes. Output: the secret for the cookie (shown only here) and the session.
 */
export async function createOperatorSession(db: Db, adminToken: string): Promise<{ secret: string; session: OperatorSession }> {
  return db.transaction(async (tx) => {
    await pruneExpired(tx);
    const { secret, csrfToken } = newSecrets();
    const rows = await tx.query<SessionRow>(
      `INSERT INTO sessions (id, token_hash, kind, method, csrf_token, admin_token_hash, expires_at)
       VALUES ($1, $2, 'operator', 'admin_token', $3, $4, now() + make_interval(secs => $5))
       RETURNING *, NULL::uuid[] AS human_ids`,
      [newId(), hashKey(secret), csrfToken, adminTokenHash(adminToken), sessionLifetimeMs / 1000],
    );
    return { secret, session: toSession(rows[0]!, new Date(rows[0]!.last_used_at)) as OperatorSession };
  });
}

/**
 * The live session whose secret is `secret`, or undefined: unknown, signed out, ended by a
 * deleted human, idle for 12 hours, older than 7 days, or (an operator's) started with another
 * admin token than `adminToken`. Marks the session used (at most one write a minute). A
 * malformed secret costs no query.
 */
export async function findSession(db: Queryable, secret: string | undefined, options: { adminToken?: string | undefined } = {}): Promise<Session | undefined> {
  if (!secret || !secret.startsWith(sessionSecretPrefix) || secret.length > 100) return undefined;
  const rows = await db.query<SessionRow>(
    `SELECT s.*, (SELECT array_agg(h.human_id) FROM session_humans h WHERE h.session_id = s.id) AS human_ids
       FROM sessions s
      WHERE s.token_hash = $1 AND s.expires_at > now() AND s.last_used_at > now() - make_interval(secs => $2)`,
    [hashKey(secret), sessionIdleMs / 1000],
  );
  const row = rows[0];
  if (!row) return undefined;
  if (row.kind === 'operator') {
    const current = options.adminToken ? adminTokenHash(options.adminToken) : '';
    if (!row.admin_token_hash || !sameText(row.admin_token_hash, current)) return undefined;
  } else if (!row.human_ids || row.human_ids.length === 0) {
    return undefined;
  }
  let lastUsed = new Date(row.last_used_at);
  if (Date.now() - lastUsed.getTime() >= lastUsedResolutionMs) {
    const touched = await db.query<{ last_used_at: Date }>(`UPDATE sessions SET last_used_at = now() WHERE id = $1 RETURNING last_used_at`, [row.id]);
    if (touched[0]) lastUsed = new Date(touched[0].last_used_at);
  }
  return toSession(row, lastUsed);
}

/** Ends a session at once (sign-out). Output: whether it existed. */
export async function endSession(db: Queryable, sessionId: string): Promise<boolean> {
  const rows = await db.query(`DELETE FROM sessions WHERE id = $1 RETURNING id`, [sessionId]);
  return rows.length > 0;
}

/**
 * Ends the session whose secret is `secret`, of any kind, if it exists (a sign-in replacing the
 * browser's session). A missing or malformed secret changes nothing. Output: whether one ended.
 */
export async function endSessionBySecret(db: Queryable, secret: string | undefined): Promise<boolean> {
  if (!secret || !secret.startsWith(sessionSecretPrefix) || secret.length > 100) return false;
  const rows = await db.query(`DELETE FROM sessions WHERE token_hash = $1 RETURNING id`, [hashKey(secret)]);
  return rows.length > 0;
}

/** Whether two texts are equal, in time that does not depend on where they differ. */
export function sameText(a: string, b: string): boolean {
  const left = createHash('sha256').update(a, 'utf8').digest();
  const right = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(left, right);
}

/** The wire form of a session's times (`GET /api/v1/me`, `GET /admin/v1/session`). */
export function sessionTimes(session: Session): { created_at: string; expires_at: string; idle_expires_at: string } {
  return { created_at: iso(session.createdAt), expires_at: iso(session.expiresAt), idle_expires_at: iso(session.idleExpiresAt) };
}

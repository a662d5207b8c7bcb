/**
 * One-time sign-in links (contract §10): an organization key asks for a link for one of its
 * humans. Opening the link shows a page naming the human (nothing is spent); its form's POST
 * redeems it, before it expires, once, signing that browser in as the human. The link's secret
 * travels in the URL and the form; the service keeps its SHA-256.
 */
import { ServiceError } from '../../errors/catalogue.ts';
import type { Caller, DomainDeps } from '../domain/caller.ts';
import { iso, newId } from '../domain/ids.ts';
import { generateSecret, hashKey } from '../domain/key-secrets.ts';
import { getHuman } from '../domain/participants.ts';
import type { Db } from '../storage/db.ts';
import { createPersonSession, endSessionBySecret, SessionMethods, type PersonSession } from './sessions.ts';

/** Every sign-in link secret starts with this. */
export const signInLinkPrefix = 'acs_signin_';

/** Where a sign-in link points, under the console's public URL. */
export const signInLinkPath = '/sign-in/link';

/** Bounds and default of a link's lifetime in seconds (contract §10: 60–604,800, default 900). */
export const signInLinkTtl = { min: 60, max: 604_800, default: 900 } as const;

/** A created sign-in link (contract §10): the absolute URL, when it stops working, and whose it is. */
export interface SignInLink {
  url: string;
  expires_at: string;
  human_id: string;
}

/**
 * Creates a one-time sign-in link for a human the caller reaches (contract §10 `POST
 * /api/v1/humans/{human_id}/sign-in-links`). `publicUrl` is the console's absolute base URL
 * (no trailing slash); the link is `{publicUrl}/sign-in/link?token=acs_signin_…`, valid for
 * `ttlSeconds`. Errors: `not_found` (human, or not reachable by the caller).
 */
export async function createSignInLink(deps: DomainDeps, caller: Caller, humanId: string, ttlSeconds: number, publicUrl: string): Promise<SignInLink> {
  await getHuman(deps, caller, humanId);
  const secret = generateSecret(signInLinkPrefix);
  const rows = await deps.db.query<{ expires_at: Date }>(
    // INSERT … SELECT: a human deleted meanwhile yields no row (404), not a foreign-key error.
    `INSERT INTO sign_in_links (id, token_hash, human_id, expires_at)
     SELECT $1, $2, p.id, now() + make_interval(secs => $4) FROM participants p WHERE p.id = $3 AND p.kind = 'human'
     RETURNING expires_at`,
    [newId(), hashKey(secret), humanId, ttlSeconds],
  );
  if (!rows[0]) throw new ServiceError('not_found', 'human not found');
  const url = new URL(signInLinkPath, `${publicUrl}/`);
  url.searchParams.set('token', secret);
  return { url: url.href, expires_at: iso(rows[0].expires_at), human_id: humanId };
}

/** What the page of an unused, unexpired link names (contract §10): its human, team and organization. */
export interface SignInLinkView {
  human_name: string;
  team_name: string;
  org_name: string;
  expires_at: string;
}

/** Whether `secret` is shaped like a link's secret (a malformed one costs no query). */
function wellFormed(secret: string | undefined): secret is string {
  return !!secret && secret.startsWith(signInLinkPrefix) && secret.length <= 100;
}

/**
 * Looks a sign-in link up without spending it (the GET of its page: a mail scanner's fetch must
 * leave it usable). Output: whom it signs in as, or undefined when it is unknown, used or
 * expired (or its human was deleted: its links went with it). Raises nothing of its own.
 */
export async function describeSignInLink(db: Db, secret: string | undefined): Promise<SignInLinkView | undefined> {
  if (!wellFormed(secret)) return undefined;
  const rows = await db.query<{ human_name: string; team_name: string; org_name: string; expires_at: Date }>(
    `SELECT p.name AS human_name, t.name AS team_name, o.name AS org_name, l.expires_at
       FROM sign_in_links l
       JOIN participants p ON p.id = l.human_id
       JOIN teams t ON t.id = p.team_id
       JOIN organizations o ON o.id = t.org_id
      WHERE l.token_hash = $1 AND l.used_at IS NULL AND l.expires_at > now()`,
    [hashKey(secret)],
  );
  const row = rows[0];
  return row ? { human_name: row.human_name, team_name: row.team_name, org_name: row.org_name, expires_at: iso(row.expires_at) } : undefined;
}

/**
 * Redeems a sign-in link (the POST of its page's form): marks it used, ends the session it
 * replaces (`replaces`: the secret of the browser's current session cookie, of any kind, if
 * any), and starts a person's session as its human, in one transaction, so a link signs in
 * exactly one browser even when redeemed twice at once. Output: the session and its secret, or
 * undefined when the link is unknown, used or expired (or its human was deleted) — then nothing
 * changes, the replaced session included.
 */
export async function redeemSignInLink(db: Db, secret: string | undefined, options: { replaces?: string | undefined } = {}): Promise<{ secret: string; session: PersonSession } | undefined> {
  if (!wellFormed(secret)) return undefined;
  return db.transaction(async (tx) => {
    const rows = await tx.query<{ human_id: string }>(
      `UPDATE sign_in_links SET used_at = now()
        WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()
        RETURNING human_id`,
      [hashKey(secret)],
    );
    if (!rows[0]) return undefined;
    await endSessionBySecret(tx, options.replaces);
    return createPersonSession(tx, { humanIds: [rows[0].human_id], method: SessionMethods.link });
  });
}

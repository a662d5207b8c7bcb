import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import { ServiceError } from '../../errors/catalogue.ts';
import type { Db, Queryable } from '../storage/db.ts';
import { instanceAlive } from '../storage/server-instance.ts';
import { newId } from './ids.ts';
import type { SecretBox } from './secret-box.ts';

/** How long a stored response is replayed (contract §1): 24 hours, in seconds. */
export const idempotencyTtlSeconds = 24 * 3600;
/**
 * After this many seconds a claim whose request never stored a response may be taken over by a
 * retry, whatever process made it. Far longer than any POST runs, so a live request is never run
 * twice. A claim of a process known to be gone (storage/server-instance.ts: its heartbeat stopped
 * 15 s ago) is taken over at once.
 */
export const abandonedClaimSeconds = 300;

/** Which request an Idempotency-Key is about: the caller's scope, the route and the key. */
export interface IdempotencyTarget {
  /** The caller's organization id, or `ip:<address>` for requests without an organization key. */
  scope: string;
  /** Method, route pattern and path parameters, e.g. `POST /teams/:team_id/agents {"team_id":"…"}`. */
  route: string;
  key: string;
}

/** What a claim attempt found: this request runs (`claimed`), or a stored response to replay. */
export type ClaimOutcome = { kind: 'claimed'; claimId: string } | { kind: 'replay'; status: number; contentType: string; body: string };

// Key order and white space do not make two JSON bodies different requests. JSON.stringify walks
// the value natively, so deep bodies do not exhaust the JavaScript stack the way a recursive walk would.
function sortKeys(_key: string, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * SHA-256 (hex) of a parsed request body in canonical JSON; `undefined` (no body) hashes as ''.
 * Errors: `invalid_request` when the body is nested too deeply to serialise.
 */
export function hashRequestBody(body: unknown): string {
  let text: string;
  try {
    text = body === undefined ? '' : JSON.stringify(body, sortKeys);
  } catch {
    throw new ServiceError('invalid_request', 'the body is nested too deeply', { errors: [{ path: '(body)', message: 'nested too deeply' }] });
  }
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

interface RecordRow {
  request_hash: string;
  status: number | null;
  response_type: string | null;
  response_body: string | null;
  claimed_at: Date;
  expires_at: Date;
  committed: boolean;
  abandoned: boolean;
}

let lastSweep = 0;

/**
 * Claims `target` for one request, or finds the stored response (contract §1). The claim is an
 * `INSERT … ON CONFLICT DO NOTHING` on the record's primary key, in its own statement, so of
 * several requests (in any number of processes on one database) exactly one gets it. An expired
 * record (24 h), a claim of a process that is gone (`instanceId` records who claims), or a claim
 * abandoned for {@link abandonedClaimSeconds} is taken over atomically.
 * Expired records are deleted at most once a minute per process, as a side effect.
 * Output: `claimed` with the claim id to {@link storeResponse} or {@link releaseClaim} with, or
 * `replay` with the stored status, content type and body.
 * Errors: `idempotency_key_mismatch` (same key, different body), `idempotency_key_in_use` (the
 * first request still runs, or its stored response cannot be decrypted by this server).
 */
export async function claimIdempotencyKey(db: Queryable, secrets: SecretBox, target: IdempotencyTarget, requestHash: string, instanceId?: string): Promise<ClaimOutcome> {
  if (Date.now() - lastSweep > 60_000) {
    lastSweep = Date.now();
    await db.query(`DELETE FROM idempotency_keys WHERE expires_at < now()`);
  }
  const where = 'scope = $1 AND route = $2 AND idem_key = $3';
  const keyParams = [target.scope, target.route, target.key];
  // A record may vanish between statements (a 5xx releases it): then try again.
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const claimId = newId();
    const inserted = await db.query(
      `INSERT INTO idempotency_keys (scope, route, idem_key, request_hash, claim_id, expires_at, claimed_by)
       VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6), $7) ON CONFLICT DO NOTHING RETURNING claim_id`,
      [...keyParams, requestHash, claimId, idempotencyTtlSeconds, instanceId ?? null],
    );
    if (inserted.length > 0) return { kind: 'claimed', claimId };
    // Taken over: an expired record; a claim that stored no response and whose process is known
    // and gone (its heartbeat stopped); any claim that stored nothing for abandonedClaimSeconds.
    const taken = await db.query(
      `UPDATE idempotency_keys
          SET request_hash = $4, claim_id = $5, status = NULL, response_type = NULL, response_body = NULL,
              claimed_at = now(), expires_at = now() + make_interval(secs => $6), claimed_by = $8
        WHERE ${where} AND (expires_at < now() OR (status IS NULL AND NOT committed AND (
                claimed_at < now() - make_interval(secs => $7) OR (claimed_by IS NOT NULL AND NOT ${instanceAlive('claimed_by')}))))
        RETURNING claim_id`,
      [...keyParams, requestHash, claimId, idempotencyTtlSeconds, abandonedClaimSeconds, instanceId ?? null],
    );
    if (taken.length > 0) return { kind: 'claimed', claimId };
    const rows = await db.query<RecordRow>(
      `SELECT request_hash, status, response_type, response_body, claimed_at, expires_at, committed,
              (claimed_at < now() - make_interval(secs => $4) OR (claimed_by IS NOT NULL AND NOT ${instanceAlive('claimed_by')})) AS abandoned
         FROM idempotency_keys WHERE ${where}`,
      [...keyParams, abandonedClaimSeconds],
    );
    const row = rows[0];
    if (!row) continue;
    if (row.request_hash !== requestHash) {
      throw new ServiceError('idempotency_key_mismatch', 'this Idempotency-Key was used with a different request body on this route');
    }
    if ((row.status === null || row.response_body === null) && row.committed && row.abandoned) {
      throw new ServiceError(
        'idempotency_key_in_use',
        'the request with this Idempotency-Key was applied, but the process that ran it stopped before answering: it will not run again, and its answer is lost (read the resource to see it)',
      );
    }
    if (row.status === null || row.response_body === null) {
      throw new ServiceError('idempotency_key_in_use', 'a request with this Idempotency-Key is still running; retry later');
    }
    let body: string;
    try {
      body = secrets.open(row.response_body);
    } catch {
      throw new ServiceError('idempotency_key_in_use', 'the stored response of this Idempotency-Key cannot be read by this server; use a new key');
    }
    return { kind: 'replay', status: row.status, contentType: row.response_type ?? 'application/json', body };
  }
  throw new ServiceError('idempotency_key_in_use', 'a request with this Idempotency-Key is still running; retry later');
}

/**
 * Stores the response of the request holding `claimId` for 24 hours (sealed with `secrets`:
 * creation responses carry key secrets). Does nothing when the claim was taken over meanwhile.
 */
export async function storeResponse(
  db: Queryable,
  secrets: SecretBox,
  target: IdempotencyTarget,
  claimId: string,
  response: { status: number; contentType: string; body: string },
): Promise<void> {
  await db.query(
    `UPDATE idempotency_keys SET status = $5, response_type = $6, response_body = $7, expires_at = now() + make_interval(secs => $8)
      WHERE scope = $1 AND route = $2 AND idem_key = $3 AND claim_id = $4`,
    [target.scope, target.route, target.key, claimId, response.status, response.contentType, secrets.seal(response.body), idempotencyTtlSeconds],
  );
}

/**
 * Deletes the claim `claimId` (its request failed with a 5xx), so that a retry runs again — unless
 * its work committed (then a retry must not run it twice; it finds the claim applied).
 */
export async function releaseClaim(db: Queryable, target: IdempotencyTarget, claimId: string): Promise<void> {
  await db.query(`DELETE FROM idempotency_keys WHERE scope = $1 AND route = $2 AND idem_key = $3 AND claim_id = $4 AND NOT committed`, [
    target.scope,
    target.route,
    target.key,
    claimId,
  ]);
}

/**
 * The claim of the request being handled, for {@link markingCommits}: the HTTP layer runs each POST
 * handler that holds a claim inside it (http/idempotency.ts).
 */
export const claimContext = new AsyncLocalStorage<{ claimId: string }>();

// Statements that may write: an autocommit one of these, in a request holding a claim, becomes a
// transaction that also marks the claim committed. Reads stay single statements.
const writing = /^\s*(?:INSERT|UPDATE|DELETE|WITH)\b|acs_append_message/i;

/**
 * `db` whose writes, while a request holding an Idempotency-Key claim runs ({@link claimContext}),
 * mark that claim `committed` in their own transaction. So the record says atomically whether the
 * request's work happened: a claim whose process died after its work committed (but before its
 * answer was stored) is never taken over and run again, which would have written twice; before
 * that point it is taken over at once. Outside a claimed request the calls pass through unchanged.
 */
export function markingCommits(db: Db): Db {
  const mark = (tx: Queryable, claimId: string) => tx.query(`UPDATE idempotency_keys SET committed = true WHERE claim_id = $1`, [claimId]);
  return {
    async query<T>(sql: string, params?: unknown[]): Promise<T[]> {
      const claim = claimContext.getStore();
      if (!claim || !writing.test(sql)) return db.query<T>(sql, params);
      return db.transaction(async (tx) => {
        const rows = await tx.query<T>(sql, params);
        await mark(tx, claim.claimId);
        return rows;
      });
    },
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      const claim = claimContext.getStore();
      if (!claim) return db.transaction(fn);
      return db.transaction(async (tx) => {
        const result = await fn(tx);
        await mark(tx, claim.claimId);
        return result;
      });
    },
    close: () => db.close(),
  };
}

import type { Queryable } from '../storage/db.ts';
import { authenticate, authenticateWithExpiry } from './authentication.ts';
import type { Caller } from './caller.ts';
import { hashKey, orgKeyPrefix } from './key-secrets.ts';

// Every REST request authenticates its key; looking the key up each time was one round trip of
// every request (and a second one in the rate limiter). Valid organization keys are therefore
// kept for a short time per database handle, i.e. per server process:
// - revoking or rotating a key through this process forgets it at once (forgetOrgKey), before
//   the revocation's response is sent, so this process refuses it from the next request on;
// - another process sharing the database keeps accepting it for at most `orgKeyCacheTtlMs` on
//   routes that rely on this cache alone; appends re-check the key in their one statement
//   (domain/threads.ts), so they refuse it at once in every process;
// - a key's own expiry (expires_at, e.g. the end of a rotation grace) ends its entry, checked
//   against this process's clock;
// - deleting an organization through this process forgets every key of it at once
//   (forgetOrganizationKeys); in another process such a key passes authentication for at most
//   the TTL, but reaches nothing: its organization and everything in it are gone, and writes
//   that would name that organization refuse it (access-checks.ts lockCallerOrganization);
// - unknown, revoked or expired keys and MCP keys are never cached: they are asked every time.

/** How long a valid organization key is trusted without asking storage again, in milliseconds. */
export const orgKeyCacheTtlMs = 5_000;
const maxCachedKeys = 10_000;

interface Entry {
  caller: Caller;
  /** Date.now() after which the entry is stale: the TTL or the key's expiry, whichever is first. */
  until: number;
}

interface KeyCache {
  entries: Map<string, Entry>;
  /** Bumped by every forget, so a lookup that overlapped a revocation does not cache its answer. */
  generation: number;
}

// One cache per database handle: the handle is what one server process (or one test server)
// shares between its authentication hook and its key management.
const caches = new WeakMap<object, KeyCache>();

function cacheOf(db: object): KeyCache {
  let cache = caches.get(db);
  if (cache === undefined) {
    cache = { entries: new Map(), generation: 0 };
    caches.set(db, cache);
  }
  return cache;
}

/**
 * The caller of organization key `secret` if this process authenticated it within the last
 * {@link orgKeyCacheTtlMs} and has not seen it revoked since; undefined otherwise (no lookup).
 */
export function cachedCaller(db: object, secret: string): Caller | undefined {
  if (!secret.startsWith(orgKeyPrefix)) return undefined;
  const cache = caches.get(db);
  if (cache === undefined) return undefined;
  const hash = hashKey(secret);
  const entry = cache.entries.get(hash);
  if (entry === undefined) return undefined;
  if (entry.until <= Date.now()) {
    cache.entries.delete(hash);
    return undefined;
  }
  return entry.caller;
}

/**
 * {@link authenticate} (contract §3) through this process's key cache: a valid organization key
 * seen within {@link orgKeyCacheTtlMs} costs no query; otherwise the key is looked up (recording
 * `last_used_at` at most once a minute) and, when valid, cached. Output: the Caller.
 * Errors: `unauthenticated`, `wrong_key_type`, `invalid_api_key`, as {@link authenticate}.
 */
export async function authenticateCached(db: Queryable, header: string | undefined): Promise<Caller> {
  const secret = header?.trim() ?? '';
  if (!secret.startsWith(orgKeyPrefix)) return authenticate(db, header);
  const hit = cachedCaller(db, secret);
  if (hit !== undefined) return hit;
  const cache = cacheOf(db);
  const generation = cache.generation;
  const { caller, expiresAt } = await authenticateWithExpiry(db, header);
  if (cache.generation === generation) {
    if (cache.entries.size >= maxCachedKeys) cache.entries.delete(cache.entries.keys().next().value!);
    const until = Math.min(Date.now() + orgKeyCacheTtlMs, expiresAt?.getTime() ?? Infinity);
    cache.entries.set(hashKey(secret), { caller, until });
  }
  return caller;
}

/**
 * Forgets organization key `keyId` in this process's cache for `db`, and makes lookups already
 * under way not cache their answer. Call it once a revocation, rotation or expiry change of the
 * key is committed.
 */
export function forgetOrgKey(db: object, keyId: string): void {
  const id = keyId.toLowerCase();
  forgetCallers(db, (caller) => caller.keyId === id);
}

/** Drops the entries whose caller matches, and bumps the generation (see {@link KeyCache}). */
function forgetCallers(db: object, matches: (caller: Caller) => boolean): void {
  const cache = caches.get(db);
  if (cache === undefined) return;
  cache.generation += 1;
  for (const [hash, entry] of cache.entries) if (matches(entry.caller)) cache.entries.delete(hash);
}

/**
 * Forgets every key of organization `orgId` in this process's cache for `db`, and makes lookups
 * already under way not cache their answer. Call it once the organization's deletion (which
 * deleted its keys) is committed, so its keys are refused from the next request on.
 */
export function forgetOrganizationKeys(db: object, orgId: string): void {
  const id = orgId.toLowerCase();
  forgetCallers(db, (caller) => caller.orgId === id);
}

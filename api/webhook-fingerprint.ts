/**
 * The fingerprint of a webhook's signing secret (`secret_fingerprint`, an addition to contract §9):
 * `hmac-sha256:<salt>:<digest>`, the digest being HMAC-SHA256 keyed by 16 random bytes of salt over
 * the secret, both in base64url. The service stores it beside the sealed secret and returns it with
 * the webhook; the secret itself is never returned but at creation and rotation.
 *
 * Why a salted HMAC and not the last characters (as provider keys' `key_hint`): the secret is what
 * a receiver verifies signatures with, so nothing of it is shown; a fresh salt per secret keeps
 * two webhooks with one secret from showing equal fingerprints. Whoever holds a candidate secret
 * can tell whether it is the webhook's ({@link fingerprintMatches}): `teamctl plan` compares the
 * definition's `${env:…}` secret with the live one so, and `apply` rotates the secret only when
 * they differ. A secret of 24 or more random bytes (what the service generates, and what Standard
 * Webhooks asks for) cannot be found from its fingerprint.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const SCHEME = 'hmac-sha256';

/** The fingerprint of `secret` under `salt` (16 random bytes when not given). */
export function secretFingerprint(secret: string, salt: Buffer = randomBytes(16)): string {
  const digest = createHmac('sha256', salt).update(secret, 'utf8').digest();
  return `${SCHEME}:${salt.toString('base64url')}:${digest.toString('base64url')}`;
}

/**
 * Whether `secret` is the secret `fingerprint` was made of. A fingerprint of another scheme or
 * malformed answers false. Compares in constant time.
 */
export function fingerprintMatches(fingerprint: string, secret: string): boolean {
  const [scheme, salt, digest, ...rest] = fingerprint.split(':');
  if (scheme !== SCHEME || salt === undefined || digest === undefined || rest.length > 0) return false;
  const expected = Buffer.from(digest, 'base64url');
  const actual = createHmac('sha256', Buffer.from(salt, 'base64url')).update(secret, 'utf8').digest();
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

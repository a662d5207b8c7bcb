import { createHash, randomInt } from 'node:crypto';

// The secrets of both key kinds, apart from their tables: key management (org-keys.ts,
// mcp-keys.ts) and authentication.ts all need them, and neither may import the other for them.

const base62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Every organization key starts with this (contract §3). */
export const orgKeyPrefix = 'acs_org_';

/** Every MCP key starts with this (contract §3). */
export const mcpKeyPrefix = 'acs_mcp_';

/** How often at most `last_used_at` is written per key, in seconds (one write a minute, not one a request). */
export const lastUsedResolutionSeconds = 60;

/** A new key secret: `prefix` and 40 base62 characters (contract §3). */
export function generateSecret(prefix: string): string {
  let secret = prefix;
  // randomInt is uniform (no modulo bias), unlike mapping random bytes onto 62 symbols.
  for (let i = 0; i < 40; i += 1) secret += base62[randomInt(62)];
  return secret;
}

/** A new organization key secret: `acs_org_` and 40 base62 characters (contract §3). */
export function generateOrgKey(): string {
  return generateSecret(orgKeyPrefix);
}

/** The stored form of a key: its SHA-256 in hex; the secret itself is never stored. */
export function hashKey(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

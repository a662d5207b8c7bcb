import { ServiceError } from '../../errors/catalogue.ts';
import { Providers, type Provider, type ProviderKey } from '../../api/schemas.ts';
import { assertOrganizationReachable } from './access-checks.ts';
import { wakeProviderWork } from './agent-work.ts';
import type { Caller, DomainDeps } from './caller.ts';
import { iso } from './ids.ts';
import { minProviderKeyLength, providerKeyHint, providerKeyLength } from '../../api/provider-key-hint.ts';

/**
 * Checks a provider name from a path (contract §5 lists them).
 * Errors: `invalid_request` naming `provider` for any other name.
 */
export function parseProvider(name: string): Provider {
  if ((Providers as readonly string[]).includes(name)) return name as Provider;
  throw new ServiceError('invalid_request', `provider: unknown provider "${name}"`, {
    errors: [{ path: 'provider', message: `must be one of ${Providers.join(', ')}` }],
  });
}

interface ProviderKeyRow {
  provider: Provider;
  key_hint: string;
  updated_at: Date;
}

function toProviderKey(row: ProviderKeyRow): ProviderKey {
  return { provider: row.provider, key_hint: row.key_hint, updated_at: iso(row.updated_at) };
}

/**
 * Checks the length of a provider key: at least {@link minProviderKeyLength} characters for every
 * provider but `echo` (the development provider takes any non-empty string, contract §8). A
 * shorter key is no vendor's key, and its hint would show most of it.
 * Errors: `invalid_request` naming `api_key`.
 */
export function checkProviderKeyLength(provider: Provider, apiKey: string): void {
  if (provider === 'echo' || providerKeyLength(apiKey) >= minProviderKeyLength) return;
  const message = `must be at least ${minProviderKeyLength} characters for ${provider} (only echo takes shorter keys)`;
  throw new ServiceError('invalid_request', `api_key: ${message}`, { errors: [{ path: 'api_key', message }] });
}

/**
 * Sets (or replaces) an organization's key for `provider`, encrypted at rest; `key_hint` shows
 * its last 4 characters when it has at least 12, else a fixed mask (`api/provider-key-hint.ts`;
 * contract §3). A key the provider had refused is forgotten with it, and the organization's
 * agents of that provider that waited for a key run again at once (agent-work.ts).
 * Errors: `invalid_request` (a key under 8 characters for a provider other than echo),
 * `not_found` (organization).
 */
export async function putProviderKey(deps: DomainDeps, caller: Caller, orgId: string, provider: Provider, apiKey: string): Promise<ProviderKey> {
  checkProviderKeyLength(provider, apiKey);
  await assertOrganizationReachable(deps.db, caller, orgId);
  return deps.db.transaction(async (tx) => {
    const rows = await tx.query<ProviderKeyRow>(
      `INSERT INTO provider_keys (org_id, provider, ciphertext, key_hint) VALUES ($1, $2, $3, $4)
       ON CONFLICT (org_id, provider) DO UPDATE
         SET ciphertext = EXCLUDED.ciphertext, key_hint = EXCLUDED.key_hint, updated_at = now(), refused_at = NULL
       RETURNING provider, key_hint, updated_at`,
      [orgId, provider, deps.secrets.seal(apiKey), providerKeyHint(apiKey)],
    );
    await wakeProviderWork(tx, orgId, provider);
    return toProviderKey(rows[0]!);
  });
}

/** Lists an organization's provider keys (hints only). Errors: `not_found` (organization). */
export async function listProviderKeys(deps: DomainDeps, caller: Caller, orgId: string): Promise<ProviderKey[]> {
  await assertOrganizationReachable(deps.db, caller, orgId);
  const rows = await deps.db.query<ProviderKeyRow>(`SELECT provider, key_hint, updated_at FROM provider_keys WHERE org_id = $1 ORDER BY provider`, [orgId]);
  return rows.map(toProviderKey);
}

/** Removes an organization's key for `provider`. Errors: `not_found` (organization or key). */
export async function deleteProviderKey(deps: DomainDeps, caller: Caller, orgId: string, provider: Provider): Promise<void> {
  await assertOrganizationReachable(deps.db, caller, orgId);
  const rows = await deps.db.query(`DELETE FROM provider_keys WHERE org_id = $1 AND provider = $2 RETURNING provider`, [orgId, provider]);
  if (rows.length === 0) throw new ServiceError('not_found', `no ${provider} key is set`);
}

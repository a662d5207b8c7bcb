/**
 * An agent's `a2a` as the service keeps it (contract §12, "A2A participants"): checked when a
 * create or PATCH sets it, stored in the form the API returns (headers as fingerprints), with the
 * header values sealed apart (`a2a_secrets`, the secret box, as provider keys and MCP headers
 * are) and opened only for a request to the remote agent (service/a2a/remote-client.ts).
 */
import type { A2aParticipant, A2aParticipantBody } from '../../api/remote-a2a.ts';
import { secretFingerprint } from '../../api/webhook-fingerprint.ts';
import { ServiceError } from '../../errors/catalogue.ts';
import { assertDeliverableUrl, type UrlPolicy } from '../outbound/url-guard.ts';
import type { SecretBox } from './secret-box.ts';

/** What a create or PATCH stores: the `a2a` column (the API's form) and `a2a_secrets` (sealed, or null when no header). */
export interface StoredA2a {
  a2a: A2aParticipant | null;
  sealed: string | null;
}

/** An object with its keys in sorted order, so stored JSON and an event's data agree. */
function sortedKeys<T>(record: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** `a2a` as the API shows it, from the stored JSON (or null), members in one fixed order. Raises nothing. */
export function a2aResource(stored: unknown): A2aParticipant | null {
  if (stored === null || stored === undefined) return null;
  const raw = (typeof stored === 'string' ? JSON.parse(stored) : stored) as A2aParticipant;
  return { url: raw.url, header_fingerprints: sortedKeys(raw.header_fingerprints ?? {}) };
}

/** Opens the sealed header values of a remote A2A agent. Errors: throws when the box cannot open them (another encryption key). */
export function openA2aSecrets(secrets: SecretBox, sealed: string | null): Record<string, string> {
  return sealed === null ? {} : (JSON.parse(secrets.open(sealed)) as Record<string, string>);
}

/**
 * Checks `body` (a create's or PATCH's `a2a`; null: none) for an agent whose provider after the
 * change is `provider` and whose tools are `hasTools`, and makes what is stored. Rules (contract
 * §12): an agent has a provider or `a2a`, not both, and a remote A2A agent has no `tools`; the URL
 * passes the rules of remote MCP servers' (`policy`, §11). A PATCH's `a2a` without `headers` keeps
 * the stored values (`previous`). Output: {@link StoredA2a}. Errors: `invalid_request` (path
 * `a2a`), `webhook_url_refused` (path `a2a.url`).
 */
export async function prepareA2a(
  context: { provider: string | null; hasTools: boolean; secrets: SecretBox; policy: UrlPolicy },
  body: A2aParticipantBody | null,
  previous: StoredA2a | null,
): Promise<StoredA2a> {
  if (body === null) return { a2a: null, sealed: null };
  if (context.provider !== null) {
    throw new ServiceError('invalid_request', 'a2a: an agent is either a provider agent or a remote A2A agent, not both (set provider to null)', {
      errors: [{ path: 'a2a', message: 'an agent with a provider cannot be a remote A2A agent too' }],
    });
  }
  if (context.hasTools) {
    throw new ServiceError('invalid_request', 'a2a: a remote A2A agent has no tools (it calls its own)', {
      errors: [{ path: 'a2a', message: 'a remote A2A agent has no tools' }],
    });
  }
  await assertDeliverableUrl(body.url, context.policy, { path: 'a2a.url', what: 'remote A2A agents' });
  const keptValues = previous ? openA2aSecrets(context.secrets, previous.sealed) : {};
  const headers = body.headers ?? keptValues;
  const fingerprints = Object.fromEntries(
    Object.entries(headers).map(([name, value]) => [
      name,
      // A header kept from before keeps its fingerprint: a PATCH that does not touch it shows no change.
      body.headers === undefined && previous?.a2a?.header_fingerprints[name] !== undefined ? previous.a2a.header_fingerprints[name]! : secretFingerprint(value),
    ]),
  );
  return {
    a2a: { url: body.url, header_fingerprints: sortedKeys(fingerprints) },
    sealed: Object.keys(headers).length > 0 ? context.secrets.seal(JSON.stringify(sortedKeys(headers))) : null,
  };
}

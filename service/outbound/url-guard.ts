/**
 * Where the service's own outbound requests may go (contract §9 for webhooks, §11 for agents'
 * remote MCP servers, which follow the same rules): an https URL whose host resolves to public
 * addresses only. Checked when a webhook or an agent's server is set or its URL changed, and again
 * at every delivery or connection, where the connection is made to the very address that was
 * checked (a lookup that refuses non-public answers), so a name that resolves differently by then
 * (DNS rebinding) reaches nothing inside. `--webhook-allow-private` lifts both rules (development
 * and tests).
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { hostOf, refusalWithoutDns, refusedAddress } from '../../api/outbound-url-rules.ts';
import { ServiceError } from '../../errors/catalogue.ts';

// The rules judged without DNS live in api/ (teamctl's plan warns by them too).
export { refusedAddress };

/** A `dns.lookup` with `{ all: true }`: every address of a host name. */
export type ResolveHost = (hostname: string) => Promise<LookupAddress[]>;

/** Resolves with the system resolver (as connections do), every address. */
export const systemResolve: ResolveHost = (hostname) =>
  new Promise((resolve, reject) => dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) => (error ? reject(error) : resolve(addresses))));

/** What the guard allows and how it resolves names. */
export interface UrlPolicy {
  /** `--webhook-allow-private`: http and non-public addresses too. */
  allowPrivate: boolean;
  /** How host names are resolved (default {@link systemResolve}; tests pass a stand-in to play DNS rebinding). */
  resolve?: ResolveHost | undefined;
}

/** What is checked, for the error: the field's path in the request and who may only reach public addresses. */
export interface UrlSubject {
  /** The path of the URL in the request body (`url`, `tools.mcp.0.url`). */
  path: string;
  /** The plural noun of the messages ("webhooks", "remote MCP servers"). */
  what: string;
}

const webhookSubject: UrlSubject = { path: 'url', what: 'webhooks' };

function refuse(url: string, why: string, subject: UrlSubject): ServiceError {
  return new ServiceError('webhook_url_refused', `${url}: ${why}`, { errors: [{ path: subject.path, message: why }] });
}

/**
 * Checks that requests may go to `url` (contract §9, §11): https, and its host an address, or a
 * name resolving only to addresses, that {@link refusedAddress} allows; anything goes with
 * `allowPrivate`. `subject` names the field in errors (default: a webhook's `url`).
 * Errors: `webhook_url_refused` (400) naming why.
 */
export async function assertDeliverableUrl(url: string, policy: UrlPolicy, subject: UrlSubject = webhookSubject): Promise<void> {
  if (policy.allowPrivate) return;
  const why = refusalWithoutDns(url, subject.what);
  if (why) throw refuse(url, why, subject);
  const host = hostOf(new URL(url));
  if (isIP(host)) return;
  let addresses: LookupAddress[];
  try {
    addresses = await (policy.resolve ?? systemResolve)(host);
  } catch (error) {
    throw refuse(url, `${host} does not resolve (${(error as NodeJS.ErrnoException).code ?? 'lookup failed'})`, subject);
  }
  if (addresses.length === 0) throw refuse(url, `${host} does not resolve`, subject);
  for (const { address } of addresses) {
    const why = refusedAddress(address);
    if (why) throw refuse(url, `${host} resolves to ${address}, a ${why} address; ${subject.what} may only reach public addresses`, subject);
  }
}

/**
 * A `lookup` for `http.request` that resolves like {@link systemResolve} (or the policy's resolver)
 * and fails the connection when any answer is not public, so the address connected to is one that
 * was checked. IP literals never reach a lookup: {@link assertDeliverableUrl} checks them.
 */
export function guardedLookup(policy: UrlPolicy) {
  return (hostname: string, options: { all?: boolean } | number, callback: (...args: unknown[]) => void): void => {
    (policy.resolve ?? systemResolve)(hostname).then(
      (addresses) => {
        const bad = addresses.find(({ address }) => refusedAddress(address) !== undefined);
        if (addresses.length === 0 || bad) {
          const error = Object.assign(new Error(`webhook_url_refused: ${hostname} resolves to ${bad?.address ?? 'nothing'}${bad ? `, a ${refusedAddress(bad.address)} address` : ''}`), {
            code: 'WEBHOOK_URL_REFUSED',
          });
          callback(error);
          return;
        }
        const all = typeof options === 'object' && options.all === true;
        if (all) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (error: unknown) => callback(error),
    );
  };
}

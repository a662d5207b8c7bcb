/**
 * Webhook URLs a plan would send that the service will refuse (400 `webhook_url_refused`), found
 * before `apply` sends them: `plan` (and `apply`, before its question) warns of each, and goes on —
 * a service started with `--webhook-allow-private` takes them, and only the service knows how it
 * was started.
 *
 * The rules are the service's (contract §9; api/outbound-url-rules.ts, which acs-server enforces):
 * https, no credentials, a public address. What can be judged here is judged without DNS: the
 * scheme, credentials, a host that is an IP literal, and `localhost` names (RFC 6761: always
 * loopback). A host name is not resolved: the service resolves it with its own resolver, from its
 * own network, where a name may mean another address than on this machine (split DNS, a VPN), and
 * a plan must not wait on (or fail by) a lookup. So a name resolving to a private address is
 * refused by the service at apply, with its own message and a hint, but not warned of here.
 */
import { isIP } from 'node:net';
import { hostOf, refusedAddress } from '../api/outbound-url-rules.ts';
import type { Change } from './types.ts';

/** A webhook URL the service will refuse: which webhook, its URL, and why (short phrases). */
export interface RefusedWebhookUrl {
  /** The webhook's name in the definition. */
  name: string;
  /** Its address (`webhook/ops-feed`). */
  address: string;
  url: string;
  /** Each rule it breaks: `it is http, not https`, `127.0.0.1 is a loopback address`. */
  reasons: string[];
}

/**
 * Why the service refuses `url` (unless started with `--webhook-allow-private`), as far as is
 * known without DNS (see the module's comment). Output: each rule it breaks; empty when none is
 * known to be broken.
 */
export function webhookUrlRefusals(url: string): string[] {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [];
  }
  const reasons: string[] = [];
  if (parsed.protocol !== 'https:') reasons.push(`it is ${parsed.protocol.replace(/:$/, '')}, not https`);
  if (parsed.username || parsed.password) reasons.push('it carries credentials (user:password@)');
  const host = hostOf(parsed);
  const range = isIP(host) ? refusedAddress(host) : undefined;
  if (range) reasons.push(`${host} is a${/^[aeiou]/i.test(range) ? 'n' : ''} ${range} address`);
  else if (/(^|\.)localhost\.?$/i.test(host)) reasons.push(`${host} is a loopback name (localhost)`);
  return reasons;
}

/**
 * The webhooks a plan creates, or whose URL it changes, with a URL the service will refuse.
 * Input: the plan's changes. Output: one entry per such webhook, in plan order.
 */
export function refusedWebhookUrls(changes: readonly Change[]): RefusedWebhookUrl[] {
  const refused: RefusedWebhookUrl[] = [];
  for (const change of changes) {
    if (change.kind !== 'webhook' || change.action === 'delete') continue;
    const url = change.fields.url;
    if (url === undefined) continue;
    const reasons = webhookUrlRefusals(url);
    if (reasons.length > 0) refused.push({ name: change.name, address: change.address, url, reasons });
  }
  return refused;
}

/**
 * The warning line of one refused URL, placed at its key in the file when known (`FILE:LINE:COL`):
 * `warning: team.yaml:6:12: webhook/ops-feed: acs-server refuses http://127.0.0.1:8787/ (it is
 * http, not https; 127.0.0.1 is a loopback address) with webhook_url_refused, unless it was
 * started with --webhook-allow-private (development and tests only): webhooks must be https and
 * reach public addresses`.
 */
export function refusedWebhookUrlWarning(entry: RefusedWebhookUrl, at?: string): string {
  return (
    `warning: ${at ? `${at}: ` : ''}${entry.address}: acs-server refuses ${entry.url} (${entry.reasons.join('; ')}) with webhook_url_refused, ` +
    'unless it was started with --webhook-allow-private (development and tests only): webhooks must be https and reach public addresses'
  );
}

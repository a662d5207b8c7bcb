/**
 * The rules of the URLs the service sends requests to on its own (contract §9 for webhooks, §11
 * for agents' remote MCP servers), as far as they can be judged without DNS: https, no
 * credentials, and an IP-literal host that is a public unicast address. Shared by acs-server,
 * which enforces them and then resolves host names (service/outbound/url-guard.ts), and teamctl,
 * whose `plan` warns of a webhook URL the service will refuse before `apply` sends it.
 */
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/** The global unicast space of IPv6 (RFC 4291 §2.4; IANA's IPv6 address space registry): 2000::/3. */
const globalUnicast = ipaddr.parseCIDR('2000::/3');

/** IPv4-compatible IPv6 addresses (`::a.b.c.d`, deprecated by RFC 4291 §2.5.5.1), which ipaddr.js names no range. */
const ipv4Compatible = ipaddr.parseCIDR('::/96');

/**
 * `address` as connections read it: IPv6 text in the canonical form of the URL parser (RFC 5952),
 * other text as it is. ipaddr.js reads `::a.b.c.d` as the IPv4-mapped `::ffff:a.b.c.d`, while
 * sockets and the URL parser read it as the IPv4-compatible `::xxxx:xxxx` it is.
 */
function canonicalIp(address: string): string {
  if (isIP(address) !== 6) return address;
  try {
    return new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return address;
  }
}

/**
 * Why `address` may not be reached, or undefined when it is a public unicast address (contract
 * §9, §14): loopback, private (RFC 1918, unique local), link-local, carrier-grade NAT, multicast,
 * unspecified, reserved and documentation ranges, and the IPv6 ranges that embed IPv4 ones
 * (mapped, NAT64, 6to4, Teredo) are all refused, by their ipaddr.js range name. ipaddr.js calls
 * every IPv6 address outside its named ranges `unicast`, the IPv4-compatible `::/96` and the
 * IETF-reserved space outside 2000::/3 included; those are refused too (`ipv4Compatible`,
 * `reserved`), so an IPv6 address passes only when it is global unicast. Output: the range's
 * name, `not an IP address`, or undefined.
 */
export function refusedAddress(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return 'not an IP address';
  const parsed = ipaddr.process(canonicalIp(address));
  const range = parsed.range();
  if (range !== 'unicast') return range;
  if (parsed.kind() === 'ipv6') {
    if (parsed.match(ipv4Compatible)) return 'ipv4Compatible';
    if (!parsed.match(globalUnicast)) return 'reserved';
  }
  return undefined;
}

/** The host of a URL as connections use it (IPv6 literals without their brackets). */
export function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/**
 * Why the service refuses `url` without asking DNS — not https, credentials in it, or an IP-literal
 * host that is not a public address — in the words of its `webhook_url_refused`; `what` is the
 * plural noun of the message (`webhooks`). Output: why, or undefined when the URL passes or only
 * DNS can tell (a host name). Errors: throws on a string that is not a URL.
 */
export function refusalWithoutDns(url: string, what = 'webhooks'): string | undefined {
  const parsed = new URL(url);
  if (parsed.protocol !== 'https:') return 'must be https (http is taken only by a server started with --webhook-allow-private)';
  if (parsed.username || parsed.password) return 'must not carry credentials (user:password@)';
  const host = hostOf(parsed);
  const why = isIP(host) ? refusedAddress(host) : undefined;
  return why ? `${host} is a ${why} address; ${what} may only reach public addresses` : undefined;
}

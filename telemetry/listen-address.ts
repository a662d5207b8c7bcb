/**
 * `HOST:PORT` of a listen flag (`--metrics-listen` of acs-server and `teamctl worker`): a leaf
 * module, so that parsing a flag loads nothing else.
 */

/**
 * Parses `HOST:PORT` (`[::1]:9464` for IPv6) given to the flag `flag`. Output: host and port (0
 * picks a free port where the listener allows it). Errors: throws a message naming the flag and
 * the form it expects.
 */
export function parseListenAddress(flag: string, text: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text.trim());
  const port = match ? Number(match[3]) : NaN;
  if (!match || !Number.isInteger(port) || port > 65_535) throw new Error(`${flag}: expected HOST:PORT (e.g. 127.0.0.1:9464, 0.0.0.0:9464 or [::1]:9464), got ${JSON.stringify(text)}`);
  return { host: (match[1] ?? match[2])!, port };
}

/**
 * The `Host` and `Origin` values the MCP endpoint accepts (issue 21, defect 6). The Streamable
 * HTTP transport's specification requires a server to validate `Origin` (a web page the user
 * opened must not reach a local server by DNS rebinding: its name resolving to 127.0.0.1 later
 * makes the browser send the page's requests there, with the page's `Host` and `Origin`). The MCP
 * SDK's transport does the checking (`enableDnsRebindingProtection`, exact matches); this module
 * derives what it allows from where the server listens and the public URL it is reached at.
 */
import { networkInterfaces } from 'node:os';

/** What the MCP transport accepts: `Host` header values and `Origin` header values. */
export interface HostPolicy {
  hosts: string[];
  origins: string[];
}

const loopbackNames = ['localhost', '127.0.0.1', '[::1]'];

/** `::1` → `[::1]`: a host as it appears in a `Host` header or URL. */
function asUrlHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host.toLowerCase();
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

function isWildcard(host: string): boolean {
  return host === '' || host === '0.0.0.0' || host === '::' || host === '[::]';
}

/** The names a client may use for a server listening on `host`: every address of the machine when it listens on all of them. */
function namesOf(host: string): string[] {
  if (isWildcard(host)) {
    const addresses = Object.values(networkInterfaces())
      .flat()
      .filter((a) => a !== undefined)
      .map((a) => asUrlHost(a.address.replace(/%.*$/, '')));
    return [...new Set([...loopbackNames, ...addresses])];
  }
  if (isLoopback(host)) return [...new Set([...loopbackNames, asUrlHost(host)])];
  return [asUrlHost(host)];
}

/**
 * The policy for a server listening on `host`:`port`, reached also at `publicUrl` (an absolute
 * http(s) URL, e.g. behind a reverse proxy that keeps the client's `Host`). Loopback listeners
 * accept `localhost`, `127.0.0.1` and `[::1]`; one on all interfaces (`0.0.0.0`, `::`) accepts
 * every address of the machine at start. Each name is accepted with its port, and without it when
 * the port is the scheme's default; origins are the `http://` origins of the same names and the
 * public URL's origin. Raises nothing.
 */
export function hostPolicy(host: string, port: number, publicUrl?: string): HostPolicy {
  const hosts = new Set<string>();
  const origins = new Set<string>();
  for (const name of namesOf(host)) {
    hosts.add(`${name}:${port}`);
    origins.add(`http://${name}:${port}`);
    if (port === 80) {
      hosts.add(name);
      origins.add(`http://${name}`);
    }
  }
  if (publicUrl !== undefined) {
    const url = new URL(publicUrl);
    const defaultPort = url.protocol === 'https:' ? '443' : '80';
    // URL.host leaves a default port out; some clients still send it.
    hosts.add(url.host);
    hosts.add(`${url.hostname}:${url.port || defaultPort}`);
    origins.add(url.origin);
  }
  return { hosts: [...hosts], origins: [...origins] };
}

/**
 * What an MCP client needs in its configuration to reach the MCP endpoint as one agent, in the
 * forms of the common clients. Shared by `teamctl mcp config` (cli/commands/mcp.ts) and the
 * console's "Connect an agent" page, so both print the same thing. No I/O, no Node API.
 */

/** The client configurations `mcp config` can print. */
export const McpConfigFormats = { claude: 'claude', cursor: 'cursor', vscode: 'vscode', json: 'json' } as const;
export type McpConfigFormat = keyof typeof McpConfigFormats;

/** What a client needs to reach the endpoint as one agent. `key` is the MCP key's secret. */
export interface McpEndpoint {
  /** The entry's name in the client's configuration. */
  name: string;
  /** The endpoint: `<base URL>/api/v1/mcp`. */
  url: string;
  key: string;
}

/** The variable the Claude Desktop entry passes the key in, so it is not a literal process argument. */
export const CLAUDE_KEY_VARIABLE = 'ACS_MCP_KEY';

function isLoopback(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * The configuration of one client for `endpoint`, as that client's configuration file holds it:
 *
 * - `claude`: `claude_desktop_config.json`. Claude Desktop starts local (stdio) servers only, so
 *   the entry runs the `mcp-remote` bridge with npx over Streamable HTTP (`--transport
 *   http-only`), sending `x-api-key` from the entry's `env` (`--header x-api-key:${ACS_MCP_KEY}`,
 *   no spaces: some clients split arguments at spaces); `--allow-http` when the URL is plain http
 *   on another host than loopback.
 * - `cursor`: `~/.cursor/mcp.json` or a project's `.cursor/mcp.json`: `mcpServers` with `url`
 *   and `headers`.
 * - `vscode`: `.vscode/mcp.json`: `servers` with `type: "http"`, `url` and `headers`.
 * - `json`: `{name, url, headers}` for anything else (the MCP SDK's Streamable HTTP client takes
 *   the URL and the headers as they are).
 *
 * Output: the JSON value to print. The key is in it: it is meant for the user's own file.
 */
export function renderMcpConfig(format: McpConfigFormat, endpoint: McpEndpoint): Record<string, unknown> {
  const headers = { 'x-api-key': endpoint.key };
  switch (format) {
    case 'claude': {
      const url = new URL(endpoint.url);
      const insecure = url.protocol === 'http:' && !isLoopback(url);
      return {
        mcpServers: {
          [endpoint.name]: {
            command: 'npx',
            args: ['-y', 'mcp-remote', endpoint.url, '--transport', 'http-only', '--header', `x-api-key:\${${CLAUDE_KEY_VARIABLE}}`, ...(insecure ? ['--allow-http'] : [])],
            env: { [CLAUDE_KEY_VARIABLE]: endpoint.key },
          },
        },
      };
    }
    case 'cursor':
      return { mcpServers: { [endpoint.name]: { url: endpoint.url, headers } } };
    case 'vscode':
      return { servers: { [endpoint.name]: { type: 'http', url: endpoint.url, headers } } };
    case 'json':
      return { name: endpoint.name, url: endpoint.url, headers };
  }
}

/** A configuration entry name from the team and agent names: lower case letters, digits, `-` and `_`. */
export function entryName(team: string, agent: string): string {
  const slug = `${team}-${agent}`.toLowerCase().replace(/[^a-z0-9_-]+/g, '-').replace(/-{2,}/g, '-').replace(/^-|-$/g, '');
  return slug || 'acs-agent';
}

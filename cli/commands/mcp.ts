/**
 * `teamctl mcp config | keys list | keys revoke`: connecting an MCP client (Claude Desktop,
 * Cursor, VS Code, or any client of the MCP SDK) to the service as one agent of a team, with an
 * MCP key of that agent (contract §3, §7).
 */
import type { Command } from 'commander';
import { Option } from 'commander';
import { entryName, McpConfigFormats, renderMcpConfig, type McpConfigFormat } from '../../api/mcp-config.ts';
import type { McpKey } from '../../api/schemas.ts';
import { ToolkitError } from '../../errors/catalogue.ts';
import { keyringClient, resolveConnection } from '../context.ts';
import { ExitCodes } from '../errors.ts';
import type { CliIo } from '../io.ts';
import { agentIn, findTeam } from '../team-lookup.ts';
import { connectionOptions } from './plan-apply.ts';
import type { Runner } from './runner.ts';

// What a client's configuration holds is shared with the console's "Connect an agent" page.
export { CLAUDE_KEY_VARIABLE, entryName, McpConfigFormats, renderMcpConfig, type McpConfigFormat, type McpEndpoint } from '../../api/mcp-config.ts';
/** Where each client's configuration lives, told on stderr after the configuration. */
const whereItGoes: Record<McpConfigFormat, string> = {
  claude:
    'Merge it into claude_desktop_config.json (macOS: ~/Library/Application Support/Claude/, Windows: %APPDATA%\\Claude\\) under "mcpServers" and restart Claude Desktop; it runs the mcp-remote bridge with npx, so Node.js must be installed.',
  cursor: 'Merge it into ~/.cursor/mcp.json (every project) or .cursor/mcp.json (this project) under "mcpServers".',
  vscode: 'Merge it into .vscode/mcp.json (this workspace) under "servers", or into your user configuration (command "MCP: Open User Configuration").',
  json: 'Any MCP client with Streamable HTTP: the URL, and the headers on every request.',
};


/** How a key argument is shown back: an MCP key secret given by mistake is cut to its public prefix. */
function shown(argument: string): string {
  return argument.startsWith('acs_mcp_') && argument.length > 12 ? `${argument.slice(0, 12)}…` : argument;
}

/**
 * The keys of `keys` that the arguments name, each by key id or by prefix (`acs_mcp_xxxx`, as
 * `mcp keys list` shows it; a whole key works too, by its prefix). Raises `invalid_usage` naming
 * every argument that matches no key or more than one, before anything is revoked.
 */
export function keysNamed(keys: readonly McpKey[], argumentsGiven: readonly string[]): McpKey[] {
  const problems: string[] = [];
  const found: McpKey[] = [];
  for (const argument of argumentsGiven) {
    const id = argument.toLowerCase();
    const matches = keys.filter((k) => k.key_id === id || (argument.startsWith('acs_mcp_') && argument.startsWith(k.prefix)));
    if (matches.length === 1) {
      if (!found.includes(matches[0]!)) found.push(matches[0]!);
    } else {
      problems.push(matches.length === 0 ? `no active MCP key ${shown(argument)}` : `${shown(argument)} matches ${matches.length} keys by prefix; give the key id`);
    }
  }
  if (problems.length > 0) throw new ToolkitError('invalid_usage', `${problems.join('; ')} (teamctl mcp keys list shows the agent's keys)`);
  return found;
}

interface AgentFlags {
  team: string;
  agent: string;
  org?: string;
  baseUrl?: string;
  apiKeyEnv?: string[];
}

function agentOptions(command: Command): Command {
  return connectionOptions(
    command
      .requiredOption('--team <name>', 'team name')
      .requiredOption('--agent <name>', 'agent name')
      .option('--org <name>', 'organization name (when the team name is not unique)'),
  );
}

/**
 * Registers `mcp config`, `mcp keys list` and `mcp keys revoke`. Errors: `invalid_usage` (unknown
 * team, agent or key, with a did-you-mean; a human named as the agent), `unresolved_secret` and
 * `invalid_api_key`/`keys_refused` (the organization keyring), `not_found`.
 */
export function registerMcp(program: Command, io: CliIo, run: Runner): void {
  const mcp = program.command('mcp').description('Connect MCP clients (Claude Desktop, Cursor, VS Code, the MCP SDK) to the service as an agent.');

  agentOptions(
    mcp
      .command('config')
      .description('Create an MCP key for an agent and print a ready configuration for an MCP client (the key is printed only there).')
      .addOption(new Option('--format <client>', 'the client: claude (Claude Desktop), cursor, vscode, or json').choices(Object.keys(McpConfigFormats)).default('json'))
      .option('--name <name>', 'the entry name in the client configuration (default: <team>-<agent>)'),
  ).action((opts: AgentFlags & { format: McpConfigFormat; name?: string }) =>
    run(async () => {
      const connection = resolveConnection(opts, io.env);
      const client = keyringClient(connection, io.env);
      const team = await findTeam(client, opts.team, opts.org);
      const agent = await agentIn(client, team, opts.agent);
      const created = await client.createMcpKey(agent.agent_id);
      const url = `${connection.baseUrl.replace(/\/+$/, '')}/api/v1/mcp`;
      const config = renderMcpConfig(opts.format, { name: opts.name ?? entryName(team.team_name, agent.name), url, key: created.mcp_key });
      // The key goes to stdout inside the configuration only; stderr says what was done without it.
      io.stdout(JSON.stringify(config, null, 2));
      io.stderr(`Created MCP key ${created.prefix}… (key id ${created.key_id}) for agent ${agent.name} of team ${team.team_name}.`);
      io.stderr(whereItGoes[opts.format]);
      io.stderr('The configuration holds the key: keep it out of version control. Revoke it with: teamctl mcp keys revoke ' + `${created.key_id} --team ${team.team_name} --agent ${agent.name}`);
      if (agent.provider !== null) io.stderr(`note: ${agent.name} has provider ${agent.provider}: the service's agent loop answers its messages too.`);
      return ExitCodes.ok;
    }),
  );

  const keys = mcp.command('keys').description("An agent's MCP keys.");
  agentOptions(keys.command('list').description("List an agent's active MCP keys (never their secrets).").option('--json', 'print {"mcp_keys": [...]} as JSON')).action(
    (opts: AgentFlags & { json?: boolean }) =>
      run(async () => {
        const client = keyringClient(resolveConnection(opts, io.env), io.env);
        const agent = await agentIn(client, await findTeam(client, opts.team, opts.org), opts.agent);
        const list = await client.listMcpKeys(agent.agent_id);
        if (opts.json) io.stdout(JSON.stringify({ mcp_keys: list }, null, 2));
        else if (list.length === 0) io.stdout(`Agent ${agent.name} has no active MCP key.`);
        else {
          const rows = [['KEY ID', 'PREFIX', 'CREATED', 'LAST USED'], ...list.map((k) => [k.key_id, `${k.prefix}…`, k.created_at, k.last_used_at ?? 'never'])];
          const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
          io.stdout(rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n'));
        }
        return ExitCodes.ok;
      }),
  );

  agentOptions(
    keys
      .command('revoke')
      .description('Revoke MCP keys of an agent at once, by key id or prefix (as mcp keys list shows them); none is revoked if one is unknown.')
      .argument('<key...>', 'key ids or prefixes'),
  ).action((given: string[], opts: AgentFlags) =>
    run(async () => {
      const client = keyringClient(resolveConnection(opts, io.env), io.env);
      const agent = await agentIn(client, await findTeam(client, opts.team, opts.org), opts.agent);
      for (const key of keysNamed(await client.listMcpKeys(agent.agent_id), given)) {
        await client.revokeMcpKey(agent.agent_id, key.key_id);
        io.stdout(`Revoked MCP key ${key.key_id} (${key.prefix}…) of agent ${agent.name}.`);
      }
      return ExitCodes.ok;
    }),
  );
}

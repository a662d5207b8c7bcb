/**
 * `teamctl a2a card AGENT`: where an agent of a team answers as an A2A agent (contract §12), and a
 * client to call it with — the sibling of `teamctl mcp config`, for the other direction: an MCP
 * key lets an agent take part in its team; the same key lets it call, over A2A, the agents it
 * shares an edge with.
 */
import type { Command } from 'commander';
import { Option } from 'commander';
import { A2A_KEY_VARIABLE, A2aSnippetLanguages, agentA2aUrl, agentCardUrl, renderA2aSnippet } from '../../api/a2a.ts';
import type { TeamGraph } from '../../api/schemas.ts';
import { keyringClient, resolveConnection } from '../context.ts';
import { ExitCodes } from '../errors.ts';
import type { CliIo } from '../io.ts';
import { agentIn, findTeam } from '../team-lookup.ts';
import { connectionOptions } from './plan-apply.ts';
import type { Runner } from './runner.ts';

/** What `a2a card` prints: a client program in one of the SDKs' languages, or the card's URL alone. */
export const A2aCardFormats = { ...A2aSnippetLanguages, url: 'url' } as const;
export type A2aCardFormat = keyof typeof A2aCardFormats;

/** The agents of `team` that share an edge with `agentId`: who may call it over A2A, by name, sorted. */
export function a2aCallers(team: TeamGraph, agentId: string): string[] {
  const agents = new Map(team.agents.map((a) => [a.agent_id, a.name]));
  const names = team.edges
    .filter((edge) => edge.participants.includes(agentId))
    .map((edge) => edge.participants.find((p) => p !== agentId)!)
    .flatMap((peer) => (agents.has(peer) ? [agents.get(peer)!] : []));
  return names.sort();
}

/**
 * What `a2a card` writes to stdout for `format`: the card URL alone (`url`), or a program of the
 * language's A2A SDK headed by comment lines naming the card, the endpoint and who may call.
 */
export function renderA2aCard(format: A2aCardFormat, input: { baseUrl: string; agentId: string; agentName: string; teamName: string; callers: readonly string[] }): string {
  const cardUrl = agentCardUrl(input.baseUrl, input.agentId);
  if (format === 'url') return cardUrl;
  const url = agentA2aUrl(input.baseUrl, input.agentId);
  const comment = format === 'python' ? '#' : '//';
  const callers = input.callers.length > 0 ? input.callers.join(', ') : 'none yet (join an agent to it with an edge)';
  return [
    `${comment} Agent card of ${input.agentName} (team ${input.teamName}): ${cardUrl}`,
    `${comment} A2A endpoint: ${url} (JSON-RPC; HTTP+JSON under it; A2A 1.0 and 0.3)`,
    `${comment} Callers: agents on an edge with ${input.agentName}, each with its own MCP key in ${A2A_KEY_VARIABLE}: ${callers}`,
    renderA2aSnippet(format, url),
  ].join('\n');
}

interface CardFlags {
  team: string;
  org?: string;
  format: A2aCardFormat;
  baseUrl?: string;
  apiKeyEnv?: string[];
}

/**
 * Registers `a2a card AGENT --team T [--org O] [--format python|js|url]`. Errors: `name_not_found`
 * (team, organization, agent, with a did-you-mean), `invalid_usage` (a human named as the agent;
 * a team in several organizations without `--org`), `unresolved_secret` and
 * `invalid_api_key`/`keys_refused` (the organization keyring). Creates nothing: the caller's MCP key
 * comes from `teamctl mcp config` for the calling agent.
 */
export function registerA2a(program: Command, io: CliIo, run: Runner): void {
  const a2a = program.command('a2a').description('Call the agents of a team over the Agent2Agent protocol (A2A), as another agent of the team.');
  connectionOptions(
    a2a
      .command('card')
      .description("Print an agent's A2A card URL and a client program (Python a2a-sdk or JS @a2a-js/sdk) that calls it with a caller's MCP key.")
      .argument('<agent>', 'the agent to call (its name in the team)')
      .requiredOption('--team <name>', 'team name')
      .option('--org <name>', 'organization name (when the team name is not unique)')
      .addOption(new Option('--format <format>', 'python (a2a-sdk), js (@a2a-js/sdk), or url (the card URL alone)').choices(Object.keys(A2aCardFormats)).default('python')),
  ).action((agentName: string, opts: CardFlags) =>
    run(async () => {
      const connection = resolveConnection(opts, io.env);
      const client = keyringClient(connection, io.env);
      const team = await findTeam(client, opts.team, opts.org);
      const agent = await agentIn(client, team, agentName);
      const callers = a2aCallers(team, agent.agent_id);
      io.stdout(renderA2aCard(opts.format, { baseUrl: connection.baseUrl, agentId: agent.agent_id, agentName: agent.name, teamName: team.team_name, callers }));
      if (opts.format !== 'url') {
        io.stderr(`The program reads the caller's MCP key from ${A2A_KEY_VARIABLE}: create one for a calling agent with teamctl mcp config --team ${team.team_name} --agent CALLER.`);
      }
      if (callers.length === 0) io.stderr(`note: no agent shares an edge with ${agent.name}, so no key may call it yet; every call is refused as for an unknown task.`);
      if (agent.provider === null) io.stderr(`note: ${agent.name} is an external agent: a task asked of it waits until it answers through the MCP endpoint.`);
      return ExitCodes.ok;
    }),
  );
}

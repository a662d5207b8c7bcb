/** `teamctl thread open`: a first conversation on an edge. */
import type { Command } from 'commander';
import { InvalidArgumentError, Option } from 'commander';
import type { Message, TeamGraph } from '../../api/schemas.ts';
import type { AcsClient } from '../../client/acs-client.ts';
import { ToolkitError } from '../../errors/catalogue.ts';
import { clientFor, resolveConnection } from '../context.ts';
import { ExitCodes } from '../errors.ts';
import type { CliIo } from '../io.ts';
import { connectionOptions } from './plan-apply.ts';
import type { Runner } from './runner.ts';

/** Longest single long poll the contract allows (§5: `wait` 0–30 s). */
const MAX_POLL_SECONDS = 30;

/** Finds a team by name among the organizations the key reaches (optionally one organization). */
export async function findTeam(client: AcsClient, teamName: string, orgName?: string): Promise<TeamGraph> {
  const orgs = (await client.listOrganizations()).filter((o) => !orgName || o.org_name === orgName);
  if (orgName && orgs.length === 0) throw new ToolkitError('invalid_usage', `no organization named "${orgName}" is reachable with this key`);
  const matches = [];
  for (const org of orgs) {
    for (const team of await client.listTeams(org.org_id)) if (team.team_name === teamName) matches.push({ org, team });
  }
  if (matches.length === 0) throw new ToolkitError('invalid_usage', `no team named "${teamName}"${orgName ? ` in ${orgName}` : ''}`);
  if (matches.length > 1) throw new ToolkitError('invalid_usage', `team "${teamName}" exists in several organizations (${matches.map((m) => m.org.org_name).join(', ')}); pass --org`);
  return client.getTeam(matches[0]!.team.team_id);
}

/** The id of a participant (agent or human) of the team by name. Raises `invalid_usage` when absent. */
export function participantId(team: TeamGraph, name: string): string {
  const agent = team.agents.find((a) => a.name === name);
  const human = team.humans.find((h) => h.name === name);
  const id = agent?.agent_id ?? human?.human_id;
  if (!id) throw new ToolkitError('invalid_usage', `team ${team.team_name} has no participant named "${name}"`);
  return id;
}

/**
 * Waits up to `seconds` for a message from `peerId` after `after`, long-polling (never busy
 * polling). Returns the message, or undefined when the time ran out.
 */
export async function waitForReply(client: AcsClient, threadId: string, after: string, peerId: string, seconds: number): Promise<Message | undefined> {
  const deadline = Date.now() + seconds * 1000;
  let cursor: string | null = after;
  for (;;) {
    const remaining = Math.ceil((deadline - Date.now()) / 1000);
    const page = await client.getThread(threadId, { after: cursor, limit: 200, wait: Math.max(0, Math.min(MAX_POLL_SECONDS, remaining)) });
    const reply = page.messages.find((m) => m.sender_id === peerId);
    if (reply) return reply;
    cursor = page.next_after;
    if (Date.now() >= deadline) return undefined;
  }
}

function seconds(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0 || n > 86_400) throw new InvalidArgumentError(`not a number of seconds (0–86400): ${value}`);
  return n;
}

/** Registers `thread open`. */
export function registerThread(program: Command, io: CliIo, run: Runner): void {
  const thread = program.command('thread').description('Conversations on the edges of a team.');
  connectionOptions(
    thread
      .command('open')
      .description('Open a thread on the edge between two participants, optionally wait for the peer\'s reply and print it. Exits 4 when no reply came in time.')
      .requiredOption('--team <name>', 'team name')
      .requiredOption('--from <participant>', 'the sender (agent or human name)')
      .requiredOption('--to <participant>', 'the peer (agent or human name)')
      .requiredOption('--content <text>', 'the first message')
      .option('--subject <text>', 'subject line', '')
      .option('--channel <name>', 'channel hint', 'web')
      .option('--org <name>', 'organization name (when the team name is not unique)')
      .addOption(new Option('--wait <seconds>', 'wait this long for the reply (0 = do not wait)').argParser(seconds).default(0))
      .option('--json', 'print the thread and the reply as JSON'),
  ).action(
    (opts: { team: string; from: string; to: string; content: string; subject: string; channel: string; org?: string; wait: number; json?: boolean; baseUrl?: string; apiKeyEnv: string }) =>
      run(async () => {
        const client = clientFor(resolveConnection(opts, io.env), io.env);
        const team = await findTeam(client, opts.team, opts.org);
        const fromId = participantId(team, opts.from);
        const toId = participantId(team, opts.to);
        const edge = team.edges.find((e) => e.participants.includes(fromId) && e.participants.includes(toId));
        if (!edge) throw new ToolkitError('invalid_usage', `no edge joins ${opts.from} and ${opts.to} in team ${opts.team}`);
        const opened = await client.openThread(edge.edge_id, { sender_agent_id: fromId, subject: opts.subject, content: opts.content, channel: opts.channel });
        const first = await client.getThread(opened.thread_id, { limit: 1 });
        if (!opts.json) io.stdout(`Opened thread ${opened.thread_id} on ${opts.from} <-> ${opts.to}.`);
        if (opts.wait <= 0) {
          if (opts.json) io.stdout(JSON.stringify({ thread: opened }, null, 2));
          return ExitCodes.ok;
        }
        const reply = await waitForReply(client, opened.thread_id, first.messages[0]!.message_id, toId, opts.wait);
        if (opts.json) io.stdout(JSON.stringify({ thread: opened, reply: reply ?? null }, null, 2));
        if (!reply) throw new ToolkitError('timed_out', `no reply from ${opts.to} within ${opts.wait} s`);
        if (!opts.json) io.stdout(`${opts.to}: ${reply.content}`);
        return ExitCodes.ok;
      }),
  );
}

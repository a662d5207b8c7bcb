/** `teamctl thread open`: a first conversation on an edge. */
import type { Command } from 'commander';
import { InvalidArgumentError, Option } from 'commander';
import type { Message, TeamGraph } from '../../api/schemas.ts';
import { MAX_WAIT_SECONDS } from '../../client/acs-client.ts';
import type { AcsClient } from '../../client/acs-client.ts';
import { ToolkitError } from '../../errors/catalogue.ts';
import { keyringClient, resolveConnection } from '../context.ts';
import { ExitCodes } from '../errors.ts';
import type { CliIo } from '../io.ts';
import { connectionOptions } from './plan-apply.ts';
import type { Runner } from './runner.ts';
import { registerThreadRead } from './thread-read.ts';
import { findTeam, participantId, participantNames } from '../team-lookup.ts';

/**
 * Waits up to `seconds` for a message from `peerId` after `after`, long-polling (never busy
 * polling). Returns the message, or undefined when the time ran out.
 */
export async function waitForReply(client: AcsClient, threadId: string, after: string, peerId: string, seconds: number): Promise<Message | undefined> {
  const deadline = Date.now() + seconds * 1000;
  let cursor: string | null = after;
  for (;;) {
    const remaining = Math.ceil((deadline - Date.now()) / 1000);
    const page = await client.getThread(threadId, { after: cursor, limit: 200, wait: Math.max(0, Math.min(MAX_WAIT_SECONDS, remaining)) });
    const reply = page.messages.find((m) => m.sender_id === peerId);
    if (reply) return reply;
    cursor = page.next_after;
    if (Date.now() >= deadline) return undefined;
  }
}

/** Who `name` can open a thread with: `dana's edges go to triager, summarizer`. */
function peersText(team: TeamGraph, id: string, name: string): string {
  const names = participantNames(team);
  const peers = team.edges.filter((e) => e.participants.includes(id)).map((e) => names.get(e.participants.find((p) => p !== id) ?? '') ?? '?');
  return peers.length > 0 ? `${name}'s edges go to ${peers.join(', ')}` : `${name} has no edge`;
}

/**
 * Why a peer agent cannot have answered, when that is known: it is paused, or its organization has
 * no key for its provider. Output: `{ hint }` for the timed-out error, or nothing (the generic hint).
 */
async function silentPeerHint(client: AcsClient, team: TeamGraph, peerId: string, peer: string): Promise<{ hint?: string }> {
  const agent = team.agents.find((a) => a.agent_id === peerId);
  if (!agent?.provider) return {};
  if (agent.status === 'paused') return { hint: `${peer} is paused: it answers once made active (status: active in the definition, then apply)` };
  const keys = await client.listProviderKeys(team.org_id).catch(() => undefined);
  if (keys && !keys.some((k) => k.provider === agent.provider)) {
    return { hint: `${peer} cannot answer: its organization has no ${agent.provider} key; add it under organization.providerKeys in the definition and apply (its messages wait until then)` };
  }
  return {};
}

function seconds(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0 || n > 86_400) throw new InvalidArgumentError(`not a number of seconds (0–86400): ${value}`);
  return n;
}

/** Registers `thread open` and the commands of `thread-read.ts` (send, show, list, follow). */
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
    (opts: { team: string; from: string; to: string; content: string; subject: string; channel: string; org?: string; wait: number; json?: boolean; baseUrl?: string; apiKeyEnv?: string[] }) =>
      run(async () => {
        const client = keyringClient(resolveConnection(opts, io.env), io.env);
        const team = await findTeam(client, opts.team, opts.org);
        const fromId = participantId(team, opts.from);
        const toId = participantId(team, opts.to);
        // A thread joins two participants; with one name at both ends any edge of it would match.
        if (fromId === toId) throw new ToolkitError('invalid_usage', `--from and --to both name ${opts.from}: a thread is between two different participants; nothing was created`);
        const edge = team.edges.find((e) => e.participants.includes(fromId) && e.participants.includes(toId));
        if (!edge) throw new ToolkitError('invalid_usage', `no edge joins ${opts.from} and ${opts.to} in team ${opts.team}, so no thread can be opened between them (${peersText(team, fromId, opts.from)}); nothing was created`);
        const opened = await client.openThread(edge.edge_id, { sender_agent_id: fromId, subject: opts.subject, content: opts.content, channel: opts.channel });
        const first = await client.getThread(opened.thread_id, { limit: 1 });
        if (!opts.json) io.stdout(`Opened thread ${opened.thread_id} on ${opts.from} <-> ${opts.to}.`);
        if (opts.wait <= 0) {
          if (opts.json) io.stdout(JSON.stringify({ thread: opened }, null, 2));
          return ExitCodes.ok;
        }
        const reply = await waitForReply(client, opened.thread_id, first.messages[0]!.message_id, toId, opts.wait);
        if (opts.json) io.stdout(JSON.stringify({ thread: opened, reply: reply ?? null }, null, 2));
        if (!reply) throw new ToolkitError('timed_out', `no reply from ${opts.to} within ${opts.wait} s`, await silentPeerHint(client, team, toId, opts.to));
        if (!opts.json) io.stdout(`${opts.to}: ${reply.content}`);
        return ExitCodes.ok;
      }),
  );
  registerThreadRead(thread, io, run);
}

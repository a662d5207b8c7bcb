/** `teamctl thread open`: a first conversation on an edge, and the peer's reply as it is written (`--wait`). */
import type { Command } from 'commander';
import { Option } from 'commander';
import type { TeamGraph } from '../../api/schemas.ts';
import { ToolkitError } from '../../errors/catalogue.ts';
import { keyringClient, resolveConnection } from '../context.ts';
import { ExitCodes } from '../errors.ts';
import type { CliIo } from '../io.ts';
import { connectionOptions } from './plan-apply.ts';
import type { Runner } from './runner.ts';
import { registerThreadRead } from './thread-read.ts';
import { silentPeerHint, waitForStreamedReply, waitSeconds } from './thread-wait.ts';
import { findTeam, lookUpIn, participantId, participantNames } from '../team-lookup.ts';

/** Who `name` can open a thread with: `dana's edges go to triager, summarizer`. */
function peersText(team: TeamGraph, id: string, name: string): string {
  const names = participantNames(team);
  const peers = team.edges.filter((e) => e.participants.includes(id)).map((e) => names.get(e.participants.find((p) => p !== id) ?? '') ?? '?');
  return peers.length > 0 ? `${name}'s edges go to ${peers.join(', ')}` : `${name} has no edge`;
}

/** Registers `thread open` and the commands of `thread-read.ts` (send, show, list, follow, stop). */
export function registerThread(program: Command, io: CliIo, run: Runner): void {
  const thread = program.command('thread').description('Conversations on the edges of a team.');
  connectionOptions(
    thread
      .command('open')
      .description('Open a thread on the edge between two participants, optionally wait for the peer\'s reply and print it as it is written. Exits 4 when no reply came in time.')
      .requiredOption('--team <name>', 'team name')
      .requiredOption('--from <participant>', 'the sender (agent or human name)')
      .requiredOption('--to <participant>', 'the peer (agent or human name)')
      .requiredOption('--content <text>', 'the first message')
      .option('--subject <text>', 'subject line', '')
      .option('--channel <name>', 'channel hint', 'web')
      .option('--org <name>', 'organization name (when the team name is not unique)')
      .addOption(new Option('--wait <seconds>', 'wait this long for the reply (0 = do not wait)').argParser(waitSeconds).default(0))
      .option('--json', 'print the thread and the reply as JSON'),
  ).action(
    (opts: { team: string; from: string; to: string; content: string; subject: string; channel: string; org?: string; wait: number; json?: boolean; baseUrl?: string; apiKeyEnv?: string[] }) =>
      run(async () => {
        const client = keyringClient(resolveConnection(opts, io.env), io.env);
        const team = await findTeam(client, opts.team, opts.org);
        const byFlag = { noun: 'participant', teamFrom: 'flag' } as const;
        const fromId = await lookUpIn(client, team, opts.from, () => participantId(team, opts.from), byFlag);
        const toId = await lookUpIn(client, team, opts.to, () => participantId(team, opts.to), byFlag);
        // A thread joins two participants; with one name at both ends any edge of it would match.
        if (fromId === toId) throw new ToolkitError('invalid_usage', `--from and --to both name ${opts.from}: a thread is between two different participants; nothing was created`);
        const edge = team.edges.find((e) => e.participants.includes(fromId) && e.participants.includes(toId));
        if (!edge) throw new ToolkitError('invalid_usage', `no edge joins ${opts.from} and ${opts.to} in team ${opts.team}, so no thread can be opened between them (${peersText(team, fromId, opts.from)}); nothing was created`);
        const opened = await client.openThread(edge.edge_id, { sender_agent_id: fromId, subject: opts.subject, content: opts.content, channel: opts.channel });
        if (!opts.json) io.stdout(`Opened thread ${opened.thread_id} on ${opts.from} <-> ${opts.to}.`);
        if (opts.wait <= 0) {
          if (opts.json) io.stdout(JSON.stringify({ thread: opened }, null, 2));
          return ExitCodes.ok;
        }
        // The thread's stream from after its first message (position 1): the reply as it is written.
        const { reply } = await waitForStreamedReply(client, io, { threadId: opened.thread_id, after: '1', peerId: toId, peerName: opts.to, seconds: opts.wait, print: !opts.json });
        if (opts.json) io.stdout(JSON.stringify({ thread: opened, reply: reply ?? null }, null, 2));
        if (!reply) throw new ToolkitError('timed_out', `no reply from ${opts.to} within ${opts.wait} s`, await silentPeerHint(client, team, toId, opts.to));
        return ExitCodes.ok;
      }),
  );
  registerThreadRead(thread, io, run);
}

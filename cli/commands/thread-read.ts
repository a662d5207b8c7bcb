/** `teamctl thread send | show | list | follow`: threads by id, participants by name. */
import type { Command } from 'commander';
import type { Message, TeamGraph, Thread } from '../../api/schemas.ts';
import { MAX_WAIT_SECONDS } from '../../client/acs-client.ts';
import type { AcsClient } from '../../client/acs-client.ts';
import { ToolkitError } from '../../errors/catalogue.ts';
import { keyringClient, resolveConnection } from '../context.ts';
import { ExitCodes } from '../errors.ts';
import { untilStopped } from '../signals.ts';
import type { CliIo } from '../io.ts';
import { counted } from '../render.ts';
import { connectionOptions } from './plan-apply.ts';
import type { Runner } from './runner.ts';
import { findTeam, participantId, participantNames } from '../team-lookup.ts';

/** A thread with its team, so ids can be shown as names. */
interface ThreadContext {
  thread: Thread;
  team: TeamGraph;
  nameOf(id: string): string;
}

/** Reads a thread's fields and its team. Errors: `not_found`. */
async function threadContext(client: AcsClient, threadId: string): Promise<ThreadContext> {
  const { messages: _messages, has_more: _more, next_after: _next, ...thread } = await client.getThread(threadId, { limit: 1 });
  const team = await client.getTeam(thread.team_id);
  const names = participantNames(team);
  return { thread, team, nameOf: (id) => names.get(id) ?? id };
}

/** Every message after `after`, page by page. */
async function messagesAfter(client: AcsClient, threadId: string, after: string | null): Promise<Message[]> {
  const all: Message[] = [];
  let cursor = after;
  for (;;) {
    const page = await client.getThread(threadId, { after: cursor, limit: 200 });
    all.push(...page.messages);
    cursor = page.next_after;
    if (!page.has_more) return all;
  }
}

/** One message as a line: `TIME NAME: content`. */
function line(ctx: ThreadContext, m: Message): string {
  return `${m.sent_at} ${ctx.nameOf(m.sender_id)}: ${m.content}`;
}

/** A message with its sender's name, for `--json`. */
function named(ctx: ThreadContext, m: Message) {
  return { ...m, sender: ctx.nameOf(m.sender_id) };
}

/**
 * Registers `thread send`, `thread show`, `thread list` and `thread follow` on the `thread`
 * command group. Errors: `not_found` (thread), `invalid_usage` (unknown participant or team),
 * `not_a_participant` (a sender not on the thread's edge).
 */
export function registerThreadRead(thread: Command, io: CliIo, run: Runner): void {
  connectionOptions(
    thread
      .command('send')
      .description('Append a message to a thread as one of its two participants.')
      .argument('<thread>', 'thread id')
      .requiredOption('--from <participant>', 'the sender (agent or human name)')
      .requiredOption('--content <text>', 'the message')
      .option('--json', 'print the message as JSON'),
  ).action((threadId: string, opts: { from: string; content: string; json?: boolean; baseUrl?: string; apiKeyEnv?: string[] }) =>
    run(async () => {
      const client = keyringClient(resolveConnection(opts, io.env), io.env);
      const ctx = await threadContext(client, threadId);
      const message = await client.appendMessage(threadId, { sender_agent_id: participantId(ctx.team, opts.from), content: opts.content });
      io.stdout(opts.json ? JSON.stringify(named(ctx, message), null, 2) : `Sent ${message.message_id} to thread ${threadId}.`);
      return ExitCodes.ok;
    }),
  );

  connectionOptions(
    thread
      .command('show')
      .description('Print a thread\'s messages, oldest first, with participants by name.')
      .argument('<thread>', 'thread id')
      .option('--after <message>', 'only the messages after this message id')
      .option('--json', 'print {"thread", "messages"} as JSON'),
  ).action((threadId: string, opts: { after?: string; json?: boolean; baseUrl?: string; apiKeyEnv?: string[] }) =>
    run(async () => {
      const client = keyringClient(resolveConnection(opts, io.env), io.env);
      const ctx = await threadContext(client, threadId);
      const messages = await messagesAfter(client, threadId, opts.after ?? null);
      if (opts.json) io.stdout(JSON.stringify({ thread: ctx.thread, messages: messages.map((m) => named(ctx, m)) }, null, 2));
      else {
        io.stdout(`Thread ${threadId}${ctx.thread.subject ? ` "${ctx.thread.subject}"` : ''} in team ${ctx.team.team_name} (${counted(ctx.thread.message_count, 'message')})`);
        for (const m of messages) io.stdout(line(ctx, m));
      }
      return ExitCodes.ok;
    }),
  );

  connectionOptions(
    thread
      .command('list')
      .description('List the threads of a team, newest first, optionally only those between two participants.')
      .requiredOption('--team <name>', 'team name')
      .option('--org <name>', 'organization name (when the team name is not unique)')
      .option('--between <a,b>', 'two participant names, comma-separated')
      .option('--json', 'print the threads as JSON'),
  ).action((opts: { team: string; org?: string; between?: string; json?: boolean; baseUrl?: string; apiKeyEnv?: string[] }) =>
    run(async () => {
      const client = keyringClient(resolveConnection(opts, io.env), io.env);
      const team = await findTeam(client, opts.team, opts.org);
      let edges = team.edges;
      if (opts.between !== undefined) {
        const pair = opts.between.split(',').map((s) => s.trim());
        if (pair.length !== 2 || !pair[0] || !pair[1]) throw new ToolkitError('invalid_usage', `--between takes two participant names separated by a comma, got "${opts.between}"`);
        const [a, b] = [participantId(team, pair[0]), participantId(team, pair[1])];
        edges = edges.filter((e) => e.participants.includes(a) && e.participants.includes(b));
        if (edges.length === 0) throw new ToolkitError('invalid_usage', `no edge joins ${pair[0]} and ${pair[1]} in team ${team.team_name}`);
      }
      const names = participantNames(team);
      const threads = [];
      for (const edge of edges) {
        const between = edge.participants.map((p) => names.get(p) ?? p).join(' <-> ');
        for (const t of await client.listThreads(edge.edge_id)) threads.push({ ...t, between });
      }
      threads.sort((x, y) => y.created_at.localeCompare(x.created_at));
      if (opts.json) io.stdout(JSON.stringify({ threads }, null, 2));
      else if (threads.length === 0) io.stdout(`No threads in team ${team.team_name}${opts.between ? ` between ${opts.between}` : ''}.`);
      else for (const t of threads) io.stdout(`${t.thread_id}  ${t.between}  ${counted(t.message_count, 'message')}  ${t.created_at}${t.subject ? `  "${t.subject}"` : ''}`);
      return ExitCodes.ok;
    }),
  );

  connectionOptions(
    thread
      .command('follow')
      .description('Print a thread\'s messages and then each new one as it arrives (long polls), until Ctrl-C.')
      .argument('<thread>', 'thread id')
      .option('--after <message>', 'start after this message id (default: print the whole thread first)'),
  ).action((threadId: string, opts: { after?: string; baseUrl?: string; apiKeyEnv?: string[] }) =>
    run(async () => {
      const client = keyringClient(resolveConnection(opts, io.env), io.env);
      const ctx = await threadContext(client, threadId);
      // Ctrl-C or SIGTERM ends the wait in flight and the command, with exit 0.
      await untilStopped(async (stop) => {
        let cursor = opts.after ?? null;
        while (!stop.aborted) {
          let page;
          try {
            page = await client.getThread(threadId, { after: cursor, limit: 200, wait: MAX_WAIT_SECONDS }, { signal: stop });
          } catch (error) {
            // Aborted by Ctrl-C, whether during the request or while its body was read.
            if (stop.aborted) break;
            throw error;
          }
          for (const m of page.messages) io.stdout(line(ctx, m));
          cursor = page.next_after;
        }
      });
      return ExitCodes.ok;
    }),
  );
}

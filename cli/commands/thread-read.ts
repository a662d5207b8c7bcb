/** `teamctl thread send | show | list | follow | stop`: threads by id, participants by name, with the tool calls of the agents' turns and replies as they are written. */
import type { Command } from 'commander';
import { Option } from 'commander';
import { finalToolCallStatuses, type ToolCall } from '../../api/agent-tools.ts';
import type { Message, TeamGraph, Thread } from '../../api/schemas.ts';
import type { AcsClient } from '../../client/acs-client.ts';
import { ToolkitError } from '../../errors/catalogue.ts';
import { keyringClient, resolveConnection } from '../context.ts';
import { ExitCodes } from '../errors.ts';
import { untilStopped } from '../signals.ts';
import type { CliIo } from '../io.ts';
import { counted, plain, type Style } from '../render.ts';
import { connectionOptions } from './plan-apply.ts';
import type { Runner } from './runner.ts';
import { findTeam, lookUpIn, participantId, participantNames } from '../team-lookup.ts';
import { createReplyPrinter, shownContent } from './thread-replies.ts';
import { namedToolCall, toolCallEventLine, turnLines, turnsByAnchor, turnsOf } from './thread-tool-calls.ts';
import { silentPeerHint, waitForStreamedReply, waitSeconds } from './thread-wait.ts';
import { namedTask, taskOfThread } from './task-view.ts';

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

/** One message as a line: `TIME NAME: content`, ` [stopped]` after a reply that was stopped while it was written. */
function line(ctx: ThreadContext, m: Message): string {
  return `${m.sent_at} ${ctx.nameOf(m.sender_id)}: ${shownContent(m)}`;
}

/** A message with its sender's name, for `--json`. */
function named(ctx: ThreadContext, m: Message) {
  return { ...m, sender: ctx.nameOf(m.sender_id) };
}

/**
 * The lines of `messages` with the tool calls of the agents' turns under them (contract §11):
 * each turn under its reply, or under the message it answers while it has none; `details` adds
 * each call's arguments and result. `calls` are the thread's, `all` every message of the thread
 * (to find replies), `messages` the ones to print.
 */
function threadLines(ctx: ThreadContext, messages: readonly Message[], all: readonly Message[], calls: readonly ToolCall[], options: { details: boolean; style: Style }): string[] {
  const anchors = turnsByAnchor(turnsOf(calls, all));
  return messages.flatMap((m) => [line(ctx, m), ...turnLines(anchors.get(m.message_id) ?? [], ctx.nameOf, options)]);
}

/** The output formats of `thread show`. */
const ShowFormats = { text: 'text', json: 'json' } as const;

/**
 * Registers `thread send`, `thread show`, `thread list`, `thread follow` and `thread stop` on the
 * `thread` command group. `show` and `follow` print the tool calls of the agents' turns on the
 * thread (contract §11, `GET /threads/{id}/tool-calls`; `follow` also their `tool_call.*` items on
 * the thread's stream) — see cli/commands/thread-tool-calls.ts for how. `follow` and `send --wait`
 * follow the thread's stream (contract §13, `GET /threads/{id}/stream`) and print a reply as it is
 * written (cli/commands/thread-replies.ts); `stop` ends it (`POST /threads/{id}/stop`). `show` names
 * the thread's task and its state when the thread is a task's conversation (contract §12; one
 * request of `GET /teams/{team_id}/tasks`, see cli/commands/task-view.ts).
 * Errors: `not_found` (thread), `invalid_usage` (unknown participant or team),
 * `not_a_participant` (a sender not on the thread's edge), `invalid_cursor` (an `--after` that is
 * no message of the thread), `timed_out` (exit 4: no reply within `send --wait`),
 * `too_many_waits` (the key holds too many streams).
 */
export function registerThreadRead(thread: Command, io: CliIo, run: Runner): void {
  connectionOptions(
    thread
      .command('send')
      .description('Append a message to a thread as one of its two participants; with --wait, print the other participant\'s reply as it is written. Exits 4 when no reply came in time.')
      .argument('<thread>', 'thread id')
      .requiredOption('--from <participant>', 'the sender (agent or human name)')
      .requiredOption('--content <text>', 'the message')
      .addOption(new Option('--wait <seconds>', 'wait this long for the other participant\'s reply and print it as it is written (0 = do not wait)').argParser(waitSeconds).default(0))
      .option('--json', 'print the message as JSON (with --wait: {"message", "reply"})'),
  ).action((threadId: string, opts: { from: string; content: string; wait: number; json?: boolean; baseUrl?: string; apiKeyEnv?: string[] }) =>
    run(async () => {
      const client = keyringClient(resolveConnection(opts, io.env), io.env);
      const ctx = await threadContext(client, threadId);
      const senderId = await lookUpIn(client, ctx.team, opts.from, () => participantId(ctx.team, opts.from), { noun: 'participant', teamFrom: 'thread' });
      const send = () => client.appendMessage(threadId, { sender_agent_id: senderId, content: opts.content });
      if (opts.wait <= 0) {
        const message = await send();
        io.stdout(opts.json ? JSON.stringify(named(ctx, message), null, 2) : `Sent ${message.message_id} to thread ${threadId}.`);
        return ExitCodes.ok;
      }
      // The reply comes from the thread's other participant (a sender not on it is refused by the append).
      const participants = ctx.team.edges.find((e) => e.edge_id === ctx.thread.edge_id)?.participants ?? [];
      const peerId = participants.find((p) => p !== senderId) ?? senderId;
      const peerName = ctx.nameOf(peerId);
      const { sent, reply } = await waitForStreamedReply(client, io, {
        threadId,
        peerId,
        peerName,
        seconds: opts.wait,
        print: !opts.json,
        send: async () => {
          const message = await send();
          if (!opts.json) io.stdout(`Sent ${message.message_id} to thread ${threadId}.`);
          return message;
        },
      });
      if (opts.json) io.stdout(JSON.stringify({ message: named(ctx, sent!), reply: reply ? named(ctx, reply) : null }, null, 2));
      if (!reply) throw new ToolkitError('timed_out', `no reply from ${peerName} within ${opts.wait} s`, await silentPeerHint(client, ctx.team, peerId, peerName));
      return ExitCodes.ok;
    }),
  );

  connectionOptions(
    thread
      .command('show')
      .description('Print a thread\'s messages, oldest first, with participants by name and the tool calls of the agents\' turns under them.')
      .argument('<thread>', 'thread id')
      .option('--after <message>', 'only the messages after this message id')
      .option('--tool-calls', 'show each tool call\'s arguments and result (results cut after 20 lines)')
      .addOption(new Option('-o, --output <format>', 'output format').choices(Object.values(ShowFormats)).default(ShowFormats.text))
      .option('--json', 'the same as -o json: print {"thread", "messages", "tool_calls"} as JSON'),
  ).action((threadId: string, opts: { after?: string; toolCalls?: boolean; output: string; json?: boolean; baseUrl?: string; apiKeyEnv?: string[] }) =>
    run(async () => {
      const client = keyringClient(resolveConnection(opts, io.env), io.env);
      const ctx = await threadContext(client, threadId);
      // Every message, to find the replies of turns whose calls come before --after.
      const all = await messagesAfter(client, threadId, null);
      const messages = opts.after === undefined ? all : await messagesAfter(client, threadId, opts.after);
      const calls = await client.allToolCalls(threadId);
      // The task whose conversation this is, when it is one (contract §12): named with its state.
      const task = await taskOfThread(client, ctx.thread);
      if (opts.json || opts.output === ShowFormats.json) {
        // The calls of the turns shown under the messages printed (all of them without --after).
        const shownIds = new Set(messages.map((m) => m.message_id));
        const shownTurns = new Set(turnsOf(calls, all).filter((t) => shownIds.has(t.reply ?? t.answering)).map((t) => t.turnId));
        const shownCalls = calls.filter((c) => shownTurns.has(c.turn_id));
        io.stdout(
          JSON.stringify(
            {
              thread: ctx.thread,
              messages: messages.map((m) => named(ctx, m)),
              tool_calls: shownCalls.map((c) => namedToolCall(c, ctx.nameOf)),
              task: task ? namedTask(task, ctx.nameOf) : null,
            },
            null,
            2,
          ),
        );
      } else {
        io.stdout(`Thread ${threadId}${ctx.thread.subject ? ` "${ctx.thread.subject}"` : ''} in team ${ctx.team.team_name} (${counted(ctx.thread.message_count, 'message')})`);
        if (task) io.stdout(`Task ${task.task_id}: ${task.state}, asked by ${ctx.nameOf(task.requester_id)} of ${ctx.nameOf(task.assignee_id)} (teamctl tasks show ${task.task_id})`);
        for (const text of threadLines(ctx, messages, all, calls, { details: Boolean(opts.toolCalls), style: io.style ?? plain })) io.stdout(text);
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
        const byFlag = { noun: 'participant', teamFrom: 'flag' } as const;
        const a = await lookUpIn(client, team, pair[0], () => participantId(team, pair[0]!), byFlag);
        const b = await lookUpIn(client, team, pair[1], () => participantId(team, pair[1]!), byFlag);
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
      .description('Print a thread\'s messages with the tool calls of the agents\' turns, then follow its stream until Ctrl-C: each reply as it is written (on a terminal; whole lines when piped), each new message, and each tool call as it starts and ends.')
      .argument('<thread>', 'thread id')
      .option('--after <message>', 'start after this message id (default: print the whole thread first)'),
  ).action((threadId: string, opts: { after?: string; baseUrl?: string; apiKeyEnv?: string[] }) =>
    run(async () => {
      const client = keyringClient(resolveConnection(opts, io.env), io.env);
      const ctx = await threadContext(client, threadId);
      // Ctrl-C or SIGTERM ends the stream and the command, with exit 0.
      await untilStopped(async (stop) => {
        const printer = createReplyPrinter(io, { nameOf: ctx.nameOf, lineOf: (m) => line(ctx, m) });
        // What was printed of each tool call: its last status (a state already shown is skipped).
        const shown = new Map<string, ToolCall['status']>();
        let connected!: () => void;
        const open = new Promise<void>((resolve) => (connected = resolve));
        // The thread's stream (contract §13), open before the history is read so that nothing
        // between the two is missed; it resumes from its last position after a dropped connection.
        const ended = new AbortController();
        const items = client.streamThread(threadId, { signal: AbortSignal.any([stop, ended.signal]), onConnected: () => connected() });
        const first = items.next();
        // A refusal (not_found, too_many_waits) ends the command before anything is printed.
        await Promise.race([open, first]);
        try {
          const all = await messagesAfter(client, threadId, null);
          const messages = opts.after === undefined ? all : await messagesAfter(client, threadId, opts.after);
          const calls = await client.allToolCalls(threadId);
          for (const call of calls) shown.set(call.tool_call_id, call.status);
          // The stream may bring them again (it began before they were read): they are not printed twice.
          for (const m of all) printer.printed(m.message_id);
          for (const text of threadLines(ctx, messages, all, calls, { details: false, style: io.style ?? plain })) io.stdout(text);
          for (let next = await first; !next.done; next = await items.next()) {
            const item = next.value;
            if (item.type === 'tool_call.started' || item.type === 'tool_call.finished') {
              const call = item.data;
              const before = shown.get(call.tool_call_id);
              if (before === call.status || (before !== undefined && finalToolCallStatuses.includes(before))) continue;
              shown.set(call.tool_call_id, call.status);
              printer.line(toolCallEventLine(call, ctx.nameOf, call.finished_at ?? call.started_at));
            } else printer.item(item);
          }
        } catch (error) {
          // Aborted by Ctrl-C, whether during a request or while the stream was read.
          if (!stop.aborted) throw error;
        } finally {
          printer.end();
          // A failure while the history was read: the stream, still open, is closed.
          ended.abort();
        }
      });
      return ExitCodes.ok;
    }),
  );

  connectionOptions(
    thread
      .command('stop')
      .description('Stop the reply being written in a thread: what was written so far is posted as the reply, marked stopped, and the agent makes no further tool call.')
      .argument('<thread>', 'thread id')
      .option('--json', 'print {"thread_id", "stopping"} as JSON'),
  ).action((threadId: string, opts: { json?: boolean; baseUrl?: string; apiKeyEnv?: string[] }) =>
    run(async () => {
      const client = keyringClient(resolveConnection(opts, io.env), io.env);
      const result = await client.stopThread(threadId);
      if (opts.json) io.stdout(JSON.stringify(result, null, 2));
      else if (result.stopping === 0) io.stdout(`Nothing was being written in thread ${threadId}.`);
      else io.stdout(`Asked ${counted(result.stopping, 'agent')} to stop writing in thread ${threadId}: what was written so far is posted as the reply, marked [stopped].`);
      return ExitCodes.ok;
    }),
  );
}

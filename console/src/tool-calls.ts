/**
 * The tool calls of agents' turns on a thread, as the thread page shows them (docs/console.md, "A
 * thread"): grouped by turn, each turn next to its reply — or next to the message it answers while
 * it has no reply yet — and read in words (tool, whom it reached, status, duration). The same
 * rules as `teamctl thread show` (cli/commands/thread-tool-calls.ts); the console bundles none of
 * the CLI, so they are written here again, small.
 */
import type { Message, ToolCall } from './types.ts';

/** The states in which a call changes no more. */
const finalStatuses: ReadonlySet<string> = new Set(['completed', 'failed', 'rejected']);

/** Whether a call is in a final state (completed, failed, rejected). */
export function isFinal(call: ToolCall): boolean {
  return finalStatuses.has(call.status);
}

/** One agent's turn on the thread. */
export interface Turn {
  turnId: string;
  agentId: string;
  /** The message the turn answers. */
  answering: string;
  /** Its reply in the thread, or undefined while it has none. */
  reply: string | undefined;
  calls: ToolCall[];
}

/**
 * Groups `calls` by turn and finds each turn's reply among `messages` (oldest first): the first
 * message of the turn's agent sent once all its calls had finished, other than one a call wrote
 * itself (`send_message`'s result is that message). Output: message id → the turns shown next to
 * it (its reply's, or the answered message's while there is no reply).
 */
export function turnsByMessage(calls: readonly ToolCall[], messages: readonly Message[]): Map<string, Turn[]> {
  const turns = new Map<string, Turn>();
  for (const call of calls) {
    let turn = turns.get(call.turn_id);
    if (!turn) {
      turn = { turnId: call.turn_id, agentId: call.agent_id, answering: call.message_id, reply: undefined, calls: [] };
      turns.set(call.turn_id, turn);
    }
    turn.calls.push(call);
  }
  const anchors = new Map<string, Turn[]>();
  for (const turn of turns.values()) {
    if (turn.calls.every(isFinal)) {
      const lastFinished = turn.calls.reduce((last, call) => (call.finished_at && call.finished_at > last ? call.finished_at : last), '');
      const written = new Set(turn.calls.map((call) => (call.result as { message_id?: unknown } | null)?.message_id).filter((id): id is string => typeof id === 'string'));
      turn.reply = messages.find((m) => m.sender_id === turn.agentId && m.sent_at >= lastFinished && m.message_id !== turn.answering && !written.has(m.message_id))?.message_id;
    }
    const anchor = turn.reply ?? turn.answering;
    anchors.set(anchor, [...(anchors.get(anchor) ?? []), turn]);
  }
  return anchors;
}

/** The tool as people name it: `ask`, `send_message`, or `SERVER.TOOL` for a remote MCP tool. */
export function toolLabel(call: ToolCall): string {
  return call.server === null ? call.tool : `${call.server}.${call.tool}`;
}

/** Whom or what a call reaches: `asks researcher`, `approval by You`, `on server tracker`; undefined for the other team tools. */
export function reachText(call: ToolCall, nameOf: (id: string) => string): string | undefined {
  if (call.tool === 'ask' && call.server === null) {
    if (call.waiting_on) return `asks ${nameOf(call.waiting_on.participant_id)}`;
    const peer = (call.arguments as { peer?: unknown } | null)?.peer;
    return typeof peer === 'string' ? `asks ${peer}` : undefined;
  }
  if (call.waiting_on) return `approval by ${nameOf(call.waiting_on.participant_id)}`;
  if (call.server !== null) return `on server ${call.server}`;
  return undefined;
}

/** A status in words, with a sign that says the same (so that nothing is told by colour alone). */
export function statusWords(call: ToolCall): { sign: string; text: string } {
  const code = call.error ? /^([a-z_]+):/.exec(call.error)?.[1] : undefined;
  switch (call.status) {
    case 'completed':
      return { sign: '✓', text: 'completed' };
    case 'failed':
      return { sign: '✗', text: code ? `failed (${code})` : 'failed' };
    case 'rejected':
      return { sign: '✗', text: 'rejected' };
    case 'awaiting_approval':
      return { sign: '◔', text: 'awaiting approval' };
    case 'running':
      return { sign: '…', text: 'running' };
    default:
      return { sign: '…', text: 'pending' };
  }
}

/** How long a finished call took: `54 ms`, `1.2 s`, `3 min 4 s`, `2 h 5 min`; undefined while it runs. */
export function durationText(call: ToolCall): string | undefined {
  if (!call.finished_at) return undefined;
  const ms = Date.parse(call.finished_at) - Date.parse(call.started_at);
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1000);
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
}

/** Characters of a value the page shows before it cuts (a result may be 64 KiB). */
const shownChars = 20_000;

/** A value as the page shows it: pretty JSON (a string as its text), cut at 20,000 characters saying so; a result the service cut shows its text. */
export function shownValue(value: unknown): string {
  const cut = value as { truncated?: unknown; bytes?: unknown; text?: unknown } | null;
  if (cut && typeof cut === 'object' && cut.truncated === true && typeof cut.text === 'string') {
    return `${shownValue(cut.text)}\n… (the service kept the first 64 KiB${typeof cut.bytes === 'number' ? ` of ${cut.bytes} bytes` : ''})`;
  }
  const text = typeof value === 'string' ? value : (JSON.stringify(value, null, 2) ?? 'null');
  return text.length > shownChars ? `${text.slice(0, shownChars)}\n… (cut: ${text.length} characters in all)` : text;
}

/** The start of an approval question (service: `AGENT asks for your approval to call TOOL with:`), and the re-ask after an answer it could not read. */
const approvalQuestion = /^(.+?) asks for your approval to call (\S+) with:/;
const approvalReask = /^Please answer approve, or reject with a reason/;

/**
 * The approval a thread's agent waits for from the person, if any: when the thread's latest
 * message is the agent's, expects a reply, and is an approval question (or its re-ask). Output:
 * the tool asked about (from the question), or undefined.
 */
export function pendingApproval(messages: readonly Message[], agentId: string): { tool: string | undefined } | undefined {
  const latest = messages.at(-1);
  if (!latest || latest.sender_id !== agentId || !latest.expects_reply) return undefined;
  const question = approvalQuestion.exec(latest.content);
  if (question) return { tool: question[2] };
  if (!approvalReask.test(latest.content)) return undefined;
  // A re-ask: the tool is named by the question before it.
  const asked = [...messages].reverse().find((m) => m.sender_id === agentId && approvalQuestion.test(m.content));
  return { tool: asked ? approvalQuestion.exec(asked.content)?.[2] : undefined };
}

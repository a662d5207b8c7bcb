/**
 * A thread's tool calls as `teamctl thread show` and `thread follow` print them (contract §11):
 * grouped by the agent's turn, each turn under its reply — or under the message it answers while
 * it has no reply yet — one line per call (tool, the peer asked or the server, status, duration),
 * and with `--tool-calls` the arguments and the result under each line.
 */
import type { ToolCall } from '../../api/agent-tools.ts';
import { finalToolCallStatuses } from '../../api/agent-tools.ts';
import type { Message } from '../../api/schemas.ts';
import type { Style, StyleFormat } from '../render.ts';

/** Lines of a pretty-printed result `--tool-calls` shows before it cuts. */
export const RESULT_LINES = 20;
/** Characters of a result `--tool-calls` shows before it cuts. */
export const RESULT_CHARS = 2000;

/** One agent's turn on the thread: the calls it made, the message it answers and its reply once posted. */
export interface Turn {
  turnId: string;
  agentId: string;
  /** The message the turn answers. */
  answering: string;
  /** The turn's reply in the thread, or undefined while it has none. */
  reply: string | undefined;
  /** The turn's calls, in the order the service lists them. */
  calls: ToolCall[];
}

/** Whether a call is in a final state (completed, failed, rejected). */
export function isFinal(call: ToolCall): boolean {
  return finalToolCallStatuses.includes(call.status);
}

/** The ids of the messages a turn's calls wrote themselves (`send_message`'s result is the message): never its reply. */
function writtenByCalls(calls: readonly ToolCall[]): Set<string> {
  const ids = new Set<string>();
  for (const call of calls) {
    const result = call.result as { message_id?: unknown } | null;
    if (result && typeof result === 'object' && typeof result.message_id === 'string') ids.add(result.message_id);
  }
  return ids;
}

/**
 * Groups `calls` by turn and finds each turn's reply among `messages` (the thread's, oldest
 * first): the first message of the turn's agent sent once every call of the turn had finished,
 * other than one a call wrote itself. A turn with a call not final yet has no reply.
 * Output: the turns, in the order of their first call.
 */
export function turnsOf(calls: readonly ToolCall[], messages: readonly Message[]): Turn[] {
  const byId = new Map<string, Turn>();
  for (const call of calls) {
    let turn = byId.get(call.turn_id);
    if (!turn) {
      turn = { turnId: call.turn_id, agentId: call.agent_id, answering: call.message_id, reply: undefined, calls: [] };
      byId.set(call.turn_id, turn);
    }
    turn.calls.push(call);
  }
  for (const turn of byId.values()) {
    if (!turn.calls.every(isFinal)) continue;
    const lastFinished = turn.calls.reduce((last, call) => (call.finished_at && call.finished_at > last ? call.finished_at : last), '');
    const own = writtenByCalls(turn.calls);
    turn.reply = messages.find((m) => m.sender_id === turn.agentId && m.sent_at >= lastFinished && m.message_id !== turn.answering && !own.has(m.message_id))?.message_id;
  }
  return [...byId.values()];
}

/**
 * Where each turn is shown: under its reply when it has one, else under the message it answers.
 * Output: message id → the turns shown under it.
 */
export function turnsByAnchor(turns: readonly Turn[]): Map<string, Turn[]> {
  const anchors = new Map<string, Turn[]>();
  for (const turn of turns) {
    const anchor = turn.reply ?? turn.answering;
    anchors.set(anchor, [...(anchors.get(anchor) ?? []), turn]);
  }
  return anchors;
}

/** The tool as people name it: a team tool's name (`ask`), or `SERVER.TOOL` for a remote one (`tracker.create_issue`). */
export function toolLabel(call: Pick<ToolCall, 'tool' | 'server'>): string {
  return call.server === null ? call.tool : `${call.server}.${call.tool}`;
}

/**
 * Whom or what a call reaches: `-> researcher` for an ask, `approval by dana` for a call that
 * needed a person's approval, `server tracker` for a remote tool, `-` for the other team tools.
 */
export function reachText(call: ToolCall, nameOf: (id: string) => string): string {
  if (call.tool === 'ask' && call.server === null) {
    if (call.waiting_on) return `-> ${nameOf(call.waiting_on.participant_id)}`;
    const peer = (call.arguments as { peer?: unknown } | null)?.peer;
    return typeof peer === 'string' ? `-> ${peer}` : '-> ?';
  }
  if (call.waiting_on) return `approval by ${nameOf(call.waiting_on.participant_id)}`;
  if (call.server !== null) return `server ${call.server}`;
  return '-';
}

/** A duration in milliseconds as a person reads it: `54 ms`, `1.2 s`, `3 min 4 s`, `2 h 5 min`. */
export function durationText(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1000);
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
}

/** How long a call took (`54 ms`), or how long it has run so far (`12 s so far`) while not final. */
export function callDuration(call: ToolCall, now: number = Date.now()): string {
  const started = Date.parse(call.started_at);
  if (call.finished_at) return durationText(Date.parse(call.finished_at) - started);
  return `${durationText(now - started)} so far`;
}

/** The status colours on a terminal; the word is always printed, so nothing is said by colour alone. */
const statusColour: Record<ToolCall['status'], StyleFormat> = {
  pending: 'yellow',
  awaiting_approval: 'yellow',
  running: 'yellow',
  completed: 'green',
  failed: 'red',
  rejected: 'red',
};

/** The status, with the error's code when it failed: `failed (not_on_your_edges)`. */
export function statusText(call: ToolCall): string {
  const code = call.status === 'failed' && call.error ? /^([a-z_]+):/.exec(call.error)?.[1] : undefined;
  return code ? `${call.status} (${code})` : call.status;
}

/** A turn's heading: `lead's turn: 3 tool calls`, `lead's turn (no reply yet): 1 tool call`. */
function turnHeading(turn: Turn, nameOf: (id: string) => string): string {
  const count = `${turn.calls.length} tool call${turn.calls.length === 1 ? '' : 's'}`;
  return `${nameOf(turn.agentId)}'s turn${turn.reply ? '' : ' (no reply yet)'}: ${count}`;
}

/** What `--tool-calls` shows of a value: pretty JSON (a string as its text), cut at {@link RESULT_LINES} lines or {@link RESULT_CHARS} characters. */
export function shownValue(value: unknown): string[] {
  // A result the service cut at 64 KiB: its text, saying so.
  const cut = value as { truncated?: unknown; bytes?: unknown; text?: unknown } | null;
  if (cut && typeof cut === 'object' && cut.truncated === true && typeof cut.text === 'string') {
    return [...shownValue(cut.text), `(the service kept the first 64 KiB of ${typeof cut.bytes === 'number' ? `${cut.bytes} bytes` : 'a longer result'})`];
  }
  const text = typeof value === 'string' ? value : (JSON.stringify(value, null, 2) ?? 'null');
  let lines = text.split('\n');
  let cutNote: string | undefined;
  if (lines.length > RESULT_LINES || text.length > RESULT_CHARS) {
    let kept = 0;
    let chars = 0;
    while (kept < lines.length && kept < RESULT_LINES && chars + lines[kept]!.length <= RESULT_CHARS) chars += lines[kept++]!.length + 1;
    if (kept === 0) {
      lines = [`${lines[0]!.slice(0, RESULT_CHARS)}…`];
      cutNote = `… (cut: ${text.length} characters in all; -o json shows all)`;
    } else {
      cutNote = `… (cut: ${lines.length - kept} more line${lines.length - kept === 1 ? '' : 's'}; -o json shows all)`;
      lines = lines.slice(0, kept);
    }
  }
  return cutNote ? [...lines, cutNote] : lines;
}

/** Longest value shown on its label's line (compact JSON), in characters. */
const INLINE_CHARS = 60;

/** A labelled value under a call: on the label's line as compact JSON when that is short, else pretty and indented below it. */
function labelled(label: string, value: unknown, indent: string): string[] {
  const compact = typeof value === 'string' ? value : (JSON.stringify(value) ?? 'null');
  if (compact.length <= INLINE_CHARS && !compact.includes('\n')) return [`${indent}${label}: ${compact}`];
  const lines = shownValue(value);
  return [`${indent}${label}:`, ...lines.map((line) => `${indent}  ${line}`)];
}

/**
 * The lines of the turns shown under one message, indented under it: a heading per turn, one
 * aligned line per call (tool, reach, status, duration) and, when `details`, the arguments, the
 * result (or the error) under each. `style` colours the status on a terminal.
 */
export function turnLines(turns: readonly Turn[], nameOf: (id: string) => string, options: { details: boolean; style: Style; now?: number }): string[] {
  const lines: string[] = [];
  for (const turn of turns) {
    lines.push(`  ${turnHeading(turn, nameOf)}`);
    const rows = turn.calls.map((call) => [toolLabel(call), reachText(call, nameOf), statusText(call), callDuration(call, options.now)] as const);
    const width = [0, 1, 2].map((i) => Math.max(...rows.map((row) => row[i]!.length)));
    turn.calls.forEach((call, i) => {
      const [tool, reach, status, duration] = rows[i]!;
      const coloured = options.style(statusColour[call.status], status) + ' '.repeat(width[2]! - status.length);
      lines.push(`    ${tool.padEnd(width[0]!)}  ${reach.padEnd(width[1]!)}  ${coloured}  ${duration}`);
      if (!options.details) return;
      lines.push(...labelled('arguments', call.arguments, '      '));
      if (call.error) lines.push(`      error: ${call.error}`);
      else if (isFinal(call)) lines.push(...labelled('result', call.result, '      '));
    });
  }
  return lines;
}

/**
 * One tool-call event as `thread follow` prints it: `TIME lead -> whoami (approval by dana):
 * awaiting_approval`, and once final with its duration (`completed, 54 ms`). `time` is the
 * event's (`created_at`): when the call entered that state.
 */
export function toolCallEventLine(call: ToolCall, nameOf: (id: string) => string, time: string): string {
  const reach = reachText(call, nameOf);
  return `${time} ${nameOf(call.agent_id)} -> ${toolLabel(call)}${reach === '-' ? '' : ` (${reach})`}: ${statusText(call)}${call.finished_at ? `, ${callDuration(call)}` : ''}`;
}

/** A tool call for `-o json`: as the service returns it, with the agent's name and the name of whom it waited on. */
export function namedToolCall(call: ToolCall, nameOf: (id: string) => string): ToolCall & { agent: string; waiting_on_name: string | null } {
  return { ...call, agent: nameOf(call.agent_id), waiting_on_name: call.waiting_on ? nameOf(call.waiting_on.participant_id) : null };
}

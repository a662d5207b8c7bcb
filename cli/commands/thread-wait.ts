/**
 * Waiting for a peer's reply (`thread open --wait`, `thread send --wait`): the thread's stream
 * (contract §13), open before the message it answers is sent, so the reply is printed as it is
 * written (on a terminal; whole off one: cli/commands/thread-replies.ts) and nothing is missed.
 */
import { InvalidArgumentError } from 'commander';
import type { Message, TeamGraph } from '../../api/schemas.ts';
import type { AcsClient } from '../../client/acs-client.ts';
import type { ThreadStreamItem } from '../../client/thread-stream.ts';
import type { CliIo } from '../io.ts';
import { createReplyPrinter, shownContent } from './thread-replies.ts';

/** What {@link waitForStreamedReply} waits for, and how it prints. */
export interface ReplyWait {
  threadId: string;
  /** The participant whose reply is awaited. */
  peerId: string;
  /** How long to wait, in seconds (from when the stream is open). */
  seconds: number;
  /** The peer's name, for its lines. */
  peerName: string;
  /** Print the reply (`PEER: content`, growing on a terminal); false: print nothing (`--json`). */
  print: boolean;
  /**
   * Where the stream starts (a position: `1` is after the thread's first message). Undefined:
   * after the thread's last message, and `send` is called once the stream is open.
   */
  after?: string;
  /**
   * Sends the message the reply answers, once the stream is open (so nothing of the reply can
   * come before it). Output: the message sent. Absent: the message is in the thread already (the
   * first one, before `after`), and every reply of the peer after `after` counts.
   */
  send?: () => Promise<Message>;
}

/**
 * Follows the thread's stream until the peer posts a message after the one sent (or after
 * `after`), printing its reply as it is written; the stream is resumed if the connection drops.
 * Output: the message sent (if `send` was given) and the reply, or undefined when `seconds` ran
 * out first. Errors: those of the stream (`not_found`, `too_many_waits`) and of `send`, raised
 * before anything is sent when the stream cannot be opened.
 */
export async function waitForStreamedReply(client: AcsClient, io: CliIo, wait: ReplyWait): Promise<{ sent: Message | undefined; reply: Message | undefined }> {
  const timeout = new AbortController();
  let connected!: () => void;
  const open = new Promise<void>((resolve) => (connected = resolve));
  const items = client.streamThread(wait.threadId, { after: wait.after, signal: timeout.signal, onConnected: () => connected() });
  const printer = createReplyPrinter(io, { nameOf: () => wait.peerName, lineOf: (m) => `${wait.peerName}: ${shownContent(m)}`, accept: (id) => wait.print && id === wait.peerId });
  // The first read opens the connection; the message is sent once the service said where the stream starts.
  const first = items.next();
  // A refusal (404, 429) ends the wait before anything is sent.
  await Promise.race([open, first]);
  let sent: Message | undefined;
  try {
    sent = wait.send ? await wait.send() : undefined;
  } catch (error) {
    // Nothing was sent: close the stream (its pending read ends with the abort).
    timeout.abort();
    await first.catch(() => {});
    throw error;
  }
  const timer = setTimeout(() => timeout.abort(), wait.seconds * 1000);
  // Before the message sent shows on the stream, what comes answers something else.
  let answering = sent === undefined;
  try {
    for (let next = await first; !next.done; next = await items.next()) {
      const item: ThreadStreamItem = next.value;
      if (!answering) {
        if (item.type === 'message.created' && item.data.message_id === sent?.message_id) answering = true;
        continue;
      }
      const posted = printer.item(item);
      if (item.type === 'message.created' && item.data.sender_id === wait.peerId) return { sent, reply: posted ?? item.data };
    }
    return { sent, reply: undefined };
  } finally {
    clearTimeout(timer);
    printer.end();
    // The connection closes with the abort; the reader, paused at an item, is ended too.
    timeout.abort();
    await items.return(undefined).catch(() => {});
  }
}

/**
 * Why a peer agent cannot have answered, when that is known: it is paused, or its organization has
 * no key for its provider. Output: `{ hint }` for the timed-out error, or nothing (the generic hint).
 */
export async function silentPeerHint(client: AcsClient, team: TeamGraph, peerId: string, peer: string): Promise<{ hint?: string }> {
  const agent = team.agents.find((a) => a.agent_id === peerId);
  if (!agent?.provider) return {};
  if (agent.status === 'paused') return { hint: `${peer} is paused: it answers once made active (status: active in the definition, then apply)` };
  const keys = await client.listProviderKeys(team.org_id).catch(() => undefined);
  if (keys && !keys.some((k) => k.provider === agent.provider)) {
    return { hint: `${peer} cannot answer: its organization has no ${agent.provider} key; add it under organization.providerKeys in the definition and apply (its messages wait until then)` };
  }
  return {};
}

/** Parses the seconds of a `--wait` flag: 0–86400. Errors: commander's InvalidArgumentError (`invalid_usage`). */
export function waitSeconds(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0 || n > 86_400) throw new InvalidArgumentError(`not a number of seconds (0–86400): ${value}`);
  return n;
}

/**
 * The replies being written in a thread, as the page keeps them from its stream's items (§13):
 * pure functions, apart from the hook that follows the stream (thread-stream.ts), so that they are
 * tested without a browser.
 */
import type { MessageDelta, TurnRestarted, TurnStep } from './types.ts';

/** A reply being written, as far as the page has it. */
export interface WritingReply {
  messageId: string;
  /** Who writes it: the agent (unknown until its first delta when a step came first). */
  senderId: string | undefined;
  /** Its text so far, in the current step or attempt. */
  text: string;
  /** The index of the next delta expected. */
  next: number;
  /** Its message was posted (`message.created`): the text is whole, and the page shows the message once it has read it. */
  done: boolean;
}

/** The replies being written in a thread, by message id, oldest first. */
export type WritingReplies = ReadonlyMap<string, WritingReply>;

/** The item types of a thread's stream that change the replies being written. */
export type WritingItem =
  | { type: 'message.delta'; data: MessageDelta }
  | { type: 'turn.step'; data: TurnStep }
  | { type: 'turn.restarted'; data: TurnRestarted }
  | { type: 'message.created'; data: { message_id: string } };

/**
 * The replies being written after one item of the stream: a delta adds its text (skipped when its
 * index was had already), a step or a restart empties the reply's text (it is still being
 * written), its message marks it done (its text stays until the page shows the message in its
 * place among the others). Output: a new map when something changed, else `replies` itself.
 */
export function applyWritingItem(replies: WritingReplies, item: WritingItem): WritingReplies {
  const id = item.data.message_id;
  const reply = replies.get(id);
  const next = new Map(replies);
  switch (item.type) {
    case 'message.delta': {
      const delta = item.data;
      if (reply && (reply.done || delta.index < reply.next)) return replies;
      next.set(id, { messageId: id, senderId: delta.sender_id, text: (reply?.text ?? '') + delta.text, next: delta.index + 1, done: false });
      return next;
    }
    case 'turn.step':
    case 'turn.restarted':
      if (reply?.done) return replies;
      next.set(id, { messageId: id, senderId: item.data.sender_id ?? reply?.senderId, text: '', next: reply?.next ?? 0, done: false });
      return next;
    case 'message.created':
      if (!reply || reply.done) return replies;
      next.set(id, { ...reply, done: true });
      return next;
  }
}

/** Drops the replies whose message the page shows already (read before their `message.created` came on the stream). */
export function stillWriting(replies: WritingReplies, shown: ReadonlySet<string>): WritingReply[] {
  return [...replies.values()].filter((r) => !shown.has(r.messageId));
}

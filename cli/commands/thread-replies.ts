/**
 * Printing replies as they are written (contract §13), for `thread follow` and the `--wait` of
 * `thread send` and `thread open`: the items of a thread's stream in, lines out.
 *
 * - **On a terminal** (`io.write`: stdout is a TTY) a reply grows on its line as its deltas
 *   come: `NAME: ` and the text, appended (nothing is redrawn, so no control character is
 *   needed), the line ended when the reply is posted — with ` [stopped]` when it was stopped.
 *   A `turn.step` ends the line (that text was not the reply: the model called tools); a
 *   `turn.restarted` ends it with ` [restarted]`; either way the reply starts afresh on a new line.
 * - **Off a terminal** (piped, redirected) only whole messages are printed, one line each when
 *   they are posted (`NAME: content`, ` [stopped]` after a stopped one): what a pipe reads is
 *   never taken back.
 *
 * Nothing is printed twice: a message whose id was printed already (the history of `follow`, an
 * item seen again) is skipped, and so is a delta whose index was printed.
 */
import type { Message } from '../../api/schemas.ts';
import type { ThreadStreamItem } from '../../client/thread-stream.ts';
import type { CliIo } from '../io.ts';

/** The mark after a reply that was stopped while it was written. */
export const STOPPED_MARK = ' [stopped]';

/** A message's content as a line shows it: with {@link STOPPED_MARK} when it was stopped. */
export function shownContent(m: Message): string {
  return m.stopped ? `${m.content}${STOPPED_MARK}` : m.content;
}

/** How {@link createReplyPrinter} prints. */
export interface ReplyPrinterOptions {
  /** A participant's name. */
  nameOf: (id: string) => string;
  /** A whole message as the command prints it (`TIME NAME: content [stopped]`, or `NAME: content [stopped]`). */
  lineOf: (m: Message) => string;
  /** Which messages and replies to print (default: all). */
  accept?: (senderId: string) => boolean;
}

/** Prints a thread stream's items; see the module's comment. */
export interface ReplyPrinter {
  /** Takes one item of the thread's stream. Output: the message, when the item posted one that was printed now. */
  item(item: ThreadStreamItem): Message | undefined;
  /** Marks a message as printed already (the history `follow` printed first). */
  printed(messageId: string): void;
  /** Prints a line of its own (a tool call's), ending a reply's growing line first. */
  line(text: string): void;
  /** Ends a reply's growing line, if one is open (the command ends). */
  end(): void;
}

/** A reply being written, as far as it was printed. */
interface Growing {
  /** The text of its current attempt or step, as printed. */
  text: string;
  /** The index of the next delta expected (earlier ones were printed). */
  next: number;
}

/** Creates a printer writing to `io`: growing lines when `io.write` is there, whole lines otherwise. */
export function createReplyPrinter(io: CliIo, options: ReplyPrinterOptions): ReplyPrinter {
  const write = io.write;
  const accept = options.accept ?? (() => true);
  const done = new Set<string>();
  const growing = new Map<string, Growing>();
  /** The reply whose line is open (its text last printed, no newline yet). */
  let openReply: string | undefined;

  const endLine = (suffix = '') => {
    if (openReply === undefined || !write) return;
    write(`${suffix}\n`);
    openReply = undefined;
  };

  /** Drops what was shown of a reply: the model's text before a tool call, or an attempt started again. */
  const restart = (messageId: string, suffix: string) => {
    const reply = growing.get(messageId);
    if (!reply) return;
    if (openReply === messageId) endLine(suffix);
    reply.text = '';
  };

  return {
    item(item) {
      switch (item.type) {
        case 'message.delta': {
          const delta = item.data;
          if (!write || done.has(delta.message_id) || !accept(delta.sender_id)) return undefined;
          let reply = growing.get(delta.message_id);
          if (!reply) {
            reply = { text: '', next: 0 };
            growing.set(delta.message_id, reply);
          }
          // A delta printed already (the service repeats none; this keeps it so whatever happens).
          if (delta.index < reply.next) return undefined;
          reply.next = delta.index + 1;
          if (openReply !== delta.message_id) {
            endLine();
            write(`${options.nameOf(delta.sender_id)}: ${reply.text === '' ? '' : '… '}`);
            openReply = delta.message_id;
          }
          write(delta.text);
          reply.text += delta.text;
          return undefined;
        }
        case 'turn.step':
          restart(item.data.message_id, '');
          return undefined;
        case 'turn.restarted':
          restart(item.data.message_id, ' [restarted]');
          return undefined;
        case 'message.created': {
          const m = item.data;
          if (done.has(m.message_id)) return undefined;
          done.add(m.message_id);
          const reply = growing.get(m.message_id);
          growing.delete(m.message_id);
          if (!accept(m.sender_id)) return undefined;
          if (reply && openReply === m.message_id && reply.text === m.content) {
            // The line shows the whole reply already: end it.
            endLine(m.stopped ? STOPPED_MARK : '');
            return m;
          }
          endLine();
          io.stdout(options.lineOf(m));
          return m;
        }
        default:
          return undefined;
      }
    },
    printed(messageId) {
      done.add(messageId);
    },
    line(text) {
      endLine();
      io.stdout(text);
    },
    end() {
      endLine();
    },
  };
}
